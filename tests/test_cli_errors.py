"""The command line's own errors (unknown option, bad value, unknown command): the usage line and one error
message with exit code 2, never a stack trace."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--bogus"], "No such option: --bogus"),
        (["run", "--samples", "zero"], "Invalid value for '--samples'"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
        (["trace"], "Missing argument"),
    ],
)
def test_usage_errors_are_one_clear_message(args: list[str], message: str) -> None:
    run = subprocess.run([sys.executable, "-m", "sysmo.cli", *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    assert message in run.stderr and "Usage: " in run.stderr and "--help" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


def test_help_exits_cleanly() -> None:
    run = subprocess.run([sys.executable, "-m", "sysmo.cli", "run", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and "--samples" in run.stdout and "Traceback" not in run.stderr
