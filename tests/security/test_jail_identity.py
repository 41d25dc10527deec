"""Inside every sandbox a command is nobody: no host identity, no host /etc, no host path, no host port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sysmo.sandbox.base import Limits
from sysmo.sandbox.reaper import sweep_stale

FAST = Limits(timeout_s=30, cpu_s=20, memory_mb=512, pids=64)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root_only_dir(tmp_path) -> Path:
    """A read-only tool folder holding one file only its owner may read (a key beside the jars)."""
    folder = tmp_path / f"tools-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "tool.txt").write_text("TOOL-OK")
    (folder / "tool.txt").chmod(0o644)
    (folder / "key").write_text("SYSMO-OWNER-ONLY")
    (folder / "key").chmod(0o600)
    return folder


def test_a_command_is_nobody_without_capabilities(backend, root_only_dir):
    if os.geteuid() != 0 and backend.name == "local":
        pytest.skip("as an unprivileged user the local sandbox runs commands as that user (no other uid is ours)")
    script = (f"id -u; id -g; grep -E '^Cap(Eff|Prm)' /proc/self/status; cat {root_only_dir}/tool.txt; echo; "
              f"cat {root_only_dir}/key 2>&1; mkdir -p states/a && echo w > states/a/f && echo WROTE")
    result = backend.run(["sh", "-c", script], readonly_paths=[root_only_dir], limits=FAST, collect=["states/a/f"])
    lines = result.stdout.splitlines()
    assert lines[:2] == ["65534", "65534"], result.output
    assert all(line.split()[1] == "0000000000000000" for line in lines[2:4]), lines[2:4]
    assert "TOOL-OK" in result.stdout  # what the tool needs is readable ...
    assert "SYSMO-OWNER-ONLY" not in result.output  # ... but the host's owner-only files are not
    assert "WROTE" in result.stdout and result.files_out == {"states/a/f": "w\n"}  # the box stays writable


def test_the_host_etc_is_not_there(backend):
    result = backend.run(["sh", "-c", "ls /etc; echo ---; cat /etc/shadow /etc/gshadow 2>&1; echo ---; "
                          "cat /etc/passwd; echo ---; cat /etc/hostname 2>&1"], limits=FAST)
    listing, shadow, passwd, hostname = result.stdout.split("---\n")
    assert not {"shadow", "ssh", "ssl", "sudoers"} & set(listing.split()), listing
    assert socket.gethostname() not in hostname  # a container names itself; the host's name never shows
    assert "No such file" in shadow and "root:" not in shadow
    names = {line.split(":")[0] for line in passwd.splitlines() if line}
    assert names <= {"root", "nobody"} and "nobody" in names, passwd


def test_no_host_path_in_any_command_line(backend, tmp_path):
    library = REPO / "tools" / "tla" / "library"
    script = ('for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do tr "\\0" " " < "$f" 2>/dev/null; echo; done; '
              'echo "$LIB"; pwd')
    result = backend.run(["sh", "-c", script, str(library)], readonly_paths=[library], env={"LIB": str(library)},
                         limits=FAST)
    seen = result.stdout
    assert "/proc/" not in seen or seen  # the loop ran
    for host in {str(Path.home()), str(REPO), "/tmp/sysmo-", "/work/", sys.executable}:
        assert host not in seen, f"{host} visible inside:\n{seen}"
    assert "/box" in seen


def _box_started(tmp: Path) -> Path | None:
    for folder in tmp.glob("sysmo-box-*"):
        if any(folder.rglob("started")):
            return folder
    return None


@pytest.mark.parametrize("kind", ["local", "docker"])
def test_a_box_left_by_a_killed_check_is_removed_at_the_next_start(kind, tmp_path, skip_missing, monkeypatch):
    from sandbox_backends import make_backend

    if kind == "docker" and os.environ.get("SYSMO_TEST_DOCKER_HOST"):
        monkeypatch.setenv("DOCKER_HOST", os.environ["SYSMO_TEST_DOCKER_HOST"])
    if kind == "docker":
        make_backend("docker", skip_missing)
    else:
        from sysmo.sandbox.local import LocalSandbox

        if LocalSandbox.detect_mode() == "none":
            pytest.skip("no confinement here")
    made = "DockerSandbox()" if kind == "docker" else "LocalSandbox()"
    code = ("from sysmo.sandbox.local import LocalSandbox\nfrom sysmo.sandbox.docker_backend import DockerSandbox\n"
            "from sysmo.sandbox.base import Limits\n"
            f"{made}.run(['sh', '-c', 'mkdir states && touch started && sleep 60'], "
            "files={'Spec.tla': 'UNTRUSTED'}, limits=Limits(timeout_s=90))\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while (box := _box_started(tmp_path)) is None and time.monotonic() < deadline:
            assert proc.poll() is None, "the check ended before it started its command"
            time.sleep(0.05)
        assert box is not None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert box.exists()  # the killed check had no chance to clean up
    assert box.name in sweep_stale(tmp_path)  # what the next sysmo does when it starts
    assert not box.exists()
    if kind == "docker":  # and its container, which outlives the process that made it, is removed too
        import docker

        from sysmo.sandbox.docker_backend import OWNER_LABEL, DockerSandbox

        DockerSandbox()
        left = [c for c in docker.from_env().containers.list(all=True)
                if c.labels.get(OWNER_LABEL, "").split(" ")[0] == str(proc.pid)]
        assert not left


def _host_tcp_listeners() -> set[int]:
    """Socket inodes listening on TCP in sysmo's own network namespace."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                inodes.add(int(fields[9]))
    return inodes


def _socket_inodes(pids: list[int]) -> set[int]:
    """The socket inodes the processes ``pids`` hold open."""
    inodes = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                link = os.readlink(fd)
            except OSError:  # closed meanwhile (the listing's own descriptor, for one)
                continue
            if link.startswith("socket:["):
                inodes.add(int(link[8:-1]))
    return inodes


@pytest.fixture(params=["bwrap", "unshare"])
def server_level(request, monkeypatch, skip_missing) -> str:
    from sysmo.sandbox.confine import bwrap_usable, jail_usable
    from sysmo.tools.plantuml import server as plantuml_server
    from sysmo.tools.sysml import kernel as opensysml_kernel

    if request.param == "bwrap" and not bwrap_usable():
        skip_missing("bwrap", "bubblewrap is not installed: apt-get install bubblewrap")
    if request.param == "unshare" and not jail_usable():
        pytest.skip("unshare cannot build user/mount/pid/net namespaces here")
    monkeypatch.setattr(plantuml_server, "confinement_level", lambda: request.param)
    monkeypatch.setattr(opensysml_kernel, "confinement_level", lambda: request.param)
    return request.param


def _inside(pids: list[int]) -> list[int]:
    own = os.readlink("/proc/self/ns/pid")
    return [p for p in pids if os.path.exists(f"/proc/{p}") and os.readlink(f"/proc/{p}/ns/pid") != own]


@pytest.mark.slow
def test_the_tool_servers_are_reached_without_host_ports_as_nobody(server_level):
    from sysmo.tools.plantuml.server import PlantUMLServer
    from sysmo.tools.sysml.kernel import OpenSysMLKernel

    plantuml, kernel = PlantUMLServer(), OpenSysMLKernel()
    try:
        assert "<svg" in plantuml.render("@startuml\nclass A\n@enduml").svg
        assert kernel.execute("1+1").status == "ok"
        # PlantUML over its stdin/stdout (a Unix socket only for picoweb, where there is no javac)
        assert plantuml.transport == "pipe" or (plantuml.socket_path is not None and plantuml.socket_path.is_socket())
        # nothing of theirs listens on the host's 127.0.0.1 (other tests' listeners, running beside, do not count)
        assert not _host_tcp_listeners() & _socket_inodes([*plantuml.pids(), *kernel.kernel_pids()])
        own_net = os.readlink("/proc/self/ns/net")
        for pids in (plantuml.pids(), kernel.kernel_pids()):
            inside = _inside(pids)
            assert inside
            for pid in inside:
                assert os.readlink(f"/proc/{pid}/ns/net") != own_net
            status = Path(f"/proc/{inside[-1]}/status").read_text()
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            if os.geteuid() == 0:  # the host's nobody, not root under another name
                assert uid_line.split()[1:] == ["65534"] * 4, uid_line
    finally:
        plantuml.stop()
        kernel.stop()
