"""``sysmo <command>`` imports only the module that defines the command, and each command's module is named right."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

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
