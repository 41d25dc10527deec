"""Loader for R2ABench (product requirements document -> PlantUML architecture diagram), with the input ablations.

Layouts under ``<data_dir>/r2abench`` (searched at any depth):

- flattened: one folder per project, ``<project>/<project>_E.md`` (the English PRD, Markdown with ``#``
  headings) and ``<project>/ad.puml`` (the reference architecture diagram);
- a checkout of the replication package as it is: ``Dataset/E-R2A/<JAVA|Python>/<project>/<project>_E.md``,
  ``.../<project>/AD/ad.puml`` and the SRS the authors derived from the PRD (``checked_srs.md``, else
  ``<name>_srs.md``).

When a root holds no project it raises one line naming both layouts. A project folder of the package that
has its reference and SRS but not its PRD (a partial copy of the package) gives the ``srs`` task alone; one
with a reference and neither input is skipped with a warning (``r2abench.no_input``).

Each project gives three tasks, one per input ablation of the paper, told apart by ``labels["ablation"]``:
``r2abench/<project>/full`` (the whole PRD), ``r2abench/<project>/no-arch`` (the "System Architecture Description"
section removed), ``r2abench/<project>/min`` (the document title plus the "Core Objectives" and "Functional
Features" sections only) and, where the project has one, ``r2abench/<project>/srs`` (the software requirements
specification: the published predictions were generated from it: the OpenHands ``task.txt`` of the
replication package points the agent at ``checked_srs.md``). Sections are found by heading text, ignoring numbering and case; a section runs to the
next heading of the same or a higher level.

>>> [t.id for t in load(Path("tests/fixtures/r2abench"))][:3]
['r2abench/campus_parking/full', 'r2abench/campus_parking/min', 'r2abench/campus_parking/no-arch']
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from sysmo.benchmarks.paths import dataset_file, read_dataset_text
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskInputs, TaskKind, TaskReferences
from sysmo.errors import TaskError
from sysmo.log import get_logger

FAMILY = "r2abench"
REFERENCE_FILE = "ad.puml"
log = get_logger(__name__)


class Ablation(StrEnum):
    FULL = "full"
    NO_ARCH = "no-arch"
    MIN = "min"
    SRS = "srs"


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


def reference_path(folder: Path) -> Path | None:
    """``<project>/ad.puml`` (flattened) or ``<project>/AD/ad.puml`` (the replication package)."""
    return next((p for p in (folder / REFERENCE_FILE, folder / "AD" / REFERENCE_FILE) if p.is_file()), None)


def srs_path(folder: Path) -> Path | None:
    """The project's SRS: ``checked_srs.md`` (the checked one the authors fed the agents), else ``*_srs.md``."""
    checked = folder / "checked_srs.md"
    if checked.is_file():
        return checked
    return next(iter(sorted(folder.glob("*_srs.md"))), None)


def load_project(folder: Path, root: Path | None = None) -> list[Task]:
    """The ablation tasks of one project folder (three, four with an SRS; the SRS task alone without a PRD); every
    file read must stay inside ``root`` (default: the project folder)."""
    project = folder.name
    root = root or folder
    dataset_file(root, folder, task=project)
    prd_path = folder / f"{project}_E.md"
    ref_path = reference_path(folder)
    srs = srs_path(folder)
    if ref_path is None or (not prd_path.is_file() and srs is None):
        raise TaskError(
            f"r2abench project {folder} needs {prd_path.name} (the PRD) or an SRS (checked_srs.md, *_srs.md), and "
            f"{REFERENCE_FILE} or AD/{REFERENCE_FILE} (the reference diagram)"
        )
    reference_path_ = ref_path
    if not prd_path.is_file():
        log.warning("r2abench.prd_missing", project=project, folder=str(folder), tasks="srs only")
    prd = read_dataset_text(root, prd_path, task=project) if prd_path.is_file() else ""
    reference = Artifact(language=Language.PLANTUML,
                         files={f"{project}.puml": read_dataset_text(root, reference_path_, task=project)})
    secs = sections(prd)
    has_arch = any(map(_is_architecture, secs))
    has_min = any(map(_is_minimal, secs))
    if prd and (not has_arch or not has_min):
        log.warning("r2abench.sections_missing", project=project, architecture=has_arch, objectives_or_features=has_min)
    doc_title = _doc_title(secs)
    title = doc_title.title if doc_title else project
    level = _section_level(secs)
    tasks = []
    for ablation in Ablation:
        if ablation is Ablation.SRS and srs is None:
            continue
        if ablation is not Ablation.SRS and not prd:
            continue
        requirement = read_dataset_text(root, srs, task=project) if ablation is Ablation.SRS and srs \
            else ablate(prd, ablation)
        tasks.append(
            Task(
                id=f"{FAMILY}/{project}/{ablation.value}",
                benchmark=FAMILY,
                kind=TaskKind.ARCHITECTURE,
                title=f"{title} ({ablation.value})",
                inputs=TaskInputs(requirement=requirement),
                references=TaskReferences(model=reference),
                labels={
                    "project": project,
                    "ablation": ablation.value,
                    "prd_sections": [s.title for s in secs if s.level == level],
                    "has_architecture_section": has_arch,
                    "language": folder.parent.name if folder.parent.name.lower() in ("java", "python") else None,
                    "input_file": (srs if ablation is Ablation.SRS and srs else prd_path).name,
                },
            )
        )
    return tasks


def _project_folders(root: Path) -> list[Path]:
    """Folders holding ``<name>_E.md``, a flattened reference, or the package's ``AD/ad.puml``, at any depth
    (``Output/`` predictions are not projects); a folder with a reference but no input is skipped, said once."""
    def outside_output(folder: Path) -> bool:
        return "Output" not in folder.relative_to(root).parts

    found = []
    for prd in sorted(root.rglob("*_E.md")):
        folder = prd.parent
        if prd.name == f"{folder.name}_E.md" and outside_output(folder):
            found.append(folder)
    candidates = [p for p in root.iterdir() if p.is_dir()]
    candidates += [ref.parent.parent for ref in sorted(root.rglob(f"AD/{REFERENCE_FILE}")) if outside_output(ref.parent)]
    for folder in sorted(set(candidates)):
        if folder in found or reference_path(folder) is None:
            continue
        if srs_path(folder) is None and not (folder / f"{folder.name}_E.md").is_file():
            log.warning("r2abench.no_input", folder=str(folder), reason="a reference but neither the PRD nor an SRS")
            continue
        found.append(folder)
    return sorted(found)


def load(root: Path) -> list[Task]:
    """All projects under ``root``, three or four tasks each, sorted by id; none found is an error."""
    tasks: list[Task] = []
    for folder in _project_folders(root):
        tasks += load_project(folder, root)
    if not tasks:
        raise TaskError(
            f"no r2abench project under {root}: expected <project>/<project>_E.md with <project>/{REFERENCE_FILE} "
            f"(flattened) or Dataset/E-R2A/<JAVA|Python>/<project>/<project>_E.md with <project>/AD/{REFERENCE_FILE} "
            "(a checkout of the replication package)"
        )
    tasks.sort(key=lambda t: t.id)
    log.debug("r2abench.loaded", n=len(tasks), root=str(root))
    return tasks
