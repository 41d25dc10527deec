"""structlog set-up: events as key/value pairs, to stderr (console) or as JSON lines."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

_configured = False
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
    global _configured
    level = (level or os.environ.get("SYSMO_LOG_LEVEL", "WARNING")).upper()
    json = json if json is not None else os.environ.get("SYSMO_LOG_JSON") == "1"
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level, logging.WARNING)),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),
        cache_logger_on_first_use=False,
    )
    _configured = True


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    if not _configured:
        configure()
    return structlog.get_logger(name)


@contextmanager
def library_warnings_into(path: Path) -> Iterator[list[str]]:
    """While the block runs, Python warnings, library log records at WARNING or above (matplotlib's, for
    instance) and sysmo's own events are appended to ``path`` (made when the first one comes) instead of the
    terminal, where they would break the progress lines; yields the list of their messages, so the caller can
    say how many there were and where."""
    caught: list[str] = []

    def event(text: str) -> None:
        if text.strip():
            caught.append(text.strip())
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as file:
            file.write(text)

    class _Into(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = self.format(record).rstrip()
            caught.append(message)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as file:
                file.write(message + "\n")

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
