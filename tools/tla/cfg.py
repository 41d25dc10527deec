"""TLC model configuration (``.cfg``): parse it, make it acceptable to TLC 2.15, build one-check-at-a-time variants.

TLC 2.15's cfg parser rejects ``CHECK_DEADLOCK``, ``POSTCONDITION`` and ``ALIAS``. ``CHECK_DEADLOCK FALSE``
becomes the ``-deadlock`` command-line flag; the other two are dropped with a note (2.15 has no equivalent).

>>> compat = make_compatible("SPECIFICATION Spec\\nINVARIANT TypeOK Safe\\nCHECK_DEADLOCK FALSE")
>>> compat.deadlock_flag, compat.config.invariants
(True, ['TypeOK', 'Safe'])
>>> print(compat.config.only(invariant="Safe").render(), end="")
SPECIFICATION Spec
INVARIANT Safe
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sysmo.errors import ConfigError

# keyword (singular and plural spellings) -> field of TlcConfig
KEYWORDS: dict[str, str] = {
    "SPECIFICATION": "specification", "INIT": "init", "NEXT": "next",
    "INVARIANT": "invariants", "INVARIANTS": "invariants",
    "PROPERTY": "properties", "PROPERTIES": "properties",
    "CONSTANT": "constants", "CONSTANTS": "constants",
    "CONSTRAINT": "constraints", "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints", "ACTION_CONSTRAINTS": "action_constraints",
    "SYMMETRY": "symmetry", "VIEW": "view",
    "CHECK_DEADLOCK": "check_deadlock", "POSTCONDITION": "postcondition", "ALIAS": "alias",
}
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|<-|<<|>>|[A-Za-z0-9_]+|\S')


def _strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    return "\n".join(line.split("\\*", 1)[0] for line in text.splitlines())


class TlcConfig(BaseModel):
    """A TLC model configuration. ``constants`` keeps each assignment as written (``N = 3``, ``Nil <- NilVal``)."""

    specification: str | None = None
    init: str | None = None
    next: str | None = None
    constants: list[str] = Field(default_factory=list)
    invariants: list[str] = Field(default_factory=list)
    properties: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    action_constraints: list[str] = Field(default_factory=list)
    symmetry: str | None = None
    view: str | None = None
    check_deadlock: bool | None = None  # None: not said (TLC's default is to check)
    postcondition: str | None = None
    alias: str | None = None

    def render(self, for_tlc_215: bool = True) -> str:
        """The cfg text. For TLC 2.15, the keywords it rejects are left out (see ``make_compatible``)."""
        lines: list[str] = []
        if self.specification:
            lines.append(f"SPECIFICATION {self.specification}")
        if self.init:
            lines.append(f"INIT {self.init}")
        if self.next:
            lines.append(f"NEXT {self.next}")
        if self.constants:
            lines.append("CONSTANTS")
            lines += [f"    {c}" for c in self.constants]
        for keyword, names in (("INVARIANT", self.invariants), ("PROPERTY", self.properties),
                               ("CONSTRAINT", self.constraints), ("ACTION_CONSTRAINT", self.action_constraints)):
            if names:
                lines.append(f"{keyword} {' '.join(names)}")
        if self.symmetry:
            lines.append(f"SYMMETRY {self.symmetry}")
        if self.view:
            lines.append(f"VIEW {self.view}")
        if not for_tlc_215:
            if self.check_deadlock is not None:
                lines.append(f"CHECK_DEADLOCK {'TRUE' if self.check_deadlock else 'FALSE'}")
            if self.postcondition:
                lines.append(f"POSTCONDITION {self.postcondition}")
            if self.alias:
                lines.append(f"ALIAS {self.alias}")
        return "\n".join(lines) + "\n"

    def only(self, *, invariant: str | None = None, prop: str | None = None) -> TlcConfig:
        """This configuration checking exactly one invariant or one temporal property, nothing else."""
        if (invariant is None) == (prop is None):
            raise ConfigError("name exactly one invariant or one property to check")
        return self.model_copy(update={"invariants": [invariant] if invariant else [],
                                       "properties": [prop] if prop else []})

    @property
    def checks(self) -> list[tuple[str, str]]:
        """Every check this configuration asks for: ("invariant", name) and ("property", name)."""
        return [("invariant", n) for n in self.invariants] + [("property", n) for n in self.properties]


def _split_constants(tokens: list[re.Match[str]], text: str) -> list[str]:
    """Split the tokens after CONSTANTS into assignments: a new one starts at ``Name =``/``Name <-`` at depth 0."""
    entries: list[list[re.Match[str]]] = []
    depth = 0
    words = [t.group(0) for t in tokens]
    for i, token in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        starts = depth == 0 and re.fullmatch(r"[A-Za-z_]\w*", token) and following in ("=", "<-", "(")
        if starts and following == "(" and entries and entries[-1] and entries[-1][-1].group(0) in ("=", "<-"):
            starts = False  # "X = F(...)" is a value, not an operator override
        if starts or not entries:
            entries.append([])
        entries[-1].append(tokens[i])
        if token in ("(", "{", "[", "<<"):
            depth += 1
        elif token in (")", "}", "]", ">>"):
            depth = max(0, depth - 1)
    # each assignment as written (whitespace collapsed), so "|->" and "F(a, b)" survive intact
    return [" ".join(text[entry[0].start():entry[-1].end()].split()) for entry in entries if entry]


def parse(text: str) -> TlcConfig:
    """Parse cfg text. Unknown keywords raise ``ConfigError`` with the keyword named."""
    clean = _strip_comments(text)
    sections: list[tuple[str, list[re.Match[str]]]] = []
    for token in TOKEN.finditer(clean):
        word = token.group(0)
        if word in KEYWORDS:
            sections.append((word, []))
        elif not sections:
            raise ConfigError(f"cfg: expected a keyword (SPECIFICATION, INIT, ...) before {word!r}")
        else:
            sections[-1][1].append(token)
    values: dict[str, object] = {}
    for keyword, matches in sections:
        field = KEYWORDS[keyword]
        body = [m.group(0) for m in matches]
        if field == "constants":
            values.setdefault("constants", []).extend(_split_constants(matches, clean))  # type: ignore[union-attr]
        elif field in ("invariants", "properties", "constraints", "action_constraints"):
            values.setdefault(field, []).extend(t for t in body if t != ",")  # type: ignore[union-attr]
        elif field == "check_deadlock":
            if body not in (["TRUE"], ["FALSE"]):
                raise ConfigError(f"cfg: CHECK_DEADLOCK takes TRUE or FALSE, not {' '.join(body) or 'nothing'}")
            values[field] = body == ["TRUE"]
        else:
            if len(body) != 1:
                raise ConfigError(f"cfg: {keyword} takes one name, got {' '.join(body) or 'nothing'}")
            values[field] = body[0]
    return TlcConfig(**values)


class CompatibleCfg(BaseModel):
    """A configuration rewritten for TLC 2.15, the flags that replace removed keywords, and what was changed."""

    config: TlcConfig
    text: str
    deadlock_flag: bool  # pass ``-deadlock`` (= do NOT report deadlocks)
    notes: list[str] = Field(default_factory=list)


def make_compatible(source: str | TlcConfig, *, check_deadlock: bool | None = None) -> CompatibleCfg:
    """Rewrite for TLC 2.15. ``check_deadlock`` (if given) overrides what the cfg says; TLC's default is to check."""
    config = parse(source) if isinstance(source, str) else source
    notes: list[str] = []
    wanted = config.check_deadlock if check_deadlock is None else check_deadlock
    if config.check_deadlock is not None:
        notes.append(f"CHECK_DEADLOCK {'TRUE' if config.check_deadlock else 'FALSE'} replaced by "
                     + ("the default deadlock check" if config.check_deadlock else "the -deadlock flag"))
    if config.postcondition:
        notes.append(f"POSTCONDITION {config.postcondition} dropped: TLC 2.15 cannot check postconditions")
    if config.alias:
        notes.append(f"ALIAS {config.alias} dropped: TLC 2.15 prints plain states in error traces")
    deadlock_flag = wanted is False
    return CompatibleCfg(config=config, text=config.render(for_tlc_215=True), deadlock_flag=deadlock_flag, notes=notes)


def make_config(
    *,
    specification: str | None = None,
    init: str | None = None,
    next: str | None = None,  # noqa: A002 - the cfg keyword's name
    constants: dict[str, str] | list[str] | None = None,
    invariants: list[str] | None = None,
    properties: list[str] | None = None,
    constraints: list[str] | None = None,
    base: TlcConfig | str | None = None,
) -> TlcConfig:
    """Build a configuration from parts, on top of ``base`` when given (parts given here replace the base's)."""
    config = parse(base) if isinstance(base, str) else (base.model_copy() if base else TlcConfig())
    if specification is None and init is None and next is None and not (config.specification or config.init):
        raise ConfigError("a TLC configuration needs SPECIFICATION, or INIT and NEXT")
    update: dict[str, object] = {}
    if specification is not None:
        update.update(specification=specification, init=None, next=None)
    if init is not None or next is not None:
        update.update(specification=None, init=init or config.init, next=next or config.next)
    if constants is not None:
        update["constants"] = [f"{k} = {v}" for k, v in constants.items()] if isinstance(constants, dict) \
            else list(constants)
    for field, value in (("invariants", invariants), ("properties", properties), ("constraints", constraints)):
        if value is not None:
            update[field] = list(value)
    return config.model_copy(update=update)
