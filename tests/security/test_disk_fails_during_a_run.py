"""A disk that fills or turns read-only while attempts run ends the run in one line with exit code 3 within seconds
(the run's writer thread never dies with work waiting), every attempt committed before stays stored, and the run
resumes to the end once the disk is usable again.

The disks are real and the faults happen under a running ``sysmo run``: a 16 MB tmpfs filled by another process
(ENOSPC), and an ext4 file system on a loop device mounted ``errors=remount-ro`` whose error is triggered through
``/sys/fs/ext4/<dev>/trigger_fs_error`` (the kernel turns it read-only under the open files: EROFS, and SQLite's
disk I/O error), both in a private mount namespace (``unshare -m``, root). Where that cannot be done the mode skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

MODES = ["full", "readonly", "full-processes"]  # the last: the same full disk under two worker processes

# runs inside the private mount namespace: for each mode a fresh disk, a run on it, the fault once an attempt is
# stored, the run's end (or a kill if it hangs), the disk made usable again, and a resume
SCRIPT = """
import json, os, sqlite3, subprocess, sys, time
from pathlib import Path

RUN = [sys.executable, "-m", "sysmo.cli", "run", "--id", "exp", "--model", "reference", "-a", "base_modeling",
       "--kind", "uml_class", "-n", "2", "--no-report", "--no-progress"]
ENV = {**os.environ, "COLUMNS": "400"}

def stored(disk):
    try:
        conn = sqlite3.connect(f"file:{disk}/exp/results.sqlite?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0

def mount(mode, disk):
    if mode.startswith("full"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", disk], check=True)
    else:
        subprocess.run(["mount", "-o", "loop,errors=remount-ro", IMAGE, disk], check=True)

def spoil(mode, disk):
    if mode.startswith("full"):
        try:  # unbuffered: the full disk is met by a write, never by the close (which would raise it again)
            with open(f"{disk}/filler", "wb", buffering=0) as filler:
                while True:
                    filler.write(b"x" * 65536)
        except OSError:
            pass
        return
    # what was written so far reaches the disk first: the error below drops what is still in the page cache
    # (as a crash would), and SQLite syncs its log only at checkpoints
    os.sync()
    device = os.path.basename(subprocess.run(["findmnt", "-no", "SOURCE", disk], capture_output=True, text=True,
                                             check=True).stdout.strip())
    Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("sysmo test")

def planned(disk):
    conn = sqlite3.connect(f"file:{disk}/exp/results.sqlite?mode=ro", uri=True, timeout=5)
    try:
        return json.loads(conn.execute("SELECT environment_json FROM experiments").fetchone()[0])["planned_attempts"]
    finally:
        conn.close()

def heal(mode, disk):
    if mode.startswith("full"):
        os.unlink(f"{disk}/filler")
    else:
        subprocess.run(["umount", disk], check=True)
        subprocess.run(["e2fsck", "-fy", IMAGE], capture_output=True)
        mount(mode, disk)

found = {}
for mode, disk in DISKS.items():
    mount(mode, disk)
    try:
        extra = ["--processes", "2"] if mode.endswith("processes") else []  # the worker processes' executor
        run = subprocess.Popen(RUN + ["-o", disk, *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
        deadline = time.monotonic() + 300
        while stored(disk) < 1 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        before = stored(disk)
        spoil(mode, disk)
        spoiled = time.monotonic()
        try:
            output, _ = run.communicate(timeout=120)
            hung = False
        except subprocess.TimeoutExpired:
            run.kill()
            output, _ = run.communicate()
            hung = True
        seconds = time.monotonic() - spoiled
        after = stored(disk)
        heal(mode, disk)
        resumed = subprocess.run([sys.executable, "-m", "sysmo.cli", "run", "--resume", "exp", "-o", disk,
                                  "--no-report", "--no-progress"], capture_output=True, text=True, env=ENV,
                                 timeout=600)
        found[mode] = {"code": run.returncode, "output": output, "hung": hung, "seconds": seconds,
                       "before": before, "after": after, "resume_code": resumed.returncode,
                       "resume_output": resumed.stdout + resumed.stderr, "final": stored(disk),
                       "planned": planned(disk)}
    finally:
        subprocess.run(["umount", disk])
print("RESULTS" + json.dumps(found))
"""


def _faults_usable() -> dict[str, str]:
    """The modes this machine can make (mode -> why not, for those it cannot)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return dict.fromkeys(MODES, "needs root and `unshare -m`")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", "/mnt"],
                           capture_output=True)
    if probe.returncode != 0:
        return dict.fromkeys(MODES, "no private mount namespace here")
    missing = {}
    if not (shutil.which("mkfs.ext4") and shutil.which("e2fsck") and os.path.exists("/dev/loop-control")):
        missing["readonly"] = "no loop devices or e2fsprogs for an ext4 disk that turns read-only"
    return missing


@pytest.fixture(scope="module")
def faults(tmp_path_factory) -> dict[str, dict]:
    """Per mode: how the run on the failing disk ended, what stayed stored, and how the resume went."""
    missing = _faults_usable()
    modes = [m for m in MODES if m not in missing]
    if not modes:
        pytest.skip(missing["full"])
    base = tmp_path_factory.mktemp("disks")
    disks = {mode: str(base / mode) for mode in modes}
    for disk in disks.values():
        os.mkdir(disk)
    image = base / "ext4.img"
    if "readonly" in disks:
        with open(image, "wb") as handle:
            handle.truncate(48 * 1024 * 1024)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    script = f"DISKS = {disks!r}\nIMAGE = {str(image)!r}\n" + textwrap.dedent(SCRIPT)
    done = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c", script],
                          capture_output=True, text=True, timeout=1800)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULTS")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return {**json.loads(line[len("RESULTS"):]), **{mode: {"skip": why} for mode, why in missing.items()}}


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_disk_failing_under_a_run_ends_it_in_one_line_and_resume_completes_it(faults, mode):
    found = faults[mode]
    if "skip" in found:
        pytest.skip(found["skip"])
    output = found["output"]
    assert not found["hung"], output[-3000:]
    assert found["code"] == 3, output[-3000:]
    assert "Traceback" not in output and "Exception in thread" not in output, output[-3000:]
    (line,) = [x for x in output.splitlines() if x.startswith("error:")]
    assert "--resume exp" in line and "kept" in line, line
    assert ("full" in line) if mode.startswith("full") else ("read-only" in line or "disk failed" in line), line
    assert found["seconds"] < 60, found["seconds"]  # seconds, not the minutes of a hang
    assert found["after"] >= found["before"] >= 1  # what was committed before the fault stays
    assert found["resume_code"] == 0, found["resume_output"][-3000:]
    assert found["final"] == found["planned"] > found["after"]  # every uml_class task x 2 samples, each once
