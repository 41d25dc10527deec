"""``sysmo export otel EXP`` and ``sysmo export inspect EXP --out DIR``: a stored experiment in other tools' formats.

``-o``/``--output-dir`` names the runs folder, as in every command; the logs' folder is ``--out``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(no_args_is_help=True, help="A stored experiment as OpenTelemetry traces or inspect_ai eval logs.")
console = Console()

RUNS_HELP = "Where experiments are (the --output-dir of `sysmo run`)."


def _experiment(ref: str, runs_dir: Path) -> Path:
    from sysmo.cli.runner import _find_experiment

    return _find_experiment(ref, runs_dir)


@app.command(help="Send every attempt of a stored experiment as an OpenTelemetry trace (OpenInference attributes) "
                  "to an OTLP/HTTP collector: Phoenix, Langfuse, Jaeger (docs/observability.md).")
def otel(
    ref: str = typer.Argument(..., help="Experiment id or directory."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", "--otel-endpoint", metavar="URL",
                                           help="The collector (default: OTEL_EXPORTER_OTLP_ENDPOINT), e.g. "
                                                "http://127.0.0.1:6006 for Phoenix."),
    runs_dir: Path = typer.Option(Path("runs"), "--output-dir", "-o", "--runs", help=RUNS_HELP),
) -> None:
    from sysmo.export.otel import export_experiment
    from sysmo.store import Store

    directory = _experiment(ref, runs_dir)
    store = Store(directory / "results.sqlite")
    try:
        count = export_experiment(store, directory.name, endpoint)
    finally:
        store.close()
    console.print(f"{directory.name}: {count.attempts} attempt(s), {count.spans} span(s) sent (project "
                  f"{directory.name})", highlight=False, soft_wrap=True)


@app.command(help="Write one inspect_ai eval log per (agent, model, arm) of a stored experiment, its samples the "
                  "attempts, for `inspect view` (docs/observability.md).")
def inspect(
    ref: str = typer.Argument(..., help="Experiment id or directory."),
    out: Path = typer.Option(..., "--out", help="Folder for the .eval logs (made if missing)."),
    runs_dir: Path = typer.Option(Path("runs"), "--output-dir", "-o", "--runs", help=RUNS_HELP),
) -> None:
    from sysmo.export.inspect_log import write_eval_logs

    directory = _experiment(ref, runs_dir)
    written = write_eval_logs(directory, out)
    for log in written:
        console.print(f"{log.path}: {log.samples} sample(s) ({log.agent}, {log.model}, {log.arm})",
                      highlight=False, soft_wrap=True)
    console.print(f"view them: inspect view --log-dir {out}", highlight=False, soft_wrap=True)
