"""The ``sysmo`` command. Each layer owns its command group (``<layer>/commands.py``); this module wires them."""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from sysmo.errors import SysmoError

app = typer.Typer(
    name="sysmo",
    help=(
        "LLM agents write system models (TLA+, SysML v2, PlantUML) and real language tools check them.\n\n"
        "Start with `sysmo tools doctor` (are SANY/TLC, PlantUML and OpenSysML working here?), "
        "then `sysmo tasks list`."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console(stderr=True)

# (module, attribute, name on the command line, help)
COMMAND_GROUPS: list[tuple[str, str, str, str]] = [
    ("sysmo.tools.commands", "app", "tools", "Install, locate and self-check the language tools."),
    ("sysmo.benchmarks.commands", "app", "tasks", "List, filter and show benchmark tasks."),
]
# (module, attribute): single top-level commands such as `sysmo run`, `sysmo attempt`
COMMANDS: list[tuple[str, str]] = [
    ("sysmo.agents.commands", "register"),
    ("sysmo.runner.commands", "register"),
    ("sysmo.evals.commands", "register"),
    ("sysmo.tools.commands", "register"),  # sysmo check
    ("sysmo.view.commands", "register"),
]
# the module that defines each top-level command or group: ``sysmo check ...`` imports only its own module, so
# a command starts without importing every layer (tests/test_cli_startup.py keeps this in step with COMMANDS)
COMMAND_MODULES: dict[str, str] = {
    "tools": "sysmo.tools.commands", "tasks": "sysmo.benchmarks.commands",
    "attempt": "sysmo.agents.commands", "agents": "sysmo.agents.commands",
    "run": "sysmo.runner.commands", "trace": "sysmo.runner.commands", "replay": "sysmo.runner.commands",
    "fork": "sysmo.runner.commands", "report": "sysmo.runner.commands",
    "compare": "sysmo.evals.commands", "check-transitions": "sysmo.evals.commands",
    "reproduce": "sysmo.evals.commands",
    "check": "sysmo.tools.commands",
    "view": "sysmo.view.commands",
}


_WIRED: set[tuple[str, str]] = set()  # (module, attribute) already added to ``app``


def _wire(command: str | None = None) -> None:
    """Add the commands to ``app``, each module's once (``main`` may run several times in one process, e.g. in
    tests); given the command line's first word, only the module that defines that command (the others are not
    imported)."""
    only = COMMAND_MODULES.get(command or "")
    for module_name, attr, name, help_text in COMMAND_GROUPS:
        if only in (None, module_name) and (module_name, attr) not in _WIRED:
            _WIRED.add((module_name, attr))
            app.add_typer(getattr(importlib.import_module(module_name), attr), name=name, help=help_text)
    for module_name, attr in COMMANDS:
        if only in (None, module_name) and (module_name, attr) not in _WIRED:
            _WIRED.add((module_name, attr))
            getattr(importlib.import_module(module_name), attr)(app)


def _first_word(argv: list[str]) -> str | None:
    """The command named on the command line (the first word that is not a root option or its value)."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


@app.callback()
def _root(
    log_level: str = typer.Option("WARNING", "--log-level", help="structlog level for events on stderr."),
) -> None:
    from sysmo.log import configure

    configure(level=log_level)


def main() -> None:
    """Entry point: run the app; a user-caused error prints one clear line, never a stack trace."""
    _wire(_first_word(sys.argv[1:]))
    try:
        code = app(standalone_mode=False)  # click returns a typer.Exit's code instead of exiting
    except SysmoError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except typer.Abort:
        console.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        console.print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # usage errors (unknown option, bad value) carry their own message and exit code
        if _is_usage_error(exc):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        raise
    if isinstance(code, int) and code:
        sys.exit(code)


def _is_usage_error(exc: Exception) -> bool:
    """A command-line error (unknown option, bad value): typer ships its own click, whose errors can show
    themselves."""
    from typer.exceptions import TyperException

    return isinstance(exc, TyperException) and hasattr(exc, "show")


if __name__ == "__main__":
    main()
