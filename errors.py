"""Typed errors a user can cause; the CLI prints their message, never a stack trace."""

from __future__ import annotations


class SysmoError(Exception):
    """Base of every user-facing error. The message says what happened and what to do."""


class ToolMissingError(SysmoError):
    """A language tool (Java, a jar, a binary) is not installed or not found."""


class ToolCrashError(SysmoError):
    """A language tool crashed or answered in a way we could not interpret."""


class ConfigError(SysmoError):
    """A configuration value or file is invalid."""


class TaskError(SysmoError):
    """A task file, dataset or task id is missing or invalid."""


class DatasetEscapeError(TaskError):
    """A dataset file (found by a scan or named by a task) leads out of its dataset, through ``..`` or a symlink."""


class DataMissingError(TaskError):
    """A benchmark dataset is not where it was expected."""


class UnknownNameError(SysmoError):
    """A registry lookup failed (unknown agent, model, cascade, metric)."""


class LLMError(SysmoError):
    """An LLM call failed for good (after retries) or returned unusable output."""


class ReplayEndedError(LLMError):
    """A replayed source has no further reply for this task: its own attempt ended after ``rounds`` rounds."""

    def __init__(self, message: str, rounds: int = 0) -> None:
        super().__init__(message)
        self.rounds = rounds


class NotCoveredError(ReplayEndedError):
    """A replayed source has no output at all for this task: the attempt is "not covered", not failed."""


class AnalysisError(SysmoError):
    """Results cannot be analysed as asked (nothing to pair, an arm run twice, experiments that differ too much)."""


class SandboxError(SysmoError):
    """The sandbox could not run a command (not: the command failed)."""


def describe_invalid_settings(exc: Exception, model: type | None = None) -> str:
    """A pydantic ``ValidationError`` as one line per setting: where, what is wrong, and for a misspelt key the
    setting that was probably meant (``model``'s fields and those of the models nested in it)."""
    import difflib

    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    known = sorted(_field_names(model)) if model is not None else []
    lines = []
    for error in errors():
        where = ".".join(str(part) for part in error.get("loc", ())) or "(top level)"
        if error.get("type") == "extra_forbidden":
            close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1)
            lines.append(f"{where}: unknown setting" + (f" (did you mean {close[0]!r}?)" if close else ""))
            continue
        value = error.get("input")
        shown = f" (got {value!r})" if isinstance(value, (str, int, float, bool)) and len(repr(value)) < 80 else ""
        lines.append(f"{where}: {error.get('msg', 'invalid')}{shown}")
    return "; ".join(lines)


def _field_names(model: type, seen: set[type] | None = None) -> set[str]:
    import typing

    seen = seen if seen is not None else set()
    fields = getattr(model, "model_fields", None)
    if not fields or model in seen:
        return set()
    seen.add(model)
    names = set(fields)
    for field in fields.values():
        for candidate in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(candidate, type) and hasattr(candidate, "model_fields"):
                names |= _field_names(candidate, seen)
    return names
