"""The ``sysmo`` command: each package's commands live in ``cli/<package>.py``; this module wires them."""

from __future__ import annotations

import importlib
import sys

from functools import cache
from typing import TYPE_CHECKING

import typer

from sysmo.errors import STORAGE_EXIT_CODE, STORAGE_HINT, StorageError, SysmoError, storage_problem

if TYPE_CHECKING:
    from rich.console import Console

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


@cache
def _error_console() -> Console:
    """Standard error's rich console, made for the first error line (a command starts without rich)."""
    from rich.console import Console

    return Console(stderr=True)


def _print_error(text: str) -> None:
    from rich.markup import escape

    from sysmo.terminal import escape_terminal

    _error_console().print(f"[bold red]error:[/] {escape(escape_terminal(text))}")

# (module, attribute, name on the command line, help)
COMMAND_GROUPS: list[tuple[str, str, str, str]] = [
    ("sysmo.cli.tools", "app", "tools", "Install, locate and self-check the language tools."),
    ("sysmo.cli.benchmarks", "app", "tasks", "List, filter and show benchmark tasks."),
    ("sysmo.cli.export", "app", "export", "A stored experiment as OpenTelemetry traces or inspect_ai eval logs."),
]
# (module, attribute): single top-level commands such as `sysmo run`, `sysmo attempt`
COMMANDS: list[tuple[str, str]] = [
    ("sysmo.cli.agents", "register"),
    ("sysmo.cli.runner", "register"),
    ("sysmo.cli.reproduce", "register"),
    ("sysmo.cli.tools", "register"),  # sysmo check
    ("sysmo.cli.view", "register"),
]
# the module that defines each top-level command or group: ``sysmo check ...`` imports only its own module, so
# a command starts without importing every layer (tests/test_cli_startup.py keeps this in step with COMMANDS)
COMMAND_MODULES: dict[str, str] = {
    "tools": "sysmo.cli.tools", "tasks": "sysmo.cli.benchmarks",
    "attempt": "sysmo.cli.agents", "agents": "sysmo.cli.agents",
    "run": "sysmo.cli.runner", "trace": "sysmo.cli.runner", "replay": "sysmo.cli.runner",
    "fork": "sysmo.cli.runner", "report": "sysmo.cli.runner", "list": "sysmo.cli.runner",
    "compare": "sysmo.cli.reproduce", "check-transitions": "sysmo.cli.reproduce",
    "reproduce": "sysmo.cli.reproduce",
    "check": "sysmo.cli.tools",
    "view": "sysmo.cli.view",
    "export": "sysmo.cli.export",
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
    except StorageError as exc:
        _storage_exit(str(exc))
    except SysmoError as exc:
        _print_error(str(exc))
        sys.exit(2)
    except typer.Abort:
        _error_console().print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        _error_console().print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # usage errors (unknown option, bad value) carry their own message and exit code
        if _is_usage_error(exc):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        problem = storage_problem(exc)
        if problem is not None:
            _storage_exit(problem)
        raise
    if isinstance(code, int) and code:
        sys.exit(code)


def _storage_exit(problem: str) -> None:
    """A full or read-only disk: one line saying what to do, exit code 3 (nothing stored is lost)."""
    text = problem if "resume" in problem else f"{problem}; {STORAGE_HINT}"
    _print_error(text)
    sys.exit(STORAGE_EXIT_CODE)


def _is_usage_error(exc: Exception) -> bool:
    """A command-line error (unknown option, bad value): typer ships its own click, whose errors can show
    themselves."""
    from typer.exceptions import TyperException

    return isinstance(exc, TyperException) and hasattr(exc, "show")

