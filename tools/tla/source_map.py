"""Positions in a module we generated from the author's text, moved back to the author's file and line.

A module made of lines copied from a submitted spec (one definition checked alone, with what it needs) is
what SANY reports on; a reader must see ``Lock.tla:5:14``, not ``SysmoDef2.tla:4:14``. ``LineMap`` knows,
for each line of the generated module, the submitted line it is a copy of (columns are unchanged: lines are
copied whole). The generated header maps to nothing; the generated footer (``====``), where SANY reports a
definition cut short, maps to the last copied line that is not blank: the end of what the author wrote.

>>> m = LineMap(generated="SysmoDef2", source_file="Lock.tla", lines=[0, 2, 3, 5], text=["", "A", "B", "C"])
>>> m.rewrite("SysmoDef2.tla:4:14: error: Encountered ')' at line 4, column 14")
"Lock.tla:5:14: error: Encountered ')' at line 5, column 14"
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sysmo.contracts.check import Diagnostic

# SANY's own ways of naming a place: "at line 4, column 18" (parse errors, about the file parsed) and
# "line 4, col 14 to line 4, col 20 of module M" (semantic errors, naming their module)
_PARSE_PLACE = re.compile(r"\b(at line )(\d+)(, column \d+)")
_SPAN = re.compile(r"\bline (\d+), col (\d+) to line (\d+), col (\d+) of module (\w+)")


class LineMap(BaseModel):
    """For each line of the generated module ``generated`` (1-based), the line of ``source_file`` it copies
    (``lines[i - 1]``; 0: a line we wrote, such as the header)."""

    generated: str  # the generated module's name (its file is ``<generated>.tla``)
    source_file: str  # the submitted file, e.g. ``Lock.tla``
    lines: list[int]
    text: list[str] = Field(default_factory=list)  # the generated lines (to find the last non-blank copy)

    def original(self, line: int | None) -> int | None:
        """The submitted line of generated ``line``; past the copied lines (the footer): the last non-blank
        copied line; None for a line we wrote before any copy (the header)."""
        if line is None or line < 1:
            return None
        if line <= len(self.lines):
            if self.lines[line - 1]:
                return self.lines[line - 1]
            if not any(self.lines[:line]):
                return None
        for index in range(min(line, len(self.lines)) - 1, -1, -1):
            if self.lines[index] and (index >= len(self.text) or self.text[index].strip()):
                return self.lines[index]
        return None

    def rewrite(self, message: str, about_generated: bool = False) -> str:
        """``message`` with every place in the generated module named as the submitted file's (a parse error's
        "at line L, column C" is about the file parsed: rewritten when the message names the generated file, or
        ``about_generated`` says the message is about it)."""
        module = re.escape(self.generated)

        def file_place(match: re.Match[str]) -> str:
            line = self.original(int(match.group(1)))
            return f"{self.source_file}:{line}" if line else match.group(0)

        def parse_place(match: re.Match[str]) -> str:
            line = self.original(int(match.group(2)))
            return f"{match.group(1)}{line}{match.group(3)}" if line else match.group(0)

        def span(match: re.Match[str]) -> str:
            if match.group(5) != self.generated:
                return match.group(0)  # a place in another module (an EXTENDS'd one) is right as it is
            start, end = self.original(int(match.group(1))), self.original(int(match.group(3)))
            if not start or not end:
                return match.group(0)
            return (f"line {start}, col {match.group(2)} to line {end}, col {match.group(4)} of module "
                    f"{self.source_file.removesuffix('.tla')}")

        about_generated = about_generated or re.search(rf"\b{module}\.tla:\d+", message) is not None
        message = re.sub(rf"\b{module}\.tla:(\d+)", file_place, message)
        message = _SPAN.sub(span, message)
        if about_generated:
            message = _PARSE_PLACE.sub(parse_place, message)  # a parse error's place is in the file it names
        return re.sub(rf"\bmodule {module}\b", f"module {self.source_file.removesuffix('.tla')}", message)

    def diagnostic(self, diagnostic: Diagnostic) -> Diagnostic:
        """``diagnostic`` placed in the submitted file (unchanged when it is about another module)."""
        if diagnostic.file not in (None, f"{self.generated}.tla"):
            return diagnostic
        line, end = self.original(diagnostic.line), self.original(diagnostic.end_line)
        return diagnostic.model_copy(update={
            "file": self.source_file if line else diagnostic.file, "line": line or diagnostic.line,
            "end_line": end or diagnostic.end_line,
            "message": self.rewrite(diagnostic.message, about_generated=True)})
