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


class DataMissingError(TaskError):
    """A benchmark dataset is not where it was expected."""


class UnknownNameError(SysmoError):
    """A registry lookup failed (unknown agent, model, cascade, metric)."""


class LLMError(SysmoError):
    """An LLM call failed for good (after retries) or returned unusable output."""


class SandboxError(SysmoError):
    """The sandbox could not run a command (not: the command failed)."""
