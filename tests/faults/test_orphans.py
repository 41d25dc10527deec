"""kill -9 of sysmo leaves no tool process behind; a later sysmo sweeps the folders and cgroups it left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sysmo.sandbox.cgroups import CgroupLimiter
from sysmo.sandbox.reaper import sweep_stale

# A sysmo process that starts both tool servers, prints their processes, folders and cgroups, and waits.
CHILD = r"""
import json, sys, time
from sysmo.tools.sysml.kernel import OpenSysMLKernel
from sysmo.tools.plantuml.server import PlantUMLServer
plantuml, kernel = PlantUMLServer(), OpenSysMLKernel()
assert plantuml.render("@startuml\nclass A\n@enduml").status == 200
assert kernel.execute("1+1").status == "ok"
print(json.dumps({
    "pids": plantuml.pids() + kernel.kernel_pids(),
    "dirs": [str(plantuml._dir), str(kernel.scratch)],
    "cgroups": [str(d) for g in (plantuml._cgroup, kernel._cgroup) if g for d in g.dirs],
    "isolation": [plantuml.isolation, kernel.isolation],
}), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_kill_9_of_sysmo_leaves_no_tool_process_and_the_next_start_sweeps_its_leftovers():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "SYSMO_LOG_LEVEL": "error"})
    try:
        line = proc.stdout.readline()
        assert line, "the child sysmo did not start its servers"
        info = json.loads(line)
        assert all(_alive(p) for p in info["pids"])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in info["pids"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in info["pids"] if _alive(p)], "tool processes outlived a SIGKILLed sysmo"
    finally:
        if proc.poll() is None:
            proc.kill()
    # what the dead process could not clean up itself is swept by the next one
    swept = sweep_stale()
    for folder in info["dirs"]:
        assert not Path(folder).exists() and Path(folder).name in swept
    CgroupLimiter.detect()  # sweeps the dead process's cgroups
    assert not [d for d in info["cgroups"] if Path(d).exists()]


def test_a_stale_server_of_a_dead_sysmo_is_stopped_at_start(tmp_path):
    # a server whose owner is gone (a pid that exited): the sweep kills it and removes its folder
    dead = subprocess.Popen(["true"])
    dead.wait()
    folder = tmp_path / "sysmo-plantuml-server-stale"
    folder.mkdir()
    (folder / "owner").write_text(f"{dead.pid} 1\n")
    server = subprocess.Popen(["sleep", "60"], start_new_session=True)
    from sysmo.sandbox.reaper import record_server

    record_server(folder, server.pid, None)
    live = tmp_path / "sysmo-opensysml-live"
    live.mkdir()
    from sysmo.sandbox.reaper import mark_owner

    mark_owner(live)  # owned by this (living) process: kept
    assert sweep_stale(tmp_path) == [folder.name]
    assert server.wait(timeout=5) == -signal.SIGKILL
    assert not folder.exists() and live.exists()
