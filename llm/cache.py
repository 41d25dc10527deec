"""The persistent response cache (SQLite): a paid call is never repeated for the same request, sample and place in
its attempt.

>>> cache = ResponseCache(tmp_path / "llm_cache.sqlite")
>>> cache.get(key) is None
True
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from sysmo.llm.response import LLMResponse
from sysmo.sqlite_setup import set_up_shared

CACHE_VERSION = 1  # bump when the key or the stored response changes meaning
POSITIONED_VERSION = 2  # a key that holds the call's place in its attempt (``LLMRequest.position``)


def request_key(
    *,
    model: str,
    api_base: str | None,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    sample_index: int,
    position: dict[str, Any] | None = None,
) -> str:
    """The cache key: model, server, messages, sampling parameters and sample index (never the API key), and
    ``position``, the call's place in its attempt (round, role, call index), when the caller has one.

    The position keeps a request repeated word for word within an attempt (metagpt's reviewer reading the same
    model in two rounds) from being answered by the first reply: each is asked, while a re-run of the same attempt
    (``--resume`` after a kill) makes the same calls at the same places and is answered from the cache. A call
    without a position (a scoring stage's judge) keeps the key it always had."""
    payload: dict[str, Any] = {
        "v": CACHE_VERSION if position is None else POSITIONED_VERSION,
        "model": model,
        "api_base": (api_base or "").rstrip("/"),
        "messages": messages,
        "params": params,
        "sample": sample_index,
    }
    if position is not None:
        payload["at"] = position
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    """A key -> ``LLMResponse`` table: one connection per thread, WAL; safe across threads and processes."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        db = self._connect()
        set_up_shared(db, lambda: db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
            "created_at REAL NOT NULL, response TEXT NOT NULL)"
        ))

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            # timeout: writers from other threads/processes wait for the lock instead of failing
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA busy_timeout=30000")
            self._local.db = db
        return db

    def get(self, key: str) -> LLMResponse | None:
        row = self._connect().execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return LLMResponse.model_validate_json(row[0]) if row else None

    def put(self, key: str, response: LLMResponse) -> None:
        self._connect().execute(
            "INSERT OR REPLACE INTO responses (key, model, created_at, response) VALUES (?, ?, ?, ?)",
            (key, response.model, time.time(), response.model_dump_json()),
        )

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
