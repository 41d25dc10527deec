"""``sysmo <command>`` imports only the module that defines the command, and each command's module is named right."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import typer
from typer.main import get_command_name

from sysmo import cli


def _names(module_name: str, attr: str, group_name: str | None) -> set[str]:
    target = getattr(importlib.import_module(module_name), attr)
    if group_name:  # a COMMAND_GROUPS entry: the group itself
        return {group_name}
    app = typer.Typer()
    target(app)
    return ({c.name or get_command_name(c.callback.__name__) for c in app.registered_commands}
            | {g.name for g in app.registered_groups})


def test_every_command_is_mapped_to_the_module_that_defines_it() -> None:
    defined: dict[str, str] = {}
    for module_name, attr, name, _ in cli.COMMAND_GROUPS:
        defined.update(dict.fromkeys(_names(module_name, attr, name), module_name))
    for module_name, attr in cli.COMMANDS:
        defined.update(dict.fromkeys(_names(module_name, attr, None), module_name))
    assert cli.COMMAND_MODULES == defined


def test_first_word_skips_root_options() -> None:
    assert cli._first_word(["--log-level", "INFO", "check", "a.puml"]) == "check"
    assert cli._first_word(["--help"]) is None


def test_a_command_imports_only_its_own_layer() -> None:
    code = ("import sys; sys.argv = ['sysmo', 'check', '--help']\n"
            "from sysmo import cli\n"
            "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
            "import json; print(json.dumps(sorted(m for m in sys.modules if m.startswith(('sysmo.', 'langgraph', "
            "'litellm', 'scipy', 'networkx', 'matplotlib', 'jupyter_client')))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert "sysmo.cli.tools" in loaded
    heavy = {m for m in loaded if m.split(".")[0] in {"langgraph", "litellm", "scipy", "networkx", "matplotlib",
                                                       "jupyter_client"}}
    assert not heavy, heavy
    assert not loaded & {"sysmo.runner.experiment", "sysmo.cli.reproduce", "sysmo.cli.agents", "sysmo.llm"}


# what `sysmo check` and `sysmo reproduce` must not have imported when they start their first tool process or open
# their first data file (each costs a tenth of a second to seconds at start-up; speed/cli_startup.py times it)
NOT_AT_START = ("langgraph", "litellm", "pydantic_settings", "scipy", "networkx", "matplotlib", "jupyter_client", "zmq",
                "structlog", "yaml")

# runs in a fresh interpreter: at the first process started or data file opened (or at exit, when the command
# stopped before either, e.g. on a machine without the tools or the data) print the modules loaded, then stop
FIRST_CALL_PROBE = r"""
import atexit, builtins, io, json, os, subprocess, sys
def _report(what):
    sys.stdout.write("\nSYSMO-MODULES " + json.dumps({"at": what, "modules": sorted(sys.modules)}) + "\n")
    sys.stdout.flush()
def _first_tool_call(self, args, *rest, **kw):
    _report("tool call")
    os._exit(0)
_open = io.open
def _first_data_read(file, *args, **kw):
    if isinstance(file, (str, os.PathLike)) and os.fspath(file).startswith(DATA):
        _report("data read")
        os._exit(0)
    return _open(file, *args, **kw)
subprocess.Popen._execute_child = _first_tool_call
builtins.open = io.open = _first_data_read
atexit.register(_report, "exit")
sys.argv = ["sysmo", *ARGS]
from sysmo.cli import main
main()
"""


def _modules_at_first_call(args: list[str], data_dir: Path) -> tuple[str, set[str]]:
    code = FIRST_CALL_PROBE.replace("ARGS", json.dumps(args)).replace("DATA", repr(str(data_dir)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("SYSMO-MODULES "))
    report = json.loads(line.split(" ", 1)[1])
    return report["at"], set(report["modules"])


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in NOT_AT_START}


def test_sysmo_check_reaches_its_first_tool_call_without_the_heavy_packages(tmp_path: Path) -> None:
    model = tmp_path / "order.puml"
    model.write_text("@startuml\nclass Order\n@enduml\n")
    at, loaded = _modules_at_first_call(["check", str(model)], tmp_path / "no-data")
    assert "sysmo.tools.plantuml.check" in loaded, at  # the command got as far as its checker
    assert not _heavy(loaded), (at, sorted(_heavy(loaded)))
    assert "rich.console" not in loaded or at == "exit"  # rich prints the verdict, after the tool


def test_sysmo_reproduce_reaches_its_first_data_read_without_the_heavy_packages(tmp_path: Path) -> None:
    data = Path(os.environ.get("SYSMO_TEST_DATA_DIR") or tmp_path / "no-data").resolve()
    at, loaded = _modules_at_first_call(["reproduce", "sysmbench-table2", "--from-files", "--data-dir", str(data)],
                                        data)
    assert "sysmo.cli.reproduce" in loaded, at
    assert not _heavy(loaded), (at, sorted(_heavy(loaded)))
    assert not {m for m in loaded if m.startswith("sysmo.tools.sysml")}  # a reproduction from files needs no kernel
