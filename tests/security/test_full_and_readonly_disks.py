"""A full disk or a read-only output folder gives one line and exit code 3 from every command (C3, C4), the viewer
its error page, and what was stored survives; a store deleted beside its experiment folder is refused (C5); ids
that cannot name a folder or be typed after ``--resume`` are refused (C7).

The disks are real: a small tmpfs mounted in a private mount namespace (``unshare -m``, root only), so SQLite and
Python meet a true ENOSPC / EROFS; where that cannot be done those tests skip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sysmo_cli import run_sysmo

from sysmo.errors import ConfigError
from sysmo.runner import ExperimentConfig

TESTS = Path(__file__).resolve().parent.parent

# one process for both disks (its imports are most of the time): on each, an experiment with one stored attempt is
# made, the disk is filled or turned read-only, the commands run in this process (sysmo.cli.main) with their exit
# codes and output kept, then the disk is freed again and the stored attempt read back
SCRIPT = """
import json, subprocess, sys
from pathlib import Path
sys.path.insert(0, TESTS)
import yaml
from starlette.testclient import TestClient
from sysmo_cli import run_sysmo
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.runner import ExperimentConfig
from sysmo.store import Store
from sysmo.view.app import create_app

def prepare(disk):
    store = Store(disk / "exp" / "results.sqlite")
    config = ExperimentConfig(id="exp", output_dir=disk, models=["reference"], agents=["base_modeling"], samples=1)
    (disk / "exp" / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json")))
    store.save_experiment("exp", {"samples": 1}, {}, is_control=True)
    store.save_attempt("exp", Attempt(id="ff01", task_id="starter/uml_class/t1", agent="base_modeling",
                       model="reference", status=AttemptStatus.PASSED, is_control=True),
                       {"benchmark": "starter", "kind": "uml_class"})
    store.close()

def spoil(disk, mode):
    if mode == "readonly":
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        return
    with open(disk / "filler", "wb") as filler:
        try:
            while True:
                filler.write(b"x" * 65536)
                filler.flush()
        except OSError:
            pass

def attack(disk, mode):
    results = {}
    for name, args in {
        "run": ["run", "--id", "fresh", "-o", str(disk), "--model", "reference", "-a", "base_modeling",
                "--ids", "starter/uml_class/recipe_book", "-n", "1", "--no-report", "--no-progress"],
        "resume": ["run", "--resume", "exp", "-o", str(disk), "--no-report", "--no-progress"],
        "report": ["report", "exp", "-o", str(disk)],
        "trace": ["trace", "ff01", "-o", str(disk)],
    }.items():
        result = run_sysmo(*args)
        results[name] = {"code": result.code, "output": result.output}
    client = TestClient(create_app(disk), base_url="http://localhost")
    results["view"] = {path: [client.get(path).status_code, client.get(path).text] for path in ("/", "/e/exp")}
    if mode == "full":
        (disk / "filler").unlink()
    else:
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
    store = Store(disk / "exp" / "results.sqlite")
    results["kept"] = [r["id"] for r in store.query("SELECT id FROM attempts")]
    store.close()
    return results

found = {}
for mode, disk in DISKS.items():
    prepare(Path(disk))
    spoil(Path(disk), mode)
    found[mode] = attack(Path(disk), mode)
print("RESULTS" + json.dumps(found))
"""


def _mount_namespace_usable() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", "/mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def disks(tmp_path_factory) -> dict[str, dict]:
    """The commands' results on a full disk and on a read-only one: two 2 MB tmpfs in one private mount namespace."""
    if not _mount_namespace_usable():
        pytest.skip("a small disk needs root and `unshare -m` (a private mount namespace)")
    paths = {mode: str(tmp_path_factory.mktemp(f"disk-{mode}")) for mode in ("full", "readonly")}
    script = f"TESTS = {str(TESTS)!r}\nDISKS = {paths!r}\n" + textwrap.dedent(SCRIPT)
    mounts = " && ".join(f"mount -t tmpfs -o size=2m tmpfs {path}" for path in paths.values())
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"{mounts} && exec {sys.executable} -c \"$0\"", script],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "400"})
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULTS")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("RESULTS"):])


@pytest.mark.parametrize("mode", ["full", "readonly"])
@pytest.mark.parametrize("command", ["run", "resume", "report", "trace"])
def test_a_full_or_read_only_disk_is_one_line_and_exit_code_3(disks, mode, command):
    result = disks[mode][command]
    assert "Traceback" not in result["output"]
    if command == "trace" and result["code"] == 0:
        return  # reading an attempt needs no space
    assert result["code"] == 3, result["output"]
    (line,) = [x for x in result["output"].splitlines() if x.startswith("error:")]
    assert ("full" in line if mode == "full" else "read-only" in line) and "--resume" in line, line


@pytest.mark.parametrize("mode", ["full", "readonly"])
def test_the_viewer_shows_its_error_page_and_the_stored_attempt_survives(disks, mode):
    for path, (status, text) in disks[mode]["view"].items():
        assert status != 500, (path, text)
        assert status == 200 or "cannot be read" in text
    assert disks[mode]["kept"] == ["ff01"]


def test_a_store_deleted_beside_its_experiment_folder_is_refused_saying_how_to_go_on(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "isolation.json").write_text("{}")
    result = run_sysmo("run", "--id", "exp", "-o", str(tmp_path), "--model", "reference", "-a", "base_modeling",
                       "--ids", "starter/uml_class/recipe_book", "-n", "1", "--no-report", "--no-progress")
    assert result.code == 2, result.output
    assert len([x for x in result.output.splitlines() if x.startswith("error:")]) == 1
    said = " ".join(result.output.split())  # the one line as the console wrapped it, joined again
    assert "no results.sqlite" in said and "--resume exp" in said and "rm -r" in said
    assert sorted(p.name for p in folder.iterdir()) == ["isolation.json"]  # nothing was run into it


@pytest.mark.parametrize("bad", ["x" * 300, "-x", "--resume", "a b", "caf\u00e9\u202e", "x" * 101])
def test_an_id_that_cannot_name_a_folder_or_be_resumed_is_refused(tmp_path, bad):
    with pytest.raises(ConfigError, match="experiment id") as caught:
        ExperimentConfig(id=bad, output_dir=tmp_path).experiment_id()
    assert len(str(caught.value)) < 200


def test_a_300_character_id_is_one_line_from_the_command_line(tmp_path):
    result = run_sysmo("run", "--id", "x" * 300, "-o", str(tmp_path), "--model", "reference", "--no-progress")
    assert result.code == 2 and "Traceback" not in result.output
    assert "at most 100" in " ".join(result.output.split())
