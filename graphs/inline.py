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


def route_on_loop(route: Callable[[Any], str]) -> Any:
    """A conditional edge's routing function as an untraced coroutine runnable. LangGraph runs a plain function
    in a worker thread (a hop per routing decision) and traces it as a chain run (callback events, each on an
    asyncio task of its own), while a choice read off the state takes microseconds."""
    from langgraph._internal._runnable import RunnableCallable

    async def routed(state: Any) -> str:
        return route(state)

    return RunnableCallable(None, named_like(routed, route), name=getattr(route, "__name__", "route"), trace=False)


def named_like(wrapper: F, fn: Callable[..., Any]) -> F:
    """``wrapper`` with ``fn``'s name and doc (not ``functools.wraps``: LangGraph reads the wrapper's own
    signature to decide what to pass it)."""
    wrapper.__name__ = getattr(fn, "__name__", "node")
    wrapper.__doc__ = fn.__doc__
    return wrapper
