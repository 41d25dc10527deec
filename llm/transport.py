"""The HTTP transport of one model call: a wall-clock deadline over the whole exchange and a cap on the bytes received,
both enforced at every socket read, so a server that drips its reply or sends a huge one cannot hold a call or fill
memory (httpx's own timeouts bound each read, not the call).

>>> guard = CallGuard(deadline_s=8.0, max_bytes=12_000_000)
>>> client = guarded_client(guard)          # an httpx.Client for the OpenAI SDK; guard.tripped says what stopped it
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import httpcore
import httpx

Trip = Literal["deadline", "size"]


@dataclass
class CallGuard:
    """The limits of one call and what it received; ``tripped`` names the limit that ended it, if one did."""

    deadline_s: float
    max_bytes: int | None
    started: float | None = None  # when the call first reached the network (litellm's own set-up is not counted)
    received: int = 0  # bytes read from the server (headers included)
    tripped: Trip | None = None
    connect_error: Exception | None = None  # why the server could not be reached (litellm reports it as a 500)

    def remaining(self) -> float:
        if self.started is None:
            self.started = time.monotonic()
        return self.deadline_s - (time.monotonic() - self.started)

    def read_timeout(self, timeout: float | None) -> float:
        """The timeout of the next read: the caller's, shortened to the time left; trips the deadline when none is."""
        left = self.remaining()
        if left <= 0:
            self.tripped = "deadline"
            raise httpcore.ReadTimeout(f"the call's deadline of {self.deadline_s:g} s passed")
        return left if timeout is None else min(timeout, left)

    def timed_out(self) -> None:
        """A read that timed out at the end of the time left ran into the deadline."""
        if self.remaining() <= 0.05:
            self.tripped = "deadline"

    def count(self, data: bytes) -> bytes:
        self.received += len(data)
        if self.max_bytes is not None and self.received > self.max_bytes:
            self.tripped = "size"
            raise httpcore.ReadError(f"the reply passed the cap of {self.max_bytes:,} bytes")
        return data


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, guard: CallGuard) -> None:
        self.inner, self.guard = inner, guard

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return self.guard.count(self.inner.read(max_bytes, self.guard.read_timeout(timeout)))
        except httpcore.ReadTimeout:
            self.guard.timed_out()
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, self.guard.read_timeout(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self.inner.start_tls(ssl_context, server_hostname, self.guard.read_timeout(timeout))
        return _Stream(inner, self.guard)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, guard: CallGuard) -> None:
        self.inner, self.guard = inner, guard

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return self.guard.count(await self.inner.read(max_bytes, self.guard.read_timeout(timeout)))
        except httpcore.ReadTimeout:
            self.guard.timed_out()
            raise

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, self.guard.read_timeout(timeout))

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        inner = await self.inner.start_tls(ssl_context, server_hostname, self.guard.read_timeout(timeout))
        return _AsyncStream(inner, self.guard)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend, guard: CallGuard) -> None:
        self.inner, self.guard = inner, guard

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        try:
            stream = self.inner.connect_tcp(host, port, self.guard.read_timeout(timeout), local_address,
                                            socket_options)
        except Exception as exc:
            self.guard.connect_error = exc
            raise
        return _Stream(stream, self.guard)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self.inner.connect_unix_socket(path, self.guard.read_timeout(timeout), socket_options)
        return _Stream(stream, self.guard)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend, guard: CallGuard) -> None:
        self.inner, self.guard = inner, guard

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        try:
            stream = await self.inner.connect_tcp(host, port, self.guard.read_timeout(timeout), local_address,
                                                  socket_options)
        except Exception as exc:
            self.guard.connect_error = exc
            raise
        return _AsyncStream(stream, self.guard)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        stream = await self.inner.connect_unix_socket(path, self.guard.read_timeout(timeout), socket_options)
        return _AsyncStream(stream, self.guard)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def guarded_client(guard: CallGuard) -> httpx.Client:
    """A one-call httpx client whose every socket read honours ``guard``."""
    transport = httpx.HTTPTransport()
    # httpx builds its httpcore pool itself; the pool's network backend is the one place every read passes
    transport._pool._network_backend = _Backend(transport._pool._network_backend, guard)
    return httpx.Client(transport=transport, timeout=httpx.Timeout(guard.deadline_s))


def guarded_async_client(guard: CallGuard) -> httpx.AsyncClient:
    """``guarded_client`` for asyncio callers."""
    transport = httpx.AsyncHTTPTransport()
    transport._pool._network_backend = _AsyncBackend(transport._pool._network_backend, guard)
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(guard.deadline_s))
