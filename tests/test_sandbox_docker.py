"""The docker backend, against a fake Docker engine API on a unix socket (no engine runs on these machines)."""

from __future__ import annotations

import json
import re
import socketserver
import struct
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, urlparse

import pytest

from sysmo.config import settings
from sysmo.errors import SandboxError
from sysmo.sandbox.base import Limits, inner_tool_path
from sysmo.sandbox.docker_backend import DockerSandbox
from sysmo.sandbox.select import get_sandbox


@dataclass
class FakeContainer:
    id: str
    body: dict
    exit_code: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    hang: bool = False  # never exits on its own: /wait blocks until a kill
    oom: bool = False
    started: bool = False
    killed: bool = False
    removed: bool = False
    done: threading.Event = field(default_factory=threading.Event)


Behaviour = Callable[[dict, Path | None], dict]


class FakeEngine:
    """Speaks the part of the Docker Engine API that docker-py's containers.create/start/wait/logs use.

    ``behaviour(create_body, host_work_dir)`` decides what the "container" does: it may write files into
    the bind-mounted work dir, and returns fields of FakeContainer (exit_code, stdout, hang, oom, ...).
    """

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.containers: dict[str, FakeContainer] = {}
        self.requests: list[tuple[str, str]] = []
        self.behaviour: Behaviour = lambda body, work: {}
        self.missing_images: set[str] = set()
        self.images: dict[str, list[str]] = {}  # image -> its environment (others: the engine cannot say)
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def address_string(self) -> str:  # unix sockets have no peer address
                return "unix"

            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, payload: object | bytes, content_type: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Api-Version", "1.45")
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                path = re.sub(r"^/v[0-9.]+", "", url.path)
                query = parse_qs(url.query)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                engine.requests.append((method, path))
                engine.handle(self, method, path, query, body)

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_DELETE(self) -> None:
                self._route("DELETE")

            def do_HEAD(self) -> None:
                self._route("HEAD")

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(str(socket_path), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        for container in self.containers.values():
            container.done.set()
        self.server.shutdown()
        self.server.server_close()

    def handle(self, h, method: str, path: str, query: dict, body: dict) -> None:
        if path == "/_ping":
            return h._send(200, b"OK", "text/plain")
        if path == "/version":
            return h._send(200, {"ApiVersion": "1.45", "Version": "26.0.0-fake", "MinAPIVersion": "1.24"})
        image = re.fullmatch(r"/images/(.+)/json", path)
        if image and image.group(1) in self.images:
            return h._send(200, {"Id": "sha256:" + "0" * 64, "RepoTags": [image.group(1)],
                                 "Config": {"Env": self.images[image.group(1)]}})
        if path == "/containers/create" and method == "POST":
            if body.get("Image") in self.missing_images:
                return h._send(404, {"message": f"No such image: {body['Image']}"})
            cid = uuid.uuid4().hex
            binds = body.get("HostConfig", {}).get("Binds") or []
            work = next((Path(b.split(":")[0]) for b in binds if b.split(":")[1] == "/box"), None)
            self.containers[cid] = FakeContainer(cid, body, **self.behaviour(body, work))
            return h._send(201, {"Id": cid, "Warnings": []})
        match = re.fullmatch(r"/containers/([0-9a-f]+)(/\w+)?", path)
        if not match or match.group(1) not in self.containers:
            return h._send(404, {"message": "No such container"})
        c = self.containers[match.group(1)]
        action = match.group(2) or ""
        if action == "/json":
            status = "exited" if c.done.is_set() else ("running" if c.started else "created")
            return h._send(200, {"Id": c.id, "Name": "/fake", "Config": c.body, "HostConfig": c.body.get("HostConfig"),
                                 "State": {"Status": status, "OOMKilled": c.oom, "ExitCode": c.exit_code}})
        if action == "/start":
            c.started = True
            if not c.hang:
                c.done.set()
            return h._send(204, b"")
        if action == "/wait":
            c.done.wait(timeout=30)
            return h._send(200, {"StatusCode": 137 if c.killed else c.exit_code})
        if action == "/kill":
            c.killed = True
            c.done.set()
            return h._send(204, b"")
        if action == "/logs":
            frames = b""
            for stream_id, data, wanted in ((1, c.stdout, "stdout"), (2, c.stderr, "stderr")):
                if query.get(wanted, ["0"])[0] in ("1", "true", "True"):
                    for i in range(0, len(data), 65536):
                        chunk = data[i:i + 65536]
                        frames += struct.pack(">BxxxL", stream_id, len(chunk)) + chunk
            return h._send(200, frames, "application/vnd.docker.raw-stream")
        if method == "DELETE" and action == "":
            c.removed = True
            c.done.set()
            return h._send(204, b"")
        return h._send(404, {"message": f"fake engine does not know {method} {path}"})


@pytest.fixture
def engine(tmp_path, monkeypatch):
    socket_path = Path(f"/tmp/sysmo-fake-docker-{uuid.uuid4().hex[:8]}.sock")  # unix paths must be short
    fake = FakeEngine(socket_path)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{socket_path}")
    DockerSandbox.forget_engine()
    yield fake
    fake.close()
    socket_path.unlink(missing_ok=True)
    DockerSandbox.forget_engine()


@pytest.fixture
def docker_box(engine) -> DockerSandbox:
    return DockerSandbox(image="sysmo-test-image:1")


def _only(engine: FakeEngine) -> FakeContainer:
    assert len(engine.containers) == 1
    return next(iter(engine.containers.values()))


def test_engine_answer_is_detected_and_cached(engine):
    assert DockerSandbox.engine_available()
    pings = sum(1 for _, path in engine.requests if path == "/_ping")
    assert DockerSandbox.engine_available()
    assert sum(1 for _, path in engine.requests if path == "/_ping") == pings == 1


def test_no_engine_is_detected(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    DockerSandbox.forget_engine()
    try:
        assert not DockerSandbox.engine_available()
    finally:
        DockerSandbox.forget_engine()


def test_container_is_created_isolated_and_limited(engine, docker_box, tmp_path):
    engine.behaviour = lambda body, work: {"stdout": b"hello\n", "stderr": b"warn\n"}
    lib = tmp_path / "lib"
    lib.mkdir()
    result = docker_box.run(["/usr/lib/jvm/java-17/bin/java", "-Xmx256m", "-cp", str(lib / "x.jar"), "Main"],
                            readonly_paths=[lib], env={"A": "1"},
                            limits=Limits(timeout_s=10, cpu_s=7, memory_mb=300, pids=40, file_size_mb=2))
    assert (result.returncode, result.stdout, result.stderr) == (0, "hello\n", "warn\n")
    assert result.backend == "docker" and "netns" in result.isolation
    c = _only(engine)
    body, host = c.body, c.body["HostConfig"]
    assert body["Image"] == "sysmo-test-image:1"
    inside = inner_tool_path(lib.resolve())  # where every backend shows a read-only tool path
    # host java -> image's java, under the container's own wall clock (10 s + the grace)
    assert body["Cmd"] == ["timeout", "-s", "KILL", "12", "java", "-Xmx256m", "-cp", f"{inside}/x.jar", "Main"]
    assert body["User"] == "65534:65534"
    assert body["NetworkDisabled"] is True and host["NetworkMode"] == "none"
    assert body["WorkingDir"] == "/box" and "A=1" in body["Env"]
    assert host["Memory"] == 300 * 1024 * 1024 and host["MemorySwap"] == 300 * 1024 * 1024
    assert host["PidsLimit"] == 40 and host["NanoCpus"] == 1_000_000_000
    assert host["ReadonlyRootfs"] is True and "/tmp" in host["Tmpfs"]
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    assert any(b.endswith(":/box:rw") for b in host["Binds"])
    assert f"{lib.resolve()}:{inside}:ro" in host["Binds"]
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]}
    assert ulimits["cpu"] == (7, 12) and ulimits["fsize"] == (2 * 1024 * 1024,) * 2
    assert c.removed


def test_network_allowed_keeps_the_default_network(engine, docker_box):
    docker_box.run(["true"], limits=Limits(timeout_s=5, network=True))
    c = _only(engine)
    assert not c.body.get("NetworkDisabled") and c.body["HostConfig"].get("NetworkMode") != "none"


def test_timeout_kills_and_removes_the_container(engine, docker_box):
    engine.behaviour = lambda body, work: {"hang": True, "stdout": b"partial\n"}
    result = docker_box.run(["sleep", "1000"], limits=Limits(timeout_s=0.5))
    assert result.timed_out and result.returncode is None
    assert result.stdout == "partial\n"
    c = _only(engine)
    assert c.killed and c.removed


def test_logs_are_bounded(engine, docker_box):
    engine.behaviour = lambda body, work: {"stdout": b"o" * 1_000_000, "stderr": b"e" * 10}
    result = docker_box.run(["yes"], limits=Limits(timeout_s=5, output_limit_bytes=70_000))
    assert len(result.stdout) == 70_000 and result.stdout_truncated
    assert result.stderr == "e" * 10 and not result.stderr_truncated


def test_work_dir_files_go_in_and_collected_files_come_out(engine, docker_box):
    seen: dict[str, str] = {}

    def behaviour(body: dict, work: Path | None) -> dict:
        assert work is not None
        seen["spec"] = (work / "Spec.tla").read_text()
        (work / "out").mkdir()
        (work / "out" / "result.txt").write_text("from the container")
        return {"exit_code": 3}

    engine.behaviour = behaviour
    result = docker_box.run(["tool", "Spec.tla"], files={"Spec.tla": "---- MODULE Spec ----"},
                            limits=Limits(timeout_s=5), collect=["/box/out/result.txt", "out/*.txt"])
    assert seen["spec"] == "---- MODULE Spec ----"
    assert result.returncode == 3
    assert result.files_out == {"out/result.txt": "from the container"}


def test_stdin_is_handed_over_as_a_file(engine, docker_box):
    captured: dict[str, str] = {}

    def behaviour(body: dict, work: Path | None) -> dict:
        captured["stdin"] = (work / ".sysmo-stdin").read_text()
        return {}

    engine.behaviour = behaviour
    docker_box.run(["cat"], stdin="input text", limits=Limits(timeout_s=5))
    c = _only(engine)
    assert c.body["Cmd"][4:6] == ["sh", "-c"] and c.body["Cmd"][-1] == "cat"
    assert captured["stdin"] == "input text"


def test_oom_kill_is_reported(engine, docker_box):
    engine.behaviour = lambda body, work: {"exit_code": 137, "oom": True}
    result = docker_box.run(["python3", "-c", "x" * 3], limits=Limits(timeout_s=5, memory_mb=64))
    assert result.returncode == 137 and result.oom_killed


def test_missing_image_says_how_to_fix_it(engine):
    engine.missing_images.add("absent:1")
    with pytest.raises(SandboxError, match="sysmo tools image build"):
        DockerSandbox(image="absent:1").run(["true"], limits=Limits(timeout_s=5))


def test_an_image_without_its_own_wall_clock_is_refused(engine):
    from sysmo.sandbox.docker_image import IMAGE_MARK

    engine.images["old:1"] = ["PATH=/usr/bin:/bin"]  # built by a sysmo whose image had no `timeout`
    with pytest.raises(SandboxError, match="older sysmo.*sysmo tools image build"):
        DockerSandbox(image="old:1")
    engine.images["new:1"] = ["PATH=/usr/bin:/bin", IMAGE_MARK]
    assert DockerSandbox(image="new:1").image == "new:1"


def test_image_defaults_to_the_configured_one(engine, monkeypatch):
    monkeypatch.setenv("SYSMO_SANDBOX__DOCKER_IMAGE", "configured/image:2")
    settings.cache_clear()
    try:
        assert DockerSandbox().image == "configured/image:2"
    finally:
        settings.cache_clear()


# ---------------------------------------------------------------- backend selection

@pytest.fixture
def backend_setting(monkeypatch):
    def choose(value: str) -> None:
        monkeypatch.setenv("SYSMO_SANDBOX__BACKEND", value)
        settings.cache_clear()
        get_sandbox.cache_clear()

    yield choose
    settings.cache_clear()
    get_sandbox.cache_clear()


def test_configured_docker_without_engine_is_a_clear_error(backend_setting, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    DockerSandbox.forget_engine()
    backend_setting("docker")
    with pytest.raises(SandboxError, match="no Docker engine answers"):
        get_sandbox()


def test_auto_without_engine_is_local(backend_setting, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    DockerSandbox.forget_engine()
    backend_setting("auto")
    assert get_sandbox().name == "local"


def test_configured_docker_with_an_engine_is_docker(engine, backend_setting):
    backend_setting("docker")
    assert get_sandbox().name == "docker"


def test_configured_local_never_asks_the_engine(engine, backend_setting):
    backend_setting("local")
    assert get_sandbox().name == "local"
    assert not any(path == "/_ping" for _, path in engine.requests)


def test_unknown_backend_is_refused():
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        get_sandbox("podman")
