"""``sysmo view [RUNS_DIR] [--port N]``: serve the read-only experiment viewer on 127.0.0.1; ``--bundle DIR`` writes
its pages as a static site instead (view/bundle.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import typer
from rich.console import Console

from sysmo.errors import ConfigError

console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    @app.command(help="Open experiments in a browser: a local, read-only web app (127.0.0.1) over a runs "
                      "directory: experiments, attempt tables with filters, one attempt's rounds, compare two.")
    def view(
        runs_dir: Path = typer.Argument(Path("runs"), help="A runs directory (or one experiment's folder)."),
        port: int = typer.Option(8765, "--port", "-p", help="Port on 127.0.0.1."),
        allow_host: list[str] | None = typer.Option(None, "--allow-host", help="Another name the browser may use for "
                                             "this viewer (e.g. a name of this machine behind an SSH tunnel); "
                                             "by default only 127.0.0.1, localhost and [::1] are answered."),
        bundle: Path | None = typer.Option(None, "--bundle", help="Write the pages as a static site into this folder "
                                           "(opens from disk or any static host, no server) instead of serving."),
        experiment: list[str] | None = typer.Option(None, "--experiment", "-e", help="With --bundle: an experiment "
                                                    "to include (repeat for several; default: all in RUNS_DIR)."),
    ) -> None:
        from sysmo.view.app import serve
        from sysmo.view.gather import experiment_dirs

        if not runs_dir.is_dir():
            raise ConfigError(f"no runs directory {runs_dir} (run `sysmo run` first, or name the folder)")
        if bundle is not None:
            _write_bundle(runs_dir, bundle, experiment or [])
            return
        if experiment:
            raise ConfigError("--experiment selects what --bundle writes; the served viewer shows every experiment")
        if not 0 < port < 65536:
            raise ConfigError(f"--port {port}: use a port between 1 and 65535")
        with socket.socket() as probe:  # a taken port is one clear line, not the server's traceback
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as exc:
                raise ConfigError(f"port {port} on 127.0.0.1 is not free ({exc.strerror}): choose another with --port") from exc
        found = len(experiment_dirs(runs_dir))
        console.print(f"sysmo view: {found} experiment(s) in {runs_dir.resolve()} at http://127.0.0.1:{port}/ "
                      "(read-only; Ctrl-C stops)")
        serve(runs_dir, port=port, allow_hosts=tuple(allow_host or ()))


def _write_bundle(runs_dir: Path, out: Path, experiments: list[str]) -> None:
    from sysmo.view.bundle import write_bundle

    console.print(f"bundling {', '.join(experiments) or 'every experiment'} of "
                  f"{runs_dir.resolve()} into {out.resolve()}")
    result = write_bundle(runs_dir, out, experiments)
    if result.compare_left_out:
        console.print(f"{result.compare_left_out} compare link(s) past the first {result.compare_pages} pages are "
                      "shown without a link")
    for url, status in sorted(result.unreachable.items()):
        console.print(f"[yellow]not in the bundle:[/] {url} (the viewer answered {status})")
    console.print(f"wrote {', '.join(result.experiments)}: {result.pages} pages, {result.files} files, "
                  f"{result.megabytes:.1f} MB; open {(out / 'index.html').resolve().as_uri()}")
