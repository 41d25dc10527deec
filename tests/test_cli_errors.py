"""The command line's own errors (unknown option, bad value, unknown command): the usage line and one error
message with exit code 2, never a stack trace."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sysmo_cli import run_sysmo


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
    """The command's entry point in this process (tests/sysmo_cli.py); the help below runs in a process of its own."""
    run = run_sysmo(*args)
    assert run.code == 2, run.stderr[-2000:]
    assert message in run.stderr and "Usage: " in run.stderr and "--help" in run.stderr
    assert "Traceback" not in run.output


def test_help_exits_cleanly() -> None:
    run = subprocess.run([sys.executable, "-m", "sysmo.cli", "run", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and "--samples" in run.stdout and "Traceback" not in run.stderr


def test_an_invalid_experiment_file_names_each_bad_setting_and_the_one_probably_meant(tmp_path) -> None:
    from sysmo.errors import ConfigError
    from sysmo.runner import ExperimentConfig

    path = tmp_path / "exp.yaml"
    path.write_text("agents: [base_modeling]\nsampels: 3\nconcurrency: lots\ntasks:\n  benchmark: [starter]\n")
    with pytest.raises(ConfigError) as caught:
        ExperimentConfig.from_yaml(path)
    message = str(caught.value)
    assert "sampels: unknown setting (did you mean 'samples'?)" in message
    assert "tasks.benchmark: unknown setting (did you mean 'benchmarks'?)" in message
    assert "concurrency: Input should be a valid integer" in message and "(got 'lots')" in message
    assert "errors.pydantic.dev" not in message
    path.write_text("agents: base_modeling\n  - x: [\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        ExperimentConfig.from_yaml(path)
