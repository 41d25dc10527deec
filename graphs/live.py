"""An attempt's rounds while it runs, for ``sysmo view``: once the attempt has run ``PUBLISH_AFTER_S`` seconds, and
then each time a round finishes, the rounds so far are written to ``<experiment>/live/<attempt id>.json``
(replaced whole, atomically); the file goes once the attempt is stored. The viewer lists these files as the
attempts running now and shows their rounds (``view.live``). An attempt done sooner gets no file: it would be
gone before a viewer's next look (it asks every 2 s), and a file written, renamed and deleted per attempt was a
part of a fast run's CPU on the event loop's thread and the writer's (``speed/scale.py``).

The graph driver (``agents.run.drive``) calls ``round_finished`` with the state's rounds; it writes only inside
``publishing(...)``, which the runner (``runner.unit_runner``) opens around an attempt (a context variable: attempts running side by side on
one event loop each write their own file)."""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.attempt import Round, utcnow
from sysmo.log import get_logger

LIVE_DIR = "live"
PUBLISH_AFTER_S = 2.0  # the runner's attempts get a file once they have run this long
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


@dataclass
class _Published:
    """An attempt being published: its file, what was last written to it, the graph's rounds so far."""

    path: Path
    attempt: LiveAttempt
    rounds: list[Any] = field(default_factory=list)
    written: bool = False


_publishing: contextvars.ContextVar[_Published | None] = contextvars.ContextVar("sysmo_live_attempt", default=None)


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


def _publish(published: _Published) -> None:
    """Write the attempt's file with the rounds so far."""
    attempt = published.attempt
    if len(published.rounds) != len(attempt.rounds):
        attempt.rounds = [r if isinstance(r, Round) else Round.model_validate(r) for r in published.rounds]
        attempt.updated_at = utcnow()
    _write(published.path, attempt)
    published.written = True


@contextmanager
def publishing(directory: Path, attempt: LiveAttempt, *, after_s: float = 0.0) -> Iterator[None]:
    """Write ``attempt`` (its rounds so far) once the block has run ``after_s`` seconds (now, with 0), then its
    rounds as they finish, until the block ends. A delay is timed by the running event loop (the runner's
    attempts are coroutines on it)."""
    published = _Published(live_path(directory, attempt.id), attempt, list(attempt.rounds))
    timer = asyncio.get_running_loop().call_later(after_s, _publish, published) if after_s > 0 else None
    if timer is None:
        _publish(published)
    token = _publishing.set(published)
    try:
        yield
    finally:
        _publishing.reset(token)
        if timer is not None:
            timer.cancel()


def round_finished(rounds: list[Any]) -> None:
    """The graph's rounds after an update that added one: written if an attempt is being published (and its file
    is, i.e. it has run long enough; else they go into the file when it is written)."""
    published = _publishing.get()
    if published is None or len(rounds) == len(published.rounds):
        return
    published.rounds = list(rounds)
    if published.written:
        _publish(published)


def stored(directory: Path, attempt_id: str) -> None:
    """The attempt is in results.sqlite: its live file goes, if it got one (an attempt done within
    ``PUBLISH_AFTER_S`` did not: its unlink finds nothing, a failed lookup)."""
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
