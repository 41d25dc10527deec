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

# made on the small disk before it fills or turns read-only: an experiment with one stored attempt
SETUP = """
import yaml
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.runner import ExperimentConfig
from sysmo.store import Store
store = Store(DISK / "exp" / "results.sqlite")
config = ExperimentConfig(id="exp", output_dir=DISK, models=["reference"], agents=["base_modeling"], samples=1)
(DISK / "exp" / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json")))
store.save_experiment("exp", {"samples": 1}, {}, is_control=True)
store.save_attempt("exp", Attempt(id="ff01", task_id="starter/uml_class/t1", agent="base_modeling",
                   model="reference", status=AttemptStatus.PASSED, is_control=True),
                   {"benchmark": "starter", "kind": "uml_class"})
store.close()
"""
# then the commands, each in this process (sysmo.cli.main), their exit codes and stderr kept
COMMANDS = """
import json, shutil, subprocess
from sysmo_cli import run_sysmo
from starlette.testclient import TestClient
from sysmo.view.app import create_app
from sysmo.store import Store
results = {}
for name, args in {
    "run": ["run", "--id", "fresh", "-o", str(DISK), "--model", "reference", "-a", "base_modeling",
            "--ids", "starter/uml_class/recipe_book", "-n", "1", "--no-report", "--no-progress"],
    "resume": ["run", "--resume", "exp", "-o", str(DISK), "--no-report", "--no-progress"],
    "report": ["report", "exp", "-o", str(DISK)],
    "trace": ["trace", "ff01", "-o", str(DISK)],
}.items():
    result = run_sysmo(*args)
    results[name] = {"code": result.code, "output": result.output}
client = TestClient(create_app(DISK), base_url="http://localhost")
results["view"] = {path: [client.get(path).status_code, client.get(path).text] for path in ("/", "/e/exp")}
if MODE == "full":
    (DISK / "filler").unlink()
else:
    subprocess.run(["mount", "-o", "remount,rw", str(DISK)], check=True)
store = Store(DISK / "exp" / "results.sqlite")
results["kept"] = [r["id"] for r in store.query("SELECT id FROM attempts")]
store.close()
print("RESULTS" + json.dumps(results))
"""


def _mount_namespace_usable() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", "/mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def disks(tmp_path_factory) -> dict[str, dict]:
    """The commands' results on a full disk and on a read-only one (one process each, both made here)."""
    if not _mount_namespace_usable():
        pytest.skip("a small disk needs root and `unshare -m` (a private mount namespace)")
    found = {}
    for mode in ("full", "readonly"):
        disk = tmp_path_factory.mktemp(f"disk-{mode}")
        spoil = ("with open(DISK / 'filler', 'wb') as f:\n    try:\n        while True:\n"
                 "            f.write(b'x' * 65536); f.flush()\n    except OSError:\n        pass\n"
                 if mode == "full" else
                 "subprocess.run(['mount', '-o', 'remount,ro', str(DISK)], check=True)\n")
        script = (f"import subprocess, sys\nfrom pathlib import Path\nsys.path.insert(0, {str(TESTS)!r})\n"
                  f"DISK = Path({str(disk)!r}); MODE = {mode!r}\n" + textwrap.dedent(SETUP) + spoil
                  + textwrap.dedent(COMMANDS))
        shell = f"mount -t tmpfs -o size=2m tmpfs {disk} && exec {sys.executable} -c \"$0\""
        done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", shell, script],
                              capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "400"})
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULTS")), None)
        assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
        found[mode] = json.loads(line[len("RESULTS"):])
    return found


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
