"""The OpenSysML kernel server: health check, restart after a crash, timeouts, confinement, shutdown, threads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sysmo.tools.sysml.kernel import OpenSysMLKernel
from sysmo.contracts.check import Outcome
from sysmo.tools.sysml.validate import validate

GOOD = "package P { part def A; part a : A; }"
BAD = "package P { part a : Missing; }"


@pytest.fixture
def kernel():
    server = OpenSysMLKernel()
    yield server
    server.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_dead(pids: list[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_kernel_starts_confined_and_answers_a_health_cell(kernel: OpenSysMLKernel):
    reply = kernel.execute("1+1")
    assert reply.status == "ok" and any("= 2" in r for r in reply.results)
    if kernel.confine:
        assert kernel.isolation[0] in ("bwrap", "unshare")
        assert len(kernel.kernel_pids()) >= 2  # bwrap (or unshare and the jail's pid 1) and the kernel below it
        binary = kernel.kernel_pids()[-1]
        status = open(f"/proc/{binary}/status").read()
        assert "CapEff:\t0000000000000000" in status
        if kernel.isolation[0] == "unshare":  # its own network namespace: ZMQ over Unix sockets
            assert os.readlink(f"/proc/{binary}/ns/net") != os.readlink("/proc/self/ns/net")
            assert not os.path.exists(f"/proc/{binary}/root{Path.home()}")


def test_validation_works_again_after_the_kernel_is_killed(kernel: OpenSysMLKernel):
    assert validate(GOOD, kernel=kernel).ok
    pids = kernel.kernel_pids()
    os.kill(pids[-1], signal.SIGKILL)  # the kernel process itself (below bwrap when confined)
    assert _wait_dead([pids[-1]])
    result = validate(BAD, kernel=kernel)
    assert result.outcome == Outcome.FAILED and result.errors[0].code == "unresolved"
    assert validate(GOOD, kernel=kernel).ok
    assert kernel.restarts >= 1
    assert not any(_alive(p) for p in pids)


def test_killing_the_whole_process_group_is_survived_too(kernel: OpenSysMLKernel):
    assert validate(GOOD, kernel=kernel).ok
    assert kernel.proc is not None
    os.killpg(kernel.proc.pid, signal.SIGKILL)
    kernel.proc.wait(timeout=5)
    assert validate(GOOD, kernel=kernel).ok


def test_a_validation_that_runs_past_its_timeout_is_inconclusive_and_the_kernel_restarts(kernel: OpenSysMLKernel):
    # a large model with many unresolved names keeps the kernel busy far beyond the 50 ms allowed
    huge = "package Big {\n" + "\n".join(f"  part p{i} : Missing{i};" for i in range(4000)) + "\n}"
    assert validate(GOOD, kernel=kernel).ok
    old_pids = kernel.kernel_pids()
    result = validate(huge, kernel=kernel, timeout_s=0.05)
    assert result.outcome == Outcome.INCONCLUSIVE
    assert result.diagnostics[0].code == "timeout" and "restarted" in result.diagnostics[0].message
    assert _wait_dead(old_pids)  # the busy kernel was killed, not left running
    after = validate(BAD, kernel=kernel)
    assert after.outcome == Outcome.FAILED and [d.line for d in after.errors] == [1]


def test_the_kernel_cannot_read_or_write_outside_its_scratch_root(kernel: OpenSysMLKernel, tmp_path: Path,
                                                                   shared_benchmarks: Path):
    if not kernel.confine or kernel.isolation[:1] == ["none"]:
        pytest.skip("no confinement here: the kernel runs unconfined")
    outside = tmp_path / "outside.sysml"
    outside.write_text(GOOD)
    reply = kernel.execute(f"%load {outside}")
    assert reply.status == "error" and "cannot read" in (reply.error or "")
    reply = kernel.execute(f"%load {shared_benchmarks / 'sysml-v2-release' / 'sysml' / 'src' / 'training'}")
    assert reply.status == "error"
    target = tmp_path / "written.json"
    kernel.execute(f"%save {target}")
    assert not target.exists()


def test_stop_ends_every_kernel_process(kernel: OpenSysMLKernel):
    kernel.ensure()
    pids = kernel.kernel_pids()
    scratch = kernel.scratch
    kernel.stop()
    assert _wait_dead(pids)
    assert scratch is not None and not scratch.exists()


def test_the_kernel_is_shut_down_when_the_python_process_exits():
    script = (
        "from sysmo.tools.sysml.validate import validate\n"
        "from sysmo.tools.sysml.kernel import shared_kernel\n"
        "assert validate('package P { part def A; }').ok\n"
        "print(' '.join(map(str, shared_kernel().kernel_pids())))\n"
        "print(shared_kernel().scratch)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pid_line, scratch = proc.stdout.strip().splitlines()[-2:]
    assert _wait_dead([int(p) for p in pid_line.split()])
    assert not Path(scratch).exists()


def test_concurrent_validations_from_threads_each_get_their_own_answer(kernel: OpenSysMLKernel):
    results: dict[int, Outcome] = {}

    def check(i: int) -> None:
        text = GOOD.replace("part a : A;", f"part a{i} : A;") if i % 2 == 0 else BAD.replace("Missing", f"Missing{i}")
        result = validate(text, kernel=kernel)
        assert i % 2 == 1 or result.ok
        assert i % 2 == 0 or f"Missing{i}" in result.errors[0].message
        results[i] = result.outcome

    threads = [threading.Thread(target=check, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {i: (Outcome.OK if i % 2 == 0 else Outcome.FAILED) for i in range(8)}


def test_a_kernel_started_from_a_passing_thread_outlives_it(kernel: OpenSysMLKernel):
    # the kernel runs under bwrap --die-with-parent, which fires when the starting *thread* ends
    worker = threading.Thread(target=lambda: validate(GOOD, kernel=kernel))
    worker.start()
    worker.join(timeout=120)
    pids = kernel.kernel_pids()
    time.sleep(0.5)
    assert all(_alive(p) for p in pids)
    assert validate(BAD, kernel=kernel).outcome == Outcome.FAILED
    assert kernel.restarts == 0 and kernel.kernel_pids() == pids


def test_a_model_that_does_not_parse_is_not_asked_for_exports(kernel: OpenSysMLKernel):
    unparsable = {"m.sysml": "package P { part def A }} oops"}
    exports = ("model.json", "model.ttl")
    run = kernel.load(unparsable, exports=exports)
    assert "error[syntax]" in run.reply.stdout and run.export_replies == [] and run.exports == {}
    asked = kernel.load(unparsable, exports=exports, exports_after_syntax_errors=True)
    assert len(asked.export_replies) == 2 and asked.exports == {}  # the kernel refuses them anyway
    resolved = kernel.load({"m.sysml": BAD}, exports=exports)  # parses, with a name error: still exported
    assert "error[syntax]" not in resolved.reply.stdout and "model.json" in resolved.exports


def test_the_shared_kernels_time_limit_comes_from_the_environment(monkeypatch):
    from sysmo.tools.sysml import kernel as opensysml_kernel

    monkeypatch.setattr(opensysml_kernel, "_shared", None)
    monkeypatch.setenv(opensysml_kernel.TIMEOUT_ENV, "7.5")
    try:
        assert opensysml_kernel.shared_kernel().request_timeout_s == 7.5
    finally:
        opensysml_kernel.shared_kernel().stop()


def test_batch_scoring_limit_is_the_default_but_never_overrides_the_users(monkeypatch):
    from sysmo.tools.sysml.kernel import BATCH_REQUEST_TIMEOUT_S, TIMEOUT_ENV, use_batch_timeout

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert use_batch_timeout() == BATCH_REQUEST_TIMEOUT_S
    monkeypatch.setenv(TIMEOUT_ENV, "7.5")
    assert use_batch_timeout() == 7.5


def test_parallel_checks_lease_a_kernel_each_up_to_the_allowed_number(monkeypatch):
    from sysmo.tools.sysml.kernel import KERNELS_ENV, leased_kernel, shared_kernel

    monkeypatch.setenv(KERNELS_ENV, "1")
    with leased_kernel() as first, leased_kernel() as second:
        assert first is second is shared_kernel()  # one kernel allowed: the checks wait for each other
    monkeypatch.setenv(KERNELS_ENV, "2")
    with leased_kernel() as first, leased_kernel() as second, leased_kernel() as third:
        assert first is shared_kernel() and second is not first and third in (first, second)
    with leased_kernel() as again:
        assert again is shared_kernel()  # the least busy: none is, the first of them


def test_a_kernel_message_is_read_with_its_signature_checked_and_without_date_parsing() -> None:
    """``kernel.received`` reads what ``Session.deserialize`` reads (type, parent, content) but keeps the headers'
    dates as text; a message with a wrong signature, or one seen before (a replay), is refused as there."""
    import zmq
    from jupyter_client.session import Session
    from sysmo.tools.sysml.kernel import received

    context = zmq.Context.instance()
    sender, receiver = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
    receiver.bind("inproc://sysmo-kernel-message")
    sender.connect("inproc://sysmo-kernel-message")
    ours, theirs = Session(key=b"k"), Session(key=b"k")
    try:
        assert received(ours, receiver) is None  # nothing waiting
        request = theirs.msg("execute_request", content={"code": "1+1"})
        frames = theirs.serialize(theirs.msg("stream", content={"name": "stdout", "text": "✓ package P\n"},
                                             parent=request))
        sender.send_multipart(frames)
        receiver.poll(5000)
        msg = received(ours, receiver)
        assert msg is not None and msg["msg_type"] == "stream" and msg["content"]["text"] == "✓ package P\n"
        assert msg["parent_header"]["msg_id"] == request["header"]["msg_id"]
        assert isinstance(msg["header"]["date"], str)  # left as the kernel wrote it
        sender.send_multipart(frames)  # the same message again: a replay
        receiver.poll(5000)
        with pytest.raises(ValueError, match="Duplicate Signature"):
            received(ours, receiver)
        forged = Session(key=b"another key").serialize(theirs.msg("stream", content={"text": "x"}))
        sender.send_multipart(forged)
        receiver.poll(5000)
        with pytest.raises(ValueError, match="Invalid Signature"):
            received(ours, receiver)
    finally:
        sender.close(linger=0)
        receiver.close(linger=0)
