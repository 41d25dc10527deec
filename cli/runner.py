"""``sysmo run``, ``sysmo trace``, ``sysmo replay`` and ``sysmo report``: the experiment commands."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, get_args

import typer
import yaml
from rich.console import Console
from sysmo.terminal import print_records

from sysmo.contracts.arms import ARM_FACTORS
from sysmo.errors import ConfigError, SysmoError
from sysmo.llm.roles import ToolCalling
from sysmo.runner.config import CONTROL_MODELS
from sysmo.runner.resume import added_arms, check_resume_flags
from sysmo.log import library_warnings_into
from sysmo.runner.summary import skipped_lines, skipped_reasons

if TYPE_CHECKING:
    from sysmo.view.models import GroupSummary

console = Console()
err_console = Console(stderr=True)

DEFAULT_OUTPUT = Path("runs")


def _find_experiment(ref: str, output_dir: Path) -> Path:
    """An experiment directory from an id, a directory or a results.sqlite path."""
    path = Path(ref)
    if path.is_file() and path.name == "results.sqlite":
        return path.parent
    if (path / "results.sqlite").is_file():
        return path
    if (output_dir / ref / "results.sqlite").is_file():
        return output_dir / ref
    known = sorted(p.parent.name for p in output_dir.glob("*/results.sqlite")) if output_dir.is_dir() else []
    hint = f"; experiments in {output_dir}: {', '.join(known)}" if known else f"; no experiments under {output_dir}"
    raise SysmoError(f"no experiment {ref!r}{hint}")


@contextmanager
def _otel_observers(url: str | None, experiment_id: str) -> Iterator[list]:
    """The run's OpenTelemetry export (``export.otel.live_export``) when --otel-endpoint or the environment asks for
    one; otherwise no observer, and the export's module is not imported."""
    import os

    if not url and not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        yield []
        return
    from sysmo.export.otel import live_export

    with live_export(url, experiment_id, lambda text: err_console.print(text, soft_wrap=True, highlight=False,
                                                                         markup=False)) as observers:
        yield observers


def _experiment_named(ref: str, output_dir: Path) -> Path | None:
    """The experiment directory ``ref`` names (an id under ``output_dir`` or a directory), or None."""
    for candidate in (Path(ref), output_dir / ref):
        if (candidate / "results.sqlite").is_file():
            return candidate
    return None


def _find_attempt(ref: str, output_dir: Path):
    """The attempt ``ref`` names (an id or a unique prefix) among every experiment under ``output_dir``.

    A prefix that matches attempts of several experiments, or several attempts of one, is an error that lists
    the candidates with their experiment, task, agent, model and sample, so the right one can be pasted back."""
    from sysmo.store import Store

    candidates: list[tuple[Path, str]] = []
    for db in sorted(output_dir.glob("*/results.sqlite")) if output_dir.is_dir() else []:
        store = Store(db)
        try:
            candidates += [(db, attempt_id) for attempt_id in store.attempt_ids_matching(ref)]
        finally:
            store.close()
    if not candidates:
        raise SysmoError(f"no attempt {ref!r} in any experiment under {output_dir}; "
                         "`sysmo trace EXP --failed` lists attempt ids")
    if len(candidates) > 1:
        lines = []
        for db, attempt_id in candidates[:10]:
            store = Store(db)
            try:
                row = store.query("SELECT task_id, agent, model, sample_index FROM attempts WHERE id=?", (attempt_id,))[0]
            finally:
                store.close()
            lines.append(f"{attempt_id} ({db.parent.name}: {row['task_id']} {row['agent']} {row['model']} "
                         f"sample {row['sample_index']})")
        more = f"; and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        raise SysmoError(f"attempt id prefix {ref!r} is ambiguous, {len(candidates)} attempts match: "
                         + "; ".join(lines) + more)
    db, attempt_id = candidates[0]
    store = Store(db)
    return store, store.attempt(attempt_id)


def _failure_reason(store, attempt_id: str) -> str:
    """Why a stored attempt did not pass (``Attempt.failure_reason``), read from its record without its events."""
    from sysmo.contracts.attempt import Attempt

    rows = store.query("SELECT attempt_json FROM attempts WHERE id=?", (attempt_id,))
    return (Attempt.model_validate_json(rows[0]["attempt_json"]).failure_reason() or "") if rows else ""


def _group_summaries(store, experiment_id: str) -> list[GroupSummary]:
    """The experiment's counts per (agent, model, kind, arm), as ``sysmo view``'s experiment page has them."""
    from sysmo.view.gather import attempt_rows, group_summaries

    return group_summaries(attempt_rows(store, experiment_id))


def _print_group_summaries(groups: list[GroupSummary], experiment_id: str) -> None:
    """The summary table under ``sysmo trace EXP``'s attempts: one row per agent, model, kind and arm (no rate
    over several arms), forks left out."""
    several = any(g.arm for g in groups)
    columns = ["agent", "model", *(["arm"] if several else []), "kind", "attempts", "passed", "failed", "errors",
               "pass rate"]
    records = [{"agent": g.agent, "model": g.model, "arm": g.arm, "kind": g.kind, "attempts": g.attempts,
                "passed": g.passed, "failed": g.failed, "errors": g.errors, "pass rate": f"{g.pass_rate:.3f}"}
               for g in groups]
    print_records(console, f"summary of {experiment_id} per agent, model{', arm' if several else ''} and kind "
                  "(forks left out)", columns, records, key="arm" if several else "agent",
                  justify={c: "right" for c in ("attempts", "passed", "failed", "errors", "pass rate")})


def _arm_help(name: str) -> str:
    return ARM_FACTORS[name].help + " Several values (comma-separated, or the flag repeated) make arms."


def _arm_flags(named: dict[str, list[str]], generic: list[str]) -> dict[str, list]:
    """Each arm factor's values from its own flag and from ``--arm NAME=V1,V2``, validated."""
    from sysmo.contracts.arms import factor_values

    raw: dict[str, list[str]] = {name: list(values) for name, values in named.items() if values}
    for item in generic:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in ARM_FACTORS:
            raise ConfigError(f"--arm {item!r}: write NAME=V1,V2 with NAME one of {', '.join(ARM_FACTORS)}")
        raw.setdefault(name, []).append(values)
    try:
        parsed = {name: factor_values(name, values) for name, values in raw.items()}
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    for value in parsed.get("strategy", []):
        if value is not None:
            from sysmo.agents.strategies import parse_strategy

            parse_strategy(value)  # an unknown name is one line listing the four
    return parsed


def _error_cell(status: str, error: str | None) -> str:
    """An attempt's error for the list, led by its cause when it errored (``model: ...``); a failed or
    uncovered attempt's note as it is."""
    from sysmo.evals.error_kinds import error_kind

    kind = error_kind(status, error)
    return f"{kind}: {error}" if kind and error else error or ""


def with_tool_calling(models: list[Any], mode: str) -> list[Any]:
    """The generator models with their role option ``tool_calling`` set to ``mode`` (``auto``, the default, is left
    unset, so a model given by name alone stays a name and a resume with ``--tool-calling auto`` changes nothing)."""
    if mode not in get_args(ToolCalling):
        raise ConfigError(f"--tool-calling must be auto, native or text, not {mode!r}")
    changed: list[Any] = []
    for model in models:
        role = dict(model) if isinstance(model, dict) else {"model": model}
        if mode == "auto":
            role.pop("tool_calling", None)
        else:
            role["tool_calling"] = mode
        changed.append(role["model"] if set(role) == {"model"} else role)
    return changed


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Run agents x models x tasks x samples, score every attempt, store everything, write a report.\n\n"
        "With no arguments: the offline CONTROL experiment on the starter suite (`reference` and "
        "`mockllm/control` providers, all five agents) - no LLM needed.\n\n"
        "Real models: --model openai/gpt-4.1 (OPENAI_API_KEY), --model anthropic/claude-sonnet-4-5 "
        "(ANTHROPIC_API_KEY), or a local OpenAI-compatible server: --model openai/qwen2.5-coder "
        "--api-base http://127.0.0.1:8000/v1. Published data: --data-dir DIR --benchmark sysmbench."))
    def run(
        config_file: Optional[Path] = typer.Argument(None, help="Experiment YAML (fields of ExperimentConfig)."),
        agent: list[str] = typer.Option([], "--agent", "-a", rich_help_panel="Arms", help="Agent(s); default all five."),
        model: list[str] = typer.Option([], "--model", "-m", rich_help_panel="Models", help=(
            "Generator model(s): litellm name, a LangChain chat model (langchain:openai/<model>, "
            "langchain:<module>:<factory>), mockllm/<script>, reference, or replay/<source>:<model> "
            "(published outputs, e.g. replay/designbench:qwen3).")),
        api_base: Optional[str] = typer.Option(None, rich_help_panel="Models", help="OpenAI-compatible endpoint for the --model(s)."),
        helper: Optional[str] = typer.Option(None, rich_help_panel="Models", help="Helper-role model (mappings, invariant concretisation)."),
        judge: Optional[str] = typer.Option(None, rich_help_panel="Models", help="Judge-role model (SysMEval, architecture rubric)."),
        tool_calling: Optional[str] = typer.Option(
            None, "--tool-calling", metavar="auto|native|text", rich_help_panel="Models", help="How the openhands "
            "agent's tool calls travel to the --model(s): native (tools=), text (fenced JSON blocks in the reply) or "
            "auto (default: litellm's model map, text if the first reply has no tool call; docs/agents/openhands.md)."),
        benchmark: list[str] = typer.Option([], "--benchmark", "-b", rich_help_panel="Tasks", help="Task families: starter, sysmobench, sysmbench, ..."),
        kind: list[str] = typer.Option([], "--kind", rich_help_panel="Tasks", help="tla, sysml, uml_class, architecture."),
        domain: list[str] = typer.Option([], "--domain", rich_help_panel="Tasks", help="Domain (case-insensitive; globs allowed)."),
        difficulty: list[str] = typer.Option([], "--difficulty", rich_help_panel="Tasks", help="Difficulty level or range, e.g. 1 or 1-2."),
        grammar: list[str] = typer.Option([], "--grammar", rich_help_panel="Tasks", help="Key grammar label (SysMBench; globs allowed)."),
        ids: list[str] = typer.Option([], "--ids", rich_help_panel="Tasks", help="Task id globs, e.g. 'sysmbench/1*'."),
        exclude: list[str] = typer.Option([], "--exclude", rich_help_panel="Tasks", help="Task id globs to leave out."),
        ablation: list[str] = typer.Option([], "--ablation", rich_help_panel="Tasks", help="R2ABench input: full (default), no-arch, min, srs, all."),
        similarity: Optional[str] = typer.Option(None, "--similarity", rich_help_panel="Output", help="Architecture node alignment: exact, token, "
                                                 "embedding (MiniLM) or judge; default judge if --judge, else MiniLM (token "
                                                 "when its weights are not installed, said in the report)."),
        sample_tasks: Optional[int] = typer.Option(None, "--sample-tasks", rich_help_panel="Tasks", help="Run a seeded sample of N tasks."),
        data_dir: Optional[Path] = typer.Option(None, rich_help_panel="Tasks", help="Benchmark data directory (or SYSMO_DATA_DIR)."),
        sources_dir: Optional[Path] = typer.Option(
            None, "--sources-dir", rich_help_panel="Tasks", help="Checkouts of the modelled systems' source, one folder per SysMoBench task "
            "(or SYSMO_SOURCES_DIR); code-based agents need them."),
        samples: Optional[int] = typer.Option(None, "--samples", "-n", rich_help_panel="Arms", help="Samples per (task, agent, model); default 5."),
        max_rounds: list[str] = typer.Option([], "--max-rounds", metavar="VALUES", rich_help_panel="Arms", help=_arm_help("max_rounds")),
        feedback: list[str] = typer.Option([], "--feedback", metavar="VALUES", rich_help_panel="Arms", help=_arm_help("feedback")),
        strategy: list[str] = typer.Option([], "--strategy", metavar="VALUES", rich_help_panel="Arms", help=_arm_help("strategy")),
        temperature: list[str] = typer.Option([], "--temperature", metavar="VALUES", rich_help_panel="Arms", help=_arm_help("temperature")),
        arm: list[str] = typer.Option([], "--arm", metavar="NAME=VALUES", rich_help_panel="Arms", help="Any arm factor as NAME=V1,V2 (" + ", ".join(ARM_FACTORS)
                                      + "); the flags above are its short forms (docs/ablations.md)."),
        max_tokens: Optional[int] = typer.Option(None, "--max-tokens", rich_help_panel="Limits", help="Output token limit per model call."),
        seed: Optional[int] = typer.Option(None, rich_help_panel="Arms", help="Seed of task sampling and of the per-sample seeds sent to "
                                           "the model (the same in every arm); default 0."),
        attempt_timeout: Optional[float] = typer.Option(
            None, "--attempt-timeout", rich_help_panel="Limits", help="Wall-clock seconds one attempt may take (default 1800; 0: no limit); "
            "an attempt past it is an infrastructure error naming the step it stopped in."),
        concurrency: Optional[int] = typer.Option(None, rich_help_panel="Limits", help="Attempts in flight; default 4."),
        max_cost: Optional[float] = typer.Option(None, rich_help_panel="Limits", help="Stop scheduling once this many USD are spent."),
        max_tokens_total: Optional[int] = typer.Option(None, "--max-total-tokens", rich_help_panel="Limits", help="Stop once this many tokens are used."),
        exp_id: Optional[str] = typer.Option(None, "--id", rich_help_panel="Output", help="Experiment id (default: derived)."),
        output_dir: Path | None = typer.Option(None, "--output-dir", "-o", rich_help_panel="Output", help="Where experiments live (default: the experiment file's output_dir, else runs/)."),
        resume: Optional[str] = typer.Option(None, rich_help_panel="Output", help="Resume experiment EXP: finished attempts are not recomputed."),
        executor: Optional[str] = typer.Option(None, rich_help_panel="Execution", help="local (default) or ray."),
        processes: Optional[str] = typer.Option(
            None, "--processes", metavar="N|auto", rich_help_panel="Execution", help="Local executor: run attempts in N worker processes (auto: "
            "one per core); default 1. More cores for fast attempts (control, replay); each process starts its "
            "own tool servers (docs/running.md)."),
        address: Optional[str] = typer.Option(None, "--ray-address", "--address", rich_help_panel="Execution", help="With --executor ray: the "
                                              "cluster to run on (auto, or HEAD:PORT; docs/ray.md); default: a Ray "
                                              "instance of this machine."),
        ray_workers: Optional[int] = typer.Option(None, rich_help_panel="Execution", help="Ray worker processes (default: one per node of "
                                                  "the cluster)."),
        checkpoints: Optional[str] = typer.Option(
            None, rich_help_panel="Output", help="steps (default): LangGraph's checkpoint of every step of every attempt, to list and fork; "
            "none: attempt records only (fastest)."),
        no_progress: bool = typer.Option(False, "--no-progress", rich_help_panel="Output", help="No progress output (off a terminal, e.g. "
                                         "a log file or CI, progress is a plain line every 5% or 30 s)."),
        no_report: bool = typer.Option(False, "--no-report", rich_help_panel="Output", help="Skip writing the report at the end."),
        scoring_mode: Optional[str] = typer.Option(
            None, "--scoring-mode", rich_help_panel="Output", help="sysmo (default): corrected scoring whose numbers do not depend on the "
            "machine's load; harness: the reference harnesses' definitions, flaws included (docs/scoring-modes.md)."),
        no_score: bool = typer.Option(False, "--no-score", rich_help_panel="Output", help="Run and check every attempt with the tools, but "
                                      "do not score it (no cascade; `score: false` in a config file)."),
        allow_unconfined: bool = typer.Option(False, "--allow-unconfined", rich_help_panel="Execution", help="Run the tools on model output "
                                              "even where neither bubblewrap nor `unshare` can confine them."),
        otel_endpoint: Optional[str] = typer.Option(
            None, "--otel-endpoint", metavar="URL", help="Send each attempt, once stored, as an OpenTelemetry trace "
            "to this OTLP/HTTP collector (Phoenix, Langfuse, Jaeger; default: OTEL_EXPORTER_OTLP_ENDPOINT); needs "
            "the extra otel (docs/observability.md)."),
    ) -> None:
        from sysmo.runner import ExperimentConfig, run_experiment
        from sysmo.sandbox.confine import describe_isolation, enable_unconfined

        if allow_unconfined:
            enable_unconfined()

        stored: ExperimentConfig | None = None
        flags: dict[str, list[str]] = {}  # setting -> the flags that set it (a resume names them when refused)

        def given(setting: str, flag: str) -> None:
            flags.setdefault(setting, []).append(flag)

        if resume:
            if config_file is not None:
                raise ConfigError(f"--resume {resume} reads the experiment's own config.yaml: give no config file")
            directory = _find_experiment(resume, output_dir or DEFAULT_OUTPUT)
            stored = ExperimentConfig.model_validate(yaml.safe_load((directory / "config.yaml").read_text()))
            stored.output_dir, stored.id = directory.parent, directory.name
            data = stored.model_dump()
        else:
            data = ExperimentConfig.from_yaml(config_file).model_dump(exclude_unset=True) if config_file else {}
        # the flags, over the config file's settings (a run) or the stored ones (a resume)
        tasks = dict(data.get("tasks") or {})
        task_flags = {"benchmarks": "--benchmark", "kinds": "--kind", "domains": "--domain",
                      "difficulties": "--difficulty", "grammars": "--grammar", "ids": "--ids",
                      "exclude_ids": "--exclude", "ablations": "--ablation", "sample": "--sample-tasks",
                      "seed": "--seed"}
        before_tasks = dict(tasks)
        if benchmark:
            tasks["benchmarks"] = benchmark
        if kind:
            tasks["kinds"] = kind
        for key, values in (("domains", domain), ("difficulties", difficulty), ("grammars", grammar),
                            ("ids", ids), ("exclude_ids", exclude)):
            if values:
                tasks[key] = [i.strip() for chunk in values for i in chunk.split(",") if i.strip()]
        if ablation:
            tasks["ablations"] = [a.strip() for chunk in ablation for a in chunk.split(",") if a.strip()]
        if similarity is not None:
            if similarity not in ("exact", "token", "embedding", "judge"):
                raise ConfigError(f"--similarity must be exact, token, embedding or judge, not {similarity!r}")
            data["scoring"] = {**dict(data.get("scoring") or {}), "similarity": similarity}
        if sample_tasks:
            tasks["sample"] = sample_tasks
        if seed is not None:
            tasks["seed"] = seed
        for key, flag in task_flags.items():
            if tasks.get(key) != before_tasks.get(key):
                given("tasks", flag)
        if tasks:
            data["tasks"] = tasks
        if agent:
            data["agents"] = agent
            given("agents", "--agent")
        if model:
            data["models"] = [{"model": m, "api_base": api_base} if api_base else m for m in model]
            given("models", "--model")
        elif api_base and stored is not None:  # a resume: the endpoint of the stored models (refused if it moves)
            data["models"] = [{**(m if isinstance(m, dict) else {"model": m}), "api_base": api_base}
                              for m in stored.models]
            given("models", "--api-base")
        elif api_base:
            raise ConfigError("--api-base needs --model (e.g. --model openai/<served-name>)")
        if tool_calling is not None:
            data["models"] = with_tool_calling(data.get("models") or list(CONTROL_MODELS), tool_calling)
            given("models", "--tool-calling")
        arm_values = _arm_flags({"feedback": feedback, "strategy": strategy, "temperature": temperature,
                                 "max_rounds": max_rounds}, arm)
        for name, values in arm_values.items():
            # a resume keeps the arms it has and adds the values it lacks (docs/ablations.md)
            data[name] = (list(data.get(name) or []) + [v for v in values if v not in (data.get(name) or [])]
                          if stored is not None else values)
            given(name, ARM_FACTORS[name].flag)
        for key, value, flag in (("helper", helper, "--helper"), ("judge", judge, "--judge"),
                                 ("data_dir", data_dir, "--data-dir"), ("sources_dir", sources_dir, "--sources-dir"),
                                 ("samples", samples, "--samples"), ("max_tokens", max_tokens, "--max-tokens"),
                                 ("seed", seed, "--seed"), ("attempt_timeout", attempt_timeout, "--attempt-timeout"),
                                 ("concurrency", concurrency, "--concurrency"), ("id", exp_id, "--id"),
                                 ("executor", executor, "--executor"), ("processes", processes, "--processes"),
                                 ("ray_address", address, "--ray-address"),
                                 ("ray_workers", ray_workers, "--ray-workers"),
                                 ("checkpoints", checkpoints, "--checkpoints"),
                                 ("scoring_mode", scoring_mode, "--scoring-mode")):
            if value is not None:
                data[key] = value
                given(key, flag)
        if similarity is not None:
            given("scoring", "--similarity")
        if no_score:
            data["score"] = False
            given("score", "--no-score")
        if max_cost is not None or max_tokens_total is not None:
            data["budget"] = {"max_cost_usd": max_cost, "max_tokens": max_tokens_total}
            given("budget", "--max-cost/--max-total-tokens")
        if stored is None:  # --output-dir, else the experiment file's output_dir, else runs/
            data["output_dir"] = output_dir or data.get("output_dir") or DEFAULT_OUTPUT
        try:
            config = ExperimentConfig.model_validate(data)
        except Exception as exc:  # pydantic ValidationError: say which field
            raise ConfigError(f"invalid experiment settings: {exc}") from exc
        if stored is None:  # the same settings run again the same day: a fresh id, and how to resume the first
            config, taken = config.with_free_id()
            if taken:
                err_console.print(f"{taken} (these settings, today) already exists in {config.output_dir}: this "
                                  f"run is {config.id}; `sysmo run --resume {taken} -o {config.output_dir}` would "
                                  "continue that one instead", soft_wrap=False, highlight=False)
        if stored is not None:
            check_resume_flags(stored, config, flags)
            for label in added_arms(stored, config):
                err_console.print(f"adding arm {label} to {stored.id} (the arms run before are kept)",
                                  soft_wrap=True)
        if config.is_control:
            err_console.print("[bold yellow]CONTROL experiment[/]: offline providers (reference, mockllm); "
                              "no LLM is called and the numbers measure the harness, not a model.")
        elif config.kind == "replay":
            err_console.print("[bold cyan]REPLAY experiment[/]: answers are published outputs of real models "
                              "(replay/<source>:<model>); no LLM is called and nothing is spent.")
        directory = config.output_dir / config.experiment_id()
        # library warnings (matplotlib's, a parser's) go to the experiment's run.log, not between the progress lines
        with library_warnings_into(directory / "run.log") as warned:
            with _otel_observers(otel_endpoint, config.experiment_id()) as observers:
                summary = run_experiment(config, progress=not no_progress, resume=bool(resume), observers=observers)
            for line in summary.lines(config.label, replay=config.kind == "replay"):
                console.print(line, soft_wrap=True, highlight=False)
            if not no_report:
                from sysmo.evals.report import write_report

                err_console.print(f"writing the report: tables, plots and paired statistics into "
                                  f"{summary.directory / 'report'} ...", highlight=False)
                paths = write_report(summary.directory)
                from sysmo.view.report_cache import save_report_view

                save_report_view(summary.directory)  # `sysmo view`'s report page, ready at its first request
        if summary.unsupported:
            with (directory / "run.log").open("a", encoding="utf-8") as log_file:
                log_file.writelines(f"skipped: {line}\n" for line in skipped_reasons(summary.unsupported))
        isolation = describe_isolation()
        (summary.directory / "isolation.json").write_text(json.dumps(isolation, indent=2))
        console.print(f"tool isolation: {isolation['level']} ({isolation['detail']})", highlight=False)
        if summary.unsupported:
            for line in skipped_lines(summary.unsupported, width=console.width):
                console.print(line, soft_wrap=True, highlight=False)
            console.print(f"  (each pair's reason: {directory / 'run.log'})", soft_wrap=True)
        for note in summary.missing_inputs + summary.cost_notes:
            console.print(f"[yellow]note:[/] {note}")  # prose: wrapped at the terminal's width
        if summary.stopped and not summary.provider_failure:
            console.print(f"[yellow]stopped early:[/] {summary.stopped}. Continue with "
                          f"`sysmo run --resume {summary.experiment_id} -o {config.output_dir}`")
        if warned:
            console.print(f"warnings: {len(warned)}, in {directory / 'run.log'}", soft_wrap=True)
        if not no_report:
            from sysmo.evals.headlines import headline_lines

            for line in headline_lines(summary.directory):
                console.print(line, highlight=False)
            console.print(f"report: {paths.get('markdown')}", soft_wrap=True)
            console.print(f"html: {paths.get('html')}", soft_wrap=True)
        console.print(f"inspect an attempt: sysmo trace {summary.experiment_id} --failed -o {config.output_dir}")
        console.print(f"or in a browser: sysmo view {config.output_dir}")
        if summary.provider_failure:  # every stored attempt kept; the cause in one line, on stderr, exit 2
            err_console.print(f"[red]error:[/] {summary.provider_failure}; stopped after {summary.ran} attempts "
                              f"(all stored). Fix it, then `sysmo run --resume {summary.experiment_id} -o "
                              f"{config.output_dir}`", soft_wrap=True, highlight=False)
            raise typer.Exit(2)

    @app.command(help="Show one attempt round by round (prompt, reply, diff, diagnostics by line, scores); "
                      "given an experiment id, its attempts and its counts per agent, model, arm and kind; with "
                      "--failed/--all, list its attempts only.")
    def trace(
        ref: str = typer.Argument(..., help="Attempt id (or prefix), or experiment id with --failed/--all."),
        failed: bool = typer.Option(False, "--failed", help="List the attempts worth reading (not passed)."),
        all_attempts: bool = typer.Option(False, "--all", help="List every attempt of the experiment."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable JSON."),
        full: bool = typer.Option(False, "--full", help="Unfold every long block: prompts, replies, numbered "
                                  "artifacts, diffs, diagnostics and tool answers (folded by default)."),
        output_dir: Path = typer.Option(DEFAULT_OUTPUT, "--output-dir", "-o"),
    ) -> None:
        import json

        from sysmo.evals.error_kinds import error_kind
        from sysmo.contracts.arms import short_label
        from sysmo.evals.tables import experiment_settings
        from sysmo.evals.trace_view import attempt_json, render_attempt, settings_panel
        from sysmo.store import Store

        experiment_dir = _experiment_named(ref, output_dir)
        if failed or all_attempts or experiment_dir is not None:
            directory = experiment_dir or _find_experiment(ref, output_dir)
            store = Store(directory / "results.sqlite")
            settings = experiment_settings(store, directory.name)
            sql = ("SELECT id, task_id, agent, model, sample_index, arm, seed, status, n_rounds, error, "
                   "parent_attempt_id FROM attempts WHERE experiment_id=?")
            if failed:
                sql += " AND status != 'passed'"
            rows = [dict(r) for r in store.query(sql + " ORDER BY task_id, agent, model, sample_index, arm",
                                                 (directory.name,))]
            for r in rows:  # why each attempt that did not pass did not: its error, or its last check's first error
                r["reason"] = (_error_cell(r["status"], r["error"]) if r["error"] or r["status"] == "passed"
                               else _failure_reason(store, r["id"]))
            groups = _group_summaries(store, directory.name) if not (failed or all_attempts) else []
            if as_json:
                print(json.dumps({"experiment": directory.name, "settings": settings,
                                  "summary": [g.model_dump() for g in groups],
                                  "attempts": [{**dict(r), "error_kind": error_kind(r["status"], r["error"])}
                                               for r in rows]} if experiment_dir is not None and not
                                 (failed or all_attempts) else
                                 [{**dict(r), "error_kind": error_kind(r["status"], r["error"])} for r in rows],
                                 indent=2, default=str))
                return
            if failed and not rows:  # one line, not an empty table under the settings
                total = store.query("SELECT COUNT(*) AS n FROM attempts WHERE experiment_id=?",
                                    (directory.name,))[0]["n"]
                console.print(f"no failed attempts in {directory.name} ({total} attempts, all passed)",
                              highlight=False)
                return
            console.print(settings_panel(settings, f"settings of {directory.name}"))
            varied = [name for name in ARM_FACTORS if len(settings[name]) > 1]
            several = len(settings["arms"]) > 1  # the arm column only where there is a choice, naming the choice
            records = [{"attempt": r["id"], "task": r["task_id"], "agent": r["agent"], "model": r["model"],
                        # a fork (sysmo fork) shares its parent's sample; the cell says whose fork it is
                        "sample": r["sample_index"] if not r["parent_attempt_id"]
                        else f"{r['sample_index']} (fork of {r['parent_attempt_id']})",
                        **({"arm": short_label(r["arm"] or "", varied)} if several else {}),
                        "status": r["status"], "rounds": r["n_rounds"], "reason": r["reason"]}
                       for r in rows]
            # ids, tasks and agents whole (an id can be pasted back); a narrow terminal gets one block per attempt
            forks = sum(1 for r in rows if r["parent_attempt_id"])  # beside the plan's attempts, not among them
            counted = f": {len(rows) - forks} of the plan · {forks} fork{'s' if forks > 1 else ''}" if forks else ""
            print_records(console, f"{'failed ' if failed else ''}attempts of {directory.name}{counted}",
                          ["attempt", "task", "agent", "model", "sample", *(["arm"] if several else []), "status",
                           "rounds", "reason"], records,
                          justify={"sample": "right", "rounds": "right"}, wrap=("reason", "arm"),
                          styles={"status": {"passed": "green", "failed": "yellow", "error": "bold red"}})
            if experiment_dir is not None and not (failed or all_attempts):  # the experiment, not a list asked for
                _print_group_summaries(groups, directory.name)
            return
        store, attempt = _find_attempt(ref, output_dir)
        card = store.scorecard(attempt.id)
        forks = store.forks_of(attempt.id)
        experiment_id = store.query("SELECT experiment_id FROM attempts WHERE id=?", (attempt.id,))[0]["experiment_id"]
        settings = experiment_settings(store, experiment_id)
        if as_json:
            print(attempt_json(attempt, card, experiment_dir=store.path.parent, forks=forks, settings=settings))
        else:
            render_attempt(attempt, card, console, full=full, experiment_dir=store.path.parent, forks=forks,
                           settings=settings)

    @app.command(help="Re-run a stored attempt from its recorded model calls (no model is called), re-check "
                      "with the real tools, re-score, and say whether artifacts and scores are identical.")
    def replay(
        ref: str = typer.Argument(..., help="Attempt id (or unique prefix)."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable JSON."),
        scoring_mode: Optional[str] = typer.Option(
            None, "--scoring-mode", help="sysmo (default): corrected scoring whose numbers do not depend on the "
            "machine's load; harness: the reference harnesses' definitions, flaws included (docs/scoring-modes.md)."),
        no_score: bool = typer.Option(False, "--no-score", help="Compare the artifacts only."),
        output_dir: Path = typer.Option(DEFAULT_OUTPUT, "--output-dir", "-o"),
    ) -> None:
        from sysmo.runner.replay import replay_attempt

        store, attempt = _find_attempt(ref, output_dir)
        try:
            result = replay_attempt(store, attempt, score=not no_score)
        finally:
            store.close()
        if as_json:
            print(result.model_dump_json(indent=2))
        else:
            verdict = "[green]identical[/green]" if result.identical else "[bold red]DIFFERENT[/bold red]"
            console.print(f"replay of {result.attempt_id} ({result.experiment_id}): {verdict}")
            console.print(f"  status {result.stored_status} -> {result.status}, {result.rounds} round(s); "
                          f"model calls answered from the record: {result.model_calls_answered} of "
                          f"{result.model_calls_recorded} recorded, live model calls: {result.live_model_calls}; "
                          f"scores {'compared' if result.score_compared else 'not compared'}")
            for difference in result.differences:
                console.print(f"  - {difference}", markup=False)
        if not result.identical:
            raise typer.Exit(1)

    @app.command(help=(
        "Run a stored attempt again from one of its graph steps with a change, as a new attempt of the same "
        "experiment linked to it (LangGraph fork of its checkpoint): the steps before STEP are the parent's, the "
        "rest runs with the real tools and is scored like any attempt.\n\n"
        "STEP (as `sysmo trace ATTEMPT` lists the graph steps): round:N (the state just before round N's model "
        "call; round:0 is the first request), a step number (LangGraph's step: the state after it, re-running what "
        "came next), or a checkpoint id (or a unique prefix of 4+ characters).\n\n"
        "--prompt-file replaces the request the next model call sends (STEP must be just before a model call): "
        "a .json file holding a list of {role, content} messages is the whole request (system prompt included); "
        "any other file's text replaces the content of the request's last user message (at round:0 the task "
        "prompt, at round:N>0 the repair feedback). docs/fork.md has a worked example."))
    def fork(
        ref: str = typer.Argument(..., help="Attempt id (or unique prefix) to fork."),
        at: str = typer.Option(..., "--at", help="Step to resume: round:N, a step number, or a checkpoint id."),
        model: Optional[str] = typer.Option(None, "--model", "-m", help="Generator model from STEP on (as --model "
                                            "of `sysmo run`); default: the parent's."),
        api_base: Optional[str] = typer.Option(None, help="OpenAI-compatible endpoint of --model."),
        feedback: Optional[str] = typer.Option(None, "--feedback", help="Repair feedback from STEP on: none, bare, "
                                               "diagnostics, full; at round:N>0 the pending repair request is "
                                               "rebuilt at this level."),
        prompt_file: Optional[Path] = typer.Option(None, "--prompt-file", help="Replaces the next model request "
                                                   "(see above)."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable JSON."),
        output_dir: Path = typer.Option(DEFAULT_OUTPUT, "--output-dir", "-o"),
    ) -> None:
        from sysmo.graphs.repair import Feedback
        from sysmo.runner.fork import ForkRequest, fork_attempt

        if feedback is not None and feedback not in {f.value for f in Feedback}:
            raise ConfigError(f"--feedback must be one of {', '.join(f.value for f in Feedback)}, not {feedback!r}")
        if api_base is not None and model is None:
            raise ConfigError("--api-base needs --model (e.g. --model openai/<served-name>)")
        store, attempt = _find_attempt(ref, output_dir)
        try:
            result = fork_attempt(store, attempt, ForkRequest(at=at, model=model, api_base=api_base,
                                                              feedback=feedback, prompt_file=prompt_file))
        finally:
            store.close()
        if as_json:
            print(result.model_dump_json(indent=2))
            return
        changes = ", ".join(f"{k} {v}" for k, v in result.changes.items()) or "no change"
        console.print(f"fork {result.attempt_id} of {result.parent_attempt_id} ({result.experiment_id}) at step "
                      f"{result.forked_at_step} (checkpoint {result.forked_at}), {changes}", soft_wrap=True)
        scores = ", ".join(f"{stage}={value:.3f}" for stage, value in result.scores.items()) or "not scored"
        changed = f", with feedback {result.changes['feedback']}" if "feedback" in result.changes else ""
        seed = f"seed {result.seed} (the parent's)" if result.seed is not None else "no seed (the parent sent none)"
        console.print(f"  arm {result.arm} (the parent's{changed}) · {seed}", soft_wrap=True)
        n = result.inherited_rounds
        inherited = f"{n} from the parent, timed as the parent ran {'it' if n == 1 else 'them'}" if n \
            else "none from the parent"
        console.print(f"  status {result.status} after {result.rounds} round(s) ({inherited}) in "
                      f"{result.duration_s:.2f} s of its own; scores: {scores}", soft_wrap=True)
        for note in result.notes:
            console.print(f"[yellow]note:[/] {note}", soft_wrap=True)
        console.print(f"inspect it: sysmo trace {result.attempt_id} -o {output_dir}")

    @app.command(name="list", help="List the experiments of a runs directory, newest first: status, attempts "
                                   "(stored of planned), pass rate (passed / finished attempts), money spent, date.")
    def list_experiments(
        runs_dir: Path = typer.Argument(DEFAULT_OUTPUT, help="A runs directory (default runs/)."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable JSON."),
    ) -> None:
        from sysmo.runner.listing import experiment_rows

        rows = experiment_rows(runs_dir)
        if as_json:
            print(json.dumps([{**r.model_dump(), "pass_rate": r.pass_rate} for r in rows], indent=2))
            return
        if not rows:
            console.print(f"no experiments in {runs_dir} (`sysmo run` makes one)", highlight=False)
            return
        records = [{"experiment": r.id, "status": r.status,
                    "attempts": f"{r.attempts}" + (f" of {r.planned}" if r.planned is not None else ""),
                    "pass rate": f"{r.pass_rate:.3f}" if r.pass_rate is not None else "-",
                    "spent $": f"{r.spent_usd:.4f}", "created (UTC)": r.created} for r in rows]
        print_records(console, f"experiments in {runs_dir}", list(records[0]), records,
                      justify={"attempts": "right", "pass rate": "right", "spent $": "right"})
        console.print("pass rate: passed / finished attempts (passed, failed or error)", highlight=False)

    @app.command(help="Write the report of an experiment: Markdown + HTML tables, PNG plots, CSV + Parquet.")
    def report(
        ref: str = typer.Argument(..., help="Experiment id or directory."),
        output_dir: Path = typer.Option(DEFAULT_OUTPUT, "--output-dir", "-o"),
        baseline: list[str] = typer.Option([], "--baseline", metavar="FACTOR=LEVEL", help=(
            "The paired section compares every level of FACTOR with LEVEL (repeatable, one per factor), e.g. "
            "feedback=bare; default: feedback none, strategy default, the smallest temperature and max_rounds, the "
            "first agent and model.")),
        all_pairs: bool = typer.Option(False, "--all-pairs", help=(
            "The paired section compares every pair of levels of each factor without a --baseline, all p-values "
            "adjusted together.")),
    ) -> None:
        from sysmo.evals.paired import Pairing
        from sysmo.evals.report import write_report

        pairing = Pairing.of(baseline, all_pairs)
        from sysmo.evals.headlines import headline_lines

        directory = _find_experiment(ref, output_dir)
        err_console.print(f"writing the report of {directory.name}: tables, plots and paired statistics into "
                          f"{directory / 'report'} ...", highlight=False)
        with library_warnings_into(directory / "run.log") as warned:  # matplotlib's warnings: the log, not here
            paths = write_report(directory, pairing)
            from sysmo.view.report_cache import save_report_view

            paths["viewer"] = save_report_view(directory)  # `sysmo view`'s report page, ready at its first request
        for line in headline_lines(directory):
            console.print(line, highlight=False)
        for name, path in paths.items():
            console.print(f"{name}: {path}", soft_wrap=True)
        if warned:
            console.print(f"warnings: {len(warned)}, in {directory / 'run.log'}", soft_wrap=True)
