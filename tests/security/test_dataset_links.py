"""A dataset cannot put a host file into a prompt or a reference through a symlink: files found by scanning the
dataset, and task folders themselves, must stay inside it (B2, B3)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from sysmo.benchmarks import oodeval, sysmobench
from sysmo.benchmarks.starter import load_task_folder
from sysmo.errors import DatasetEscapeError

SECRET = f"SYSMO-HOST-FILE-{uuid.uuid4().hex}"


@pytest.fixture
def host_file(tmp_path) -> Path:
    """A file outside every dataset, as /etc/shadow or a private key would be."""
    path = tmp_path / "host" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _sysmobench(tmp_path: Path) -> Path:
    root = tmp_path / "sysmobench"
    folder = root / "tasks" / "spin"
    (folder / "prompts").mkdir(parents=True)
    (folder / "task.yaml").write_text(yaml.safe_dump({"name": "spin", "description": "a spinlock"}))
    (folder / "prompts" / "direct_call.txt").write_text("Model the lock.")
    return root


def _refused(load, *names: str) -> None:
    with pytest.raises(DatasetEscapeError) as caught:
        load()
    message = str(caught.value)
    assert SECRET not in message and "\n" not in message
    for name in names:
        assert name in message


@pytest.mark.parametrize("planted", ["tasks/spin/prompts/leak.txt", "pgo/spin/spin.tla", "pgo/spin/spin.cfg",
                                     "pgo/spin/traces_found/run1/trace-1.log", "bug_repro_specs/spin/Bug.tla",
                                     "invariant_templates/spin/invariants.yaml"])
def test_a_scanned_sysmobench_file_linked_out_of_the_dataset_is_refused(tmp_path, host_file, planted):
    root = _sysmobench(tmp_path)
    if planted.endswith(".cfg"):
        (root / "pgo" / "spin").mkdir(parents=True)
        (root / "pgo" / "spin" / "spin.tla").write_text("---- MODULE spin ----\n====\n")
    link = root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(host_file)
    _refused(lambda: sysmobench.load(root), "task spin", link.name)


def test_a_sysmobench_task_folder_linked_from_elsewhere_is_refused(tmp_path, host_file):
    root = _sysmobench(tmp_path)
    elsewhere = tmp_path / "host" / "evil"
    (elsewhere / "prompts").mkdir(parents=True)
    (elsewhere / "task.yaml").write_text(yaml.safe_dump({"name": "evil"}))
    (elsewhere / "prompts" / "p.txt").symlink_to(host_file)
    (root / "tasks" / "evil").symlink_to(elsewhere)
    _refused(lambda: sysmobench.load(root), "task evil")


def test_the_sysmobench_files_inside_the_dataset_still_load(tmp_path):
    root = _sysmobench(tmp_path)
    prompts = root / "tasks" / "spin" / "prompts"
    (prompts / "alias.txt").symlink_to(prompts / "direct_call.txt")
    (task,) = sysmobench.load(root)
    assert task.inputs.prompts == {"alias": "Model the lock.", "direct_call": "Model the lock."}


@pytest.mark.parametrize("planted", ["requirement.md", "reference.puml", "task.yaml"])
def test_an_oodeval_file_linked_out_of_the_dataset_is_refused(tmp_path, host_file, planted):
    folder = tmp_path / "oodeval" / "library"
    folder.mkdir(parents=True)
    (folder / "requirement.md").write_text("A library lends books.")
    (folder / "reference.puml").write_text("@startuml\nclass Book\n@enduml\n")
    (folder / planted).unlink(missing_ok=True)
    (folder / planted).symlink_to(host_file)
    _refused(lambda: oodeval.load(tmp_path / "oodeval"), "task library", planted)


def test_a_starter_task_folder_linked_out_of_the_dataset_is_refused(tmp_path, host_file):
    """The folder is a link to ``host/tla/lock``: resolving it first made ``host`` the dataset, so a reference of
    ``../../secret.txt`` passed every check and the host file became the task's reference model."""
    outside = tmp_path / "host" / "tla" / "lock"
    outside.mkdir(parents=True)
    (outside / "requirement.md").write_text("A lock.")
    (outside / "task.yaml").write_text(yaml.safe_dump({
        "id": "lock", "kind": "tla", "title": "Lock", "requirement_file": "requirement.md",
        "reference_file": "../../secret.txt"}))
    dataset = tmp_path / "starter" / "tla"
    dataset.mkdir(parents=True)
    (dataset / "lock").symlink_to(outside)
    _refused(lambda: load_task_folder(dataset / "lock"), "task lock", "lock")
