"""A diagram, a spec or a command cannot read a marker file planted in the host's home or work area."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from sysmo.sandbox.base import Limits
from sysmo.sandbox.confine import bwrap_usable, jail_usable
from sysmo.sandbox.local import LocalSandbox

MODES = ["bwrap", "unshare"]
FAST = Limits(timeout_s=20, cpu_s=20, memory_mb=512, pids=64)


@pytest.fixture
def markers(tmp_path):
    """Secret files in the host's home and in a work-area folder, removed afterwards."""
    secret = f"SYSMO-SECRET-{uuid.uuid4().hex}"
    planted = [Path.home() / f".sysmo-marker-{uuid.uuid4().hex}", Path(__file__).resolve().parent / f".marker-{uuid.uuid4().hex}"]
    for path in planted:
        path.write_text(secret)
    yield secret, planted
    for path in planted:
        path.unlink(missing_ok=True)


def test_a_command_sees_neither_the_home_nor_the_work_area(backend, markers):
    secret, planted = markers
    script = "; ".join(f"cat {p} 2>/dev/null" for p in planted) + f"; ls {Path.home()} {Path.cwd()} 2>&1; true"
    result = backend.run(["sh", "-c", script], limits=FAST)
    assert secret not in result.output
    assert planted[0].name not in result.output and "No such file" in result.output


@pytest.fixture(params=MODES)
def server_mode(request, monkeypatch, skip_missing) -> str:
    """Each isolation mode for the tool servers (both where bubblewrap is installed, as in CI)."""
    from sysmo.tools.plantuml import server as plantuml_server
    from sysmo.tools.sysml import kernel as opensysml_kernel

    mode = request.param
    if mode == "bwrap" and not bwrap_usable():
        skip_missing("bwrap", "bubblewrap is not installed: apt-get install bubblewrap")
    if mode == "unshare" and not jail_usable():
        pytest.skip("unshare cannot build user/mount/pid/net namespaces here")
    monkeypatch.setattr(plantuml_server, "confinement_level", lambda: mode)
    monkeypatch.setattr(opensysml_kernel, "confinement_level", lambda: mode)
    return mode


def _jailed(pids: list[int]) -> list[int]:
    """The server's processes inside its namespaces (not the host-side bwrap/unshare launcher)."""
    own = os.readlink("/proc/self/ns/pid")
    return [p for p in pids if os.path.exists(f"/proc/{p}") and os.readlink(f"/proc/{p}/ns/pid") != own]


def _no_caps_and_no_home(pid: int) -> None:
    status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
    assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0, status["CapEff"]
    assert not os.path.exists(f"/proc/{pid}/root{Path.home()}")


@pytest.mark.slow
def test_a_diagram_cannot_include_a_planted_file(markers, server_mode):
    from sysmo.tools.plantuml.server import PlantUMLServer

    secret, planted = markers
    server = PlantUMLServer()
    try:
        for path in planted:
            response = server.render(f"@startuml\n!include {path}\nclass A\n@enduml")
            assert secret not in response.svg and response.error
        assert server.isolation[0] == server_mode
        jailed = _jailed(server.pids())
        assert jailed
        for pid in jailed if server_mode == "unshare" else jailed[-1:]:  # under bwrap: the JVM itself
            _no_caps_and_no_home(pid)
    finally:
        server.stop()


@pytest.mark.slow
def test_a_sysml_model_cannot_load_a_planted_file(markers, server_mode):
    from sysmo.tools.sysml.kernel import OpenSysMLKernel

    secret, planted = markers
    kernel = OpenSysMLKernel()
    try:
        for path in planted:
            reply = kernel.execute(f"%load {path}")
            assert secret not in reply.stdout + reply.stderr + "".join(reply.results) + (reply.error or "")
            assert reply.status == "error"
        assert kernel.isolation[0] == server_mode
        jailed = _jailed(kernel.kernel_pids())
        assert jailed
        for pid in jailed if server_mode == "unshare" else jailed[-1:]:  # under bwrap: the kernel itself
            _no_caps_and_no_home(pid)
    finally:
        kernel.stop()


def test_a_readonly_path_under_the_home_is_shown_without_the_home(tmp_path):
    if not jail_usable():
        pytest.skip("unshare cannot build user/mount/pid/net namespaces here")
    library = Path.home() / f".sysmo-library-{uuid.uuid4().hex}"
    library.mkdir()
    (library / "Mod.tla").write_text("---- MODULE Mod ----\n====\n")
    try:
        result = LocalSandbox(mode="unshare").run(
            ["sh", "-c", f'cat {library}/Mod.tla && echo "$LIB" && ls {Path.home()} 2>&1; true'],
            readonly_paths=[library], env={"LIB": str(library)}, limits=FAST)
    finally:
        (library / "Mod.tla").unlink()
        library.rmdir()
    assert "MODULE Mod" in result.stdout  # argv and env were rewritten to where the jail shows it
    assert "/opt/sysmo-tools/" in result.stdout and "No such file" in result.stdout
