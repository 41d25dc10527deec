"""Turn an artifact (or one module's text) into the files SANY/TLC read: safe names, ASCII operators, a main module.

>>> spec = prepare("---- MODULE Spin ----\\nVARIABLE x\\n====")
>>> spec.main_module, sorted(spec.files)
('Spin', ['Spin.tla'])
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.errors import TaskError
from sysmo.tools.tla.unicode import Normalised, normalise

MODULE_HEADER = re.compile(r"^\s*-{4,}\s*MODULE\s+([A-Za-z0-9_]+)\s*-{4,}", re.MULTILINE)
SAFE_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*\.(tla|cfg)$")


def module_name(text: str) -> str | None:
    """The name in the first ``---- MODULE Name ----`` header, if any."""
    match = MODULE_HEADER.search(text)
    return match.group(1) if match else None


class PreparedSpec(BaseModel):
    """The files to hand to the tool, which module is the main one, and how Unicode was rewritten per file."""

    files: dict[str, str]
    main_module: str
    normalised: dict[str, Normalised] = Field(default_factory=dict)  # only files whose text changed

    @property
    def main_file(self) -> str:
        return f"{self.main_module}.tla"

    @property
    def unicode_replacements(self) -> int:
        return sum(n.replacements for n in self.normalised.values())

    def original_column(self, file: str | None, line: int | None, column: int | None) -> int | None:
        """Map a column reported on the normalised text back to the text the author wrote."""
        if file is None or line is None or column is None or file not in self.normalised:
            return column
        return self.normalised[file].original_column(line, column)


def prepare(source: Artifact | str, module: str | None = None, *, unicode_to_ascii: bool = True) -> PreparedSpec:
    """Collect the ``.tla``/``.cfg`` files, check their names, normalise Unicode, pick the main module.

    A single text is stored under the name its MODULE header gives (SANY insists the file name matches).
    """
    if isinstance(source, str):
        name = module or module_name(source) or "Spec"
        files = {f"{name}.tla": source}
    else:
        files = {name: text for name, text in source.files.items() if name.endswith((".tla", ".cfg"))}
    for name in files:
        if not SAFE_FILE_NAME.match(name):
            raise TaskError(f"TLA+ file name {name!r} is not allowed: use a plain name like Spec.tla (no directories)")
    if module is None:
        main = source.main_file if isinstance(source, Artifact) else None
        if main and main.endswith(".tla"):
            module = main[: -len(".tla")]
        else:
            tla = sorted(n for n in files if n.endswith(".tla"))
            if not tla:
                raise TaskError("no .tla file to check: the artifact holds " + (", ".join(sorted(files)) or "no files"))
            module = tla[0][: -len(".tla")]
    if f"{module}.tla" not in files:
        raise TaskError(f"module {module!r} not found: expected a file {module}.tla among {sorted(files)}")
    normalised: dict[str, Normalised] = {}
    if unicode_to_ascii:
        for name, text in list(files.items()):
            if name.endswith(".tla") and not text.isascii():
                result = normalise(text)
                if result.changed:
                    files[name] = result.text
                    normalised[name] = result
    return PreparedSpec(files=files, main_module=module, normalised=normalised)
