"""``sysmo trace --all``, ``sysmo tasks list`` and ``sysmo tools doctor`` on an 80-column terminal: ids, task names,
agents and paths are printed whole (a table when it fits, one block per record when it does not); ``--json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rich.console import Console

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.store import Store
from sysmo.terminal import print_records
from sysmo.cli.tools import print_statuses
from sysmo.tools.status import ToolStatus

LONG_TASK = "starter/architecture/telemedicine_platform_with_a_long_name"
IDS = ["e6cb9720c4a1f5d2aa01", "e6cb9720c4a1f5d2bb02"]


def _sysmo(*args: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    done = subprocess.run([sys.executable, "-m", "sysmo.cli", *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_narrow_records_keep_the_key_whole_and_wide_ones_are_a_table():
    rows = [{"id": "x" * 70, "kind": "tla", "note": "a b c " * 20}]
    narrow = Console(width=40, record=True)
    print_records(narrow, "t", ["id", "kind", "note"], rows, wrap=("note",))
    text = narrow.export_text()
    assert "x" * 70 in text and "…" not in text
    wide = Console(width=200, record=True)
    print_records(wide, "t", ["id", "kind"], rows)
    table = wide.export_text()
    assert "┃ id" in table and "x" * 70 in table


def test_trace_list_at_80_columns_shows_full_ids_tasks_and_agents(tmp_path):
    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {}, {}, is_control=True)
    for n, attempt_id in enumerate(IDS):
        store.save_attempt("exp", Attempt(id=attempt_id, task_id=LONG_TASK, agent="base_modeling_with_reflection",
                                          model="mockllm/control", sample_index=n,
                                          status=AttemptStatus.ERROR if n else AttemptStatus.FAILED,
                                          error="PlantUML server crashed" if n else None), {})
    store.close()
    out = _sysmo("trace", "exp", "--all", "-o", str(tmp_path))
    for attempt_id in IDS:
        assert _lines_with(out, attempt_id), out
    assert len(_lines_with(out, LONG_TASK)) == 2 and len(_lines_with(out, "base_modeling_with_reflection")) == 2
    assert "…" not in out
    assert "infrastructure: PlantUML server crashed" in out  # the error says whose side failed
    assert max(len(line) for line in out.splitlines()) <= 80
    listed = json.loads(_sysmo("trace", "exp", "--all", "--json", "-o", str(tmp_path)))
    assert [r["id"] for r in listed] == IDS


def test_tasks_list_at_80_columns_shows_every_id_whole():
    out = _sysmo("tasks", "list", "--benchmark", "starter")
    tasks = json.loads(_sysmo("tasks", "list", "--benchmark", "starter", "--json"))
    ids = [t["id"] for t in (tasks["tasks"] if isinstance(tasks, dict) else tasks)]
    assert len(ids) >= 20
    for task_id in ids:
        assert any(line.strip().startswith(task_id) for line in out.splitlines()), task_id
    assert "starter…" not in out


def test_doctor_at_80_columns_prints_paths_whole():
    path = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/jupyter_opensysml_kernel/bin/sysml-jupyter-kernel"
    console = Console(width=80, record=True)
    print_statuses([ToolStatus(name="OpenSysML", ok=True, version="v0.11.0", path=path, message="kernel up", seconds=1.2),
                    ToolStatus(name="java", ok=False, message="java not found: apt-get install openjdk-17-jre-headless")],
                   console)
    text = console.export_text(styles=False)
    assert _lines_with(text, path) == [f"  path: {path}"]
    assert "FAIL: java" in text
    wide = Console(width=240, record=True)
    print_statuses([ToolStatus(name="SANY", ok=True, version="2.15", path="/opt/tla2tools.jar", message="ok")], wide)
    table = wide.export_text()
    assert "/opt/tla2tools.jar" in table and "┃ tool" in table
