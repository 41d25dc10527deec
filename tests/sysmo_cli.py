"""``sysmo ARGS`` through the command line's entry point (``sysmo.cli.main``, what the ``sysmo`` script runs) in the
test's process: its exit code, output and files, without an interpreter start and imports of its own. For tests
whose point is not the process boundary (a kill, a signal, the terminal's width run ``sysmo`` as a process)."""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_sysmo(*args: str, env: dict[str, str] | None = None) -> CliResult:
    """Run ``sysmo *args`` with ``env`` added to the environment (settings read afresh, restored afterwards)."""
    from sysmo import cli
    from sysmo.config import settings

    saved_argv, saved_env = sys.argv, {key: os.environ.get(key) for key in env or {}}
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env or {})
    settings.cache_clear()
    sys.argv = ["sysmo", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                cli.main()
                code = 0
            except SystemExit as exited:
                code = exited.code if isinstance(exited.code, int) else (0 if exited.code is None else 1)
    finally:
        sys.argv = saved_argv
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        settings.cache_clear()
    return CliResult(code, out.getvalue(), err.getvalue())
