"""Parse what the OpenSysML kernel prints on ``%load`` into ``Diagnostic``s (code, severity, line, column, span).

The kernel prints each finding as a compiler would::

    /tmp/.../m.sysml:6:18: error[unresolved]: unresolved reference: Engin — did you mean Engine?
            part e : Engin;
                     ^~~~~

The source line and the caret line after a header give the span on that line. Text after `` — `` is the
kernel's hint; it stays in ``message`` (it is what a model needs to repair the text) and
``split_hint`` separates it. Lines ``note: ...`` become ``info`` diagnostics without a location.
"""

from __future__ import annotations

import re

from sysmo.contracts.check import Diagnostic, Severity

TOOL = "opensysml"

# OpenSysML's strict typing checks: stricter than other SysML v2 tools, so reported as their own class
TYPING_CODES = frozenset({"usage-typing", "part-usage-part-definition", "connector-type-featuring", "one-type"})

HEADER = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning|info|note)\[(?P<code>[^\]]*)\]: (?P<message>.*)$"
)
CARET = re.compile(r"^(?P<indent>\s*)(?P<span>\^~*)\s*$")
NOTE = re.compile(r"^note: (?P<message>.*)$")
HINT_SEPARATOR = " — "


def severity_of(kernel_severity: str, code: str) -> Severity:
    if kernel_severity == "error":
        return Severity.TYPING if code in TYPING_CODES else Severity.ERROR
    if kernel_severity == "warning":
        return Severity.WARNING
    return Severity.INFO


def split_hint(message: str) -> tuple[str, str | None]:
    """``("unresolved reference: Engin", "did you mean Engine?")`` from the printed message."""
    head, sep, hint = message.partition(HINT_SEPARATOR)
    return (head, hint) if sep else (message, None)


def _relative(path: str, folder: str | None) -> str:
    if folder and path.startswith(folder.rstrip("/") + "/"):
        return path[len(folder.rstrip("/")) + 1:]
    return path


def parse_load_output(text: str, folder: str | None = None) -> list[Diagnostic]:
    """Every diagnostic in the kernel's ``%load`` output; file names relative to ``folder``."""
    lines = text.splitlines()
    found: list[Diagnostic] = []
    i = 0
    while i < len(lines):
        header = HEADER.match(lines[i])
        if header is None:
            note = NOTE.match(lines[i])
            if note is not None:
                found.append(Diagnostic(tool=TOOL, severity=Severity.INFO, code="note", message=note["message"]))
            i += 1
            continue
        code = header["code"]
        column = int(header["col"])
        diagnostic = Diagnostic(
            tool=TOOL,
            severity=severity_of(header["severity"], code),
            message=header["message"],
            line=int(header["line"]),
            column=column,
            code=code,
            file=_relative(header["path"], folder),
        )
        i += 1
        # the quoted source line and its caret underline, when the kernel prints them
        if i + 1 < len(lines) and HEADER.match(lines[i]) is None and (caret := CARET.match(lines[i + 1])):
            diagnostic.end_line = diagnostic.line
            diagnostic.end_column = column + len(caret["span"]) - 1
            i += 2
        found.append(diagnostic)
    return found
