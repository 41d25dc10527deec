"""Prompt templates are package files, ``<agent>/<name>.md``, filled with ``$variables``; each is hashed.

>>> p = load_prompt("base_modeling", "system")
>>> len(p.sha256)
64
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from string import Template

from pydantic import BaseModel, ConfigDict

from sysmo.errors import UnknownNameError


class Prompt(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent: str
    name: str
    text: str

    @functools.cached_property
    def sha256(self) -> str:
        """Computed once per prompt (a frozen model; ``load_prompt`` hands every attempt the same one)."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def key(self) -> str:
        return f"{self.agent}/{self.name}"

    def fill(self, **values: object) -> str:
        """Substitute ``$name`` placeholders; unknown placeholders stay (TLA+/SysML text is full of symbols)."""
        return Template(self.text).safe_substitute({k: "" if v is None else str(v) for k, v in values.items()})


@functools.lru_cache(maxsize=256)
def load_prompt(agent: str, name: str) -> Prompt:
    """The package file ``<agent>/<name>.md``, else ``common/<name>.md`` (read once per process)."""
    resource = importlib.resources.files("sysmo.agents.prompts").joinpath(agent, f"{name}.md")
    if not resource.is_file():
        shared = importlib.resources.files("sysmo.agents.prompts").joinpath("common", f"{name}.md")
        if not shared.is_file():
            raise UnknownNameError(f"no prompt {agent}/{name}.md (nor common/{name}.md) in sysmo/agents/prompts")
        return Prompt(agent="common", name=name, text=shared.read_text())
    return Prompt(agent=agent, name=name, text=resource.read_text())
