"""Class-diagram (PlantUML) mutation operators: pure text -> text, ``MutationError`` when one does not apply.

Mutants: ``drop_class`` (the class and every relation it ends), ``flip_relation_kind`` (composition <->
aggregation, generalization <-> realization, association <-> dependency), ``change_multiplicity`` (one end's
multiplicity to one that is not equal and not both "many"). Preserving: ``reorder_declarations`` (classes and
relations in reverse order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sysmo.evals.sensitivity import MutationError

_CLASS_HEAD = re.compile(r"^\s*(?:abstract\s+class|abstract|class|interface|enum)\s+\"?([\w.]+)\"?[^{]*?(\{)?\s*$")
_ARROW = r"[<*o#x}+^]?\|?[-.]+(?:\[[^\]]*\])?[-.]*\|?[>*o#x{+^]?"
_RELATION = re.compile(rf'^(\s*)([\w.]+)(\s*)(?:"([^"]*)"(\s*))?({_ARROW})(\s*)(?:"([^"]*)"(\s*))?([\w.]+)(.*)$')
# old arrow -> new arrow (its kind flipped, the direction kept)
_FLIPS = {"*--": "o--", "o--": "*--", "--*": "--o", "--o": "--*", "<|--": "<|..", "<|..": "<|--", "--|>": "..|>",
          "..|>": "--|>", "-->": "..>", "<--": "<..", "..>": "-->", "<..": "<--", "--": "..>", "..": "--"}
_MANY = re.compile(r"\*|many|much|multi", re.I)


@dataclass
class ClassBlock:
    name: str
    start: int  # line index of the head
    end: int  # line index of the closing brace (== start for a one-line class)


def _lines(text: str) -> list[str]:
    return text.split("\n")


def class_blocks(text: str) -> list[ClassBlock]:
    lines = _lines(text)
    blocks: list[ClassBlock] = []
    i = 0
    while i < len(lines):
        match = _CLASS_HEAD.match(lines[i])
        if match is None:
            i += 1
            continue
        end = i
        if match.group(2):
            depth = lines[i].count("{") - lines[i].count("}")
            while depth > 0 and end + 1 < len(lines):
                end += 1
                depth += lines[end].count("{") - lines[end].count("}")
        blocks.append(ClassBlock(match.group(1), i, end))
        i = end + 1
    return blocks


def relation_lines(text: str) -> list[int]:
    """Indices of the lines that are relations (``A "1" *-- "0..*" B : label``)."""
    return [i for i, line in enumerate(_lines(text)) if _RELATION.match(line) and not _CLASS_HEAD.match(line)
            and not line.strip().startswith(("'", "title", "skinparam", "note", "@"))]


def _ends(line: str) -> tuple[str, str]:
    match = _RELATION.match(line)
    assert match is not None
    return match.group(2), match.group(10)


def drop_class(text: str, name: str) -> str:
    """The diagram without class ``name`` and without every relation that has it at one end."""
    blocks = [b for b in class_blocks(text) if b.name == name]
    if not blocks:
        raise MutationError(f"the diagram declares no class {name!r}")
    lines = _lines(text)
    gone = set(range(blocks[0].start, blocks[0].end + 1))
    gone |= {i for i in relation_lines(text) if name in _ends(lines[i])}
    # any other statement outside the classes that names it, e.g. an association class '(A, B) .. C'
    inside = {i for b in class_blocks(text) for i in range(b.start, b.end + 1)}
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w.])")
    gone |= {i for i, line in enumerate(lines) if i not in inside and word.search(line)
             and not line.strip().startswith(("title", "@", "'"))}
    return "\n".join(line for i, line in enumerate(lines) if i not in gone)


def flip_relation_kind(text: str, index: int = 0) -> str:
    """Relation number ``index`` (in file order) of another kind: ``*--`` <-> ``o--``, ``<|--`` <-> ``<|..``,
    ``-->`` <-> ``..>``, ``--`` -> ``..>``."""
    lines = _lines(text)
    relations = relation_lines(text)
    if index >= len(relations):
        raise MutationError(f"the diagram has {len(relations)} relations, no number {index}")
    i = relations[index]
    match = _RELATION.match(lines[i])
    assert match is not None
    arrow = match.group(6)
    flipped = _FLIPS.get(arrow)
    if flipped is None:
        raise MutationError(f"no flip for the arrow {arrow!r} (known: {', '.join(_FLIPS)})")
    lines[i] = lines[i][: match.start(6)] + flipped + lines[i][match.end(6) :]
    return "\n".join(lines)


def change_multiplicity(text: str, index: int | None = None) -> str:
    """One multiplicity of a relation changed: "many" ones (``*``, ``0..*``, ``1..*``) become ``1``, the others
    ``*``; the first relation with a multiplicity, or relation number ``index``."""
    lines = _lines(text)
    relations = relation_lines(text)
    def quoted(i: int) -> bool:
        match = _RELATION.match(lines[i])
        return match is not None and (match.group(4) is not None or match.group(8) is not None)

    chosen = [i for n, i in enumerate(relations) if (index is None or n == index) and quoted(i)]
    if not chosen:
        raise MutationError("no relation with a multiplicity (a quoted \"1\", \"0..*\" next to an arrow)")
    i = chosen[0]
    match = _RELATION.match(lines[i])
    assert match is not None
    group = 4 if match.group(4) is not None else 8
    old = match.group(group)
    new = "1" if _MANY.search(old) else "*"
    lines[i] = lines[i][: match.start(group)] + new + lines[i][match.end(group) :]
    return "\n".join(lines)


def reorder_declarations(text: str) -> str:
    """Classes in reverse order, then the relations in reverse order, then any other statement; the header
    (``@startuml``, ``title``, ``skinparam``) first and ``@enduml`` last. Nothing in a class diagram's meaning depends on that order."""
    lines = _lines(text)
    blocks = class_blocks(text)
    relations = relation_lines(text)
    if len(blocks) + len(relations) < 3:
        raise MutationError("too few classes and relations to reorder")
    used = {i for b in blocks for i in range(b.start, b.end + 1)} | set(relations)
    start = [line for i, line in enumerate(lines) if i not in used and not line.strip().startswith("@enduml")
             and i < (blocks[0].start if blocks else 0)]
    rest = [line for i, line in enumerate(lines) if i not in used and line.strip()
            and not line.strip().startswith("@enduml") and i >= (blocks[0].start if blocks else 0)]
    body = ["\n".join(lines[b.start : b.end + 1]) for b in reversed(blocks)]
    # other statements (association classes '(A, B) .. C', notes) after the relations: they name classes, and
    # PlantUML guesses the diagram's type from the first statement
    out = [*start, "\n\n".join(body), "", *[lines[i] for i in reversed(relations)], *rest, "@enduml"]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
