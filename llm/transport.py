"""The HTTP transport of model calls: a wall-clock deadline over the whole exchange and a cap on the bytes received,
both enforced at every socket read, so a server that drips its reply or sends a huge one cannot hold a call or fill
memory (httpx's own timeouts bound each read, not the call). One client per endpoint (per event loop for asyncio
callers) keeps its connections open between calls, so a run sets up TCP and TLS once per endpoint, not per call.

>>> guard = CallGuard(deadline_s=8.0, max_bytes=12_000_000)
>>> client = shared_client("https://api.openai.com/v1", timeout_s=8.0)  # an httpx.Client for the OpenAI SDK
>>> with guarding(guard):                   # every read of a call made in this block honours guard
...     ...                                 # guard.tripped then says what stopped the call, if anything did
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import httpcore
import httpx

Trip = Literal["deadline", "size"]
Endpoint = tuple[str | None, float]  # (api_base, the call timeout in seconds)


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


# the guard of the call this thread (or asyncio task) is making; a pooled connection serves one call at a time
# and is read by the thread or task that made the call, so its reads find that call's guard here
_current_guard: ContextVar[CallGuard | None] = ContextVar("sysmo_call_guard", default=None)


@contextmanager
def guarding(guard: CallGuard) -> Iterator[CallGuard]:
    """While the block runs, the HTTP exchanges this thread or task makes through a shared client honour
    ``guard`` (asyncio tasks started inside the block inherit it)."""
    token = _current_guard.set(guard)
    try:
        yield guard
    finally:
        _current_guard.reset(token)


def _timeout(timeout: float | None) -> float | None:
    guard = _current_guard.get()
    return timeout if guard is None else guard.read_timeout(timeout)


def _counted(data: bytes) -> bytes:
    guard = _current_guard.get()
    return data if guard is None else guard.count(data)


def _read_timed_out() -> None:
    guard = _current_guard.get()
    if guard is not None:
        guard.timed_out()


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return _counted(self.inner.read(max_bytes, _timeout(timeout)))
        except httpcore.ReadTimeout:
            _read_timed_out()
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _timeout(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, _timeout(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self.inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return _counted(await self.inner.read(max_bytes, _timeout(timeout)))
        except httpcore.ReadTimeout:
            _read_timed_out()
            raise

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, _timeout(timeout))

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self.inner.start_tls(ssl_context, server_hostname, _timeout(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


def _connect_failed(exc: Exception) -> None:
    guard = _current_guard.get()
    if guard is not None:
        guard.connect_error = exc


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        try:
            stream = self.inner.connect_tcp(host, port, _timeout(timeout), local_address, socket_options)
        except Exception as exc:
            _connect_failed(exc)
            raise
        return _Stream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self.inner.connect_unix_socket(path, _timeout(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self.inner = inner

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        try:
            stream = await self.inner.connect_tcp(host, port, _timeout(timeout), local_address, socket_options)
        except Exception as exc:
            _connect_failed(exc)
            raise
        return _AsyncStream(stream)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self.inner.connect_unix_socket(path, _timeout(timeout), socket_options))

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


# httpcore's errors as httpx's (what the OpenAI SDK and litellm catch), the most specific first
_HTTPX_ERRORS: list[tuple[type[Exception], type[httpx.HTTPError]]] = [
    (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError), (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError), (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError), (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError), (httpcore.ProtocolError, httpx.ProtocolError),
]


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _HTTPX_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


def _core_request(request: httpx.Request) -> httpcore.Request:
    return httpcore.Request(method=request.method,
                            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                                             port=request.url.port, target=request.url.raw_path),
                            headers=request.headers.raw, content=request.stream, extensions=request.extensions)


# httpx's defaults for a client's pool
_POOL = {"max_connections": 100, "max_keepalive_connections": 20, "keepalive_expiry": 5.0}


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self.inner

    def close(self) -> None:
        if hasattr(self.inner, "close"):
            self.inner.close()


class _AsyncResponseStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for part in self.inner:
                yield part

    async def aclose(self) -> None:
        if hasattr(self.inner, "aclose"):
            await self.inner.aclose()


class GuardedTransport(httpx.BaseTransport):
    """httpx's HTTP transport built on httpcore's public pool, whose network backend honours the current call's
    guard at every connect, read and write."""

    def __init__(self) -> None:
        self._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), **_POOL,
                                             network_backend=_Backend(httpcore.SyncBackend()))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with _as_httpx_errors():
            response = self._pool.handle_request(_core_request(request))
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_ResponseStream(response.stream),  # type: ignore[arg-type]
                              extensions=response.extensions)

    def close(self) -> None:
        self._pool.close()


class AsyncGuardedTransport(httpx.AsyncBaseTransport):
    """``GuardedTransport`` for asyncio callers."""

    def __init__(self) -> None:
        self._pool = httpcore.AsyncConnectionPool(ssl_context=httpx.create_ssl_context(), **_POOL,
                                                  network_backend=_AsyncBackend(httpcore.AnyIOBackend()))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(_core_request(request))
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_AsyncResponseStream(response.stream), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()


_lock = threading.Lock()
_clients: dict[Endpoint, httpx.Client] = {}
# per event loop: its clients, and the async generator whose closing (by the loop's shutdown_asyncgens, which
# asyncio.run and the runner's executor call as they end) closes them
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Endpoint, httpx.AsyncClient]] = \
    weakref.WeakKeyDictionary()
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def shared_client(api_base: str | None, timeout_s: float) -> httpx.Client:
    """The process's client for ``api_base``: its connections are kept between calls (closed at exit or by
    ``close_clients``)."""
    key = (api_base, timeout_s)
    with _lock:
        client = _clients.get(key)
        if client is None or client.is_closed:
            client = _clients[key] = httpx.Client(transport=GuardedTransport(), timeout=httpx.Timeout(timeout_s))
        return client


async def shared_async_client(api_base: str | None, timeout_s: float) -> httpx.AsyncClient:
    """The running event loop's client for ``api_base``, closed as the loop shuts down."""
    loop = asyncio.get_running_loop()
    clients = _async_clients.get(loop)
    if clients is None:
        clients = _async_clients[loop] = {}
        closer = _closers[loop] = _close_when_loop_ends(loop, clients)
        await closer.asend(None)  # started on this loop: its shutdown_asyncgens will close it
    key = (api_base, timeout_s)
    client = clients.get(key)
    if client is None or client.is_closed:
        client = clients[key] = httpx.AsyncClient(transport=AsyncGuardedTransport(),
                                                  timeout=httpx.Timeout(timeout_s))
    return client


async def _close_when_loop_ends(loop: asyncio.AbstractEventLoop,
                                clients: dict[Endpoint, httpx.AsyncClient]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        _async_clients.pop(loop, None)
        _closers.pop(loop, None)  # this generator holds the loop (its finaliser): let both go
        for client in list(clients.values()):
            await client.aclose()


def close_clients() -> None:
    """Close the shared clients of synchronous callers (their connections); the next call opens new ones."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


def _forget_clients_in_child() -> None:
    """A forked child must not write to its parent's connections: it opens its own (the parent's stay open)."""
    global _lock
    _lock = threading.Lock()
    _clients.clear()
    _async_clients.clear()
    _closers.clear()


atexit.register(close_clients)
os.register_at_fork(after_in_child=_forget_clients_in_child)
