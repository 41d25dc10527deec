"""Loader for R2ABench (product requirements document -> PlantUML architecture diagram), with the input ablations.

Layout under ``<data_dir>/r2abench``: one folder per project, ``<project>/<project>_E.md`` (the English PRD,
Markdown with ``#`` headings) and ``<project>/ad.puml`` (the reference architecture diagram).

Each project gives three tasks, one per input ablation of the paper, told apart by ``labels["ablation"]``:
``r2abench/<project>/full`` (the whole PRD), ``r2abench/<project>/no-arch`` (the "System Architecture Description"
section removed) and ``r2abench/<project>/min`` (the document title plus the "Core Objectives" and "Functional
Features" sections only). Sections are found by heading text, ignoring numbering and case; a section runs to the
next heading of the same or a higher level.

>>> [t.id for t in load(Path("tests/fixtures/r2abench"))][:3]
['r2abench/campus_parking/full', 'r2abench/campus_parking/min', 'r2abench/campus_parking/no-arch']
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from sysmo.artifact import Artifact, Language
from sysmo.benchmarks.task import Task, TaskInputs, TaskKind, TaskReferences
from sysmo.errors import TaskError
from sysmo.log import get_logger

FAMILY = "r2abench"
REFERENCE_FILE = "ad.puml"
log = get_logger(__name__)


class Ablation(StrEnum):
    FULL = "full"
    NO_ARCH = "no-arch"
    MIN = "min"


class Section(BaseModel):
    """A Markdown heading and the line span it governs (``start`` is the heading line, ``end`` is exclusive)."""

    level: int
    title: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """The title without numbering, emphasis or a trailing colon, lower-cased."""
        text = re.sub(r"^[\s*_]*((\d+(\.\d+)*|[IVXivx]+|[A-Za-z])[.)]\s+)?", "", self.title)
        return text.strip(" *_:").lower()


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def sections(text: str) -> list[Section]:
    """The ATX headings of a Markdown text (outside code fences), each with its span."""
    lines = text.splitlines()
    found: list[tuple[int, str, int]] = []
    fenced = False
    for n, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2), n))
    result = []
    for i, (level, title, start) in enumerate(found):
        end = next((s for lv, _, s in found[i + 1 :] if lv <= level), len(lines))
        result.append(Section(level=level, title=title, start=start, end=end))
    return result


def _is_architecture(s: Section) -> bool:
    return "architecture" in s.key


def _is_minimal(s: Section) -> bool:
    key = s.key
    return "objective" in key or ("feature" in key and "non-functional" not in key and "nonfunctional" not in key)


def _section_level(secs: list[Section]) -> int | None:
    """The heading level of the PRD's named sections (architecture, objectives, features)."""
    return next((s.level for s in secs if _is_minimal(s) or _is_architecture(s)), None)


def _doc_title(secs: list[Section]) -> Section | None:
    """The document title: the first heading above the level of the PRD's sections."""
    level = _section_level(secs)
    return next((s for s in secs if level is not None and s.level < level), None)


def _join(lines: list[str]) -> str:
    return "\n".join(lines).strip() + "\n"


def ablate(prd: str, ablation: Ablation) -> str:
    """The PRD text an agent sees under one ablation."""
    if ablation is Ablation.FULL:
        return prd
    lines = prd.splitlines()
    secs = sections(prd)
    level = _section_level(secs)
    # only the PRD's own sections count, not a sub-heading such as "Architecture constraints"
    top = [s for s in secs if s.level == level]
    if ablation is Ablation.NO_ARCH:
        drop: set[int] = set()
        for s in filter(_is_architecture, top):
            drop.update(range(s.start, s.end))
        return _join([line for n, line in enumerate(lines) if n not in drop])
    keep: set[int] = set()
    title = _doc_title(secs)
    if title is not None:
        keep.add(title.start)
    for s in filter(_is_minimal, top):
        keep.update(range(s.start, s.end))
    kept: list[str] = []
    for n in sorted(keep):
        if kept and n - 1 not in keep and kept[-1].strip():
            kept.append("")  # keep blocks that were apart in the PRD apart
        kept.append(lines[n])
    return _join(kept)


def load_project(folder: Path) -> list[Task]:
    """The three ablation tasks of one project folder."""
    project = folder.name
    prd_path = folder / f"{project}_E.md"
    reference_path = folder / REFERENCE_FILE
    if not prd_path.is_file() or not reference_path.is_file():
        raise TaskError(f"r2abench project {folder} needs {prd_path.name} (the PRD) and {REFERENCE_FILE} (the reference)")
    prd = prd_path.read_text(encoding="utf-8")
    reference = Artifact(language=Language.PLANTUML, files={f"{project}.puml": reference_path.read_text(encoding="utf-8")})
    secs = sections(prd)
    has_arch = any(map(_is_architecture, secs))
    has_min = any(map(_is_minimal, secs))
    if not has_arch or not has_min:
        log.warning("r2abench.sections_missing", project=project, architecture=has_arch, objectives_or_features=has_min)
    doc_title = _doc_title(secs)
    title = doc_title.title if doc_title else project
    level = _section_level(secs)
    tasks = []
    for ablation in Ablation:
        tasks.append(
            Task(
                id=f"{FAMILY}/{project}/{ablation.value}",
                benchmark=FAMILY,
                kind=TaskKind.ARCHITECTURE,
                title=f"{title} ({ablation.value})",
                inputs=TaskInputs(requirement=ablate(prd, ablation)),
                references=TaskReferences(model=reference),
                labels={
                    "project": project,
                    "ablation": ablation.value,
                    "prd_sections": [s.title for s in secs if s.level == level],
                    "has_architecture_section": has_arch,
                },
            )
        )
    return tasks


def load(root: Path) -> list[Task]:
    """All projects under ``root`` (folders holding ``<name>_E.md``), three tasks each, sorted by id."""
    tasks: list[Task] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if (folder / f"{folder.name}_E.md").is_file() or (folder / REFERENCE_FILE).is_file():
            tasks += load_project(folder)
    tasks.sort(key=lambda t: t.id)
    log.debug("r2abench.loaded", n=len(tasks), root=str(root))
    return tasks
