"""A fake OpenAI-compatible chat server on 127.0.0.1 (stdlib ``http.server``), scripted per test.

Each POST to ``/v1/chat/completions`` takes the next reply from a queue: a text, a list of tool calls,
an HTTP error status (429, 500, 400 ...), optionally after a delay. Every request body is recorded so
tests can assert on prompts; HTTP calls, TCP connections and the peak number of concurrent requests are counted.

>>> with FakeOpenAI() as server:
...     server.push(reply("hello"), http_error(429), reply("after the retry"))
...     llm = LLM(ModelRoles(generator=RoleConfig(model="openai/fake", api_base=server.base_url)))

Use it from a test module with ``from fake_openai import fake_openai  # noqa: F401`` (a fixture) or
as a context manager. When the queue is empty the server answers ``default`` if set, else a 500 whose
message says the script ran out (so a test that makes one call too many fails loudly).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class FakeReply:
    """One scripted answer. ``status`` != 200 makes it an HTTP error with ``error_message``."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name": ..., "arguments": {...}}]
    status: int = 200
    error_message: str = ""
    retry_after: float | None = None  # sent as the Retry-After header
    delay_s: float = 0.0  # sleep before answering (drives client timeouts)
    usage: tuple[int, int] = (12, 7)  # (prompt_tokens, completion_tokens)
    model: str | None = None  # the "model" field of the answer; default: the requested one
    finish_reason: str | None = None
    raw_body: str | None = None  # send this body verbatim (malformed-JSON tests)
    drip_s: float = 0.0  # send the body one byte at a time, this long apart (a server that drips its reply)
    text_bytes: int = 0  # a reply whose text is this many bytes, written in chunks (a server that floods)


def reply(text: str, **kwargs: Any) -> FakeReply:
    """A plain assistant text reply."""
    return FakeReply(text=text, **kwargs)


def tool_reply(
    *calls: tuple[str, dict[str, Any]] | dict[str, Any], text: str | None = None, **kwargs: Any
) -> FakeReply:
    """An assistant reply with tool calls, given as ``(name, arguments)`` pairs or dicts."""
    normalised = [c if isinstance(c, dict) else {"name": c[0], "arguments": c[1]} for c in calls]
    return FakeReply(text=text, tool_calls=normalised, **kwargs)


def http_error(status: int, message: str = "", *, retry_after: float | None = None) -> FakeReply:
    """An HTTP error answer (429 rate limit, 500 server error, 400 bad request ...)."""
    return FakeReply(
        status=status, error_message=message or f"fake server error {status}", retry_after=retry_after
    )


def drip(answer: FakeReply | str, every_s: float = 1.0) -> FakeReply:
    """``answer`` sent one byte every ``every_s`` seconds (each read returns within a read timeout)."""
    base = reply(answer) if isinstance(answer, str) else answer
    base.drip_s = every_s
    return base


def flood(size: int, usage: tuple[int, int] = (10, 1_000_000)) -> FakeReply:
    """A 200 reply whose text is ``size`` bytes, streamed (the server never holds it whole)."""
    return FakeReply(text_bytes=size, usage=usage)


def slow(answer: FakeReply | str, delay_s: float) -> FakeReply:
    """``answer`` after ``delay_s`` seconds (longer than the client's timeout makes it a timeout)."""
    base = reply(answer) if isinstance(answer, str) else answer
    base.delay_s = delay_s
    return base


Script = FakeReply | Callable[[dict[str, Any]], FakeReply]


class FakeOpenAI:
    """The server. ``base_url`` is what an OpenAI client takes (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, default: Script | None = None) -> None:
        self.default = default
        self.requests: list[dict[str, Any]] = []  # every chat request body, in arrival order
        self.calls = 0  # HTTP calls to /chat/completions
        self.connections = 0  # TCP connections accepted (a client that keeps its connection open makes one)
        self.open_connections = 0  # of those, the ones the client has not closed yet
        self.max_concurrent = 0
        self.bytes_sent: list[int] = []  # body bytes written per answer (less than its size: the client hung up)
        self._in_flight = 0
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting
    def push(self, *answers: Script | str) -> FakeOpenAI:
        """Append answers (a ``FakeReply``, a plain string, or ``f(request_body) -> FakeReply``)."""
        with self._lock:
            self._queue.extend(reply(a) if isinstance(a, str) else a for a in answers)
        return self

    @property
    def pending(self) -> int:
        return len(self._queue)

    def last_user_message(self, index: int = -1) -> str:
        """The content of the last user message of request ``index``."""
        messages = self.requests[index]["messages"]
        users = [m for m in messages if m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        return content if isinstance(content, str) else json.dumps(content)

    # -- lifecycle
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def setup(self) -> None:  # one handler per accepted connection, serving its requests in turn
                super().setup()
                with server._lock:
                    server.connections += 1
                    server.open_connections += 1

            def finish(self) -> None:  # the client closed the connection (or the server gave up on it)
                try:
                    super().finish()
                finally:
                    with server._lock:
                        server.open_connections -= 1

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                with server._lock:
                    server.calls += 1
                    server.requests.append(body)
                    server._in_flight += 1
                    server.max_concurrent = max(server.max_concurrent, server._in_flight)
                    script = server._queue.popleft() if server._queue else server.default
                try:
                    server._answer(self, body, script)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test): nothing to answer
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _send(
                self,
                status: int,
                payload: Any,
                headers: dict[str, str] | None = None,
                raw_body: str | None = None,
            ) -> None:
                data = (raw_body if raw_body is not None else json.dumps(payload)).encode()
                self._send_chunks(status, [data], len(data), headers)

            def _send_chunks(self, status: int, chunks: Any, length: int, headers: dict[str, str] | None = None,
                             drip_s: float = 0.0) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                sent = 0
                try:
                    for chunk in chunks:
                        pieces = [chunk[i:i + 1] for i in range(len(chunk))] if drip_s else [chunk]
                        for piece in pieces:
                            self.wfile.write(piece)
                            self.wfile.flush()
                            sent += len(piece)
                            if drip_s:
                                time.sleep(drip_s)
                finally:
                    with server._lock:
                        server.bytes_sent.append(sent)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering
    def _answer(self, handler: Any, body: dict[str, Any], script: Script | None) -> None:
        if body.get("stream"):
            handler._send(400, {"error": {"message": "the fake server does not stream; send stream=false"}})
            return
        if script is None:
            handler._send(
                500,
                {
                    "error": {
                        "message": f"fake server: script exhausted after {self.calls - 1} replies",
                        "type": "server_error",
                    }
                },
            )
            return
        answer = script(body) if callable(script) else script
        if answer.delay_s:
            time.sleep(answer.delay_s)
        if answer.raw_body is not None:
            handler._send(answer.status, None, raw_body=answer.raw_body)
            return
        if answer.status != 200:
            headers = {"Retry-After": f"{answer.retry_after:g}"} if answer.retry_after is not None else {}
            kind = {429: "rate_limit_error", 400: "invalid_request_error", 401: "authentication_error"}.get(
                answer.status, "server_error"
            )
            handler._send(
                answer.status,
                {"error": {"message": answer.error_message, "type": kind, "code": str(answer.status)}},
                headers,
            )
            return
        if answer.text_bytes:
            marker = "SYSMO-FLOOD"
            prefix, suffix = json.dumps(self.completion(body, reply(marker, usage=answer.usage))).encode().split(
                marker.encode())
            block = b"x" * 65536
            full, rest = divmod(answer.text_bytes, len(block))
            chunks = [prefix, *(block for _ in range(full)), b"x" * rest, suffix]
            handler._send_chunks(200, iter(chunks), len(prefix) + answer.text_bytes + len(suffix))
            return
        data = json.dumps(self.completion(body, answer)).encode()
        handler._send_chunks(200, [data], len(data), drip_s=answer.drip_s)

    def completion(self, body: dict[str, Any], answer: FakeReply) -> dict[str, Any]:
        """The OpenAI ``chat.completion`` object for ``answer``."""
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id", f"call_{self.calls}_{i}"),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call["arguments"], str)
                        else json.dumps(call["arguments"]),
                    },
                }
                for i, call in enumerate(answer.tool_calls)
            ]
        prompt, completion = answer.usage
        return {
            "id": f"chatcmpl-fake-{self.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": answer.model or body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake server, stopped after the test."""
    with FakeOpenAI() as server:
        yield server
