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


def _row(run_all, figure: str, value, unit: str, direction: str | None, load: float = 1.0, noise=None):
    return run_all.Row("s", figure, value, unit, "", None, load, load, direction=direction, noise=noise)


def _baseline(run_all, *rows) -> dict:
    from dataclasses import asdict
    return {"date": "base", "rows": [asdict(r) for r in rows]}


def test_the_gate_marks_a_figure_worse_only_beyond_its_noise_band(run_all, capsys) -> None:
    base = _baseline(run_all, _row(run_all, "warm check", 10.0, "ms", "lower", noise=0.3),
                     _row(run_all, "throughput", 300.0, "attempts/s", "higher"),
                     _row(run_all, "identical", "True", "bool", "higher"))
    # 12 ms against 10 ms with a measured 30% band: within noise; 290/s against 300/s: within the 10% floor
    same = [_row(run_all, "warm check", 12.0, "ms", "lower"), _row(run_all, "throughput", 290.0, "attempts/s", "higher"),
            _row(run_all, "identical", "True", "bool", "higher")]
    assert {c.verdict for c in run_all.compare(same, base)} == {"within noise"}
    assert run_all.report_comparison(same, base) == 0
    # 18.9 ms against 10 ms (+89%) and 104/s against 300/s: both worse; a bool that turned False: worse
    worse = [_row(run_all, "warm check", 18.9, "ms", "lower"), _row(run_all, "throughput", 104.0, "attempts/s", "higher"),
             _row(run_all, "identical", "False", "bool", "higher")]
    verdicts = {c.figure: c.verdict for c in run_all.compare(worse, base)}
    assert verdicts == {"warm check": "worse", "throughput": "worse", "identical": "worse"}
    assert run_all.report_comparison(worse, base) == 1
    assert "**WORSE**" in capsys.readouterr().out
    # faster is better, not a regression
    better = [_row(run_all, "warm check", 5.0, "ms", "lower")]
    assert run_all.compare(better, base)[0].verdict == "better"


def test_the_gate_does_not_compare_seconds_taken_at_dissimilar_loads(run_all) -> None:
    base = _baseline(run_all, _row(run_all, "warm check", 10.0, "ms", "lower", load=1.0),
                     _row(run_all, "CPU ratio", 1.5, "x", "lower", load=1.0))
    now = [_row(run_all, "warm check", 40.0, "ms", "lower", load=12.0),
           _row(run_all, "CPU ratio", 2.6, "x", "lower", load=12.0)]
    verdicts = {c.figure: c.verdict for c in run_all.compare(now, base)}
    assert verdicts == {"warm check": "not comparable", "CPU ratio": "worse"}  # a ratio still compares


def test_repeated_runs_give_the_median_and_the_measured_noise_band(run_all, tmp_path: Path) -> None:
    counter = tmp_path / "n"
    script = tmp_path / "fake_speed.py"
    # prints 10, then 14, then 12 ms on successive runs
    script.write_text(f"from pathlib import Path\np = Path({str(counter)!r})\nn = int(p.read_text()) if p.exists() "
                      "else 0\np.write_text(str(n + 1))\nprint(f'warm median {[10, 14, 12][n]} ms')\n")
    figure = run_all.Figure("warm", r"warm median ([\d.]+) ms", "ms", 80, "<=")
    rows, _ = run_all.run(run_all.Script("fake", [str(script)], [figure]), tmp_path, repeat=3)
    assert rows[0].value == 12.0 and rows[0].runs == [10.0, 14.0, 12.0]
    assert rows[0].noise == pytest.approx((14 - 10) / 12)
    assert rows[0].direction == "lower"


def test_the_best_table_keeps_each_figures_best_value_by_its_direction(run_all, tmp_path: Path) -> None:
    history = tmp_path / "history.csv"
    with history.open("w", newline="") as f:
        writer = csv.DictWriter(f, run_all.HISTORY_FIELDS)
        writer.writeheader()
        for date, figure, value, target in (("d1", "PlantUML warm check, median", "8.8", "<= 80"),
                                            ("d2", "PlantUML warm check, median", "18.9", "<= 80"),
                                            ("d1", "harness-only throughput, local", "298", ">= 1000"),
                                            ("d2", "harness-only throughput, local", "104", ">= 1000")):
            writer.writerow({"date": date, "figure": figure, "value": value, "unit": "u", "target": target,
                             "met": "", "load_before": "1.0", "load_after": "1.0", "baseline": ""})
    best = run_all.best_table(history)
    assert "| PlantUML warm check, median | 8.8 u | lower | d1 |" in best
    assert "| harness-only throughput, local | 298 u | higher | d1 |" in best


def test_the_main_job_scripts_lines_give_its_figures(run_all, monkeypatch, capsys) -> None:
    """main_job_speed.py's printed summary is what run_all reads: the median seconds of attempts against its
    60 s target, the baseline (the run cache off) beside it, and whether the scores were the same; its runs
    alternate which side goes first."""
    import re

    spec = importlib.util.spec_from_file_location("main_job_speed", SPEED / "main_job_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    order: list[bool] = []

    def fake_run(folder, samples, cache):
        order.append(cache)
        return {"seconds": 45.0 if cache else 80.0, "wall": 60.0, "passed": 392, "planned": 392,
                "scores": "same", "load_before": "1.00", "load_after": "1.10"}

    monkeypatch.setattr(module, "run_main_job", fake_run)
    monkeypatch.setattr(sys, "argv", ["main_job_speed.py", "--repeat", "2"])
    module.main()
    printed = capsys.readouterr().out
    assert order == [True, False, False, True]
    script = next(s for s in run_all.SCRIPTS if s.name == "main_job")
    seconds, same = script.figures
    assert re.search(seconds.pattern, printed).group(1) == "45.0" and seconds.met(45.0)
    assert re.search(seconds.baseline, printed).group(1) == "80.0"
    assert re.search(same.pattern, printed).group(1) == "True"
