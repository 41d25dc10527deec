"""The ``sysmo`` command. Each layer owns its command group (``<layer>/commands.py``); this module wires them."""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from sysmo.errors import STORAGE_EXIT_CODE, STORAGE_HINT, StorageError, SysmoError, storage_problem
from sysmo.terminal import escape_terminal

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


def _wire() -> None:
    """Add the commands to ``app`` (once: ``main`` may run several times in one process, e.g. in tests)."""
    if app.registered_commands or app.registered_groups:
        return
    for module_name, attr, name, help_text in COMMAND_GROUPS:
        app.add_typer(getattr(importlib.import_module(module_name), attr), name=name, help=help_text)
    for module_name, attr in COMMANDS:
        getattr(importlib.import_module(module_name), attr)(app)


@app.callback()
def _root(
    log_level: str = typer.Option("WARNING", "--log-level", help="structlog level for events on stderr."),
) -> None:
    from sysmo.log import configure

    configure(level=log_level)


def main() -> None:
    """Entry point: run the app; a user-caused error prints one clear line, never a stack trace."""
    _wire()
    try:
        code = app(standalone_mode=False)  # click returns a typer.Exit's code instead of exiting
    except StorageError as exc:
        _storage_exit(str(exc))
    except SysmoError as exc:
        console.print(f"[bold red]error:[/] {escape(escape_terminal(str(exc)))}")
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
        problem = storage_problem(exc)
        if problem is not None:
            _storage_exit(problem)
        raise
    if isinstance(code, int) and code:
        sys.exit(code)


def _storage_exit(problem: str) -> None:
    """A full or read-only disk: one line saying what to do, exit code 3 (nothing stored is lost)."""
    text = problem if "resume" in problem else f"{problem}; {STORAGE_HINT}"
    console.print(f"[bold red]error:[/] {escape(escape_terminal(text))}")
    sys.exit(STORAGE_EXIT_CODE)


def _is_usage_error(exc: Exception) -> bool:
    """A command-line error (unknown option, bad value): typer ships its own click, whose errors can show
    themselves."""
    from typer.exceptions import TyperException

    return isinstance(exc, TyperException) and hasattr(exc, "show")


if __name__ == "__main__":
    main()
