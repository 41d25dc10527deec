"""``sysmo agents list`` / ``sysmo agents show NAME``: what each agent is and does, drawn from its graph.

Each agent's description, task kinds, inputs, options, and its LangGraph drawn from the compiled graph
(Mermaid from ``get_graph().draw_mermaid()``, and a text list of nodes and edges), and what its repair loop
checks each round (the tool check, then its own loop checks). Everything is drawn offline; an agent whose
graph depends on the task is drawn once per variant."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from sysmo.agents.registry import AgentSpec, all_agents
from sysmo.contracts.task import TaskKind

OPTIONS = {  # the options every agent takes (sysmo run / sysmo attempt), and the agent-specific ones
    "*": ["--max-rounds N (repair rounds, default 3)",
          "--feedback none|bare|diagnostics|full (repair feedback, default diagnostics)",
          "--temperature", "--max-tokens"],
    "openhands": ["max_steps (model calls; default (max_rounds + 1) * 3)"],
    "code_translation": ["--sources-dir (checkouts of the modelled systems' code)"],
    "trace_learning": ["--sources-dir (for tasks whose traces come with the code)"],
}


class GraphDrawing(BaseModel):
    variant: str
    nodes: list[str]
    edges: list[tuple[str, str]]
    mermaid: str


class AgentDescription(BaseModel):
    name: str
    description: str
    supports: list[str]
    needs: list[str]
    uses: list[str]
    options: list[str]
    checks: list[str]  # what the repair loop checks each round, in order
    replays_outputs: bool  # published outputs (replay/... models) can answer it: its model calls are rounds
    graphs: list[GraphDrawing]


def _stand_in(kind: TaskKind, with_source: bool) -> Any:
    """The least of a context a builder reads to choose its variant (task kind, source files)."""
    inputs = SimpleNamespace(source_files={"main": ""} if with_source else {}, traces=None, source=None)
    return SimpleNamespace(task=SimpleNamespace(kind=kind, inputs=inputs, id="describe"))


def drawings(spec: AgentSpec) -> list[GraphDrawing]:
    seen: dict[str, GraphDrawing] = {}
    for kind in sorted(spec.supports, key=lambda k: k.value):
        for with_source in (True, False):
            ctx = _stand_in(kind, with_source)
            variant = spec.variant_of(ctx)
            if variant in seen:
                continue
            graph = spec.build(ctx, checkpointer=None).get_graph()
            seen[variant] = GraphDrawing(variant=variant, nodes=list(graph.nodes),
                                         edges=[(e.source, e.target) for e in graph.edges],
                                         mermaid=graph.draw_mermaid())
    return list(seen.values())


def describe(spec: AgentSpec) -> AgentDescription:
    return AgentDescription(name=spec.name, description=spec.description,
                            supports=sorted(k.value for k in spec.supports), needs=list(spec.needs),
                            uses=list(spec.uses), options=OPTIONS["*"] + OPTIONS.get(spec.name, []),
                            checks=spec.check_description, replays_outputs=spec.replays_outputs,
                            graphs=drawings(spec))


def _known(name: str) -> AgentSpec:
    specs = {s.name: s for s in all_agents()}
    if name not in specs:
        typer.echo(f"error: unknown agent {name!r}; known agents: {', '.join(specs)}", err=True)
        raise typer.Exit(2)
    return specs[name]


def list_agents(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every registered agent: what it does, the task kinds it supports, the inputs it needs."""
    specs = all_agents()
    if as_json:
        typer.echo(json.dumps([{"name": s.name, "description": s.description,
                                "supports": sorted(k.value for k in s.supports), "needs": list(s.needs),
                                "uses": list(s.uses), "replays_outputs": s.replays_outputs} for s in specs],
                               indent=2))
        return
    console = Console()
    for s in specs:
        kinds = ", ".join(sorted(k.value for k in s.supports))
        needs = f"; needs: {', '.join(s.needs)}" if s.needs else ""
        console.print(f"[bold]{s.name}[/bold] ({kinds}{needs})", soft_wrap=True, highlight=False)
        # the description wrapped at the terminal's width, indented under its agent
        console.print(textwrap.fill(s.description, width=max(40, console.width), initial_indent="  ",
                                    subsequent_indent="  ", break_on_hyphens=False), soft_wrap=True,
                      highlight=False, markup=False)


def show_agent(name: str = typer.Argument(..., help="Agent name (see `sysmo agents list`)."),
               as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """One agent: description, kinds, inputs, options, and its LangGraph (Mermaid and text)."""
    info = describe(_known(name))
    if as_json:
        typer.echo(info.model_dump_json(indent=2))
        return
    lines = [f"{info.name}: {info.description}", f"task kinds: {', '.join(info.supports)}",
             f"needs: {', '.join(info.needs) or '-'}; uses when present: {', '.join(info.uses) or '-'}",
             "options:", *(f"  {o}" for o in info.options),
             "in-loop check, each round:", *(f"  {n}. {c}" for n, c in enumerate(info.checks, 1)),
             "replays published outputs (replay/... models): "
             + ("yes, each is one round's model" if info.replays_outputs
                else "no, its model calls are not only rounds (sysmo run skips it with a replay model)")]
    for g in info.graphs:
        title = f"graph ({g.variant})" if g.variant else "graph"
        lines += [f"{title} nodes: {', '.join(g.nodes)}", f"{title} edges:",
                  *(f"  {a} -> {b}" for a, b in g.edges), "```mermaid", g.mermaid.rstrip(), "```"]
    typer.echo("\n".join(lines))


def register(app: typer.Typer) -> None:
    agents_app = typer.Typer(help="The agents: what they do, their inputs and options, their LangGraph.")
    agents_app.command("list")(list_agents)
    agents_app.command("show")(show_agent)
    app.add_typer(agents_app, name="agents")
