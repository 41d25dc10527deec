"""The ``Task`` contract: what an agent is asked to model, and what its artifact is graded against."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language


class TaskKind(StrEnum):
    TLA = "tla"  # source code and/or traces -> TLA+
    SYSML = "sysml"  # requirements -> SysML v2 textual model
    UML_CLASS = "uml_class"  # requirements -> PlantUML class diagram
    ARCHITECTURE = "architecture"  # PRD -> PlantUML architecture diagram

    @property
    def language(self) -> Language:
        return {TaskKind.TLA: Language.TLA, TaskKind.SYSML: Language.SYSML}.get(self, Language.PLANTUML)


class InvariantTemplate(BaseModel):
    """A property the model should satisfy, stated independently of the model's names."""

    name: str
    type: Literal["safety", "liveness"]
    natural_language: str
    formal_description: str = ""
    tla_example: str = ""  # an example formula over some spec's names (needs concretising for another spec)
    # "violated": the modelled system is documented to violate it (a faithful model shows the violation)
    expected: Literal["holds", "violated"] = "holds"
    expected_source: str = ""  # where that is documented


class SourceRef(BaseModel):
    """Where the modelled system's code lives. ``checkout`` is a user-provided local clone, if any."""

    url: str | None = None
    branch: str | None = None
    commit: str | None = None
    files: list[str] = Field(default_factory=list)
    checkout: Path | None = None


class TraceSet(BaseModel):
    """Execution traces of the modelled system; one file per trace."""

    format: Literal["ndjson", "pgo"] = "ndjson"
    files: list[Path] = Field(default_factory=list)
    description: str = ""


class BuggyVariant(BaseModel):
    """A reference model with a known bug, and which cascade stage/invariant must expose it."""

    name: str
    artifact: Artifact
    exposed_by: str  # cascade stage name, e.g. "invariants" or "conformance"
    invariant: str | None = None  # the invariant template the bug breaks, when exposed_by == "invariants"
    description: str = ""


class TaskInputs(BaseModel):
    """What the agent may read."""

    requirement: str | None = None  # requirement / PRD text
    source_files: dict[str, str] = Field(default_factory=dict)  # path -> code (loaded when available)
    source: SourceRef | None = None
    traces: TraceSet | None = None
    trace_format: str | None = None  # prose describing the trace events
    description: str | None = None  # system description, core actions and exclusions
    prompts: dict[str, str] = Field(default_factory=dict)  # benchmark-supplied prompt templates by name
    module_name: str | None = None  # the TLA+ module name the task expects


class TaskReferences(BaseModel):
    """What the artifact is graded against."""

    model: Artifact | None = None
    invariants: list[InvariantTemplate] = Field(default_factory=list)
    traces: TraceSet | None = None  # traces for conformance checking
    buggy_variants: list[BuggyVariant] = Field(default_factory=list)
    # a folder of recorded per-action windows, windows_<Action>.ndjson (transition validation), with optional
    # mapping_<Action>.json files
    windows: Path | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Task(BaseModel):
    """One benchmark task.

    >>> task.kind, task.language
    (<TaskKind.SYSML: 'sysml'>, <Language.SYSML: 'sysml'>)
    """

    id: str  # unique across benchmarks, e.g. "sysmbench/17", "starter/tla/spinlock"
    benchmark: str  # "sysmobench", "sysmbench", "oodeval", "r2abench", "ardoco", "starter"
    kind: TaskKind
    title: str = ""
    inputs: TaskInputs = Field(default_factory=TaskInputs)
    references: TaskReferences = Field(default_factory=TaskReferences)
    domain: str | None = None
    difficulty: int | None = None
    key_grammar: list[str] = Field(default_factory=list)
    labels: dict[str, Any] = Field(default_factory=dict)

    @property
    def language(self) -> Language:
        return self.kind.language
