"""An attempt's rounds while it runs, for ``sysmo view``: each time a round finishes, the rounds so far are written
to ``<experiment>/live/<attempt id>.json`` (replaced whole, atomically); the file goes once the attempt is stored.
The viewer lists these files as the attempts running now and shows their rounds (``view.live``).

The graph driver (``agents.run.drive``) calls ``round_finished`` with the state's rounds; it writes only inside
``publishing(...)``, which the runner (``runner.unit_runner``) opens around an attempt (a context variable: attempts running side by side on
one event loop each write their own file)."""

from __future__ import annotations

import contextvars
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.attempt import Round, utcnow
from sysmo.log import get_logger

LIVE_DIR = "live"
log = get_logger(__name__)


class LiveAttempt(BaseModel):
    """What is known of an attempt still running: who runs it on what, and its finished rounds."""

    id: str
    task_id: str
    agent: str
    model: str
    sample_index: int = 0
    arm: str = ""
    started_at: str = Field(default_factory=utcnow)
    updated_at: str = Field(default_factory=utcnow)
    rounds: list[Round] = Field(default_factory=list)


_publishing: contextvars.ContextVar[tuple[Path, LiveAttempt] | None] = contextvars.ContextVar(
    "sysmo_live_attempt", default=None)


def live_path(directory: Path, attempt_id: str) -> Path:
    return Path(directory) / LIVE_DIR / f"{attempt_id}.json"


def _write(path: Path, attempt: LiveAttempt) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(attempt.model_dump_json())
        os.replace(partial, path)
    except OSError as exc:  # the run goes on; only the viewer misses the attempt's progress
        log.warning("live.not_written", path=str(path), error=str(exc)[:200])


@contextmanager
def publishing(directory: Path, attempt: LiveAttempt) -> Iterator[None]:
    """Write ``attempt`` (no round yet) now and its rounds as they finish, until the block ends."""
    path = live_path(directory, attempt.id)
    _write(path, attempt)
    token = _publishing.set((path, attempt))
    try:
        yield
    finally:
        _publishing.reset(token)


def round_finished(rounds: list[Any]) -> None:
    """The graph's rounds after an update that added one: written if an attempt is being published."""
    published = _publishing.get()
    if published is None:
        return
    path, attempt = published
    if len(rounds) == len(attempt.rounds):
        return
    attempt.rounds = [r if isinstance(r, Round) else Round.model_validate(r) for r in rounds]
    attempt.updated_at = utcnow()
    _write(path, attempt)


def stored(directory: Path, attempt_id: str) -> None:
    """The attempt is in results.sqlite: its live file goes."""
    live_path(directory, attempt_id).unlink(missing_ok=True)


def running_attempts(directory: Path, stored_ids: set[str] | frozenset[str] = frozenset()) -> list[LiveAttempt]:
    """The attempts of the experiment in ``directory`` running now (live files of attempts not stored), oldest
    first; an unreadable file (being replaced, damaged) is left out."""
    folder = Path(directory) / LIVE_DIR
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.stem in stored_ids:
            continue
        try:
            out.append(LiveAttempt.model_validate_json(path.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda a: a.started_at)
