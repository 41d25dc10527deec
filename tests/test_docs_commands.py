"""Every `sysmo` command shown in the README and the docs names commands and options that exist, and the site's
CLI reference page lists every command and option that the `--help` screens show."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from tests.sysmo_cli import run_sysmo

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`(sysmo [^`]+)`(?!`)")


def _load_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = _load_reference()
ROOT_COMMAND = REFERENCE.root_command()


def shown_commands() -> list[tuple[str, str]]:
    """(where, command line) for every `sysmo ...` line of a code block and every inline `sysmo ...` span."""
    found = []
    for page in PAGES:
        text = page.read_text()
        rel = page.relative_to(ROOT)
        for block in FENCE.findall(text):
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                line = re.sub(r"^\s*\$\s+", "", line).strip()
                for part in re.split(r"&&|;", line):
                    part = part.strip()
                    if part.startswith("sysmo ") and not part.split()[1].endswith(":"):  # not its output
                        found.append((f"{rel}: {line[:60]}", part))
        for span in INLINE.findall(re.sub(FENCE, "", text)):
            found.append((f"{rel}: `{span[:60]}`", span))
    return found


def _tokens(command: str) -> list[str]:
    command = command.split(" | ")[0]
    command = re.sub(r"\[[^\]]*\]", " ", command)  # optional parts shown as [...]
    command = re.sub(r"<[^>]*>", "PLACEHOLDER", command)  # <EXP>, <an attempt of ...>
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError:  # an unbalanced quote in prose: the words up to it
        tokens = command.split()
    return [t for t in tokens if t not in ("...", "…")]


def resolve(tokens: list[str]):
    """The click command the tokens name, and the options they pass to it; an error string when they name none."""
    command = ROOT_COMMAND
    path = ["sysmo"]
    rest = tokens[1:]
    while rest and hasattr(command, "commands") and not rest[0].startswith("-"):
        if rest[0] not in command.commands:
            if command.commands and rest[0] != "PLACEHOLDER":
                return None, f"`{' '.join(path)}` has no command {rest[0]!r}", []
            break
        command = command.commands[rest[0]]
        path.append(rest[0])
        rest = rest[1:]
    return command, " ".join(path), [t.split("=", 1)[0] for t in rest if t.startswith("-") and t != "-"]


def test_every_command_shown_in_the_docs_exists() -> None:
    problems = []
    shown = shown_commands()
    assert len(shown) > 100, "the docs show at least a hundred sysmo commands"
    for where, line in shown:
        command, path, options = resolve(_tokens(line))
        if command is None:
            problems.append(f"{where}: {path}")
            continue
        known = {opt for p in command.params for opt in [*p.opts, *getattr(p, "secondary_opts", [])]} | {"--help"}
        for option in options:
            if option not in known:
                problems.append(f"{where}: `{path}` has no option {option}")
    assert not problems, "stale commands in the docs:\n" + "\n".join(problems)


def test_a_stale_command_is_caught() -> None:
    assert resolve(_tokens("sysmo rnu --samples 2"))[0] is None
    command, path, options = resolve(_tokens("sysmo run --sample 2  # a comment --x"))
    known = {opt for p in command.params for opt in p.opts}
    assert path == "sysmo run" and options == ["--sample"] and "--sample" not in known


def _help_options(path: list[str]) -> set[str]:
    result = run_sysmo(*path, "--help")
    assert result.code == 0, result.output
    # the option rows of the help panels: a row opens with the option's names (`-a, --agent`, `--json`)
    rows = re.findall(r"^[│|]\s+((?:-\w,\s*)?--[a-z][a-z0-9-]*(?:\s*/\s*--[a-z][a-z0-9-]*)?)", result.stdout, re.M)
    return {name for row in rows for name in re.findall(r"--[a-z][a-z0-9-]*", row)}


def test_the_cli_reference_lists_every_command_and_option_of_the_help_screens() -> None:
    page = REFERENCE.page()
    headings = set(re.findall(r"^## `([^`]+)`$", page, re.M))
    missing = []
    for path, command in REFERENCE.walk(ROOT_COMMAND):
        name = " ".join(path)
        if name not in headings:
            missing.append(f"command {name}")
            continue
        section = page.split(f"## `{name}`\n", 1)[1].split("\n## `", 1)[0]
        for option in _help_options(list(path[1:])) - {"--help"}:
            if f"{option}" not in section:
                missing.append(f"{name} {option}")
    assert len(headings) > 20
    assert not missing, "missing from the CLI reference:\n" + "\n".join(missing)
