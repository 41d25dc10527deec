"""When a failed call is worth repeating (rate limits, 5xx, timeouts, lost connections), how long to wait."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sysmo.errors import LLMError
from sysmo.llm.roles import RoleConfig
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

RETRYABLE_STATUS = {408, 409, 425, 429}  # plus every 5xx

# who wants to know that a call waits before its next try (the run's progress line): fn(model, cause, wait_s)
_retry_watchers: list[Callable[[str, str, float], None]] = []


@contextmanager
def watching_retries(watcher: Callable[[str, str, float], None]) -> Iterator[None]:
    """Call ``watcher(model, cause, wait_s)`` whenever a model call of this process waits before its next try."""
    _retry_watchers.append(watcher)
    try:
        yield
    finally:
        _retry_watchers.remove(watcher)


def notify_retry(model: str, exc: BaseException | None, wait_s: float) -> None:
    """Tell the watchers a call of ``model`` failed with ``exc`` and waits ``wait_s`` seconds before trying again."""
    if not _retry_watchers:
        return
    status = status_of(exc) if exc is not None else None
    cause = (f"HTTP {status}" if status is not None else "no connection" if exc is not None and is_connection_error(exc)
             else type(exc).__name__ if exc is not None else "error")
    for watcher in list(_retry_watchers):
        watcher(model, cause, wait_s)


class LLMCallError(LLMError):
    """A model call failed for good. ``status_code`` is the HTTP status when there was one; ``prompt_tokens``,
    ``completion_tokens`` and ``cost_usd`` what a refused reply was charged (its usage, else an estimate from the
    bytes received), so budgets count replies the server billed although sysmo did not keep them."""

    def __init__(
        self, message: str, *, status_code: int | None = None, retryable: bool = False, attempts: int = 1,
        error_class: str | None = None, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.error_class = error_class or "LLMCallError"
        self.status_code = status_code
        self.retryable = retryable
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost_usd = cost_usd


CONNECTION_ERRORS = {"APIConnectionError", "ConnectError", "ConnectionError", "ConnectTimeout"}


def is_connection_error(exc: BaseException) -> bool:
    """The server was never reached (litellm labels these InternalServerError 500 although no server answered):
    a connection error anywhere in the exception's chain, or litellm's 'Connection error.' message."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if {cls.__name__ for cls in type(current).__mro__} & CONNECTION_ERRORS:
            return True
        if "Connection error." in str(current) and getattr(current, "response", None) is None:
            return True
        current = current.__cause__ or current.__context__
    return False


def connection_detail(exc: BaseException) -> str:
    """What went wrong at the socket, from the innermost exception of the chain (not litellm's 500 label)."""
    detail, seen = "connection failed", set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current).splitlines()[0] if str(current) else ""
        if text and "InternalServerError" not in text:
            detail = f"{type(current).__name__}: {text}"
        current = current.__cause__ or current.__context__
    return detail


def status_of(exc: BaseException) -> int | None:
    """The HTTP status a server answered with; None when there was no answer (connection failures)."""
    if is_connection_error(exc):
        return None
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_retryable(exc: BaseException) -> bool:
    """429, 408 and 5xx answers, timeouts and connection failures; never other 4xx (bad request, auth)."""
    if isinstance(exc, LLMCallError):
        return exc.retryable
    if is_connection_error(exc):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"Timeout", "APITimeoutError", "APIConnectionError", "TimeoutError", "ConnectError"}:
        return True
    status = status_of(exc)
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After (seconds or an HTTP date), if it sent one."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        value = headers.get("retry-after") if headers is not None else None
        if not value:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if value else None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    return None


def backoff(config: RoleConfig) -> Callable[[RetryCallState], float]:
    """Exponential backoff with jitter from ``retry_initial_s``; a Retry-After header wins (both capped)."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after_s(exc) if exc is not None else None
        if hinted is not None:
            return min(hinted, config.retry_max_s)
        delay = config.retry_initial_s * 2 ** (state.attempt_number - 1)
        return min(delay * (0.5 + random.random() / 2), config.retry_max_s)

    return wait


def retry_policy(
    config: RoleConfig, before_sleep: Callable[[RetryCallState], Any], *, is_async: bool = False
) -> Retrying | AsyncRetrying:
    kind = AsyncRetrying if is_async else Retrying
    return kind(
        retry=retry_if_exception(is_retryable),
        stop=stop_after_attempt(config.max_retries + 1),
        wait=backoff(config),
        before_sleep=before_sleep,
        reraise=True,
    )
