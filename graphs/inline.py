"""Quick nodes: plain functions that run on the event loop itself instead of a worker thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def runs_inline(fn: F) -> F:
    """Mark a plain node as quick (it builds messages or updates the state: no tool, no file or network I/O), so
    it runs on the event loop itself instead of taking a hop to a worker thread."""
    fn.__sysmo_inline__ = True  # type: ignore[attr-defined]
    return fn


def is_inline(fn: Callable[..., Any]) -> bool:
    return bool(getattr(fn, "__sysmo_inline__", False))


def named_like(wrapper: F, fn: Callable[..., Any]) -> F:
    """``wrapper`` with ``fn``'s name and doc (not ``functools.wraps``: LangGraph reads the wrapper's own
    signature to decide what to pass it)."""
    wrapper.__name__ = getattr(fn, "__name__", "node")
    wrapper.__doc__ = fn.__doc__
    return wrapper
