"""The CLI reference page, generated from the Typer app at build time, so it cannot drift from `sysmo --help`."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any


def root_command() -> Any:
    """The click command behind ``sysmo`` (every group and command wired in)."""
    import typer

    cli = importlib.import_module("sysmo.cli")
    wire = getattr(cli, "_wire", None)
    if wire is not None:
        wire()
    return typer.main.get_command(cli.app)


def walk(command: Any, path: tuple[str, ...] = ("sysmo",)) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``command`` with its path, depth first, in the order ``--help`` lists them."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if getattr(sub, "hidden", False):
            continue
        yield from walk(sub, (*path, name))


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def page() -> str:
    """The reference page's markdown: one section per command, its usage, help text, arguments and options."""
    import typer._click as click  # typer's own click, the one its commands are made of

    root = root_command()
    out = [
        "# CLI reference",
        "",
        "Generated from the command line itself when the site is built (`docs/hooks/cli_reference.py`); "
        "`sysmo COMMAND --help` prints the same.",
        "",
    ]
    for path, command in walk(root):
        ctx = click.Context(command, info_name=" ".join(path))
        out += [f"## `{' '.join(path)}`", ""]
        usage = " ".join(command.collect_usage_pieces(ctx))
        out += ["```", f"{' '.join(path)} {usage}".rstrip(), "```", ""]
        if command.help:
            out += [command.help.strip(), ""]
        subcommands = sorted(getattr(command, "commands", {}).items())
        if subcommands:
            out += ["| command | what it does |", "|---|---|"]
            out += [
                f"| [`{name}`](#{'-'.join((*path, name))}) | {_cell(sub.get_short_help_str(limit=120))} |"
                for name, sub in subcommands
                if not getattr(sub, "hidden", False)
            ]
            out.append("")
        for kind in ("argument", "option"):
            records = [
                p.get_help_record(ctx) for p in command.params if p.param_type_name == kind and not getattr(p, "hidden", False)
            ]
            records = [r for r in records if r]
            if records:
                out += [f"| {kind} | what it does |", "|---|---|"]
                out += [f"| `{_cell(name)}` | {_cell(text)} |" for name, text in records]
                out.append("")
    return "\n".join(out) + "\n"
