"""Loader for SysMoBench (system code / traces -> TLA+): task folders, prompts, invariant templates, PGo specs and traces.

Layout read (under ``<data_dir>/sysmobench``): ``tasks/<t>/task.yaml`` + ``tasks/<t>/prompts/**.txt``,
``invariant_templates/<t>/invariants.yaml``, ``trace_format_docs/<format>.txt``, ``pgo/<t>/<t>.tla`` + ``<t>.cfg``
(ground truth for the PGo tasks dqueue/locksvc/raftkvs) with ``pgo/<t>/traces_found/<run>/trace-*.log``, and
``bug_repro_specs/<t>/*.tla`` + ``.cfg``. The systems' source code is not part of the data: ``task.yaml`` names the
repository, branch/commit and files, and a user checkout (``<sources_dir>/<t>`` or ``source_checkouts`` in the
config) fills ``inputs.source_files``. Without it a task still lists and scores;
:func:`require_source_files` says where to get the code. Invariant templates the modelled system is documented
to violate (``KNOWN_VIOLATIONS``, each with its source) are loaded with ``expected="violated"``.

>>> tasks = load(Path("/data/sysmobench"))
>>> [t.id for t in tasks][:2]
['sysmobench/curp', 'sysmobench/dqueue']
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sysmo.contracts.artifact import Artifact, Language
from sysmo.benchmarks.paths import dataset_file, inside, read_dataset_text
from sysmo.benchmarks.yaml_load import safe_load
from sysmo.contracts.task import (
    BuggyVariant,
    InvariantTemplate,
    SourceRef,
    Task,
    TaskInputs,
    TaskKind,
    TaskReferences,
    TraceSet,
)
from sysmo.errors import DataMissingError, TaskError, describe_invalid_settings
from sysmo.log import get_logger

FAMILY = "sysmobench"
WINDOWS_DIR_ENV = "SYSMO_SYSMOBENCH_WINDOWS_DIR"  # the default windows_dir of load(): <dir>/<task>/windows_*.ndjson
log = get_logger(__name__)


class _SourceFile(BaseModel):
    path: str
    description: str = ""


class _Repository(BaseModel):
    model_config = ConfigDict(extra="allow")
    url: str | None = None
    branch: str | None = None
    commit: str | None = None
    version: str | None = None


class TaskYaml(BaseModel):
    """The fields of a SysMoBench ``task.yaml`` this loader uses (others are kept in ``labels``)."""

    model_config = ConfigDict(extra="allow")
    name: str
    description: str = ""
    system_type: str | None = None
    language: str | None = None
    repository: _Repository = Field(default_factory=_Repository)
    source_files: list[_SourceFile] = Field(default_factory=list)
    # a path, or (multi-file tasks) a list of {path, description}
    default_source_file: str | list[_SourceFile] | None = None
    specModule: str | None = None
    trace_format: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def files(self) -> list[_SourceFile]:
        """The files the generation prompt uses: the multi-file default if given, else source_files."""
        if isinstance(self.default_source_file, list):
            return self.default_source_file
        if self.source_files:
            return self.source_files
        if isinstance(self.default_source_file, str):
            return [_SourceFile(path=self.default_source_file)]
        return []


# Templates the modelled system itself is documented to violate. The upstream data checks them anyway; a model
# faithful to the system shows the violation (TLC's counterexample), so the gold reference scores 1.0.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {
    ("locksvc", "NoPriorityInversion"): (
        "pgo/locksvc/locksvc.tla, comment on NoPriorityInversion: the receive order from two senders is not "
        "guaranteed by the implementation's protocol (TCP); 'with bags as our mailboxes instead, the property "
        "correctly fails both in the spec and in the implementation'"
    ),
}


def _read_yaml(path: Path) -> Any:
    try:
        return safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise TaskError(f"{path} is not valid YAML: {exc}") from exc


def load_invariants(path: Path, *, root: Path | None = None, task: str = "") -> list[InvariantTemplate]:
    """``invariants.yaml`` -> templates (extra keys such as ``scope`` are dropped); with ``root``, the file must
    stay inside that dataset."""
    if not path.is_file():
        return []
    if root is not None:
        dataset_file(root, path, task=task)
    data = _read_yaml(path) or {}
    items = data.get("invariants", []) if isinstance(data, dict) else data
    try:
        fields = InvariantTemplate.model_fields
        return [
            InvariantTemplate(**{k: (v.strip() if isinstance(v, str) else v) for k, v in item.items() if k in fields})
            for item in items
        ]
    except (ValidationError, AttributeError) as exc:
        raise TaskError(f"{path}: an invariant template is malformed: {exc}") from exc


def _prompts(folder: Path, root: Path, task: str) -> dict[str, str]:
    """``prompts/direct_call.txt`` -> ``direct_call``; nested ``prompts/alloy/x.txt`` -> ``alloy/x``."""
    if not folder.is_dir():
        return {}
    dataset_file(root, folder, task=task)
    return {
        p.relative_to(folder).with_suffix("").as_posix(): read_dataset_text(root, p, task=task)
        for p in sorted(folder.rglob("*.txt"))
    }


def _artifact(tla: Path, root: Path, task: str) -> Artifact:
    files = {tla.name: read_dataset_text(root, tla, task=task)}
    cfg = tla.with_suffix(".cfg")
    if cfg.is_file():
        files[cfg.name] = read_dataset_text(root, cfg, task=task)
    return Artifact(language=Language.TLA, files=files)


_BUG_URL = re.compile(r"Reproduce Bug:\s*(\S+)")
_CFG_CHECKS = re.compile(r"^\s*(INVARIANTS?|PROPERT(?:Y|IES))\b(.*?)(?=^\s*[A-Z_]{4,}\b|\Z)", re.M | re.S)


def _cfg_checks(cfg_text: str) -> list[str]:
    names: list[str] = []
    for match in _CFG_CHECKS.finditer(cfg_text):
        names += [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", match.group(2))]
    return names


def _buggy_variants(folder: Path, invariant_names: set[str], root: Path, task: str) -> list[BuggyVariant]:
    variants = []
    for tla in sorted(folder.glob("*.tla")) if folder.is_dir() else []:
        artifact = _artifact(tla, root, task)
        url = _BUG_URL.search(artifact.files[tla.name])
        checks = _cfg_checks(artifact.files.get(tla.with_suffix(".cfg").name, ""))
        broken = next((n for n in checks if n in invariant_names), None)
        variants.append(
            BuggyVariant(
                name=tla.stem,
                artifact=artifact,
                # the upstream spec reproduces a real bug as a TLC violation of its own cfg's checks
                exposed_by="invariants",
                invariant=broken,
                description=(
                    f"reproduces {url.group(1) if url else 'a known bug'}; TLC on its own cfg checks "
                    f"{', '.join(checks) or 'nothing listed'}"
                ),
            )
        )
    return variants


def _traces(pgo: Path, root: Path, task: str) -> TraceSet | None:
    found = pgo / "traces_found"
    files = sorted(found.glob("*/trace-*.log")) if found.is_dir() else []
    if not files:
        return None
    for f in files:
        dataset_file(root, f, task=task)
    runs = len({f.parent for f in files})
    return TraceSet(
        format="pgo",
        files=files,
        description=(
            f"{len(files)} PGo/TraceLink traces from {runs} runs; files in one traces_found/<run>/ folder are the "
            "per-process logs of one execution (vector clocks order them)"
        ),
    )


def _checkout(name: str, sources_dir: Path | None, checkouts: dict[str, Path]) -> Path | None:
    candidate = checkouts.get(name) or (sources_dir / name if sources_dir else None)
    return candidate if candidate is not None and candidate.is_dir() else None


def _read_sources(checkout: Path, files: list[_SourceFile], task: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for f in files:
        path = inside(checkout, f.path, task=task, field="source_files")
        if path.is_file():
            found[f.path] = path.read_text(encoding="utf-8", errors="replace")
        else:
            log.warning("sysmobench.source_file_missing", task=task, checkout=str(checkout), file=f.path)
    return found


def load_task(
    folder: Path, root: Path, sources_dir: Path | None = None, checkouts: dict[str, Path] | None = None,
    windows_dir: Path | None = None,
) -> Task:
    """One task from ``tasks/<t>/`` and the matching invariant/PGo/bug folders under ``root``; ``windows_dir``:
    a folder whose ``<t>/`` sub-folder (when present) holds the task's recorded ``windows_<Action>.ndjson``."""
    yaml_path = folder / "task.yaml"
    dataset_file(root, yaml_path, task=folder.name)
    try:
        spec = TaskYaml(**(_read_yaml(yaml_path) or {}))
    except ValidationError as exc:
        problems = describe_invalid_settings(exc)
        raise TaskError(f"{yaml_path} does not describe a SysMoBench task: {problems}") from exc
    name = folder.name
    files = spec.files()
    repo = spec.repository
    commit = repo.commit or repo.version
    checkout = _checkout(name, sources_dir, checkouts or {})
    source = SourceRef(url=repo.url, branch=repo.branch, commit=commit, files=[f.path for f in files], checkout=checkout)
    source_files = _read_sources(checkout, files, name) if checkout else {}

    invariants_yaml = root / "invariant_templates" / name / "invariants.yaml"
    invariants = [
        t.model_copy(update={"expected": "violated", "expected_source": KNOWN_VIOLATIONS[(name, t.name)]})
        if (name, t.name) in KNOWN_VIOLATIONS else t
        for t in load_invariants(invariants_yaml, root=root, task=name)
    ]
    pgo = root / "pgo" / name
    traces = _traces(pgo, root, name)
    reference_tla = pgo / f"{name}.tla"
    reference = _artifact(reference_tla, root, name) if reference_tla.is_file() else None
    trace_doc = inside(root / "trace_format_docs", f"{spec.trace_format}.txt", task=name, field="trace_format") \
        if spec.trace_format else None
    prompts = _prompts(folder / "prompts", root, name)
    tracelink = root / "tracelink_prompts" / "prompt.txt"
    if traces is not None and tracelink.is_file():
        prompts["tracelink_mapping"] = read_dataset_text(root, tracelink, task=name)

    extra: dict[str, Any] = {}
    validate_cfg = pgo / f"{name}Validate.cfg"
    if validate_cfg.is_file():
        dataset_file(root, validate_cfg, task=name)
        extra["pgo_validate_cfg"] = str(validate_cfg)
    tv_modules = root / "trace_validation_tla"
    if tv_modules.is_dir():
        modules = sorted(tv_modules.glob("*.tla"))
        for module in modules:
            dataset_file(root, module, task=name)
        extra["trace_validation_modules"] = [str(p) for p in modules]

    return Task(
        id=f"{FAMILY}/{name}",
        benchmark=FAMILY,
        kind=TaskKind.TLA,
        title=spec.description,
        inputs=TaskInputs(
            description=spec.description,
            source=source,
            source_files=source_files,
            traces=traces,
            trace_format=read_dataset_text(root, trace_doc, task=name) if trace_doc and trace_doc.is_file() else None,
            prompts=prompts,
            module_name=spec.specModule or name,
        ),
        references=TaskReferences(
            model=reference,
            invariants=invariants,
            traces=traces,
            buggy_variants=_buggy_variants(root / "bug_repro_specs" / name, {i.name for i in invariants}, root, name),
            windows=windows_dir / name if windows_dir is not None and (windows_dir / name).is_dir() else None,
            extra=extra,
        ),
        domain=spec.system_type,
        labels={
            "system": name,
            "source_language": spec.language,
            "system_type": spec.system_type,
            "trace_format_name": spec.trace_format,
            "source_file_descriptions": {f.path: f.description for f in files if f.description},
            "has_reference_model": reference is not None,
            "has_traces": traces is not None,
            "has_windows": windows_dir is not None and (windows_dir / name).is_dir(),
            "has_source": bool(source_files),
            "n_invariants": len(invariants),
            "metadata": spec.metadata,
        },
    )


def load(
    root: Path, sources_dir: Path | None = None, checkouts: dict[str, Path] | None = None,
    windows_dir: Path | None = None,
) -> list[Task]:
    """Every task under ``root/tasks`` (sorted by name); ``windows_dir/<t>/``, when given and present, is task
    ``t``'s folder of recorded windows (``references.windows``, the optional ``transitions`` stage); default
    ``$SYSMO_SYSMOBENCH_WINDOWS_DIR``."""
    if windows_dir is None and os.environ.get(WINDOWS_DIR_ENV):
        windows_dir = Path(os.environ[WINDOWS_DIR_ENV]).expanduser()
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir():
        raise DataMissingError(f"sysmobench: no tasks/ folder under {root}")
    folders = sorted(p for p in tasks_dir.iterdir() if (p / "task.yaml").is_file())
    for folder in folders:  # a task folder that is a link out of the dataset is refused before anything is read
        dataset_file(root, folder, task=folder.name)
    tasks = [load_task(f, root, sources_dir, checkouts, windows_dir) for f in folders]
    log.debug("sysmobench.loaded", n=len(tasks), with_source=sum(bool(t.inputs.source_files) for t in tasks))
    return tasks


def require_source_files(task: Task) -> dict[str, str]:
    """The modelled system's code, or a DataMissingError naming the repository, commit and files to check out."""
    if task.inputs.source_files:
        return task.inputs.source_files
    source = task.inputs.source
    if source is None:
        raise DataMissingError(f"{task.id} names no source repository; it can only be modelled from its description")
    system = task.labels.get("system", task.id.rsplit("/", 1)[-1])
    where = f"{source.url or 'the upstream repository'}"
    at = f" at commit {source.commit}" if source.commit else (f" on branch {source.branch}" if source.branch else "")
    problem = (
        f"the checkout at {source.checkout} lacks these files" if source.checkout else "no checkout of its source is set"
    )
    raise DataMissingError(
        f"{task.id}: {problem}. Clone {where}{at} into <sources_dir>/{system} (set --sources-dir, SYSMO_SOURCES_DIR, "
        f"or sources_dir / source_checkouts.{system} in the config); files used: {', '.join(source.files) or '(none listed)'}"
    )
