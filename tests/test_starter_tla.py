"""Starter TLA+ tasks: the folder loader, bit-for-bit trace regeneration, and every cascade stage on the real tools."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from sysmo.benchmarks.starter import STARTER_DIR, load_starter_tasks, load_task_folder
from sysmo.benchmarks.starter.tla import record
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import TaskError

TLA_TASKS = ["bounded_buffer", "leader_election", "spinlock", "two_phase_commit"]


def _task(name: str) -> Task:
    return load_task_folder(STARTER_DIR / "tla" / name)


def test_load_starter_tasks_returns_every_kind_with_unique_ids() -> None:
    tasks = load_starter_tasks()
    kinds = {t.kind for t in tasks}
    assert kinds == set(TaskKind)
    assert len({t.id for t in tasks}) == len(tasks)
    assert all(t.benchmark == "starter" and t.id == f"starter/{t.kind.value}/{t.id.rsplit('/', 1)[1]}" for t in tasks)
    assert sorted(t.id.rsplit("/", 1)[1] for t in tasks if t.kind == TaskKind.TLA) == TLA_TASKS
    # the text kinds keep their requirement and reference
    sysml = [t for t in tasks if t.kind == TaskKind.SYSML]
    assert sysml and all(t.inputs.requirement and t.references.model and t.references.model.main_file.endswith(".sysml")
                         for t in sysml)


@pytest.mark.parametrize("name", TLA_TASKS)
def test_tla_task_has_description_templates_traces_and_buggy_variants(name: str) -> None:
    task = _task(name)
    module = task.inputs.module_name
    assert task.references.model is not None
    assert set(task.references.model.files) == {f"{module}.tla", f"{module}.cfg"}
    description = task.inputs.description or ""
    assert "## Core actions" in description and "## Exclusions" in description
    assert task.inputs.trace_format and "NDJSON" in task.inputs.trace_format
    assert f"{name}.py" in task.inputs.source_files and "scheduler.py" in task.inputs.source_files
    types = {t.type for t in task.references.invariants}
    assert types == {"safety", "liveness"}
    assert all(t.tla_example.startswith(f"{t.name} ==") for t in task.references.invariants)
    assert task.inputs.traces == task.references.traces and len(task.references.traces.files) >= 3
    stages = {b.exposed_by for b in task.references.buggy_variants}
    assert stages == {"invariants", "conformance"}
    names = {t.name for t in task.references.invariants}
    for variant in task.references.buggy_variants:
        assert set(variant.artifact.files) == {f"{module}.tla", f"{module}.cfg"}  # the reference cfg is added
        assert (variant.invariant in names) == (variant.exposed_by == "invariants")
        assert "BUG" in variant.artifact.files[f"{module}.tla"]


@pytest.mark.parametrize("name", TLA_TASKS)
def test_traces_are_ndjson_with_init_config_and_full_state(name: str) -> None:
    task = _task(name)
    for path in task.references.traces.files:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert lines[0]["event"] == "Init" and lines[0]["config"] and lines[0]["state"]
        assert len(lines) >= 8
        fields = set(lines[0]["state"])
        for line in lines[1:]:
            assert set(line) == {"event", "actor", "args", "state"} and set(line["state"]) == fields
            assert line["event"] in task.labels["actions"]


def test_regenerating_the_traces_from_the_committed_seeds_gives_identical_files() -> None:
    assert record.regenerate(check=True) == []
    folders = record.recordings()
    assert sorted(f.name for f in folders) == TLA_TASKS
    for folder, recording in folders.items():
        rendered = record.render(folder, recording)
        assert sorted(rendered) == sorted(f"traces/seed-{s}.ndjson" for s in recording.seeds)
        assert len(set(rendered.values())) == len(rendered)  # different seeds, different interleavings


def test_record_check_reports_a_changed_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "tla"
    shutil.copytree(STARTER_DIR / "tla" / "spinlock", copy / "spinlock")
    trace = copy / "spinlock" / "traces" / "seed-2.ndjson"
    trace.write_text(trace.read_text().replace('"Release"', '"Acquire"', 1))
    monkeypatch.setattr(record, "TLA_DIR", copy)
    assert record.main(["--check"]) == 1
    assert record.main([]) == 0 and record.regenerate(check=True) == []
    assert trace.read_bytes() == (STARTER_DIR / "tla" / "spinlock" / "traces" / "seed-2.ndjson").read_bytes()


def _write_task(root: Path, data: dict) -> Path:
    folder = root / "tla" / data["id"]
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(yaml.safe_dump(data))
    return folder


def test_task_yaml_with_unknown_key_or_wrong_folder_or_missing_file_is_rejected(tmp_path: Path) -> None:
    folder = _write_task(tmp_path, {"id": "typo", "kind": "tla", "title": "T", "reference_flie": "X.tla"})
    with pytest.raises(TaskError, match="reference_flie"):
        load_task_folder(folder)
    folder = _write_task(tmp_path, {"id": "other", "kind": "sysml", "title": "T"})
    with pytest.raises(TaskError, match="must equal the folder names"):
        load_task_folder(folder)
    folder = _write_task(tmp_path, {"id": "missing", "kind": "tla", "title": "T", "reference_files": ["M.tla"]})
    with pytest.raises(TaskError, match="'M.tla' does not exist"):
        load_task_folder(folder)


# The reference and buggy-variant scores of each task are pinned once, through the cascade the runs use:
# tests/test_tla_cascade_controls.py.
