"""An artifact: the files an agent hands over (e.g. ``Spec.tla`` + ``Spec.cfg``), content-hashed."""

from __future__ import annotations

import hashlib
from enum import StrEnum

from pydantic import BaseModel, Field, computed_field


class Language(StrEnum):
    TLA = "tla"
    SYSML = "sysml"
    PLANTUML = "plantuml"


class Artifact(BaseModel):
    """A model in one language, as one or more named text files.

    >>> a = Artifact(language="tla", files={"Spin.tla": "---- MODULE Spin ----\\n===="})
    >>> a.main_file
    'Spin.tla'
    """

    language: Language
    files: dict[str, str] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sha256(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name].encode() + b"\0")
        return h.hexdigest()

    @property
    def main_file(self) -> str | None:
        """The primary file: the .tla / .sysml / .puml one (first by name), else the first file."""
        suffix = {Language.TLA: ".tla", Language.SYSML: ".sysml", Language.PLANTUML: ".puml"}[self.language]
        mains = sorted(n for n in self.files if n.endswith(suffix))
        if mains:
            return mains[0]
        return next(iter(sorted(self.files)), None)

    @property
    def main_text(self) -> str:
        name = self.main_file
        return self.files[name] if name else ""

    def is_empty(self) -> bool:
        return not any(text.strip() for text in self.files.values())
