"""Find the PlantUML diagram(s) in a text (which may carry prose or fences) and map lines back to it.

>>> src = diagram_source("Here:\\n```\\n@startuml\\nclass A\\n@enduml\\n```")
>>> src.blocks[0].start_line, src.first_text()
(3, '@startuml\\nclass A\\n@enduml')
"""

from __future__ import annotations

import re

from pydantic import BaseModel

START_RE = re.compile(r"^\s*@start(uml|component|class)\b", re.I)
END_RE = re.compile(r"^\s*@end(uml|component|class)\b", re.I)
ANY_START_RE = re.compile(r"^\s*@start\w+", re.I)


class DiagramBlock(BaseModel):
    """One ``@startuml .. @enduml`` block; lines are 1-based in the original text."""

    start_line: int  # line of @startuml (or of the first line when it is missing)
    end_line: int  # line of @enduml (or of the last line of the block when it is missing)
    has_start: bool = True
    has_end: bool = True
    lines: list[str]  # the block's lines as given (without a synthetic @startuml/@enduml)

    def text(self) -> str:
        """The block as PlantUML should see it: with @startuml/@enduml added when they are missing."""
        body = list(self.lines)
        if not self.has_start:
            body.insert(0, "@startuml")
        if not self.has_end:
            body.append("@enduml")
        return "\n".join(body)

    def original_line(self, line_in_text: int) -> int:
        """Map a 1-based line of ``text()`` back to the original text."""
        shift = 0 if self.has_start else 1
        return max(self.start_line, min(self.start_line + line_in_text - 1 - shift, self.end_line))


class DiagramSource(BaseModel):
    """The diagrams found in a text."""

    text: str
    blocks: list[DiagramBlock]

    def first(self) -> DiagramBlock:
        return self.blocks[0]

    def first_text(self) -> str:
        return self.blocks[0].text()


def _is_fence(line: str) -> bool:
    return line.strip().startswith("```") or line.strip().startswith("~~~")


def _bare_block(lines: list[str]) -> DiagramBlock:
    """A diagram without @startuml: the first fenced block's content if there is one, else the non-blank text."""
    fences = [i for i, line in enumerate(lines) if _is_fence(line)]
    if len(fences) >= 2:
        first, last = fences[0] + 1, fences[1] - 1
    else:
        kept = [i for i, line in enumerate(lines) if line.strip() and not _is_fence(line)]
        first, last = (kept[0], kept[-1]) if kept else (0, 0)
    while first < last and not lines[first].strip():
        first += 1
    while last > first and not lines[last].strip():
        last -= 1
    body = lines[first : last + 1] or [""]
    ends = bool(END_RE.match(body[-1]))
    return DiagramBlock(
        start_line=first + 1, end_line=first + len(body), has_start=False, has_end=ends, lines=body
    )


def diagram_source(text: str) -> DiagramSource:
    """Split ``text`` into diagram blocks; text without ``@startuml`` is one block of its non-fence lines."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[DiagramBlock] = []
    current: list[str] | None = None
    start = 0
    for number, line in enumerate(lines, start=1):
        if ANY_START_RE.match(line):
            if current is not None:  # a new @start before @enduml: the previous block lacks its end
                blocks.append(
                    DiagramBlock(start_line=start, end_line=number - 1, has_end=False, lines=current)
                )
            current, start = [line], number
        elif END_RE.match(line) and current is not None:
            current.append(line)
            blocks.append(DiagramBlock(start_line=start, end_line=number, lines=current))
            current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        # a block running to the end of the text: drop trailing fences and blank lines, which are not diagram text
        while len(current) > 1 and (not current[-1].strip() or _is_fence(current[-1])):
            current.pop()
        blocks.append(
            DiagramBlock(start_line=start, end_line=start + len(current) - 1, has_end=False, lines=current)
        )
    if not blocks:
        blocks.append(_bare_block(lines))
    return DiagramSource(text=text, blocks=blocks)
