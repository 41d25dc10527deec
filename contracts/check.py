"""The one result type every language tool returns: ``CheckResult`` holding ``Diagnostic``s."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

RAW_OUTPUT_LIMIT = 20_000  # characters of raw tool output kept in a result


class Severity(StrEnum):
    ERROR = "error"
    # OpenSysML's strict typing codes (usage-typing, one-type, ...): reported as their own class
    TYPING = "typing"
    WARNING = "warning"
    INFO = "info"


class Outcome(StrEnum):
    OK = "ok"  # the tool ran and accepted the input
    FAILED = "failed"  # the tool ran and rejected the input (syntax error, invariant violated, ...)
    INCONCLUSIVE = "inconclusive"  # timeout or state bound hit: neither pass nor fail
    ERROR = "error"  # the tool itself could not run (crash, missing, unreadable output)


class Diagnostic(BaseModel):
    """One message of a tool about one place in the input (line/column 1-based when known)."""

    tool: str
    severity: Severity = Severity.ERROR
    message: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    code: str | None = None
    file: str | None = None

    def location(self) -> str:
        parts = [self.file or ""]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(p for p in parts if p)

    def render(self) -> str:
        """One line, as a compiler would print it: ``file:line:col: error[code]: message``."""
        loc = self.location()
        code = f"[{self.code}]" if self.code else ""
        head = f"{loc}: " if loc else ""
        return f"{head}{self.severity.value}{code}: {self.message}"


class CheckResult(BaseModel):
    """What a tool said about an input: outcome, diagnostics, tool identity, time, raw output."""

    tool: str
    tool_version: str = "unknown"
    outcome: Outcome
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    duration_s: float = 0.0
    raw_output: str = ""
    truncated: bool = False
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.OK

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity in (Severity.ERROR, Severity.TYPING)]

    def summary(self, limit: int = 20) -> str:
        """Diagnostics as text, the form fed back to a model in a repair prompt."""
        lines = [d.render() for d in self.diagnostics[:limit]]
        if len(self.diagnostics) > limit:
            lines.append(f"... and {len(self.diagnostics) - limit} more")
        if not lines:
            lines.append(f"{self.tool}: {self.outcome.value}")
        return "\n".join(lines)

    @staticmethod
    def bound_output(text: str, limit: int = RAW_OUTPUT_LIMIT) -> tuple[str, bool]:
        if len(text) <= limit:
            return text, False
        half = limit // 2
        return text[:half] + f"\n... [{len(text) - limit} characters cut] ...\n" + text[-half:], True
