"""Our own parser from PlantUML class-diagram text to the typed ``ClassDiagram`` model.

>>> model = parse_class_diagram("@startuml\\nclass A {\\n  -id : int\\n  +run(n: int): void\\n}\\nA <|-- B\\n@enduml")
>>> model.get("A").methods[0].parameters[0].type, model.relationships[0].source
('int', 'B')

It reads what the modeller meant rather than what PlantUML silently accepts: a class declared inside
an unclosed class body is still a class of its own (the lint rule ``unclosed-body`` reports the slip).
"""

from __future__ import annotations

import re

from sysmo.log import get_logger
from sysmo.tools.plantuml.class_model import (
    VISIBILITY_MARKS,
    Attribute,
    ClassDiagram,
    ClassKind,
    Method,
    Parameter,
    Relationship,
    RelationType,
    UMLClass,
    Visibility,
)
from sysmo.tools.plantuml.syntax import (
    clean_label,
    parse_arrow,
    relation_regex,
    split_top_level,
    split_words,
    statements,
    take_stereotypes,
    unquote,
)

log = get_logger(__name__)

KEYWORDS = {
    "abstract class": ClassKind.ABSTRACT_CLASS,
    "abstract": ClassKind.ABSTRACT_CLASS,
    "class": ClassKind.CLASS,
    "interface": ClassKind.INTERFACE,
    "enum": ClassKind.ENUM,
    "annotation": ClassKind.ANNOTATION,
    "entity": ClassKind.ENTITY,
    "struct": ClassKind.OTHER,
    "record": ClassKind.OTHER,
    "exception": ClassKind.OTHER,
    "protocol": ClassKind.OTHER,
    "metaclass": ClassKind.OTHER,
    "stereotype": ClassKind.OTHER,
    "dataclass": ClassKind.OTHER,
    "circle": ClassKind.OTHER,
    "diamond": ClassKind.OTHER,
}
NAME = r'"[^"]+"|[A-Za-z_$\u00C0-\uFFFF][\w$\u00C0-\uFFFF]*(?:(?:\.|::)[\w$\u00C0-\uFFFF]+)*'
DECL_RE = re.compile(
    r"^(?P<kw>abstract\s+class|abstract|class|interface|enum|annotation|entity|struct|record|exception|protocol|"
    rf"metaclass|stereotype|dataclass|circle|diamond)\s+(?P<first>{NAME})(?P<rest>.*)$",
    re.I,
)
CONTAINER_RE = re.compile(
    rf"^(?P<kw>package|namespace|folder|frame|rectangle|cloud|node|database)\s+"
    rf"(?P<name>{NAME}|\S+)(?P<rest>.*)$",
    re.I,
)
ENDPOINT = rf"(?:{NAME})(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?"
RELATION_RE = relation_regex(ENDPOINT)
MEMBER_OF_RE = re.compile(rf"^(?P<name>{NAME})\s*:\s*(?P<member>.+)$")
ENUM_VALUE = r"[A-Za-z_]\w*(?:\s*\([^)]*\))?"
ENUM_VALUE_RE = re.compile(rf"^{ENUM_VALUE}(?:\s*,\s*{ENUM_VALUE})*\s*[,;]?$")
PRIMITIVES = {
    "int",
    "integer",
    "long",
    "short",
    "byte",
    "float",
    "double",
    "boolean",
    "bool",
    "char",
    "string",
    "void",
    "str",
    "number",
    "date",
    "datetime",
    "object",
    "any",
    "uint",
    "decimal",
}
MODIFIER_RE = re.compile(r"^\{(static|classifier|abstract|field|method)\}\s*", re.I)
JAVA_WORDS = {"public": Visibility.PUBLIC, "private": Visibility.PRIVATE, "protected": Visibility.PROTECTED}


def _take_generics(text: str) -> tuple[list[str], str]:
    """``<K, V>`` directly after a class name (not a ``<<stereotype>>``)."""
    if not text.startswith("<") or text.startswith("<<"):
        return [], text
    depth = 0
    for i, ch in enumerate(text):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if depth == 0:
            return split_top_level(text[1:i]), text[i + 1 :]
    return [], text


def _looks_like_type(word: str) -> bool:
    base = re.sub(r"[\[\]<>.]+.*$", "", word)
    return base.lower() in PRIMITIVES or word[:1].isupper() or any(c in word for c in "<[")


def _parameter(text: str) -> Parameter:
    text = split_top_level(text, "=")[0] if "=" in text else text
    text = re.sub(r"^(final|const|in|out|inout|ref|var|val)\s+", "", text.strip())
    colon = split_top_level(text, ":")
    if len(colon) >= 2:
        return Parameter(name=colon[0].strip() or None, type=":".join(colon[1:]).strip() or None)
    words = split_words(text)
    if len(words) >= 2:
        return Parameter(name=words[-1].lstrip("*&"), type=" ".join(words[:-1]))
    if words and _looks_like_type(words[0]):
        return Parameter(type=words[0])
    return Parameter(name=words[0] if words else None)


def _modifiers(text: str) -> tuple[str, Visibility, bool, bool, str | None]:
    """Strip visibility, {static}/{abstract}/{field}/{method} and Java-style keywords from a member line."""
    visibility, static, abstract, force = Visibility.UNSPECIFIED, False, False, None
    changed = True
    while changed and text:
        changed = False
        match = MODIFIER_RE.match(text)
        if match:
            word = match.group(1).lower()
            static |= word in ("static", "classifier")
            abstract |= word == "abstract"
            force = word if word in ("field", "method") else force
            text, changed = text[match.end() :], True
            continue
        if text[0] in VISIBILITY_MARKS and len(text) > 1 and text[1] not in "-.=":
            visibility, text, changed = VISIBILITY_MARKS[text[0]], text[1:].lstrip(), True
            continue
        word = text.split(None, 1)[0] if text.split() else ""
        rest = text[len(word) :].lstrip()
        if word in JAVA_WORDS and rest:
            visibility, text, changed = JAVA_WORDS[word], rest, True
        elif word in ("static", "final", "abstract", "default", "synchronized", "readonly", "const") and rest:
            static |= word == "static"
            abstract |= word == "abstract"
            text, changed = rest, True
    return text.strip(), visibility, static, abstract, force


def parse_member(text: str, line: int | None = None) -> Attribute | Method | None:
    """One member line: ``-name : Type``, ``Type name = 1``, ``+run(a: int): void``, ``void run(int a)``..."""
    body, visibility, static, abstract, force = _modifiers(text.strip())
    if not body:
        return None
    if "(" in body and force != "field":
        name_part, _, after = body.partition("(")
        depth, params_text, tail = 1, [], ""
        for i, ch in enumerate(after):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                tail = after[i + 1 :]
                break
            params_text.append(ch)
        tail = re.sub(r"\bthrows\b.*$", "", tail).strip()
        return_type = tail[1:].strip() if tail.startswith(":") else None
        words = split_words(name_part.strip())
        if not words:
            return None
        if len(words) > 1 and return_type is None:
            return_type = " ".join(words[:-1])
        params = [_parameter(p) for p in split_top_level("".join(params_text))]
        return Method(
            name=words[-1],
            return_type=return_type or None,
            parameters=params,
            visibility=visibility,
            static=static,
            abstract=abstract,
            line=line,
        )
    value = None
    parts = split_top_level(body, "=")
    if len(parts) >= 2 and not body.startswith("="):
        body, value = parts[0], "=".join(parts[1:]).strip()
    colon = split_top_level(body, ":")
    if len(colon) >= 2:
        name, type_ = colon[0].strip(), ":".join(colon[1:]).strip()
    else:
        words = split_words(body)
        name, type_ = (words[-1], " ".join(words[:-1])) if len(words) >= 2 else (body, None)
    if not name:
        return None
    return Attribute(
        name=name, type=type_ or None, visibility=visibility, static=static, default=value, line=line
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.model = ClassDiagram()
        self.by_key: dict[str, UMLClass] = {}  # name and alias -> class
        self.stack: list[tuple[str, object]] = []  # ("package", name) | ("class", UMLClass) | ("block", None)
        self.notes: set[str] = set()

    # -------------------------------------------------------------- classes
    def package(self) -> str | None:
        names = [name for kind, name in self.stack if kind == "package"]
        return ".".join(str(n) for n in names) if names else None

    def lookup(self, key: str) -> UMLClass | None:
        return self.by_key.get(key)

    def ensure_class(self, name: str, line: int, implicit: bool) -> UMLClass:
        found = self.lookup(name)
        if found is None:
            found = UMLClass(name=name, implicit=implicit, line=line, package=self.package())
            self.model.classes.append(found)
            self.by_key[name] = found
        elif not implicit and found.implicit:
            found.implicit, found.line = False, line
        return found

    def declare(self, match: re.Match[str], line: int) -> None:
        keyword = re.sub(r"\s+", " ", match.group("kw").lower())
        first = match.group("first")
        generics, rest = _take_generics(match.group("rest"))  # `class Map<K, V>`: no space before '<'
        alias = None
        alias_match = re.match(rf"^\s*as\s+(?P<alias>{NAME})", rest)
        if alias_match:
            alias, rest = alias_match.group("alias"), rest[alias_match.end() :]
            if not generics:
                generics, rest = _take_generics(rest)
        name = first
        # `class "Long name" as L` and `class L as "Long name"`: the quoted one is what the diagram shows
        if alias is not None and alias.startswith('"') and not first.startswith('"'):
            name, alias = alias, first
        name, alias = unquote(name), unquote(alias) if alias else None
        stereotypes, rest = take_stereotypes(rest)
        body_open = rest.rstrip().endswith("{")
        inline_body = None
        if "{" in rest and "}" in rest[rest.index("{") :]:
            inline_body = rest[rest.index("{") + 1 : rest.rindex("}")]
            body_open = False
        head = rest.split("{", 1)[0]
        cls = self.ensure_class(name, line, implicit=False)
        if alias:
            cls.alias = alias
            self.by_key[alias] = cls
        cls.kind = KEYWORDS.get(keyword, ClassKind.OTHER)
        cls.stereotypes = stereotypes or cls.stereotypes
        cls.generics = generics or cls.generics
        cls.package = cls.package or self.package()
        for word, rel_type in (
            ("extends", RelationType.GENERALIZATION),
            ("implements", RelationType.REALIZATION),
        ):
            found = re.search(rf"\b{word}\s+(.+?)(?=\bextends\b|\bimplements\b|$)", head)
            if found:
                for parent in split_top_level(found.group(1)):
                    parent = unquote(re.sub(r"<.*$", "", parent).strip())
                    self.ensure_class(parent, line, implicit=True)
                    self.model.relationships.append(
                        Relationship(type=rel_type, source=cls.name, target=parent, arrow=word, line=line)
                    )
        if inline_body is not None:
            for member in inline_body.split(";"):
                self.add_member(cls, member, line)
        if body_open:
            self.stack.append(("class", cls))

    def add_member(self, cls: UMLClass, text: str, line: int) -> None:
        text = text.strip()
        if not text or re.match(r"^(--|==|\.\.|__)", text):
            return
        if cls.kind == ClassKind.ENUM and ENUM_VALUE_RE.match(text) and not re.match(r"^\w+\s*\(\s*\)", text):
            for value in split_top_level(text.rstrip(";")):
                cls.enum_values.append(re.sub(r"\s*\(.*$", "", value).strip())
            return
        member = parse_member(text, line)
        if isinstance(member, Method):
            cls.methods.append(member)
        elif isinstance(member, Attribute):
            cls.attributes.append(member)

    # -------------------------------------------------------------- relationships
    def relate(self, match: re.Match[str], line: int) -> None:
        arrow = parse_arrow(match.group("arrow"))
        if arrow.hidden:
            return  # a layout-only link
        left = unquote(re.sub(r"::.*$", "", match.group("left")))
        right = unquote(re.sub(r"::.*$", "", match.group("right")))
        if left in self.notes or right in self.notes:
            return
        lm, rm = match.group("lm"), match.group("rm")
        heads = {arrow.left_head, arrow.right_head}
        triangle = {"<|", "|>", "^"}
        if heads & triangle:
            rel_type = RelationType.REALIZATION if arrow.dotted else RelationType.GENERALIZATION
            forward = arrow.right_head in triangle  # A --|> B: A is the child
            directed = True
        elif heads & {"*", "o"}:
            rel_type = RelationType.COMPOSITION if "*" in heads else RelationType.AGGREGATION
            forward = arrow.left_head in ("*", "o")  # A *-- B: A is the whole
            directed = True
        else:
            rel_type = RelationType.DEPENDENCY if arrow.dotted else RelationType.ASSOCIATION
            pointed_right = arrow.right_head in (">", ">>")
            pointed_left = arrow.left_head in ("<", "<<")
            directed = pointed_right != pointed_left
            forward = not pointed_left or pointed_right
        source, target, sm, tm = (left, right, lm, rm) if forward else (right, left, rm, lm)
        self.ensure_class(self.resolve(source), line, implicit=True)
        self.ensure_class(self.resolve(target), line, implicit=True)
        self.model.relationships.append(
            Relationship(
                type=rel_type,
                source=self.resolve(source),
                target=self.resolve(target),
                label=clean_label(match.group("label")),
                source_multiplicity=sm,
                target_multiplicity=tm,
                directed=directed,
                arrow=arrow.text,
                line=line,
            )
        )

    def resolve(self, key: str) -> str:
        found = self.lookup(key)
        return found.name if found is not None else key

    # -------------------------------------------------------------- driver
    def run(self) -> ClassDiagram:
        parsed = statements(self.text)
        self.notes = parsed.note_ids
        for statement in parsed.lines:
            line, text = statement.number, statement.text
            top = self.stack[-1] if self.stack else None
            if top is not None and top[0] == "class":
                cls = top[1]
                assert isinstance(cls, UMLClass)
                if text.startswith("}"):
                    self.stack.pop()
                    continue
                declaration = DECL_RE.match(text)
                if declaration is None or "(" in text or ":" in text:
                    self.add_member(cls, text, line)
                    continue
                self.stack.pop()  # an unclosed body: the declaration starts a class of its own
            if text.startswith("}"):
                if self.stack:
                    self.stack.pop()
                continue
            if (declaration := DECL_RE.match(text)) is not None:
                self.declare(declaration, line)
            elif (container := CONTAINER_RE.match(text)) is not None:
                name = unquote(container.group("name"))
                if name not in self.model.packages:
                    self.model.packages.append(name)
                if container.group("rest").rstrip().endswith("{") or name == "{":
                    self.stack.append(("package", name))
            elif (relation := RELATION_RE.match(text)) is not None:
                self.relate(relation, line)
            elif (member := MEMBER_OF_RE.match(text)) is not None:
                cls = self.ensure_class(self.resolve(unquote(member.group("name"))), line, implicit=False)
                self.add_member(cls, member.group("member"), line)
            elif text.rstrip().endswith("{"):
                self.stack.append(("block", None))
        self.model.relationships = [r for r in self.model.relationships if r.source not in self.notes]
        return self.model


def parse_class_diagram(text: str) -> ClassDiagram:
    """Parse the first diagram in ``text`` into a ``ClassDiagram`` (never raises on odd lines: they are skipped)."""
    model = _Parser(text).run()
    log.debug("plantuml.class_parsed", classes=len(model.classes), relationships=len(model.relationships))
    return model
