"""The experiment store (SQLite): experiments, attempts, rounds, llm_calls, tool_calls, events, scores.

``events`` keeps each attempt's typed event stream (``contracts.events``: every model call with its full request
and reply, tool calls, graph steps, score stages, errors), one JSON row per event, written in the attempt's
transaction (the scoring's events are appended with its score).

Everything the reports and the trace viewer show is read from here; the run writes only through it.
``save_attempts`` / ``save_scores`` write many attempts in one transaction (``executemany`` per table); the
runner's writer thread batches finished attempts that way. An attempt's rows can be made where it ran
(``AttemptRecord.of``: a Ray worker serialises, the driver only writes).

>>> store = Store(Path("runs/exp1/results.sqlite"))
>>> store.save_attempt("exp1", attempt, task_meta)
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Iterator, Sequence

from sysmo.contracts.arms import ARM_FACTORS, Arm
from sysmo.contracts.events import EventAdapter
from sysmo.errors import STORAGE_HINT, StorageError, SysmoError, storage_problem
from sysmo.contracts.scorecard import ScoreCard
from sysmo.contracts.attempt import Attempt
from sysmo.sqlite_setup import WrittenKeys, insert_rows, max_variables, set_up_shared

SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, status TEXT, is_control INTEGER,
    config_json TEXT, environment_json TEXT
);
CREATE TABLE IF NOT EXISTS attempts (
    id TEXT PRIMARY KEY, experiment_id TEXT, task_id TEXT, benchmark TEXT, kind TEXT, domain TEXT,
    difficulty INTEGER, agent TEXT, model TEXT, sample_index INTEGER, status TEXT, n_rounds INTEGER,
    repair_rounds INTEGER, passed_round INTEGER, duration_s REAL, llm_time_s REAL, tool_time_s REAL,
    prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, is_control INTEGER, error TEXT,
    finished_at TEXT, attempt_json TEXT, spend_usd REAL, parent_attempt_id TEXT, forked_at TEXT
);
CREATE INDEX IF NOT EXISTS attempts_exp ON attempts(experiment_id);
CREATE TABLE IF NOT EXISTS rounds (
    attempt_id TEXT, idx INTEGER, kind TEXT, prompt_json TEXT, response TEXT, artifact_json TEXT,
    check_json TEXT, extraction_error TEXT, error TEXT, duration_s REAL, PRIMARY KEY (attempt_id, idx)
);
CREATE TABLE IF NOT EXISTS llm_calls (
    attempt_id TEXT, round_idx INTEGER, seq INTEGER, role TEXT, purpose TEXT, model TEXT, provider TEXT,
    prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, latency_s REAL, cached INTEGER,
    request_hash TEXT, is_control INTEGER, error TEXT, error_type TEXT
);
CREATE INDEX IF NOT EXISTS llm_calls_attempt ON llm_calls(attempt_id);
CREATE TABLE IF NOT EXISTS tool_calls (
    attempt_id TEXT, round_idx INTEGER, tool TEXT, tool_version TEXT, outcome TEXT, duration_s REAL,
    n_diagnostics INTEGER
);
CREATE INDEX IF NOT EXISTS tool_calls_attempt ON tool_calls(attempt_id);
CREATE TABLE IF NOT EXISTS events (
    attempt_id TEXT, seq INTEGER, type TEXT, stage TEXT, json TEXT, PRIMARY KEY (attempt_id, seq)
);
CREATE TABLE IF NOT EXISTS scores (
    attempt_id TEXT PRIMARY KEY, experiment_id TEXT, cascade TEXT, scorecard_json TEXT, scored_at TEXT
);
CREATE TABLE IF NOT EXISTS score_cache (
    key TEXT PRIMARY KEY, scorecard_json TEXT, created_at TEXT
);
CREATE TABLE IF NOT EXISTS score_metrics (
    attempt_id TEXT, experiment_id TEXT, metric TEXT, value REAL, PRIMARY KEY (attempt_id, metric)
);
"""


RECOVER_HINT = ("recover it with `sqlite3 results.sqlite .recover | sqlite3 recovered.sqlite` and put recovered.sqlite "
                "in its place, or start afresh under another --id")


class StoreError(SysmoError):
    """The experiment database is damaged or not what it should be."""


@contextmanager
def damaged_store(path: Path) -> Iterator[None]:
    """Turn SQLite's 'malformed' / 'not a database' errors into one line saying which file and how to recover, and a
    full or read-only disk into a ``StorageError`` saying so."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        problem = storage_problem(exc)
        if problem is not None:  # a full or read-only disk: the file is fine, the disk is not
            raise StorageError(f"experiment store {path}: {problem}; {STORAGE_HINT}") from exc
        damaged = type(exc) is sqlite3.DatabaseError or any(
            word in str(exc) for word in ("malformed", "not a database", "disk I/O"))
        if not damaged:  # locked, a constraint, a bad query: not the file's fault
            raise
        raise StoreError(f"experiment store {path} is damaged ({exc}); {RECOVER_HINT}") from exc


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# the arm's columns (added to older stores when opened): its label, its seed, one column per arm factor
ARM_COLUMNS = {"arm": "TEXT", "seed": "INTEGER", **{name: f.sql_type for name, f in ARM_FACTORS.items()}}
ATTEMPT_COLUMNS = ("id, experiment_id, task_id, benchmark, kind, domain, difficulty, agent, model, sample_index, "
                   "status, n_rounds, repair_rounds, passed_round, duration_s, llm_time_s, tool_time_s, prompt_tokens, "
                   "completion_tokens, cost_usd, is_control, error, finished_at, attempt_json, spend_usd, parent_attempt_id, "
                   "forked_at, " + ", ".join(ARM_COLUMNS))
_ALL_COLUMNS = ATTEMPT_COLUMNS.split(", ")
# AttemptRecord.attempt: the attempts row without experiment_id (second) and finished_at (given when written)
_RECORD_COLUMNS = [c for c in _ALL_COLUMNS if c not in ("experiment_id", "finished_at")]
_ATTEMPT_JSON_INDEX = _RECORD_COLUMNS.index("attempt_json")
_FINISHED_AT = _ALL_COLUMNS.index("finished_at") - 1  # where finished_at goes in a record's row
LLM_CALL_COLUMNS = ("attempt_id, round_idx, seq, role, purpose, model, provider, prompt_tokens, completion_tokens, "
                    "cost_usd, latency_s, cached, request_hash, is_control, error, error_type")


@dataclass
class AttemptRecord:
    """The rows of one attempt in every table (attempts, rounds, llm_calls, tool_calls, events), serialised:
    plain tuples of strings and numbers, made once wherever the attempt ran and written as they are."""

    attempt_id: str
    attempt: tuple  # the attempts row, without experiment_id and finished_at (given when written)
    rounds: list[tuple]
    llm_calls: list[tuple]
    tool_calls: list[tuple]
    events: list[tuple]  # (attempt_id, seq, type, stage, json)

    @property
    def attempt_json(self) -> str:
        """The attempt's JSON (``Attempt.model_dump_json``, without its events)."""
        return self.attempt[_ATTEMPT_JSON_INDEX]

    @classmethod
    def of(cls, attempt: Attempt, task_meta: dict[str, Any]) -> AttemptRecord:
        passed_round = next((r.index for r in attempt.rounds if r.passed), None)
        calls = attempt.all_llm_calls()
        own = attempt.rounds[attempt.inherited_rounds:]  # a fork's time is its own run's (its duration_s too)
        row = (attempt.id, attempt.task_id, task_meta.get("benchmark"), task_meta.get("kind"), task_meta.get("domain"),
               task_meta.get("difficulty"), attempt.agent, attempt.model, attempt.sample_index, attempt.status.value,
               len(attempt.rounds), attempt.repair_rounds, passed_round, attempt.duration_s,
               sum(r.llm_time_s for r in own), sum(r.tool_time_s for r in own),
               sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls),
               sum(c.cost_usd for c in calls), int(attempt.is_control), attempt.error, attempt.model_dump_json(),
               attempt.spend_usd, attempt.parent_attempt_id, attempt.forked_at, *_arm_cells(attempt))
        # round_idx NULL: the calls no round holds
        llm_calls = [(attempt.id, None, seq, call.role, call.purpose, call.model, call.provider, call.prompt_tokens,
                      call.completion_tokens, call.cost_usd, call.latency_s, int(call.cached), call.request_hash,
                      int(call.is_control), None, None) for seq, call in enumerate(attempt.calls_outside_rounds)]
        rounds, tool_calls = [], []
        for rnd in attempt.rounds:
            rounds.append((attempt.id, rnd.index, rnd.kind, json.dumps(rnd.messages), rnd.response,
                           rnd.artifact.model_dump_json() if rnd.artifact else None,
                           rnd.check.model_dump_json() if rnd.check else None, rnd.extraction_error, rnd.error,
                           rnd.duration_s))
            llm_calls.extend((attempt.id, rnd.index, seq, call.role, call.purpose, call.model, call.provider,
                              call.prompt_tokens, call.completion_tokens, call.cost_usd, call.latency_s,
                              int(call.cached), call.request_hash, int(call.is_control), call.error, call.error_type)
                             for seq, call in enumerate(rnd.llm_calls))
            if rnd.check is not None:
                tool_calls.append((attempt.id, rnd.index, rnd.check.tool, rnd.check.tool_version,
                                   rnd.check.outcome.value, rnd.check.duration_s, len(rnd.check.diagnostics)))
        return cls(attempt.id, row, rounds, llm_calls, tool_calls, event_rows(attempt.id, attempt.events, 0))


def _arm_cells(attempt: Attempt) -> tuple:
    """The attempts row's arm columns (``ARM_COLUMNS``): label, seed, each factor's value."""
    values = attempt.arm_values()
    return (Arm.of(values).label, attempt.seed, *(values[name] for name in ARM_FACTORS))


def event_rows(attempt_id: str, events: Sequence[Any], first_seq: int) -> list[tuple]:
    """The events table's rows of ``events`` (numbered from ``first_seq``)."""
    return [(attempt_id, first_seq + i, e.type, e.stage, e.model_dump_json(exclude={"seq"}))
            for i, e in enumerate(events)]


class Store:
    """Thread-safe access to one experiment database (WAL; one connection guarded by a lock)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0  # nested ``transaction`` blocks: the outermost commits
        # attempts with rows to replace (``save_attempts`` skips the DELETEs of the others)
        self._written = WrittenKeys(self.path)
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._conn.row_factory = sqlite3.Row
        # parameters per statement (32766 since SQLite 3.32, 999 before); multi-row inserts stay within it
        self._max_variables = max_variables(self._conn)
        try:
            with self._lock, damaged_store(self.path):
                self._conn.execute("PRAGMA synchronous=NORMAL")
                set_up_shared(self._conn, self._create_tables)
                self._conn.commit()
        except BaseException:
            self._conn.close()  # a damaged file or a failing disk: no connection is left open on it
            raise

    def _create_tables(self) -> None:
        self._conn.executescript(SCHEMA)
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(llm_calls)")}
        for column in ("error", "error_type"):  # stores written before failed calls had rows
            if column not in columns:
                self._conn.execute(f"ALTER TABLE llm_calls ADD COLUMN {column} TEXT")
        attempt_columns = {r[1] for r in self._conn.execute("PRAGMA table_info(attempts)")}
        # stores written before these columns: an old row's arm is NULL (its attempt JSON has what it had)
        for column, sql_type in {"spend_usd": "REAL", "parent_attempt_id": "TEXT", "forked_at": "TEXT",
                                 **ARM_COLUMNS}.items():
            if column not in attempt_columns:
                try:
                    self._conn.execute(f"ALTER TABLE attempts ADD COLUMN {column} {sql_type}")
                except sqlite3.OperationalError as exc:  # another process opening the same new store added it
                    if "duplicate column name" not in str(exc):
                        raise

    @staticmethod
    def check_resumable(path: Path, experiment_id: str) -> None:
        """Refuse to resume from a store that lost its data: resuming from it would redo (and pay for) everything."""
        if not path.is_file() or path.stat().st_size == 0:
            raise StoreError(f"{path} is missing or empty, so experiment {experiment_id} cannot resume (it would "
                             f"start from zero); {RECOVER_HINT}")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            with damaged_store(path):
                problems = [r[0] for r in conn.execute("PRAGMA quick_check")]
                if problems != ["ok"]:
                    raise sqlite3.DatabaseError(problems[0])
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                known = "experiments" in tables and conn.execute(
                    "SELECT 1 FROM experiments WHERE id=?", (experiment_id,)).fetchone() is not None
        finally:
            conn.close()
        if not known:
            raise StoreError(f"{path} holds no record of experiment {experiment_id} (truncated or replaced?), so it "
                             f"cannot resume without starting from zero; {RECOVER_HINT}")

    @staticmethod
    def count_attempts(path: Path, experiment_id: str) -> int | None:
        """How many attempts of the experiment the store holds, read without writing anything (on a full or
        read-only disk too); None when it cannot be read."""
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error:
            return None
        try:
            return conn.execute("SELECT COUNT(*) FROM attempts WHERE experiment_id=?", (experiment_id,)).fetchone()[0]
        except sqlite3.Error:
            return None
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction for the writes in the block (nested blocks join the outer one): all or none."""
        with self._lock:
            self._depth += 1
            try:
                if self._depth > 1:
                    yield
                    return
                with self._conn:
                    yield
            finally:
                self._depth -= 1

    def query(self, sql: str, params: tuple | dict = ()) -> list[sqlite3.Row]:
        with self._lock, damaged_store(self.path):
            return list(self._conn.execute(sql, params))

    # ------------------------------------------------------------------ experiments
    def save_experiment(self, experiment_id: str, config: dict[str, Any], environment: dict[str, Any],
                        is_control: bool) -> None:
        with self.transaction():
            row = self._conn.execute("SELECT id FROM experiments WHERE id=?", (experiment_id,)).fetchone()
            if row is None:
                self._conn.execute(
                    "INSERT INTO experiments VALUES (?,?,?,?,?,?,?)",
                    (experiment_id, _now(), _now(), "running", int(is_control), json.dumps(config), json.dumps(environment)))
            else:
                # a resume may have added arms: the record holds the settings the experiment has now
                self._conn.execute("UPDATE experiments SET updated_at=?, status='running', config_json=?, "
                                   "environment_json=? WHERE id=?",
                                   (_now(), json.dumps(config), json.dumps(environment), experiment_id))

    def set_experiment_status(self, experiment_id: str, status: str) -> None:
        with self.transaction():
            self._conn.execute("UPDATE experiments SET status=?, updated_at=? WHERE id=?", (status, _now(), experiment_id))

    def experiment(self, experiment_id: str) -> dict[str, Any]:
        rows = self.query("SELECT * FROM experiments WHERE id=?", (experiment_id,))
        if not rows:
            raise SysmoError(f"no experiment {experiment_id!r} in {self.path}")
        row = dict(rows[0])
        row["config"] = json.loads(row.pop("config_json") or "{}")
        row["environment"] = json.loads(row.pop("environment_json") or "{}")
        return row

    # ------------------------------------------------------------------ attempts
    def finished_attempt_ids(self, experiment_id: str) -> set[str]:
        return {r["id"] for r in self.query("SELECT id FROM attempts WHERE experiment_id=?", (experiment_id,))}

    def scored_attempt_ids(self, experiment_id: str) -> set[str]:
        return {r["attempt_id"] for r in self.query("SELECT attempt_id FROM scores WHERE experiment_id=?", (experiment_id,))}

    def save_attempt(self, experiment_id: str, attempt: Attempt, task_meta: dict[str, Any]) -> None:
        """Write an attempt with its rounds, LLM calls, tool calls and events in one transaction."""
        self.save_attempts(experiment_id, [AttemptRecord.of(attempt, task_meta)])

    def save_attempts(self, experiment_id: str, records: Sequence[AttemptRecord]) -> None:
        """Write many attempts in one transaction, replacing what an attempt stored before (one run again after
        an interruption): all of them or none. Each table takes one multi-row statement per batch (not a step
        per row), so the writer thread gives up and takes back the interpreter's lock a few times per batch
        instead of a few times per row."""
        if not records:
            return
        ids = [r.attempt_id for r in records]
        finished_at = _now()
        stored_before = [i for i in ids if self._written.may_hold(i)]
        if len(set(ids)) < len(ids):  # the same attempt twice in one batch: the last one stays
            records = list({r.attempt_id: r for r in records}.values())
        with self.transaction():
            if stored_before:
                for table in ("rounds", "llm_calls", "tool_calls", "events"):
                    self._many(f"DELETE FROM {table} WHERE attempt_id IN ", stored_before, width=1, values=False)
            self._many(f"INSERT OR REPLACE INTO attempts ({ATTEMPT_COLUMNS}) VALUES ",
                       [(r.attempt[0], experiment_id, *r.attempt[1:_FINISHED_AT], finished_at, *r.attempt[_FINISHED_AT:])
                        for r in records], width=len(_ALL_COLUMNS))
            self._many(f"INSERT INTO llm_calls ({LLM_CALL_COLUMNS}) VALUES ", [row for r in records for row in r.llm_calls],
                       width=16)
            self._many("INSERT INTO events VALUES ", [row for r in records for row in r.events], width=5)
            self._many("INSERT INTO rounds VALUES ", [row for r in records for row in r.rounds], width=10)
            self._many("INSERT INTO tool_calls VALUES ", [row for r in records for row in r.tool_calls], width=7)
        self._written.add(ids)  # committed

    def _many(self, head: str, rows: Sequence[Any], *, width: int, values: bool = True) -> None:
        """``head`` followed by as many ``(?,...)`` groups as rows (or, with ``values=False``, one ``(?,...)``
        list of single values), in statements within SQLite's limit of parameters."""
        if values:
            insert_rows(self._conn, head, rows, width=width, limit=self._max_variables)
            return
        per = max(1, self._max_variables // width)
        for start in range(0, len(rows), per):
            chunk = rows[start:start + per]
            self._conn.execute(head + "(" + ",".join("?" * len(chunk)) + ")", chunk)

    def _insert_events(self, attempt_id: str, events: list[Any], first_seq: int) -> None:
        self._conn.executemany("INSERT INTO events VALUES (?,?,?,?,?)", event_rows(attempt_id, events, first_seq))

    def unpriced_models(self, experiment_id: str) -> list[str]:
        """The models whose spend this experiment counted as $0 (no known price), as its run recorded them."""
        return list(self.experiment(experiment_id)["environment"].get("unpriced_models") or [])

    def events(self, attempt_id: str, stage: str | None = None) -> list[Any]:
        """The attempt's typed events in order (``stage``: only "attempt" or only "score" events)."""
        events = []
        sql = "SELECT seq, json FROM events WHERE attempt_id=?" + (" AND stage=?" if stage else "") + " ORDER BY seq"
        for row in self.query(sql, (attempt_id, stage) if stage else (attempt_id,)):
            event = EventAdapter.validate_json(row["json"])
            event.seq = row["seq"]
            events.append(event)
        return events

    def attempt_ids_matching(self, ref: str) -> list[str]:
        """The attempt ids equal to ``ref``, or else those starting with it (an id is hex: no LIKE wildcards)."""
        exact = self.query("SELECT id FROM attempts WHERE id=?", (ref,))
        if exact:
            return [exact[0]["id"]]
        if not re.fullmatch(r"[0-9a-fA-F]+", ref):
            return []
        return [r["id"] for r in self.query("SELECT id FROM attempts WHERE id LIKE ? ORDER BY id", (f"{ref}%",))]

    def attempt(self, attempt_id: str) -> Attempt:
        """The attempt (with its events) with this id or unique id prefix; an unknown id or an ambiguous prefix is a SysmoError."""
        matches = self.attempt_ids_matching(attempt_id)
        if len(matches) != 1:
            raise SysmoError(f"no attempt {attempt_id!r} in {self.path}" if not matches
                             else f"attempt id prefix {attempt_id!r} is ambiguous: {', '.join(matches[:10])}"
                                  + (f" and {len(matches) - 10} more" if len(matches) > 10 else ""))
        rows = self.query("SELECT attempt_json FROM attempts WHERE id=?", (matches[0],))
        attempt = Attempt.model_validate_json(rows[0]["attempt_json"])
        attempt.events = self.events(attempt.id)
        return attempt

    def forks_of(self, attempt_id: str) -> list[str]:
        """The ids of the attempts forked from ``attempt_id`` (``sysmo fork``), oldest first."""
        return [r["id"] for r in self.query("SELECT id FROM attempts WHERE parent_attempt_id=? ORDER BY finished_at, id",
                                            (attempt_id,))]

    def attempts(self, experiment_id: str) -> Iterator[Attempt]:
        for row in self.query("SELECT attempt_json FROM attempts WHERE experiment_id=? ORDER BY task_id, agent, model, sample_index",
                              (experiment_id,)):
            yield Attempt.model_validate_json(row["attempt_json"])

    # ------------------------------------------------------------------ scores
    def save_score(self, experiment_id: str, attempt_id: str, card: ScoreCard, events: list[Any] | None = None) -> None:
        """The attempt's scorecard, with the scoring's events (its helper/judge calls, its stages) replacing
        the score events stored before."""
        self.save_scores(experiment_id, [(attempt_id, card, events)])

    def save_scores(self, experiment_id: str, scores: Sequence[tuple[str, ScoreCard, list[Any] | None]]) -> None:
        """``save_score`` for many (attempt id, scorecard, scoring events) in one transaction."""
        with self.transaction():
            for attempt_id, card, events in scores:
                if events is not None:
                    self._conn.execute("DELETE FROM events WHERE attempt_id=? AND stage='score'", (attempt_id,))
                    first = self._conn.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE attempt_id=?",
                                               (attempt_id,)).fetchone()[0]
                    self._insert_events(attempt_id, events, first_seq=first)
                self._conn.execute("INSERT OR REPLACE INTO scores VALUES (?,?,?,?,?)",
                                   (attempt_id, experiment_id, card.cascade, card.model_dump_json(), _now()))
                self._conn.execute("DELETE FROM score_metrics WHERE attempt_id=?", (attempt_id,))
                self._conn.executemany("INSERT INTO score_metrics VALUES (?,?,?,?)",
                                       [(attempt_id, experiment_id, metric, value)
                                        for metric, value in card.flat().items()])

    def cached_scorecard(self, key: str) -> ScoreCard | None:
        rows = self.query("SELECT scorecard_json FROM score_cache WHERE key=?", (key,))
        return ScoreCard.model_validate_json(rows[0]["scorecard_json"]) if rows else None

    def cache_scorecard(self, key: str, card: ScoreCard) -> None:
        with self.transaction():
            self._conn.execute("INSERT OR REPLACE INTO score_cache VALUES (?,?,?)", (key, card.model_dump_json(), _now()))

    def scorecard(self, attempt_id: str) -> ScoreCard | None:
        rows = self.query("SELECT scorecard_json FROM scores WHERE attempt_id=?", (attempt_id,))
        return ScoreCard.model_validate_json(rows[0]["scorecard_json"]) if rows else None

    def llm_call_count(self, experiment_id: str, cached: bool | None = None) -> int:
        sql = "SELECT COUNT(*) AS n FROM llm_calls JOIN attempts ON attempts.id = llm_calls.attempt_id WHERE experiment_id=?"
        params: tuple = (experiment_id,)
        if cached is not None:
            sql += " AND cached=?"
            params += (int(cached),)
        return int(self.query(sql, params)[0]["n"])
