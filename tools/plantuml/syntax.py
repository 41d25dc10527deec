"""PlantUML line-level syntax shared by our parsers: statement lines without comments/notes/styling, names, arrows.

>>> arrow = parse_arrow("<|--")
>>> arrow.left_head, arrow.right_head, arrow.dotted
('<|', '', False)
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sysmo.tools.plantuml.source import diagram_source

# Blocks that carry no structure: skipped from their opening line to their closing line.
_BLOCKS: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (re.compile(r"^(legend)\b(?!.*:)", re.I), re.compile(r"^end\s*legend\b", re.I)),
    (re.compile(r"^(title)\s*$", re.I), re.compile(r"^end\s*title\b", re.I)),
    (re.compile(r"^(header)\s*$", re.I), re.compile(r"^end\s*header\b", re.I)),
    (re.compile(r"^(footer)\s*$", re.I), re.compile(r"^end\s*footer\b", re.I)),
    (re.compile(r"^<style>", re.I), re.compile(r"^</style>", re.I)),
    (
        re.compile(r"^!(define\s*long|procedure|unquoted\s+procedure|function|unquoted\s+function)\b", re.I),
        re.compile(r"^!end(definelong|procedure|function)\b", re.I),
    ),
    (re.compile(r"^json\s+\S+.*\{\s*$", re.I), re.compile(r"^\}\s*$")),
]
# Single statements that style or lay out the diagram but declare nothing.
_IGNORED = re.compile(
    r"^(@start|@end|!|hide\b|show\b|remove\b|restore\b|skinparam\b[^{]*$|scale\b|title\b|caption\b|header\b|footer\b|"
    r"left to right direction|top to bottom direction|allowmixing|allow_mixing|set\s|newpage|sprite\b|"
    r"center footer|right footer|left header|mainframe\b|page\b|\[\*\]|autonumber|hnote\b.*:|rnote\b.*:)",
    re.I,
)
_NOTE_START = re.compile(r"^[hr]?note\b", re.I)
_NOTE_END = re.compile(r"^end\s*[hr]?note\b", re.I)
_NOTE_ALIAS = re.compile(r"\bas\s+(\w+)\s*$", re.I)
_SKINPARAM_BLOCK = re.compile(r"^skinparam\b.*\{\s*$", re.I)


class SourceLine(BaseModel):
    number: int  # 1-based line in the text given to the parser
    text: str  # stripped


class Statements(BaseModel):
    """The structural statements of the first diagram in a text, and the ids of its notes."""

    lines: list[SourceLine] = Field(default_factory=list)
    note_ids: set[str] = Field(default_factory=set)


def statements(text: str) -> Statements:
    """Statement lines of the first diagram: comments, notes, legends, styling and preprocessor lines removed."""
    block = diagram_source(text).first()
    first = block.start_line
    out = Statements()
    closing: re.Pattern[str] | None = None
    in_comment = False
    skin_depth = 0
    for offset, raw in enumerate(block.lines):
        number = first + offset
        line = raw.strip()
        if in_comment:
            if "'/" in line:
                in_comment = False
                line = line.split("'/", 1)[1].strip()
            else:
                continue
        if line.startswith("/'"):
            rest = line[2:]
            if "'/" not in rest:
                in_comment = True
                continue
            line = rest.split("'/", 1)[1].strip()
        if skin_depth:
            skin_depth += line.count("{") - line.count("}")
            continue
        if closing is not None:
            if closing.match(line):
                closing = None
            continue
        if not line or line.startswith("'"):
            continue
        if _SKINPARAM_BLOCK.match(line):
            skin_depth = 1
            continue
        if _NOTE_START.match(line):
            alias = _NOTE_ALIAS.search(line)
            if alias:
                out.note_ids.add(alias.group(1))
            single = ":" in line or re.match(r'^[hr]?note\s+"', line, re.I) is not None
            if not single:
                closing = _NOTE_END
            continue
        opened = next((end for start, end in _BLOCKS if start.match(line)), None)
        if opened is not None:
            closing = opened
            continue
        if _IGNORED.match(line):
            continue
        out.lines.append(SourceLine(number=number, text=line))
    return out


def unquote(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1].strip()
    return name


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside <>, (), [], {} and quotes: ``Map<K, V> m, int x`` -> two parts."""
    parts, depth, quoted, current = [], 0, False, []
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "<([{":
            depth += 1
        elif not quoted and ch in ">)]}":
            depth = max(0, depth - 1)
        if ch == sep and depth == 0 and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def split_words(text: str) -> list[str]:
    """Whitespace-separated words, keeping ``List<Map<K, V>>`` and ``int[]`` whole."""
    words, depth, current = [], 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        if ch.isspace() and depth == 0:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


STEREOTYPE_RE = re.compile(r"<<\s*(?:\([^)]*\)\s*)?(?P<text>[^>]*?)\s*>>")


def take_stereotypes(text: str) -> tuple[list[str], str]:
    """Stereotypes (``<<Entity>>``, ``<< (S,#FF7700) Singleton >>``) and the text without them."""
    found = [m.group("text").strip() for m in STEREOTYPE_RE.finditer(text) if m.group("text").strip()]
    return found, STEREOTYPE_RE.sub(" ", text).strip()


# ---------------------------------------------------------------------------------------------- arrows
LEFT_HEADS = r"<\|\||<\||<<|<|\*|o(?=[-.])|\+|#|x(?=[-.])|\}|\^|0\)|\(0|0"
RIGHT_HEADS = r"\|\|>|\|>|>>|>|\*|o(?![\w])|\+|#|x(?![\w])|\{|\^|\(0|0\)|0"
DIRECTIONS = r"left|right|up|down|le|ri|do|l|r|u|d"
ARROW = (
    rf"(?:{LEFT_HEADS})?"
    rf"(?:[-.=~]+(?:\[[^\]]*\])?(?:(?:{DIRECTIONS})(?=[-.=~]))?[-.=~]*(?:\[[^\]]*\])?[-.=~]*)"
    rf"(?:{RIGHT_HEADS})?"
)
_ARROW_PARTS = re.compile(rf"^(?P<lh>{LEFT_HEADS})?(?P<body>.*?)(?P<rh>{RIGHT_HEADS})?$")


class Arrow(BaseModel):
    text: str
    left_head: str = ""
    right_head: str = ""
    dotted: bool = False
    hidden: bool = False
    direction: str | None = None  # layout hint only (left/right/up/down)


def parse_arrow(text: str) -> Arrow:
    match = _ARROW_PARTS.match(text)
    assert match is not None
    body = match.group("body") or ""
    styles = " ".join(re.findall(r"\[([^\]]*)\]", body)).lower()
    plain = re.sub(r"\[[^\]]*\]", "", body)
    direction = re.search(rf"({DIRECTIONS})", plain)
    return Arrow(
        text=text,
        left_head=match.group("lh") or "",
        right_head=match.group("rh") or "",
        dotted="." in plain or "dashed" in styles or "dotted" in styles,
        hidden="hidden" in styles,
        direction={
            "l": "left",
            "le": "left",
            "r": "right",
            "ri": "right",
            "u": "up",
            "d": "down",
            "do": "down",
        }.get(direction.group(1), direction.group(1))
        if direction
        else None,
    )


def relation_regex(endpoint: str) -> re.Pattern[str]:
    """``left ["mult"] ARROW ["mult"] right [: label]`` for a given endpoint pattern."""
    return re.compile(
        rf"^(?P<left>{endpoint})\s*(?:\"(?P<lm>[^\"]*)\"\s*)?(?P<arrow>{ARROW})\s*(?:\"(?P<rm>[^\"]*)\"\s*)?"
        rf"(?P<right>{endpoint})\s*(?::\s*(?P<label>.*))?$"
    )


def clean_label(label: str | None) -> str | None:
    """A relationship label without its reading-direction markers (``owns >``) and quotes."""
    if label is None:
        return None
    label = label.strip()
    label = re.sub(r"^(<|>)\s+|\s+(<|>)$", "", label).strip()
    label = unquote(label)
    return label or None
