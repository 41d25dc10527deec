"""A sysmo killed with SIGKILL leaves no tool running past its wall-clock bound, in every backend: the local ones
through the parent-death signal, docker through the container's own clock (``timeout`` inside it), since the
engine keeps a container running whoever started it. And a run records the isolation its checks used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sysmo_cli import run_sysmo

from sysmo.sandbox.docker_backend import LABEL, DockerSandbox

HERE = Path(__file__).resolve().parent
BOUND_S = 4  # the command's wall clock
MARK = "4321"  # `sleep 4321`: the command left behind, found by its arguments

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
from sandbox_backends import make_backend
from sysmo.sandbox.base import Limits
def missing(name, why):
    raise SystemExit(f"{{name}}: {{why}}")
box = make_backend({name!r}, missing)
print("STARTED", flush=True)
box.run(["sleep", "{mark}"], limits=Limits(timeout_s={bound}))
"""


def _local_sleeps() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", MARK.encode()] or argv[-3:-1] == [b"sleep", MARK.encode()]:
            found.append(int(entry.name))
    return found


def _running_containers() -> list:
    import docker

    client = docker.from_env(timeout=10)
    try:
        return [c for c in client.containers.list(filters={"label": LABEL}) if MARK in " ".join(c.attrs["Args"])]
    finally:
        client.close()


def test_a_sigkilled_sysmo_leaves_nothing_running_past_the_bound(backend):
    running = _running_containers if backend.name == "docker" else _local_sleeps
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(here=str(HERE), name=getattr(
        backend, "mode", None) or backend.name, mark=MARK, bound=BOUND_S)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "STARTED"
        deadline = time.monotonic() + 60
        while not running():  # the command is up (a container may take a few seconds to start)
            assert time.monotonic() < deadline and child.poll() is None, "the command never started"
            time.sleep(0.2)
        os.kill(child.pid, signal.SIGKILL)
        killed = time.monotonic()
    finally:
        child.kill()
        child.wait()
    while running() and time.monotonic() - killed < BOUND_S + 30:
        time.sleep(0.5)
    left = running()
    assert not left, f"{len(left)} still running {time.monotonic() - killed:.0f} s after the kill"
    # within the bound and its grace, not at a later limit (the CPU rlimit, a sweep)
    assert time.monotonic() - killed < BOUND_S + 15
    if backend.name == "docker":
        DockerSandbox()  # removes the stopped container of the killed process (its sweep of orphans)


@pytest.mark.slow
def test_a_docker_run_records_the_isolation_its_checks_used(backend, tmp_path):
    if backend.name != "docker":
        pytest.skip("the docker backend's record (a local run records its own level: describe_isolation)")
    from sysmo.sandbox.select import get_sandbox

    get_sandbox.cache_clear()  # the process-wide sandbox is chosen afresh under the setting, and again after
    try:
        result = run_sysmo("run", "--id", "iso", "-o", str(tmp_path), "--model", "reference", "-a", "base_modeling",
                           "--ids", "starter/tla/spinlock", "-n", "1", "--no-report", "--no-progress",
                           env={"SYSMO_SANDBOX__BACKEND": "docker"})
    finally:
        get_sandbox.cache_clear()
    assert result.code == 0, result.output
    recorded = json.loads((tmp_path / "iso" / "isolation.json").read_text())
    assert recorded["level"] == "docker", recorded
    assert "tool isolation: docker" in result.output
    from sysmo.store import Store

    store = Store(tmp_path / "iso" / "results.sqlite")
    try:
        checks = [json.loads(r["check_json"]) for r in store.query("SELECT check_json FROM rounds")
                  if r["check_json"]]
        environment = store.experiment("iso")["environment"]
    finally:
        store.close()
    used = {c["tool"]: (c.get("details") or {}).get("isolation") for c in checks}
    assert used and all(isolation and isolation[0] == "docker" for isolation in used.values()), used
    assert environment["tool_isolation"].startswith("docker"), environment
