"""Agents registered by name, each declaring the task kinds it supports.

>>> spec = get_agent("base_modeling")
>>> graph = spec.build(ctx, checkpointer=None)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import SysmoError, UnknownNameError
from sysmo.graphs.context import AgentContext

# the one list of agents: each is the module sysmo.agents.<name> registering the agent <name>; the order is the
# default `sysmo run` order and the CLI's
AGENT_NAMES = ["base_modeling", "code_translation", "trace_learning", "metagpt", "openhands"]


class UnsupportedTaskError(SysmoError):
    """An agent was asked to work on a kind of task it does not support."""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    supports: frozenset[TaskKind]
    build: Callable[..., Any]  # (ctx, checkpointer) -> compiled LangGraph graph
    description: str
    prompts: tuple[str, ...] = ()  # prompt keys "<agent>/<name>" the agent uses (hashed into the attempt)
    needs: tuple[str, ...] = ()  # task inputs the agent requires: "traces"; "source" (code, for TLA+ tasks)
    uses: tuple[str, ...] = ()  # inputs the agent reads when present and works without ("source")
    # the graph's shape for a context, when it depends on the task (one compiled graph per variant is reused)
    variant: Callable[[AgentContext], str] | None = None

    def missing_inputs(self, task: Task) -> list[str]:
        """What this agent will do without on ``task``, with the reason (for the run summary)."""
        from sysmo.agents.task_prompt import missing_source_reason

        reason = missing_source_reason(task) if "source" in self.uses else None
        return [f"agent {self.name!r} models {task.id} without the system's source code: {reason}"] if reason else []

    def variant_of(self, ctx: AgentContext) -> str:
        return self.variant(ctx) if self.variant is not None else ""

    def check_supports(self, task: Task) -> None:
        if task.kind not in self.supports:
            kinds = ", ".join(sorted(k.value for k in self.supports))
            raise UnsupportedTaskError(
                f"agent {self.name!r} does not support {task.kind.value} tasks (task {task.id}); it supports: {kinds}")
        if "traces" in self.needs and not ((task.inputs.traces and task.inputs.traces.files)
                                           or (task.references.traces and task.references.traces.files)):
            raise UnsupportedTaskError(f"agent {self.name!r} learns from execution traces, and task {task.id} has none")
        if "source" in self.needs and task.kind == TaskKind.TLA and not task.inputs.source_files:
            where = (f" (its code is at {task.inputs.source.url}; give a checkout with --sources-dir)"
                     if task.inputs.source and task.inputs.source.url else "")
            raise UnsupportedTaskError(
                f"agent {self.name!r} translates source code into TLA+, and task {task.id} has no source files{where}")


_REGISTRY: dict[str, AgentSpec] = {}


def register_agent(name: str, supports: set[TaskKind] | frozenset[TaskKind], description: str,
                   prompts: tuple[str, ...] = (), needs: tuple[str, ...] = (), uses: tuple[str, ...] = (),
                   variant: Callable[[AgentContext], str] | None = None):
    """Decorator for a graph builder ``(ctx, checkpointer) -> compiled graph``. The graph's nodes read the
    context at run time; ``variant(ctx)`` names the graph's shape when the builder looks at ``ctx``."""

    def wrap(build: Callable[..., Any]) -> Callable[..., Any]:
        _REGISTRY[name] = AgentSpec(name, frozenset(supports), build, description, prompts, needs, variant=variant,
                                    uses=uses)
        return build

    return wrap


def _load_all() -> None:
    for name in AGENT_NAMES:
        importlib.import_module(f"sysmo.agents.{name}")


def get_agent(name: str) -> AgentSpec:
    _load_all()
    if name not in _REGISTRY:
        raise UnknownNameError(f"unknown agent {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def all_agents() -> list[AgentSpec]:
    _load_all()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]
