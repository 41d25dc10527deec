"""speed/run_all.py: figures read from what a script prints, compared with their targets, and the docs' tables
rendered from the history (each figure's latest row)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

SPEED = Path(__file__).resolve().parents[1] / "speed"


@pytest.fixture(scope="module")
def run_all():
    spec = importlib.util.spec_from_file_location("speed_run_all", SPEED / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["speed_run_all"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules["speed_run_all"]


def test_every_script_named_exists_and_every_speed_script_is_run(run_all) -> None:
    named = {s.argv[0] for s in run_all.SCRIPTS}
    present = {p.name for p in SPEED.glob("*.py")} - {"run_all.py"}
    assert named == present


def test_a_figure_is_compared_with_its_target(run_all) -> None:
    figure = run_all.Figure("throughput", r"= (\d+) attempts/s", "attempts/s", 1000, ">=")
    assert figure.met(1200.0) is True and figure.met(999.0) is False
    assert run_all.Figure("info", "x", "MB").met(5.0) is None


def test_the_latest_table_holds_each_figures_latest_row(run_all, tmp_path: Path) -> None:
    history = tmp_path / "history.csv"
    with history.open("w", newline="") as f:
        writer = csv.DictWriter(f, run_all.HISTORY_FIELDS)
        writer.writeheader()
        for date, figure, value in (("d1", "a", "1"), ("d1", "b", "2"), ("d2", "a", "3")):
            writer.writerow({"date": date, "figure": figure, "value": value, "unit": "s", "target": "< 1",
                             "met": "no", "load_before": "1.0", "load_after": "2.0", "baseline": ""})
    latest = run_all.latest_table(history)
    assert "| d2 | a | 3 s |" in latest and "| d1 | b | 2 s |" in latest and "| d1 | a |" not in latest
    assert run_all.history_table(history).count("\n") == 5  # header, rule, three rows
    page = "x\n<!-- latest -->\nold\n<!-- /latest -->\ny"
    assert run_all.replace_between(page, "latest", "new\n") == "x\n<!-- latest -->\nnew\n<!-- /latest -->\ny"
