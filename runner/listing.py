"""``sysmo list``: one row per experiment of a runs directory, read from each experiment's results.sqlite."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pydantic import BaseModel

STORE_FILE = "results.sqlite"


class ExperimentRow(BaseModel):
    """One experiment as `sysmo list` shows it. ``pass_rate`` is passed / finished attempts (passed, failed or
    error; a replay's not_covered ones are left out), None before any finished."""

    id: str
    status: str
    attempts: int  # attempts stored
    planned: int | None  # attempts the run planned (None: not recorded)
    passed: int
    finished: int
    spent_usd: float
    created: str  # UTC date and time the experiment was first stored, "YYYY-MM-DD HH:MM"

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.finished if self.finished else None


def _row(directory: Path) -> ExperimentRow | None:
    # read-only: listing never creates a store nor waits behind a running writer's transaction for long
    connection = sqlite3.connect(f"file:{directory / STORE_FILE}?mode=ro", uri=True, timeout=5)
    connection.row_factory = sqlite3.Row
    try:
        experiment = connection.execute(
            "SELECT id, created_at, status, environment_json FROM experiments WHERE id=?", (directory.name,)).fetchone()
        if experiment is None:
            return None
        counts = connection.execute(
            "SELECT COUNT(*) AS n, SUM(status='passed') AS passed, SUM(status IN ('passed','failed','error')) AS "
            "finished, COALESCE(SUM(spend_usd), 0) AS spent FROM attempts WHERE experiment_id=?",
            (directory.name,)).fetchone()
    finally:
        connection.close()
    environment = json.loads(experiment["environment_json"] or "{}")
    planned = environment.get("planned_attempts")
    return ExperimentRow(id=experiment["id"], status=experiment["status"] or "unknown", attempts=counts["n"],
                         planned=int(planned) if planned is not None else None, passed=counts["passed"] or 0,
                         finished=counts["finished"] or 0, spent_usd=float(counts["spent"] or 0.0),
                         created=(experiment["created_at"] or "")[:16].replace("T", " "))


def experiment_rows(runs_dir: Path) -> list[ExperimentRow]:
    """The experiments under ``runs_dir`` (or ``runs_dir`` itself when it is one), newest first."""
    runs_dir = Path(runs_dir)
    if (runs_dir / STORE_FILE).is_file():
        folders = [runs_dir]
    elif runs_dir.is_dir():
        folders = [d for d in sorted(runs_dir.iterdir()) if (d / STORE_FILE).is_file()]
    else:
        folders = []
    rows = [row for row in (_row(folder) for folder in folders) if row is not None]
    return sorted(rows, key=lambda r: (r.created, r.id), reverse=True)
