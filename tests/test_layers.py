"""No import runs upward: every module's imports point only to its own layer or the layers below it.

The layer order is the code block of the "Layout" section of docs/architecture.md, lowest first: each line starts with the
folders (``name/``), root modules (``name.py``) or path patterns (``evals/x*.py``) of one layer. Imports are
read with ``ast`` from every module of the package (tests excepted): module-level and function-level
``import`` / ``from ... import`` (relative ones resolved), and imports by string, i.e. any string constant that
names a sysmo module (``importlib.import_module("sysmo.x")``, ``"sysmo.x.y:function"`` references, and the
package an f-string such as ``f"sysmo.agents.{name}"`` starts with).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sysmo"
ENTRY = re.compile(r"^(?:[\w*]+/|[\w*/]+\.py)$")
MODULE_STRING = re.compile(rf"^{PACKAGE}(?:\.\w+)+(?::\w+)?$")
SKIPPED = {"tests", ".git", ".ci", "sysmo.egg-info", "docs", "build", "setup.py"}  # setup.py: packaging only


def layout_layers(readme: str) -> list[list[str]]:
    """The Layout list of docs/architecture.md: one list of entries (``contracts/``, ``store.py``, ``evals/x*.py``) per layer."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    layers = []
    for line in block.splitlines()[1:]:
        entries = []
        for token in line.split():
            if not ENTRY.match(token):
                break
            entries.append(token)
        if entries:
            layers.append(entries)
    return layers


def layer_of(rel: str, layers: list[list[str]]) -> int | None:
    """The layer of a path relative to the package root: a pattern with a folder in it wins over a folder,
    a folder over a root module."""
    for wanted in ("pattern", "folder", "file"):
        for index, entries in enumerate(layers):
            for entry in entries:
                kind = "folder" if entry.endswith("/") else "pattern" if "/" in entry else "file"
                if kind != wanted:
                    continue
                if kind == "folder" and rel.startswith(entry):
                    return index
                if kind != "folder" and fnmatch.fnmatchcase(rel, entry):
                    return index
    return None


def _project_module(path: Path) -> bool:
    """A module of the project: not under a skipped or hidden folder (.venv, .git, ...) nor in a virtual
    environment made inside the checkout under any name (a folder holding ``pyvenv.cfg``)."""
    parts = path.relative_to(ROOT).parts
    if SKIPPED & set(parts) or any(part.startswith(".") for part in parts):
        return False
    return not any((ROOT.joinpath(*parts[:i]) / "pyvenv.cfg").is_file() for i in range(1, len(parts)))


def module_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if _project_module(p))


def target_path(module: str) -> str | None:
    """``sysmo.a.b.c`` -> the path (relative to the package root) of the longest prefix that is a module or folder."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    for end in range(len(parts), 0, -1):
        rel = Path(*parts[1:end]) if end > 1 else Path()
        if end > 1 and (ROOT / rel).with_suffix(".py").is_file():
            return rel.with_suffix(".py").as_posix()
        if (ROOT / rel / "__init__.py").is_file():
            return (rel / "__init__.py").as_posix() if end > 1 else "__init__.py"
        if end > 1 and (ROOT / rel).is_dir():
            return rel.as_posix() + "/"
    return None


@dataclass(frozen=True)
class Import:
    module: str
    line: int


def parse(path: Path) -> ast.Module:
    """``ast.parse``, once more after CPython 3.11's spurious "AST constructor recursion depth mismatch": 3.11 keeps
    that depth in state the threads share, so another thread of the test process building an AST at the same
    moment can trip it (python/cpython#106905; seen once in the suite, never in the file parsed again)."""
    for attempt in range(3):
        try:
            return ast.parse(path.read_text(), filename=str(path))
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def imports_of(path: Path) -> list[Import]:
    rel = path.relative_to(ROOT)
    package = [PACKAGE, *rel.parts[:-1]]
    found: list[Import] = []
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from sysmo.x import y`` may name the submodule ``sysmo.x.y``: the longest existing prefix wins
            found += [Import(f"{module}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.match(node.value):
            found.append(Import(node.value.split(":")[0], node.lineno))
        elif (isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)
              and MODULE_STRING.match(str(node.values[0].value).rstrip("."))):
            # f"sysmo.agents.{name}": at least the package before the first placeholder
            found.append(Import(str(node.values[0].value).rstrip("."), node.lineno))
    return found


def upward_imports() -> list[str]:
    layers = layout_layers((ROOT / "docs" / "architecture.md").read_text())
    problems = []
    for path in module_files():
        rel = path.relative_to(ROOT).as_posix()
        own = layer_of(rel, layers)
        if own is None:
            problems.append(f"{rel}: not in the Layout list of docs/architecture.md")
            continue
        for imp in imports_of(path):
            target = target_path(imp.module)
            if target is None:
                continue
            theirs = layer_of(target + ("__init__.py" if target.endswith("/") else ""), layers)
            if theirs is not None and theirs > own:
                problem = (f"{rel}:{imp.line}: imports {target} (layer {' '.join(layers[theirs])}) "
                           f"from below it (layer {' '.join(layers[own])})")
                if problem not in problems:
                    problems.append(problem)
    return problems


def test_layout_lists_the_layers_in_order() -> None:
    layers = layout_layers((ROOT / "docs" / "architecture.md").read_text())
    flat = [entry for entries in layers for entry in entries]
    assert flat[0] == "__init__.py" and "contracts/" in layers[1]
    assert len(flat) == len(set(flat)), "an entry is listed twice"
    assert layer_of("store.py", layers) < layer_of("evals/report.py", layers)
    assert layer_of("runner/config.py", layers) < layer_of("reproduce/registry.py", layers)
    assert layer_of("reproduce/registry.py", layers) < layer_of("cli/reproduce.py", layers)
    assert layer_of("view/app.py", layers) < layer_of("cli/view.py", layers) == layer_of("cli/__init__.py", layers)


def test_every_package_folder_and_root_module_is_named_in_the_layout() -> None:
    """A new package gets its own line (or a place on one), not a place by accident of a pattern."""
    flat = {entry for entries in layout_layers((ROOT / "docs" / "architecture.md").read_text()) for entry in entries}
    folders = {f"{path.parent.relative_to(ROOT).as_posix()}/" for path in ROOT.glob("*/__init__.py")
               if _project_module(path)}
    root_modules = {path.name for path in ROOT.glob("*.py") if _project_module(path)}
    missing = sorted((folders | root_modules) - flat)
    assert not missing, f"not named in the Layout list of docs/architecture.md: {missing}"


def test_commands_live_only_in_cli() -> None:
    """Each package's subcommands are ``cli/<package>.py``: a ``commands.py`` below would sit in its package's layer
    and pull the command line's dependencies (evals for ``sysmo check``, the runner for ``sysmo reproduce``) down."""
    stray = [path.relative_to(ROOT).as_posix() for path in module_files()
             if path.name == "commands.py" and path.parent.name != "cli"]
    assert not stray, f"commands outside cli/: {stray}"


def test_no_import_points_upward() -> None:
    problems = upward_imports()
    assert not problems, "imports pointing upward in the layer order of docs/architecture.md:\n" + "\n".join(problems)


@pytest.mark.parametrize("source, expected", [
    ("from sysmo.evals.report import x\n", "sysmo.evals.report.x"),
    ("def f():\n    import sysmo.agents.registry\n", "sysmo.agents.registry"),
    ("SCRIPTS = {'c': 'sysmo.agents.control_script:build'}\n", "sysmo.agents.control_script"),
    ("from ..evals import scorecard\n", "sysmo.evals.scorecard"),
    ("importlib.import_module(f'sysmo.agents.{name}')\n", "sysmo.agents"),
])
def test_the_walk_sees_every_kind_of_import(tmp_path: Path, source: str, expected: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / "tools" / "x.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert expected in [imp.module for imp in imports_of(path)]


def test_an_upward_import_is_named_with_file_and_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real_read = Path.read_text
    victim = ROOT / "sandbox" / "base.py"

    def read(self: Path, *args: object, **kwargs: object) -> str:
        text = real_read(self, *args, **kwargs)
        return text + "\ndef late():\n    from sysmo.tools.install import java_binary\n" if self == victim else text

    monkeypatch.setattr(Path, "read_text", read)
    problems = upward_imports()
    lines = len(real_read(victim).splitlines())
    assert f"sandbox/base.py:{lines + 3}: imports tools/install.py (layer tools/)" in "\n".join(problems)


def test_contracts_import_nothing_but_contracts() -> None:
    """The bottom layer is pure data: no sysmo import outside ``contracts/`` (not even errors or log)."""
    outside = [f"{path.relative_to(ROOT)}:{imp.line}: {imp.module}"
               for path in sorted((ROOT / "contracts").glob("*.py")) for imp in imports_of(path)
               if imp.module.startswith(f"{PACKAGE}.") and not imp.module.startswith(f"{PACKAGE}.contracts.")]
    assert not outside, "\n".join(outside)
