"""``sysmo attempt``: run one agent on one task with one model and print its rounds."""

from __future__ import annotations

import uuid
from pathlib import Path

import typer
from rich.console import Console
from sysmo.agents.registry import AGENT_NAMES
from sysmo.errors import ConfigError


from sysmo.graphs.repair import Feedback  # noqa: E402


def _bad_feedback(value: str) -> str:
    raise ConfigError(f"unknown --feedback {value!r}; use one of: {', '.join(f.value for f in Feedback)}")


def register(app: typer.Typer) -> None:
    app.command("attempt", help="Run one attempt (one agent, one task, one model) and print its rounds.")(
        attempt
    )
    from sysmo.agents.describe import register as register_describe

    register_describe(app)


def attempt(
    task: str = typer.Option(
        ..., "--task", help="Task id, e.g. starter/sysml/coffee_machine (see `sysmo tasks list`)."
    ),
    agent: str = typer.Option(
        ..., "--agent", help=", ".join(AGENT_NAMES) + "."
    ),
    model: str = typer.Option(
        ..., "--model", help="litellm model string, `langchain:openai/<model>`, `langchain:<module>:<factory>`, "
        "`reference` or `mockllm/<script>`."
    ),
    api_base: str | None = typer.Option(
        None, "--api-base", help="OpenAI-compatible server (vLLM, Ollama, a proxy)."
    ),
    max_rounds: int = typer.Option(3, "--max-rounds", min=0, help="Repair rounds after the first answer."),
    feedback: str = typer.Option("diagnostics", "--feedback", help="Repair feedback: none (one shot), bare, "
                                 "diagnostics, full (docs/agents/feedback-and-strategies.md)."),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Benchmark data directory (or SYSMO_DATA_DIR)."
    ),
    sources_dir: Path | None = typer.Option(
        None, "--sources-dir", help="Checkouts of the systems' source code."
    ),
    sample: int = typer.Option(0, "--sample", min=0, help="Sample index (part of the response-cache key)."),
    seed: int = typer.Option(0, "--seed", help="Seed the per-sample seed sent with every model call derives from, "
                             "as in `sysmo run --seed` (the same task, sample and seed send the same seed)."),
    temperature: float | None = typer.Option(None, "--temperature", help="Generator temperature."),
    cache: bool = typer.Option(True, "--cache/--no-cache", help="Use the LLM response cache."),
    checkpoint_db: Path | None = typer.Option(
        None, "--checkpoint-db", help="Keep the LangGraph checkpoints of every step in this SQLite file."
    ),
    full: bool = typer.Option(
        False, "--full", help="Show every round's model, not only the annotated failures."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the attempt as JSON to this file."),
) -> None:
    from sysmo.agents.registry import get_agent
    from sysmo.agents.run import run_attempt
    from sysmo.benchmarks.registry import get_task
    from sysmo.contracts.arms import sample_seed
    from sysmo.evals.trace_view import render_attempt
    from sysmo.graphs.context import AgentContext
    from sysmo.llm import LLM, ModelRoles, RoleConfig
    from sysmo.tools.checkers import check_artifact

    if api_base and (model == "reference" or model.startswith("mockllm/")):
        raise ConfigError("--api-base is for served models; `reference` and `mockllm/...` run offline")
    spec = get_agent(agent)
    spec.check_model(model)
    the_task = get_task(task, data_dir=data_dir, sources_dir=sources_dir)
    spec.check_supports(the_task)
    llm = LLM(
        ModelRoles(generator=RoleConfig(model=model, api_base=api_base)), cache=None if cache else False
    )
    ctx = AgentContext(
        task=the_task,
        llm=llm,
        checker=check_artifact,
        attempt_id=uuid.uuid4().hex[:16],
        agent=agent,
        sample_index=sample,
        seed=sample_seed(seed, the_task.id, sample),  # the rule of a run's attempts (runner.units.expand)
        max_rounds=max_rounds,
        temperature=temperature,
        feedback=Feedback(feedback).value if feedback in {f.value for f in Feedback} else _bad_feedback(feedback),
    )
    result = run_attempt(agent, ctx, model_name=model, checkpoint_db=checkpoint_db)
    console = Console()
    render_attempt(result, None, console, full=full)
    if json_out is not None:
        from sysmo.evals.trace_view import attempt_json

        json_out.write_text(attempt_json(result, None))
    if result.status.value != "passed":
        raise typer.Exit(1)
