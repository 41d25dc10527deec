"""The local sandbox contains what untrusted commands try: network, writes, runaway processes, output, memory."""

from __future__ import annotations

import shutil
import socket
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from sysmo.errors import SandboxError
from sysmo.sandbox.base import Limits
from sysmo.sandbox.cgroups import CgroupLimiter
from sysmo.sandbox.confine import Launch
from sysmo.sandbox.local import LocalSandbox

REPO = Path(__file__).resolve().parents[1]
PY = "/usr/bin/python3"
DETECTED = LocalSandbox.detect_mode()
MODES = [m for m in ("bwrap", "unshare") if DETECTED == "bwrap" or m == DETECTED]
FAST = Limits(timeout_s=10, cpu_s=10, memory_mb=512, pids=64)


@pytest.fixture(params=MODES)
def box(request) -> LocalSandbox:
    return LocalSandbox(mode=request.param)


@pytest.fixture
def bwrap_box(bwrap_required) -> LocalSandbox:
    return LocalSandbox(mode="bwrap")


def needs_cgroups() -> CgroupLimiter:
    limiter = CgroupLimiter.detect()
    if limiter is None:
        pytest.skip("no writable cgroup hierarchy (or SYSMO_NO_CGROUPS=1)")
    return limiter


@pytest.fixture
def loopback_listener():
    """A TCP listener on the host's 127.0.0.1 that records whether anyone connected."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[bool] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(True)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=2)
    server.close()


CONNECT = textwrap.dedent("""
    import socket, sys
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        print("CONNECTED")
    except OSError as e:
        print("BLOCKED", type(e).__name__)
""")


def test_loopback_listener_on_host_is_unreachable_from_inside(box, loopback_listener):
    port, accepted = loopback_listener
    result = box.run([PY, "-c", CONNECT, str(port)], limits=FAST)
    assert result.returncode == 0, result.output
    assert "BLOCKED" in result.stdout
    assert not accepted
    assert "netns" in result.isolation


def test_loopback_listener_is_reachable_when_network_is_allowed(box, loopback_listener):
    # The control for the test above: the same probe does connect when the namespace is not split.
    port, accepted = loopback_listener
    result = box.run([PY, "-c", CONNECT, str(port)], limits=FAST.model_copy(update={"network": True}))
    assert "CONNECTED" in result.stdout, result.output
    assert "netns" not in result.isolation


def test_shell_connect_to_host_loopback_fails(box, loopback_listener):
    port, accepted = loopback_listener
    script = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED || echo BLOCKED"
    if not shutil.which("bash"):
        pytest.skip("bash is needed for /dev/tcp")
    result = box.run(["bash", "-c", script], limits=FAST)
    assert "BLOCKED" in result.stdout and not accepted, result.output


def test_writes_outside_work_dir_fail_and_inside_are_collected(box, tmp_path):
    marker = f"sysmo-escape-{uuid.uuid4().hex}"
    targets = [f"/tmp/{marker}", str(REPO / marker), f"/usr/{marker}", f"/etc/{marker}",
               str(tmp_path.parent / marker)]
    script = "; ".join(f"(echo x > {t}) 2>/dev/null && echo WROTE {t} || echo DENIED {t}" for t in targets[1:])
    script += f"; echo x > /tmp/{marker} && echo PRIVATE_TMP_OK"
    script += "; mkdir -p out/sub && echo inside > out/sub/a.txt && echo inside-b > b.txt"
    result = box.run(["sh", "-c", script], limits=FAST, collect=["out/sub/a.txt", "b.txt"])
    assert result.returncode == 0, result.output
    assert "WROTE" not in result.stdout, result.stdout
    assert "PRIVATE_TMP_OK" in result.stdout  # /tmp inside is a private tmpfs
    for target in targets:
        assert not Path(target).exists(), f"{target} appeared on the host"
    assert result.files_out == {"out/sub/a.txt": "inside\n", "b.txt": "inside-b\n"}


def test_readonly_paths_are_visible_but_not_writable(box, tmp_path):
    shared = tmp_path / "lib"
    shared.mkdir()
    (shared / "Mod.tla").write_text("---- MODULE Mod ----\n====\n")
    result = box.run(["sh", "-c", f"cat {shared}/Mod.tla && (echo x > {shared}/new 2>/dev/null && echo WROTE || echo DENIED)"],
                     readonly_paths=[shared], limits=FAST)
    assert "MODULE Mod" in result.stdout and "DENIED" in result.stdout, result.output
    assert not (shared / "new").exists()


def test_host_sysctls_are_read_only_inside(box):
    result = box.run(["sh", "-c", "cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness && echo WROTE || echo DENIED"],
                     limits=FAST)
    assert "DENIED" in result.stdout, result.output


def test_given_work_dir_is_kept_and_collect_accepts_inner_and_host_paths(box, tmp_path):
    work = tmp_path / "work"
    result = box.run(["sh", "-c", "echo one > one.txt; mkdir d; echo two > d/two.txt; pwd"],
                     workdir=work, limits=FAST,
                     collect=["/box/one.txt", str(work / "d" / "two.txt"), "*.txt", "d/*.txt", "missing.txt"])
    assert (work / "one.txt").read_text() == "one\n"
    assert result.files_out == {"one.txt": "one\n", "d/two.txt": "two\n"}
    inner = result.stdout.strip()
    assert inner == "/box"  # in every mode: no host path inside


def test_work_dir_paths_in_argv_and_env_reach_the_command(box, tmp_path):
    work = tmp_path / "w"
    result = box.run(["sh", "-c", 'cat "$1" && cat "$SPEC"', "sh", str(work / "Spec.tla")], workdir=work,
                     files={"Spec.tla": "SPEC-TEXT\n"}, env={"SPEC": str(work / "Spec.tla")}, limits=FAST)
    assert result.stdout == "SPEC-TEXT\nSPEC-TEXT\n", result.output


def test_collect_never_follows_symlinks_out_of_the_work_dir(box):
    result = box.run(["sh", "-c", "ln -s /etc/passwd leak.txt; mkdir -p d; ln -s /etc d/etc; mkfifo pipe"],
                     limits=FAST, collect=["leak.txt", "d/etc/passwd", "pipe", "../x", "*"])
    assert result.returncode == 0, result.output
    assert result.files_out == {}


def test_collected_files_are_bounded(box):
    limits = FAST.model_copy(update={"output_limit_bytes": 1000})
    result = box.run(["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a > big.txt"], limits=limits, collect=["big.txt"])
    assert len(result.files_out["big.txt"]) == 1000
    assert result.files_truncated == ["big.txt"]


def test_file_names_that_escape_the_work_dir_are_refused(box, tmp_path):
    with pytest.raises(SandboxError, match="escapes the work dir"):
        box.run(["true"], files={"../escape.txt": "x"}, limits=FAST)
    # A symlink planted by an earlier run in a reused work dir must not be written through.
    work = tmp_path / "reused"
    box.run(["sh", "-c", f"ln -s {tmp_path}/victim.txt Spec.tla"], workdir=work, limits=FAST)
    with pytest.raises(SandboxError, match="escapes the work dir"):
        box.run(["true"], workdir=work, files={"Spec.tla": "overwritten"}, limits=FAST)
    assert not (tmp_path / "victim.txt").exists()


HEARTBEAT = ("setsid sh -c 'while :; do date +%s%N > {beat}; sleep 0.05; done' >/dev/null 2>&1 < /dev/null & "
             "(sh -c 'sleep 60' &) ; sleep 60")


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroups", "no-cgroups"])
def test_timeout_kills_detached_grandchildren(box, tmp_path, cgroups):
    sandbox = LocalSandbox(mode=box.mode, use_cgroups=cgroups)
    work = tmp_path / "w"
    beat = "beat"
    result = sandbox.run(["sh", "-c", HEARTBEAT.format(beat=beat)], workdir=work,
                         limits=Limits(timeout_s=1.0, cpu_s=10, memory_mb=256, pids=64))
    assert result.timed_out and result.returncode is None
    first = (work / beat).read_text()
    time.sleep(0.4)  # eight heartbeats' worth: a live grandchild would have rewritten the file
    assert (work / beat).read_text() == first, "a detached grandchild survived the timeout"


def test_background_children_do_not_outlive_a_normal_exit(box, tmp_path):
    work = tmp_path / "w"
    result = box.run(["sh", "-c", "setsid sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' "
                                  ">/dev/null 2>&1 </dev/null & sleep 0.3; echo done"], workdir=work, limits=FAST)
    assert result.stdout == "done\n" and not result.timed_out
    first = (work / "beat").read_text()
    time.sleep(0.4)
    assert (work / "beat").read_text() == first


def test_output_is_truncated_while_the_command_is_drained(box):
    limits = FAST.model_copy(update={"output_limit_bytes": 100_000})
    # 20 MB on each stream: a reader that stopped reading would block the writer until the timeout.
    script = "import sys\nfor _ in range(320): sys.stdout.write('o' * 65536); sys.stderr.write('e' * 65536)\nprint('END')"
    result = box.run([PY, "-c", script], limits=limits)
    assert result.returncode == 0 and not result.timed_out, result.stderr[-500:]
    assert result.stdout_truncated and result.stderr_truncated
    assert len(result.stdout.encode()) == 100_000 and len(result.stderr.encode()) == 100_000


@pytest.mark.timeout(60)
def test_unread_stdin_does_not_block_the_timeout(box):
    result = box.run(["sleep", "30"], stdin="x" * 5_000_000, limits=Limits(timeout_s=1, pids=16))
    assert result.timed_out


def test_stdin_reaches_the_command(box):
    result = box.run(["sh", "-c", "wc -c"], stdin="y" * 300_000, limits=FAST)
    assert result.stdout.strip() == "300000"


FORK_BOMB = textwrap.dedent("""
    import os, time
    kids = 0
    for _ in range(2000):  # bounded: never more than 2000 forks, even without a pids limit
        try:
            pid = os.fork()
        except OSError as exc:
            print("REFUSED", kids, exc.errno, flush=True)
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids += 1
    else:
        print("UNBOUNDED", kids, flush=True)
    time.sleep(30)
""")


def test_fork_bomb_is_contained_by_the_pids_limit(box):
    needs_cgroups()
    result = box.run([PY, "-c", FORK_BOMB], limits=Limits(timeout_s=3, cpu_s=10, memory_mb=512, pids=32))
    assert "cgroup-pids" in result.isolation
    assert result.timed_out
    words = result.stdout.split()
    assert words and words[0] == "REFUSED", result.output
    assert int(words[1]) < 32
    # The machine is still usable, and the next command runs normally.
    assert box.run(["echo", "ok"], limits=FAST).stdout == "ok\n"


def test_ten_gigabyte_allocation_is_killed_by_the_memory_limit(box):
    needs_cgroups()
    script = "b = bytearray(10 * 1024 ** 3)\nprint('ALLOCATED', len(b))"  # bytearray() zero-fills: pages are touched
    result = box.run([PY, "-c", script], limits=Limits(timeout_s=30, cpu_s=30, memory_mb=256, pids=32))
    assert "cgroup-memory" in result.isolation
    assert "ALLOCATED" not in result.stdout
    assert result.returncode != 0 and not result.timed_out
    assert result.oom_killed
    assert result.memory_peak_mb is not None and result.memory_peak_mb <= 256 + 1


def test_cpu_time_limit_stops_a_busy_loop(box):
    result = box.run([PY, "-c", "while True: pass"], limits=Limits(timeout_s=20, cpu_s=1, pids=16))
    assert not result.timed_out
    assert result.returncode in (128 + 24, -24), result.output  # SIGXCPU, not the wall clock


def test_file_size_limit_stops_a_large_write(box):
    result = box.run(["sh", "-c", "head -c 3000000 /dev/zero > big.bin; echo rc=$?"],
                     limits=FAST.model_copy(update={"file_size_mb": 1}), collect=[])
    assert "rc=0" not in result.stdout


def test_jvm_runs_with_xmx_and_no_address_space_limit(box):
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not installed")
    result = box.run(["java", "-Xmx128m", "-XX:+PrintFlagsFinal", "-version"],
                     limits=Limits(timeout_s=60, memory_mb=1024, pids=256))
    assert result.returncode == 0, result.stderr
    assert "version" in result.stderr
    heap = next(line for line in result.stdout.splitlines() if " MaxHeapSize " in line)
    assert int(heap.split("=")[1].split()[0]) == 128 * 1024 * 1024
    limits = box.run(["cat", "/proc/self/limits"], limits=FAST).stdout
    assert "Max address space" in limits
    assert next(line for line in limits.splitlines() if "address space" in line).split()[3] == "unlimited"


def test_environment_is_cleared_except_what_is_given(box, monkeypatch):
    monkeypatch.setenv("SYSMO_SECRET_FOR_TEST", "leak")
    result = box.run(["sh", "-c", "env"], env={"GIVEN": "yes"}, limits=FAST)
    assert "GIVEN=yes" in result.stdout
    assert "SYSMO_SECRET_FOR_TEST" not in result.stdout


# ---------------------------------------------------------------- mode detection and cgroup handling

def _hide(monkeypatch, *names: str) -> None:
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name in names else real(name, *a, **k))


def test_without_bubblewrap_the_unshare_mode_is_chosen(monkeypatch):
    if DETECTED == "none":
        pytest.skip("no namespace isolation here at all")
    _hide(monkeypatch, "bwrap")
    assert LocalSandbox.detect_mode() == "unshare"
    assert LocalSandbox().mode == "unshare"


def test_without_any_isolation_the_sandbox_refuses_to_start(monkeypatch):
    _hide(monkeypatch, "bwrap", "unshare")
    assert LocalSandbox.detect_mode() == "none"
    with pytest.raises(SandboxError, match="bubblewrap"):
        LocalSandbox()
    assert LocalSandbox(allow_network_fallback=True).mode == "none"


def test_unknown_mode_is_refused():
    with pytest.raises(SandboxError, match="unknown sandbox mode"):
        LocalSandbox(mode="chroot")


def test_sysmo_no_cgroups_disables_cgroups_but_runs(monkeypatch, box):
    monkeypatch.setenv("SYSMO_NO_CGROUPS", "1")
    assert CgroupLimiter.detect() is None
    sandbox = LocalSandbox(mode=box.mode)
    result = sandbox.run(["echo", "ok"], limits=FAST)
    assert result.stdout == "ok\n"
    assert not any(tag.startswith("cgroup") for tag in result.isolation)
    assert result.memory_peak_mb is None


def _own_groups(limiter: CgroupLimiter) -> list[Path]:
    import os

    return [d for base in limiter.bases.values() for d in base.glob(f"sysmo-{os.getpid()}-run-*")]


def test_cgroup_dirs_are_removed_after_each_run(box):
    limiter = needs_cgroups()
    box.run(["echo", "ok"], limits=FAST)
    box.run(["sleep", "30"], limits=Limits(timeout_s=0.5, memory_mb=128, pids=8))
    with pytest.raises(SandboxError, match="cannot start"):
        _raise_start_failure(box)
    assert _own_groups(limiter) == []


def _raise_start_failure(box: LocalSandbox) -> None:
    # Make Popen itself fail (a missing binary), after the cgroup was created: it must still be removed.
    original = box._wrap
    box._wrap = lambda *a, **k: (Launch(["/nonexistent/sysmo-binary"]), {"PATH": "/usr/bin"})  # type: ignore[method-assign]
    try:
        box.run(["true"], limits=FAST)
    finally:
        box._wrap = original  # type: ignore[method-assign]


def test_stale_cgroups_of_dead_processes_are_swept():
    limiter = needs_cgroups()
    base = next(iter(limiter.bases.values()))
    stale = base / "sysmo-999999999-run-deadbeef"  # no such pid: pid_max is far below
    stale.mkdir()
    live = base / f"sysmo-plantuml-{uuid.uuid4().hex[:12]}"  # someone else's naming: left alone
    live.mkdir()
    try:
        assert limiter.sweep_stale() >= 1
        assert not stale.exists()
        assert live.exists()
    finally:
        for d in (stale, live):
            if d.exists():
                d.rmdir()


def test_concurrent_runs_keep_their_own_files_and_output(box):
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int):
        return box.run(["sh", "-c", "cat in.txt; echo $((`cat in.txt` * 2)) > out.txt"],
                       files={"in.txt": str(i)}, collect=["out.txt"], limits=FAST)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, range(8)))
    assert [r.stdout for r in results] == [str(i) for i in range(8)]
    assert [r.files_out["out.txt"] for r in results] == [f"{2 * i}\n" for i in range(8)]


def test_local_sandbox_satisfies_the_sandbox_protocol(box):
    from sysmo.sandbox.base import Sandbox

    assert isinstance(box, Sandbox)


def test_work_dir_rewriting_only_touches_whole_path_prefixes():
    from sysmo.sandbox.base import relative_name, to_inner_path

    work = Path("/tmp/sysmo-box-ab")
    assert to_inner_path("/tmp/sysmo-box-ab/Spec.tla", work) == "/box/Spec.tla"
    assert to_inner_path("-DTLA-Library=/tmp/sysmo-box-ab:/tmp/sysmo-box-abc/x", work) == \
        "-DTLA-Library=/box:/tmp/sysmo-box-abc/x"
    assert relative_name("/box/a/b.txt", work) == "a/b.txt"
    assert relative_name("/tmp/sysmo-box-ab/a.txt", work) == "a.txt"
    assert relative_name("/tmp/sysmo-box-abc/a.txt", work) is None
    assert relative_name("../a.txt", work) is None and relative_name("/etc/passwd", work) is None
