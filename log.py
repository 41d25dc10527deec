"""structlog set-up: events as key/value pairs, to stderr (console) or as JSON lines."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import structlog

_configured = False
_applied = False  # structlog itself configured (it is imported on the first event that passes the level)
_level = logging.WARNING
_json = False
# the level of each method of a structlog filtering logger; the others (bind, the async ones) load structlog
_METHOD_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
                  "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL,
                  "fatal": logging.CRITICAL}
_events_into: list[Callable[[str], None]] = []  # while a run's log takes the events, the writer of that log


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is when an event is logged, not when logging was configured: a stream
    swapped in and closed later (a test runner's capture, typer's CliRunner) must not break later events. While
    ``library_warnings_into`` runs, the events go to its file instead."""

    def write(self, text: str) -> int:
        if _events_into:
            _events_into[-1](text)
            return len(text)
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(level: str | None = None, json: bool | None = None) -> None:
    """Events at ``level`` (default ``$SYSMO_LOG_LEVEL``, else WARNING) and above, as JSON lines if ``json`` (default
    ``$SYSMO_LOG_JSON=1``); structlog is configured now if it is loaded, else on the first event that passes."""
    global _configured, _level, _json
    name = (level or os.environ.get("SYSMO_LOG_LEVEL", "WARNING")).upper()
    _level = getattr(logging, name, logging.WARNING)
    _json = json if json is not None else os.environ.get("SYSMO_LOG_JSON") == "1"
    _configured = True
    if _applied or "structlog" in sys.modules:
        _apply()


def _apply() -> None:
    """Configure structlog (importing it: its console renderer loads rich's tracebacks and pygments, a tenth of a
    second, which a command that logs nothing below the level never pays)."""
    global _applied
    import structlog

    renderer = structlog.processors.JSONRenderer() if _json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),
        cache_logger_on_first_use=False,
    )
    _applied = True


def _nop(*args: Any, **kwargs: Any) -> None:
    return None


class _Logger:
    """A module's logger: an event below the configured level is dropped here, as structlog's filtering logger
    drops it; anything else goes to structlog's logger of that name (configured on first use)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        level = _METHOD_LEVELS.get(attribute)
        if level is not None and level < _level:
            return _nop
        if not _applied:
            _apply()
        import structlog

        return getattr(structlog.get_logger(self._name), attribute)


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    if not _configured:
        configure()
    elif not _applied and "structlog" in sys.modules:  # loaded by someone else: configure it before they use it
        _apply()
    return _Logger(name)  # type: ignore[return-value]


@contextmanager
def library_warnings_into(path: Path) -> Iterator[list[str]]:
    """While the block runs, Python warnings, library log records at WARNING or above (matplotlib's, for
    instance) and sysmo's own events are appended to ``path`` (made when the first one comes) instead of the
    terminal, where they would break the progress lines; yields the list of their messages, so the caller can
    say how many there were and where."""
    caught: list[str] = []

    def append(text: str) -> None:
        """Into the file; where it cannot be written (a full or read-only disk) to the terminal instead: a log
        line never raises in the code that logs it (the run's writer thread reporting that very disk)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as file:
                file.write(text)
        except OSError:
            try:
                sys.stderr.write(text)
            except (OSError, ValueError):  # no terminal either (closed): the event is dropped
                pass

    def event(text: str) -> None:
        if text.strip():
            caught.append(text.strip())
        append(text)

    class _Into(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = self.format(record).rstrip()
            caught.append(message)
            append(message + "\n")

    handler = _Into(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)  # with a handler on the root, logging's last resort (stderr) stays silent
    _events_into.append(event)
    with warnings.catch_warnings():
        logging.captureWarnings(True)  # warnings.warn -> the "py.warnings" logger -> the handler above
        try:
            yield caught
        finally:
            logging.captureWarnings(False)
            root.removeHandler(handler)
            _events_into.remove(event)
