"""Typed errors a user can cause; the CLI prints their message, never a stack trace."""

from __future__ import annotations

import errno
import sqlite3


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


class StorageError(SysmoError):
    """A file could not be written because the disk is full or the folder is read-only (the CLI exits with 3)."""


STORAGE_EXIT_CODE = 3
_ERRNO_PROBLEMS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
                   errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
                   errno.EPERM: "operation not permitted"}
_SQLITE_PROBLEMS = {"database or disk is full": "the disk is full",
                    "attempt to write a readonly database": "the database is read-only",
                    "unable to open database file": "the database cannot be opened (a read-only or full disk?)",
                    "disk i/o error": "the disk failed a read or write (full or read-only?)"}
STORAGE_HINT = ("free some space or make the folder writable (or choose another --output-dir), then run the command "
                "again; a run continues with `sysmo run --resume ID` and keeps what it stored")


def storage_problem(exc: BaseException) -> str | None:
    """What went wrong with the disk in ``exc``'s chain ("the disk is full: /runs/x/results.sqlite"), or None when
    it is not a full or read-only disk."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StorageError):
            return str(current)
        if isinstance(current, OSError) and current.errno in _ERRNO_PROBLEMS:
            where = current.filename if current.filename is not None else ""
            return f"{_ERRNO_PROBLEMS[current.errno]}" + (f": {where}" if where else "")
        if isinstance(current, sqlite3.OperationalError):
            text = str(current).lower()
            found = next((problem for message, problem in _SQLITE_PROBLEMS.items() if message in text), None)
            if found:
                return found
        current = current.__cause__ or current.__context__
    return None


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
