"""The real PlantUML through the warm server and in batch mode: outcomes, error lines, crash recovery, security."""

from __future__ import annotations

import os
from pathlib import Path
import signal
import socket
import threading
import time

import pytest

from sysmo.tools.plantuml.server import plantuml_server
from sysmo.tools.plantuml.check import check, check_batch, render_svg, self_check
from sysmo.contracts.check import Outcome

VALID = """@startuml
class Order {
  +id : int
  +total() : float
}
Order "1" *-- "many" LineItem : contains
@enduml
"""
# line 4 is not PlantUML
INVALID = """@startuml
class Order
Order --> Customer
this is not plantuml at all
@enduml
"""


def syntax_errors(result):
    return [d for d in result.diagnostics if d.code == "syntax"]


def test_the_jar_version_read_from_its_manifest_is_what_the_jar_itself_prints():
    import subprocess

    from sysmo.tools.install import java_binary, plantuml_jar
    from sysmo.tools.plantuml.check import jar_version

    jar = plantuml_jar()
    printed = subprocess.run([java_binary(), "-Djava.awt.headless=true", "-jar", str(jar), "-version"],
                             capture_output=True, text=True, timeout=60).stdout
    assert f"PlantUML version {jar_version(jar)} " in printed


def test_valid_diagram_passes_through_the_server():
    result = check(VALID)
    assert result.outcome == Outcome.OK, result.summary()
    assert result.diagnostics == []
    assert result.tool == "plantuml" and result.tool_version.startswith("1.")
    assert result.details["mode"] == "server"


def test_syntax_error_is_reported_on_its_1_based_line():
    result = check(INVALID)
    assert result.outcome == Outcome.FAILED
    assert [d.line for d in syntax_errors(result)] == [4]


def test_error_lines_refer_to_the_text_given_even_with_prose_around_the_diagram():
    reply = "Here is the model:\n\n" + INVALID + "\nHope this helps."
    result = check(reply)
    assert [d.line for d in syntax_errors(result)] == [6]
    assert result.details["diagram_start_line"] == 3


def test_render_svg_returns_the_diagram_svg():
    svg = render_svg(VALID)
    assert svg.lstrip().startswith("<svg") and "Order" in svg and "LineItem" in svg


def test_batch_gives_one_result_per_text_with_the_same_lines_as_the_server():
    texts = [
        VALID,
        INVALID,
        "prose first\n" + INVALID,
        "@startuml\nclass A {\n  x : int\nclass B\n}\n@enduml",
    ]
    results = check_batch(texts)
    assert [r.outcome for r in results] == [Outcome.OK, Outcome.FAILED, Outcome.FAILED, Outcome.FAILED]
    assert [d.line for d in syntax_errors(results[1])] == [4]
    assert [d.line for d in syntax_errors(results[2])] == [5]
    assert [d.code for d in results[3].diagnostics] == ["unclosed-body"]  # PlantUML itself accepts it
    assert all(r.details["mode"] == "batch" for r in results)
    for text, batch in zip(texts, results, strict=True):
        warm = check(text)
        assert [(d.line, d.code) for d in warm.diagnostics] == [(d.line, d.code) for d in batch.diagnostics]


def test_batch_of_nothing_is_nothing():
    assert check_batch([]) == []


def _confined_jvm(server) -> int:
    jvm = server.pids()[-1]
    assert os.readlink(f"/proc/{jvm}/ns/net") != os.readlink("/proc/self/ns/net")
    status = dict(line.split(":\t", 1) for line in open(f"/proc/{jvm}/status").read().splitlines() if ":\t" in line)
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0
    assert not os.path.exists(f"/proc/{jvm}/root{Path.home()}")  # the host's home is not in its root
    assert open(f"/proc/{jvm}/environ").read().split("\0")[:-1] != [] and "SYSMO" not in open(f"/proc/{jvm}/environ").read()
    return jvm


def _sockets_of(pid: int) -> list[str]:
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:"):
            found.append(target)
    return found


def test_the_server_speaks_over_its_pipes_and_runs_confined_with_nothing_listening():
    server = plantuml_server()
    server.ensure()
    # under bubblewrap or the unshare jail: its own network namespace; spoken to over stdin/stdout
    assert server.isolation[:1] in (["bwrap"], ["unshare"]) and "netns" in server.isolation, server.isolation
    assert server.transport == "pipe" and "pipe" in server.isolation
    assert server.port is None and server.socket_path is None
    jvm = _confined_jvm(server)
    cmdline = open(f"/proc/{jvm}/cmdline").read().split("\0")
    assert "PlantUMLPipe" in cmdline and not any("picoweb" in arg or "http-server" in arg for arg in cmdline)
    # the JVM holds no listening socket of its own (Java's own descriptors may include none at all)
    listening = Path(f"/proc/{jvm}/net/tcp").read_text().splitlines()[1:]
    assert not [row for row in listening if row.split()[3] == "0A"], listening  # 0A: LISTEN
    assert check(INVALID).outcome == Outcome.FAILED


def test_without_javac_the_server_is_picoweb_behind_a_unix_socket(monkeypatch):
    from sysmo.tools.plantuml import server as server_module

    monkeypatch.setattr(server_module, "pipe_jar", lambda java, jar: None)  # a JRE: no javac to build the pipe
    server = server_module.PlantUMLServer()
    try:
        server.ensure()
        assert server.transport == "picoweb" and "unix-socket" in server.isolation
        jvm = _confined_jvm(server)
        cmdline = open(f"/proc/{jvm}/cmdline").read().split("\0")
        assert f"-picoweb:{server.port}:127.0.0.1" in cmdline
        assert not any(arg.startswith("--http-server") for arg in cmdline)
        assert server.socket_path is not None and server.socket_path.is_socket()
        answer = server.render(INVALID, draw=False)  # picoweb always draws
        assert answer.error_line == 4 and "<svg" in answer.svg
    finally:
        server.stop()


def test_a_check_parses_without_drawing_and_render_svg_draws():
    server = plantuml_server()
    parsed, drawn = server.render(VALID, draw=False), server.render(VALID)
    assert parsed.svg == "" and drawn.svg.startswith("<svg")
    assert (parsed.status, parsed.error, parsed.error_line) == (drawn.status, drawn.error, drawn.error_line)
    bad = server.render(INVALID, draw=False)
    assert bad.error and bad.error_line == 4 and bad.status == 200


def _mutants(text: str) -> list[str]:
    """Each line of a diagram dropped, doubled or cut in half: valid and broken diagrams in one corpus."""
    lines = text.splitlines()
    out = []
    for i in range(1, len(lines) - 1):
        out.append("\n".join(lines[:i] + lines[i + 1:]))
        out.append("\n".join(lines[:i] + [lines[i], lines[i]] + lines[i + 1:]))
        out.append("\n".join(lines[:i] + [lines[i][: len(lines[i]) // 2] + " }{ ->"] + lines[i + 1:]))
    return out


@pytest.mark.slow
def test_the_parse_only_check_gives_the_batch_clis_verdict_and_line_on_every_mutant():
    # the batch path runs PlantUML's own command line (-tsvg -stdrpt:2: parsed and drawn); the warm check only
    # parses: the verdicts and error lines must be the same, diagram by diagram
    sources = sorted(Path(__file__).resolve().parents[1].glob("benchmarks/**/*.puml"))[:2]
    texts = [VALID, INVALID] + [p.read_text() for p in sources]
    corpus = [m for t in texts for m in [t, *_mutants(t)]]
    assert len(corpus) > 60
    batch = check_batch(corpus)
    for text, drawn in zip(corpus, batch, strict=True):
        warm = check(text)
        assert warm.outcome == drawn.outcome, text
        assert [(d.line, d.code) for d in warm.diagnostics] == [(d.line, d.code) for d in drawn.diagnostics], text


def test_a_killed_server_is_restarted_by_the_next_check():
    server = plantuml_server()
    server.ensure()
    restarts = server.restarts
    jvm = server.pids()[-1]
    os.kill(jvm, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while server.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server.alive()
    assert check(VALID).outcome == Outcome.OK
    assert check(INVALID).outcome == Outcome.FAILED
    assert server.restarts == restarts + 1


def test_a_server_started_from_a_passing_thread_outlives_it():
    # bwrap --die-with-parent kills the server when the thread that started it ends; a check from a worker
    # thread (an event loop's executor, one asyncio.run per attempt) must not cost the next check a restart
    server = plantuml_server()
    server.stop()
    outcomes = []
    worker = threading.Thread(target=lambda: outcomes.append(check(VALID).outcome))
    worker.start()
    worker.join()
    assert outcomes == [Outcome.OK]
    pid = server.proc.pid
    restarts = server.restarts
    time.sleep(0.5)  # PR_SET_PDEATHSIG is delivered when the thread exits
    assert server.alive()
    assert check(INVALID).outcome == Outcome.FAILED
    assert server.proc.pid == pid and server.restarts == restarts


def test_self_check_is_green():
    status = self_check()
    assert status.ok, status.message
    assert status.version.startswith("1.")


# ------------------------------------------------------------------ security
SECRET = "sysmo-test-secret-4f1c9a"


@pytest.fixture(scope="module")
def secret_in_environment():
    """A secret in this process's environment, present when the server (re)starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SYSMO_TEST_SECRET", SECRET)
        plantuml_server().restart()
        yield


class _Listener:
    """A TCP listener on the host's loopback that counts connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.running = False
        self.thread.join(timeout=2)
        self.sock.close()


def _leaks(listener_port: int) -> dict[str, str]:
    return {
        "include": "@startuml\n!include /etc/passwd\nclass A\n@enduml",
        "includesub": "@startuml\n!includesub /etc/passwd!X\nclass A\n@enduml",
        "include_many": "@startuml\n!include_many /etc/hostname\nclass A\n@enduml",
        "import": "@startuml\n!import /etc/passwd\nclass A\n@enduml",
        "getenv": '@startuml\nclass A {\n  home : %getenv("HOME")\n  s : %getenv("SYSMO_TEST_SECRET")\n}\n@enduml',
        "load_json": '@startuml\n!$j = %load_json("/etc/os-release")\nclass A {\n  x : $j\n}\n@enduml',
        "file_exists": '@startuml\nclass A {\n  x : %file_exists("/etc/passwd")\n}\n@enduml',
        "includeurl": f"@startuml\n!includeurl http://127.0.0.1:{listener_port}/x\nclass A\n@enduml",
    }


def _assert_nothing_leaked(name: str, shown: str) -> None:
    assert "root:x:0:0" not in shown, name
    assert SECRET not in shown, name
    assert f": {os.environ['HOME']}" not in shown, name
    assert "x : 1" not in shown, name  # %file_exists("/etc/passwd") must not see the host file


def test_diagrams_cannot_read_host_files_env_or_network_through_the_server(secret_in_environment):
    listener = _Listener()
    try:
        for name, text in _leaks(listener.port).items():
            result = check(text)
            svg = render_svg(text)
            _assert_nothing_leaked(name, svg + result.raw_output + result.summary())
        assert listener.connections == 0
    finally:
        listener.close()
    # includes fail loudly rather than silently rendering nothing
    assert check("@startuml\n!include /etc/passwd\nclass A\n@enduml").outcome == Outcome.FAILED


def test_diagrams_cannot_read_host_files_env_or_network_in_batch_mode(secret_in_environment):
    listener = _Listener()
    try:
        cases = _leaks(listener.port)
        results = check_batch(list(cases.values()), keep_svg=True)
        for (name, _), result in zip(cases.items(), results, strict=True):
            assert "<svg" in result.details["svg"], name
            _assert_nothing_leaked(name, result.details["svg"] + result.raw_output + result.summary())
        assert listener.connections == 0
    finally:
        listener.close()
    assert results[0].outcome == Outcome.FAILED  # !include /etc/passwd
    assert "cannot include" in results[0].summary()


def test_concurrent_checks_share_one_server_and_keep_their_own_lines():
    from concurrent.futures import ThreadPoolExecutor

    texts = [VALID, INVALID, "\n" * 3 + INVALID] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(check, texts))
    lines = [[d.line for d in syntax_errors(r)] for r in results]
    assert lines == [[], [4], [7]] * 4
    assert len({id(plantuml_server()) for _ in range(3)}) == 1


def test_a_lax_security_profile_is_refused(monkeypatch):
    from sysmo.config import settings
    from sysmo.errors import ConfigError
    from sysmo.tools.plantuml.server import security_profile

    monkeypatch.setenv("SYSMO_TOOLS__PLANTUML_SECURITY_PROFILE", "UNSECURE")
    settings.cache_clear()
    try:
        with pytest.raises(ConfigError, match="SANDBOX"):
            security_profile()
    finally:
        monkeypatch.delenv("SYSMO_TOOLS__PLANTUML_SECURITY_PROFILE")
        settings.cache_clear()
    assert security_profile() == "SANDBOX"
