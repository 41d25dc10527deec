"""Lint rules for what PlantUML wrongly accepts: swallowed class bodies, missing @startuml/@enduml, fences, extra diagrams.

>>> [d.code for d in lint("@startuml\\nclass A {\\n  x : int\\nclass B\\n@enduml")]
['unclosed-body']
"""

from __future__ import annotations

import re

from sysmo.tools.plantuml.source import ANY_START_RE, END_RE, diagram_source
from sysmo.contracts.check import Diagnostic, Severity

TOOL = "plantuml-lint"

CLASS_KEYWORDS = r"(?:abstract\s+class|abstract|class|interface|enum|annotation|entity|struct|record|exception|protocol|metaclass|stereotype)"
# a classifier declaration that opens a member body on its line
BODY_OPEN_RE = re.compile(rf"^\s*{CLASS_KEYWORDS}\s+(?P<name>\"[^\"]+\"|[\w.$:]+).*\{{\s*$", re.I)
# a classifier declaration anywhere (inside a body it means the body was never closed)
DECLARATION_RE = re.compile(
    rf"^\s*{CLASS_KEYWORDS}\s+(?P<name>\"[^\"]+\"|[A-Za-z_$][\w.$:]*)\s*(?:<[^>]*>\s*)?(?:<<.*>>\s*)?(?:as\s+\S+\s*)?(?:\{{.*|extends\b.*|implements\b.*)?$",
    re.I,
)
# a relationship line: an endpoint, an arrow with at least one head or two dashes, another endpoint
RELATION_IN_BODY_RE = re.compile(
    r"^\s*(?:\"[^\"]+\"|[A-Za-z_$][\w$]*(?:\.[\w$]+)*)\s*(?:\"[^\"]*\"\s*)?"
    r"(?P<lhead><\|?|\*|o)?(?P<body>[-.]+(?:(?:left|right|up|down|[lrud])[-.]+)?)(?P<rhead>\|?>|\*|o)?"
    r"\s*(?:\"[^\"]*\"\s*)?(?:\"[^\"]+\"|[A-Za-z_$][\w.$]*)\s*(?::.*)?$"
)
SEPARATOR_RE = re.compile(r"^\s*(--|==|\.\.|__)")


def _is_relationship(line: str) -> bool:
    """A relationship needs an arrow of two or more dashes/dots or a head (``a.b`` is a dotted name, not an arrow)."""
    match = RELATION_IN_BODY_RE.match(line)
    if not match:
        return False
    return len(match.group("body")) >= 2 or bool(match.group("lhead") or match.group("rhead"))


def _diag(code: str, message: str, line: int, severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(tool=TOOL, severity=severity, code=code, message=message, line=line)


def _fences(lines: list[str]) -> list[Diagnostic]:
    return [
        _diag(
            "markdown-fence",
            "markdown code fence in the diagram text: give only the PlantUML source, "
            "from @startuml to @enduml",
            n,
        )
        for n, line in enumerate(lines, start=1)
        if line.strip().startswith(("```", "~~~"))
    ]


def _structure(text: str, lines: list[str], single: bool) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    source = diagram_source(text)
    if not any(ANY_START_RE.match(line) for line in lines):
        found.append(
            _diag(
                "missing-startuml",
                "no @startuml line: the diagram must begin with @startuml",
                source.first().start_line,
            )
        )
    for block in source.blocks:
        if not block.has_end:
            begun = f"begun on line {block.start_line} " if block.has_start else ""
            found.append(
                _diag(
                    "missing-enduml",
                    f"the diagram {begun}has no @enduml before it ends: end the diagram with @enduml",
                    block.end_line,
                )
            )
    if single and len(source.blocks) > 1:
        for block in source.blocks[1:]:
            found.append(
                _diag(
                    "multiple-diagrams",
                    f"a second diagram begins here (the first begins on line "
                    f"{source.blocks[0].start_line}); give exactly one @startuml .. @enduml block",
                    block.start_line,
                )
            )
    return found


def _bodies(lines: list[str]) -> list[Diagnostic]:
    """A classifier body still open when another classifier, a relationship or @enduml appears has swallowed it."""
    found: list[Diagnostic] = []
    open_name: str | None = None
    open_line = 0
    depth = 0  # braces inside the classifier body (e.g. {static} is not a brace pair on its own line)
    outer = 0  # open package/namespace/skinparam blocks
    reported = False  # the open body was already reported as swallowing something
    in_block_comment = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if in_block_comment:
            in_block_comment = "'/" not in line
            continue
        if line.startswith("/'"):
            in_block_comment = "'/" not in line[2:]
            continue
        if not line or line.startswith("'"):
            continue
        if open_name is None:
            match = BODY_OPEN_RE.match(raw)
            if match:
                open_name, open_line, depth = match.group("name"), number, 1
            elif line.endswith("{"):
                outer += 1
            elif line.startswith("}"):
                outer -= 1
                if outer < 0:
                    found.append(
                        _diag(
                            "stray-brace",
                            "a '}' that closes nothing: remove it or open the body it belongs to",
                            number,
                        )
                    )
                    outer = 0
            continue
        # inside a classifier body
        if END_RE.match(raw) or ANY_START_RE.match(raw):
            if not reported:
                found.append(_swallowed(open_name, open_line, line.split()[0], number))
            open_name, reported, outer = None, False, 0
            continue
        swallowed_by = None
        if DECLARATION_RE.match(raw) and "(" not in line and ":" not in line:
            swallowed_by = f"`{line}`"
        elif _is_relationship(raw) and not SEPARATOR_RE.match(raw) and "(" not in line:
            swallowed_by = f"the relationship `{line}`"
        if swallowed_by is not None and not reported:
            found.append(_swallowed(open_name, open_line, swallowed_by, number))
            reported = True  # PlantUML keeps reading members until the body's '}', so we keep counting braces
        stripped = re.sub(r"\{(static|abstract|classifier|field|method)\}", "", line, flags=re.I)
        depth += stripped.count("{") - stripped.count("}")
        if depth <= 0:
            open_name, reported = None, False
    if open_name is not None and not reported:
        found.append(
            _diag(
                "unclosed-body",
                f"the body of {open_name} opened on line {open_line} is never closed: add the missing '}}'",
                open_line,
            )
        )
    return found


def _swallowed(name: str, open_line: int, by: str, line: int) -> Diagnostic:
    return _diag(
        "unclosed-body",
        f"the body of {name} opened on line {open_line} is not closed before {by} on line "
        f"{line}: add the missing '}}'",
        open_line,
    )


def lint(text: str, single: bool = True) -> list[Diagnostic]:
    """All lint findings for ``text`` (lines 1-based in ``text``); ``single``: exactly one diagram is expected."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found = _fences(lines) + _structure(text, lines, single) + _bodies(lines)
    return sorted(found, key=lambda d: (d.line or 0, d.code or ""))
