"""`sysmo reproduce sysmobench`: SysMoBench's own specs through the TLA+ cascade, in the paper's layout."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sysmo.reproduce import sysmobench as rs


def test_entries_cover_the_example_gold_and_bug_specs_with_agent_and_model(shared_benchmarks: Path) -> None:
    found = {(e.kind, e.system, e.agent, e.model) for e in rs.entries(shared_benchmarks)}
    assert ("example", "locksvc", "unknown", "Claude-Sonnet-4") in found
    assert ("example", "locksvc", "unknown", "DeepSeek-R1") in found
    assert ("example", "raftkvs", "unknown", "GPT-5") in found
    assert ("example", "dqueue", "code translation (Specula)", "Gemini-2.5-Pro") in found
    assert ("example", "dqueue", "simpleloop", "Claude-Sonnet-4") in found
    assert {s for k, s, _, _ in found if k == "gold"} == {"dqueue", "locksvc", "raftkvs"}
    assert {s for k, s, _, _ in found if k == "bug"} == {"curp", "etcd", "mutex", "redisraft", "rwmutex"}
    assert sum(k == "example" for k, *_ in found) == 10  # example_specs/test is a harness fixture, not a spec
    assert not any(s == "test" for _, s, _, _ in found)


def test_paper_rows_without_a_spec_in_the_data_are_listed_apart() -> None:
    ours = [rs.Row(kind="example", system="spin", agent="base modeling", model="GPT-5")]
    left = rs.unmatched_paper_rows(ours)
    assert len(left) == len(rs.PAPER_ROWS) - 1
    assert all((p.system, p.model) != ("spin", "GPT-5") or p.agent != "base modeling" for p in left)


def test_the_gold_artifact_is_the_main_module_and_its_cfg_only(shared_benchmarks: Path) -> None:
    gold = next(e for e in rs.entries(shared_benchmarks, ("gold",), ("locksvc",)))
    assert sorted(rs._artifact(gold).files) == ["locksvc.cfg", "locksvc.tla"]


@pytest.mark.slow
def test_cli_scores_a_bug_control_and_writes_the_csv(shared_benchmarks: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    result = subprocess.run(
        [sys.executable, "-m", "sysmo.cli", "reproduce", "sysmobench", "--data-dir", str(shared_benchmarks),
         "--kind", "bug", "--system", "mutex", "--option", "runtime.runs=2", "--option", "invariants.timeout_s=40",
         "--no-cache", "--csv-out", str(out)],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"}, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "[1/1] bug mutex" in result.stderr  # progress line
    assert "1 of 1 bugs exposed" in result.stdout
    assert "etcd (paper)" in result.stdout  # the paper's rows with no spec in the data are shown apart
    row = next(csv.DictReader(io.StringIO(out.read_text())))
    assert (row["kind"], row["system"], row["bug_found"]) == ("bug", "mutex", "yes")
    assert row["syntax_ours"] == "100.00" and row["consistency_outcome"] == "skipped"
    assert "MutualExclusion" in row["violated"].split(";")
    assert float(row["invariants_ours"]) < 100


def _row(kind: str, value: float, **lists: list[str]) -> rs.Row:
    outcome = "failed" if lists.get("violated") else "inconclusive" if lists.get("inconclusive") else "error"
    return rs.Row(kind=kind, system="locksvc", agent="a", model="m",  # type: ignore[arg-type]
                  values={"invariants": value}, outcomes={"invariants": outcome}, **lists)


def test_the_invariants_cell_tells_violated_from_not_instantiable_and_inconclusive() -> None:
    violated = _row("example", 0.0, violated=["LockSafety", "ProgressOK"])
    no_formula = _row("example", 0.0, not_instantiable=["LockSafety", "ProgressOK"])
    unfinished = _row("example", 0.5, inconclusive=["ProgressOK"])
    assert rs.invariants_cell(violated) == "0.0 (2 violated)"
    assert rs.invariants_cell(no_formula) == "0.0 (2 not instantiable)"
    assert rs.invariants_cell(unfinished) == "50.0 (1 inconclusive)"
    assert rs.invariants_cell(_row("gold", 1.0)) == "100.0"
    gated = rs.Row(kind="example", system="s", agent="a", model="m", outcomes={"invariants": "gated"})
    assert rs.invariants_cell(gated) == "-"


def test_a_bug_control_whose_bug_was_found_reads_as_its_success() -> None:
    found = _row("bug", 0.0, violated=["RWMInvariant"], inconclusive=["AlwaysEventuallyReleases"])
    missed = _row("bug", 1.0)
    assert rs.invariants_cell(found) == "bug found (1 violated, 1 inconclusive)"
    assert rs.bug_note(found) == "yes: RWMInvariant; inconclusive: AlwaysEventuallyReleases"
    assert rs.invariants_cell(missed) == "bug NOT found"
    assert rs.bug_note(missed).startswith("NO")
    assert rs.bug_note(_row("example", 0.0, violated=["X"])) == ""
    gated = rs.Row(kind="bug", system="mutex", agent="a", model="m",
                   outcomes={"syntax": "failed", "runtime": "gated", "invariants": "gated"})
    assert rs.bug_note(gated) == "NO: invariants not run (syntax did not pass: failed)"


def test_the_legend_names_every_word_the_invariants_cell_prints() -> None:
    legend = " ".join(rs.LEGEND)
    for word in ("violated", "inconclusive", "not instantiable", "error", "bug found", "n/a", "'-'"):
        assert word in legend


def test_the_reproduction_scores_in_the_harness_mode_unless_told_otherwise() -> None:
    assert rs.REPRODUCE_OPTIONS == {"mode": "harness"}


def test_a_row_lists_the_templates_without_a_formula_apart_from_the_evaluation_errors() -> None:
    from sysmo.contracts.scorecard import ScoreCard, StageResult

    verdicts = [{"name": "A", "outcome": "error", "source": "none"}, {"name": "B", "outcome": "error",
                                                                      "source": "template"},
                {"name": "C", "outcome": "failed", "source": "template"}]
    card = ScoreCard(task_id="sysmobench/locksvc", cascade="tla", stages=[StageResult(
        stage="invariants", value=0.0, outcome="failed",
        detail={"violated": ["C"], "inconclusive": [], "invariants": verdicts})])
    entry = rs.Entry(kind="example", system="locksvc", agent="a", model="m", folder=Path("."))
    row = rs._row(entry, card, 1.0)
    assert (row.violated, row.not_instantiable, row.errors) == (["C"], ["A"], ["B"])
    assert rs.invariants_cell(row) == "0.0 (1 violated, 1 not instantiable, 1 error)"
