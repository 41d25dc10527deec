"""Agents registered by name, each declaring the task kinds it supports and its in-loop check.

Every repair loop runs the tool check of the task's language (``tools.checkers``); an agent may declare
further ``LoopCheck``s, run in order while everything before passed (trace_learning: trace validation).

>>> spec = get_agent("base_modeling")
>>> graph = spec.build(ctx, checkpointer=None)
>>> check = spec.in_loop_check(check_artifact)  # the tool check, then the agent's own checks
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import SysmoError, UnknownNameError
from sysmo.graphs.context import AgentContext, Checker
from sysmo.contracts.check import CheckResult

TOOL_CHECK = "the tool check (TLA+: SANY, then a short TLC simulation; SysML v2: OpenSysML; PlantUML: server + lint)"

# the one list of agents: each is the module sysmo.agents.<name> registering the agent <name>; the order is the
# default `sysmo run` order and the CLI's
AGENT_NAMES = ["base_modeling", "code_translation", "trace_learning", "metagpt", "openhands"]


class UnsupportedTaskError(SysmoError):
    """An agent was asked to work on a kind of task it does not support; ``cause`` says why in a few words (a
    run's summary groups the skipped tasks by it)."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause or message


@dataclass(frozen=True)
class LoopCheck:
    """A check the repair loop runs on a round's model after the tool check (and earlier loop checks) passed.
    Its failure is the round's check result, so the repair request carries its diagnostics."""

    name: str
    description: str
    run: Checker  # (artifact, task) -> CheckResult


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
    loop_checks: tuple[LoopCheck, ...] = ()  # run after the tool check, in order (see ``in_loop_check``)
    # the agent's scripted answers for ``mockllm/control`` on a task (``agents/control_script.py``); None: the
    # default (a broken first model for "generate", the reference for each "repair")
    control_answers: Callable[[Task], list[Any]] | None = None
    # every model call is one round's whole artifact (generate, repair), so a published output can stand in for
    # it (``replay/...`` models); an agent with other calls (pre-stage documents, review, tool actions) cannot
    replays_outputs: bool = False
    # the first-request node when the graph is the plain repair loop (``build_repair_graph(first_request)``):
    # a replay with no checkpoints walks that loop without LangGraph (``graphs.direct``)
    plain_loop: Callable[..., Any] | None = None

    @property
    def check_description(self) -> list[str]:
        """What the repair loop checks each round, in order."""
        return [TOOL_CHECK, *(c.description for c in self.loop_checks)]

    def in_loop_check(self, tool_check: Checker, record: Callable[[Checker], Checker] = lambda c: c) -> Checker:
        """The round's check: ``tool_check``, then each loop check while all passed; ``record`` wraps every
        check that runs (the attempt's tool-call events). A passing loop check leaves the tool's result, with
        its summary in ``details[<name>]``; a failing one is the result."""
        first = record(tool_check)
        if not self.loop_checks:
            return first
        further = [(c.name, record(c.run)) for c in self.loop_checks]

        def check(artifact: Any, task: Task) -> CheckResult:
            result = first(artifact, task)
            for name, run in further:
                if not result.ok:
                    break
                extra = run(artifact, task)
                if not extra.ok:
                    return extra
                summary = extra.details.get(name, extra.outcome.value)
                result = result.model_copy(update={"details": {**result.details, name: summary}})
            return result

        return check

    def missing_inputs(self, task: Task) -> list[str]:
        """What this agent will do without on ``task``, with the reason (for the run summary)."""
        from sysmo.agents.task_prompt import missing_source_reason

        reason = missing_source_reason(task) if "source" in self.uses else None
        return [f"agent {self.name!r} models {task.id} without the system's source code: {reason}"] if reason else []

    def variant_of(self, ctx: AgentContext) -> str:
        return self.variant(ctx) if self.variant is not None else ""

    def replay_refusal(self, model: str) -> str | None:
        """Why this agent cannot answer from ``model`` when it replays published outputs; None when it can
        (``model`` is not a replay, or every call of the agent is a round's artifact)."""
        from sysmo.llm.roles import model_kind

        if self.replays_outputs or model_kind(model) != "replay":
            return None
        able = ", ".join(s.name for s in all_agents() if s.replays_outputs)
        return (f"agent {self.name!r} cannot replay published outputs ({model}): a published output is one round's "
                f"whole model, and this agent's model calls are not only rounds (pre-stage documents, reviews or "
                f"tool actions); replay them with {able}")

    def check_model(self, model: str) -> None:
        """Raise ``UnsupportedTaskError`` when this agent cannot take ``model`` (``replay_refusal``)."""
        refusal = self.replay_refusal(model)
        if refusal is not None:
            raise UnsupportedTaskError(refusal)

    def check_supports(self, task: Task) -> None:
        if task.kind not in self.supports:
            kinds = ", ".join(sorted(k.value for k in self.supports))
            raise UnsupportedTaskError(
                f"agent {self.name!r} does not support {task.kind.value} tasks (task {task.id}); it supports: {kinds}",
                cause=f"it does {kinds} only")
        if "traces" in self.needs and not ((task.inputs.traces and task.inputs.traces.files)
                                           or (task.references.traces and task.references.traces.files)):
            raise UnsupportedTaskError(f"agent {self.name!r} learns from execution traces, and task {task.id} has none",
                                       cause="no traces")
        if "source" in self.needs and task.kind == TaskKind.TLA and not task.inputs.source_files:
            where = (f" (its code is at {task.inputs.source.url}; give a checkout with --sources-dir)"
                     if task.inputs.source and task.inputs.source.url else "")
            raise UnsupportedTaskError(
                f"agent {self.name!r} translates source code into TLA+, and task {task.id} has no source files{where}",
                cause="no source files (--sources-dir)")


_REGISTRY: dict[str, AgentSpec] = {}
_VERSION = 0  # changes with every registration or removal (caches built from the registry key on it)


def registry_version() -> int:
    """A number that changes whenever an agent is registered or removed."""
    return _VERSION


def unregister_agent(name: str) -> None:
    """Remove an agent (a test's own agent, when the test ends)."""
    global _VERSION
    if _REGISTRY.pop(name, None) is not None:
        _VERSION += 1


def register_agent(name: str, supports: set[TaskKind] | frozenset[TaskKind], description: str,
                   prompts: tuple[str, ...] = (), needs: tuple[str, ...] = (), uses: tuple[str, ...] = (),
                   variant: Callable[[AgentContext], str] | None = None, loop_checks: tuple[LoopCheck, ...] = (),
                   control_answers: Callable[[Task], list[Any]] | None = None, replays_outputs: bool = False,
                   plain_loop: Callable[..., Any] | None = None):
    """Decorator for a graph builder ``(ctx, checkpointer) -> compiled graph``. The graph's nodes read the
    context at run time; ``variant(ctx)`` names the graph's shape when the builder looks at ``ctx``."""

    def wrap(build: Callable[..., Any]) -> Callable[..., Any]:
        global _VERSION
        _VERSION += 1
        _REGISTRY[name] = AgentSpec(name, frozenset(supports), build, description, prompts, needs, variant=variant,
                                    uses=uses, loop_checks=loop_checks, control_answers=control_answers,
                                    replays_outputs=replays_outputs, plain_loop=plain_loop)
        return build

    return wrap


_LOADED = False  # every module of AGENT_NAMES imported (each registers its agent once, when imported)


def _load_all() -> None:
    """Import the agents' modules (once: ``get_agent`` runs for every attempt, and ``import_module`` of a loaded
    module still takes the import machinery's locks)."""
    global _LOADED
    if _LOADED:
        return
    for name in AGENT_NAMES:
        importlib.import_module(f"sysmo.agents.{name}")
    _LOADED = True


def get_agent(name: str) -> AgentSpec:
    if name not in _REGISTRY and name in AGENT_NAMES:
        # each module registers the agent of its own name: a run of one agent imports that agent alone (the
        # others bring the TLA+ trace checks, MetaGPT's documents, OpenHands' tools: a second at start-up)
        importlib.import_module(f"sysmo.agents.{name}")
    if name not in _REGISTRY:
        _load_all()
    if name not in _REGISTRY:
        raise UnknownNameError(f"unknown agent {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def all_agents() -> list[AgentSpec]:
    _load_all()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]
