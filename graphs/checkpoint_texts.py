"""Long texts of checkpointed states stored once per checkpoint file, each step holding a reference to them.

Every LangGraph checkpoint holds the whole state, so the task's prompt (its inputs), the model's reply and the
artifact were serialised again at every step and in every write. ``swap_out`` replaces each string of at least
``MIN_CHARS`` characters in a value by a reference (``REF_PREFIX`` + a digest of the text) and collects the texts;
``CheckpointStore`` writes them to the file's ``texts`` table (``INSERT OR IGNORE``: a text shared by steps, by
attempts or by samples of a task is stored once) in the transaction of the steps that use them. A value with
references is serialised under the type ``<inner type>+texts``, and one of ``ZLIB_FROM_BYTES`` or more is
compressed (``+zlib``), so a reader without a ``TextsSerializer`` fails loudly instead of seeing references or
compressed bytes; ``TextsSerializer`` undoes both when it loads, and reads files written before as they are.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import zlib
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from sysmo.sqlite_setup import insert_rows, max_variables

MIN_CHARS = 256  # shorter strings cost less than a reference and a row
REF_PREFIX = "\uf8ffsysmo-text:"  # a private-use character: no text a model or a task writes opens with it
TYPE_SUFFIX = "+texts"
ZLIB_SUFFIX = "+zlib"
ZLIB_FROM_BYTES = 512  # a step's channel versions (about 50 bytes each, mostly zeros) compress about fourfold
TEXTS_TABLE = "CREATE TABLE IF NOT EXISTS texts (digest TEXT PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID"

_digests: dict[str, str] = {}  # text -> digest: a prompt is swapped out at every step of every sample
_digests_lock = threading.Lock()


def digest(text: str) -> str:
    """A digest naming ``text`` (128-bit BLAKE2b, hex)."""
    found = _digests.get(text)
    if found is None:
        found = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        with _digests_lock:
            if len(_digests) >= 1024:  # bounded (memory flat in the attempts): many distinct replies
                _digests.clear()
            _digests[text] = found
    return found


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string in its dicts, lists and tuples; other objects are kept as
    they are (their serializer stores them)."""
    kind = type(value)
    if kind is str:
        return change(value)
    if kind is dict:
        return {k: _map_strings(v, change) for k, v in value.items()}
    if kind is list:
        return [_map_strings(v, change) for v in value]
    if kind is tuple:
        return tuple(_map_strings(v, change) for v in value)
    return value


def swap_out(value: Any, found: dict[str, str]) -> Any:
    """``value`` with each long string replaced by its reference; the texts are added to ``found`` (digest -> text).
    ``_map_strings`` with the test inlined: it runs on every checkpoint and write of every attempt, a few hundred
    values each, and a call per string was a third of its time."""
    kind = type(value)
    if kind is str:
        if len(value) < MIN_CHARS:
            return value
        key = digest(value)
        found[key] = value
        return REF_PREFIX + key
    if kind is dict:
        return {k: v if type(v) is str and len(v) < MIN_CHARS else swap_out(v, found) for k, v in value.items()}
    if kind is list:
        return [v if type(v) is str and len(v) < MIN_CHARS else swap_out(v, found) for v in value]
    if kind is tuple:
        return tuple(swap_out(v, found) for v in value)
    return value


def swap_in(value: Any, text_of: Callable[[str], str]) -> Any:
    """``value`` with each reference replaced by its text (``text_of(digest)``)."""
    return _map_strings(value, lambda text: text_of(text[len(REF_PREFIX):]) if text.startswith(REF_PREFIX) else text)


class TextsSerializer(JsonPlusSerializer):
    """LangGraph's serializer with long texts swapped out when ``collect`` is given (the texts go there, for the
    store to write) and swapped back in from ``texts`` (a mapping), else from the ``texts`` table of the
    checkpoint file ``path``, when loading. A ``JsonPlusSerializer`` itself, so LangGraph's msgpack allow-list
    applies to it as to its own."""

    def __init__(self, *, collect: dict[str, str] | None = None, texts: Mapping[str, str] | None = None,
                 path: Path | None = None) -> None:
        super().__init__()
        self.collect, self.texts, self.path = collect, texts, path
        self._read: dict[str, str] = {}

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if self.collect is None:
            return super().dumps_typed(obj)
        found: dict[str, str] = {}
        swapped = swap_out(obj, found)
        kind, data = super().dumps_typed(swapped if found else obj)
        if found:
            self.collect.update(found)
            kind += TYPE_SUFFIX
        if len(data) >= ZLIB_FROM_BYTES:
            kind, data = kind + ZLIB_SUFFIX, zlib.compress(data, 1)
        return kind, data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        if kind.endswith(ZLIB_SUFFIX):
            kind, payload = kind[:-len(ZLIB_SUFFIX)], zlib.decompress(payload)
        if not kind.endswith(TYPE_SUFFIX):
            return super().loads_typed((kind, payload))
        return swap_in(super().loads_typed((kind[:-len(TYPE_SUFFIX)], payload)), self._text)

    def _text(self, key: str) -> str:
        if self.texts is not None and key in self.texts:
            return self.texts[key]
        if key not in self._read:
            if self.path is None:
                raise KeyError(f"checkpoint text {key} is not known here: load the step with a TextsSerializer "
                               f"of its checkpoint file")
            with closing(sqlite3.connect(str(self.path))) as conn:
                row = conn.execute("SELECT text FROM texts WHERE digest = ?", (key,)).fetchone()
            if row is None:
                raise KeyError(f"checkpoint text {key} is missing from {self.path}: the file is incomplete")
            self._read[key] = row[0]
        return self._read[key]


def write_texts(conn: sqlite3.Connection, texts: Mapping[str, str]) -> None:
    """Store ``texts`` (digest -> text) in the checkpoint file, each once."""
    if texts:
        insert_rows(conn, "INSERT OR IGNORE INTO texts (digest, text) VALUES ", list(texts.items()), width=2,
                    limit=max_variables(conn))
