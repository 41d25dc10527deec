"""The paired analysis end to end: real runs against the fake OpenAI-compatible server, checked by the real
PlantUML, analysed by ``sysmo compare`` and confirmed by hand from each experiment's attempts.csv with scipy.

The server is scripted so that line-numbered diagnostics help and bare ones do not: a repair request that quotes
the checker's lines (``>>`` marks them, feedback ``diagnostics`` and ``full``) gets the gold diagram, any other
gets the broken one again. Model ``fake-a`` answers every task broken at first; ``fake-b`` answers the first
``GOOD_FIRST`` tasks right at once.

The feedback levels run as one experiment each (``run_levels``); once ``--feedback`` takes a list, one run with
``--feedback none,bare,diagnostics,full`` replaces it, and the analysis is the report's ``paired.csv`` instead of
``sysmo compare`` (``paired_table``); the checks stay as they are.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from fake_openai import FakeOpenAI, FakeReply, reply
from scipy import stats
from sysmo_cli import run_sysmo

TASKS = ["starter/uml_class/library_loans", "starter/uml_class/fleet_rental", "starter/uml_class/bug_tracker",
         "starter/uml_class/hotel_booking", "starter/uml_class/recipe_book"]
SAMPLES = 2  # 5 tasks x 2 samples: 10 (task, sample) pairs per comparison
LEVELS = ["none", "bare", "diagnostics", "full"]
MODELS = ["openai/fake-a", "openai/fake-b"]
GOOD_FIRST = 2  # fake-b's first answer is right on the first two tasks
LIGHT_SCORING = "scoring:\n  embedding: token\n  similarity: token\n"


def _answers() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Per task: a text of its requirement (to recognise the request), its gold and its broken diagram replies."""
    from sysmo.agents.control_script import broken_artifact
    from sysmo.benchmarks.registry import get_task
    from sysmo.llm.reference import format_reference

    marks, gold, broken = {}, {}, {}
    for task_id in TASKS:
        task = get_task(task_id)
        marks[task_id] = task.inputs.requirement.strip().splitlines()[0][:60]
        gold[task_id] = "Here is the model.\n\n" + format_reference(task.references.model)
        broken[task_id] = "Here is the model.\n\n" + format_reference(broken_artifact(task))
    return marks, gold, broken


def fake_b_knows_the_first_tasks(body: dict, text: str, task_index: int) -> bool:
    return body["model"].endswith("fake-b") and task_index < GOOD_FIRST


def scripted_server(right_first: Callable[[dict, str, int], bool] = fake_b_knows_the_first_tasks) -> FakeOpenAI:
    """The fake server: a first answer right when ``right_first(request, its text, task index)``, a repair right
    only when told the lines, else the broken diagram."""
    marks, gold, broken = _answers()

    def answer(body: dict) -> FakeReply:
        messages = body["messages"]
        text = "\n".join(str(m.get("content") or "") for m in messages)
        task_id = next(t for t, mark in marks.items() if mark in text)
        if not any(m["role"] == "assistant" for m in messages):  # the first request
            return reply(gold[task_id] if right_first(body, text, TASKS.index(task_id)) else broken[task_id])
        told_lines = ">>" in str(messages[-1].get("content") or "")
        return reply(gold[task_id] if told_lines else broken[task_id])

    return FakeOpenAI(default=answer)


def run_levels(server: FakeOpenAI, runs: Path, env: dict[str, str], settings: Path, prefix: str = "fb") -> list[str]:
    """One experiment per feedback level (both models, every task and sample); returns their ids."""
    ids = []
    for level in LEVELS:
        args = ["run", str(settings), "--ids", ",".join(TASKS), "--agent", "base_modeling", "--samples", str(SAMPLES),
                "--api-base", server.base_url, "--feedback", level, "--id", f"{prefix}-{level}", "-o", str(runs),
                "--no-progress", "--checkpoints", "none"]
        for model in MODELS:
            args += ["--model", model]
        result = run_sysmo(*args, env=env)
        assert result.code == 0, result.output
        ids.append(f"{prefix}-{level}")
    return ids


def paired_table(ids: list[str], runs: Path, out: Path, env: dict[str, str]) -> pd.DataFrame:
    """``sysmo compare`` of the level experiments (the factor, feedback, is the one setting they differ in)."""
    result = run_sysmo("compare", *ids, "--experiments-dir", str(runs), "-o", str(out), env=env)
    assert result.code == 0, result.output
    assert "factor(s): feedback" in result.stdout and "diagnostics vs none" in result.stdout
    return pd.read_csv(out / "paired.csv")


def attempts(ids: list[str], runs: Path) -> pd.DataFrame:
    return pd.concat([pd.read_csv(runs / i / "report" / "attempts.csv") for i in ids], ignore_index=True)


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


@pytest.mark.slow
def test_line_numbered_diagnostics_help_and_bare_ones_do_not(tmp_path: Path) -> None:
    env = {"SYSMO_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-fake")}
    settings = tmp_path / "light.yaml"
    settings.write_text(LIGHT_SCORING)
    runs = tmp_path / "runs"
    with scripted_server() as server:
        ids = run_levels(server, runs, env, settings)
    table = paired_table(ids, runs, tmp_path / "compare", env)
    frame = attempts(ids, runs)
    assert len(frame) == len(LEVELS) * len(MODELS) * len(TASKS) * SAMPLES

    # by hand from attempts.csv: each level against none, per model, on (task, sample) pairs
    frame["first_passed"] = (frame["passed_round"] == 0).astype(int)
    gated = frame["score.clue.clue"].isna() & (frame["score.clue"] == 0)  # the syntax stage failed: clue counts 0
    frame["headline"] = frame["score.clue.clue"].where(~gated, 0.0)
    expected = {}
    for model in MODELS:
        mine = frame[frame["model"] == model]
        base = mine[mine["feedback"] == "none"].set_index(["task_id", "sample_index"]).sort_index()
        for level in LEVELS[1:]:
            other = mine[mine["feedback"] == level].set_index(["task_id", "sample_index"]).sort_index()
            assert list(other.index) == list(base.index)
            gained = int(((other["passed"] == 1) & (base["passed"] == 0)).sum())
            lost = int(((other["passed"] == 0) & (base["passed"] == 1)).sum())
            p = stats.binomtest(gained, gained + lost, 0.5).pvalue if gained + lost else 1.0
            diffs = (other["headline"] - base["headline"]).to_numpy()
            p_w = stats.wilcoxon(diffs, zero_method="wilcox").pvalue if (diffs != 0).any() else 1.0
            expected[(model, level)] = (gained, lost, p, (other["passed"] - base["passed"]).mean(), p_w, diffs.mean())

    assert len(table) == len(expected) == 6
    table["model"] = table["held_fixed"].str.removeprefix("model=")
    rows = {(r.model, r.level): r for r in table.itertuples()}
    assert set(rows) == set(expected) and set(table["baseline"]) == {"none"} and set(table["factor"]) == {"feedback"}
    adjusted = dict(zip(expected, holm_by_hand([e[2] for e in expected.values()])))
    for key, (gained, lost, p, delta, p_w, delta_score) in expected.items():
        row = rows[key]
        assert (row.n_pairs, row.level_only, row.baseline_only) == (len(TASKS) * SAMPLES, gained, lost)
        assert row.p_mcnemar == pytest.approx(p) and row.delta_pass == pytest.approx(delta)
        assert row.p_mcnemar_adjusted == pytest.approx(adjusted[key])
        assert row.p_wilcoxon == pytest.approx(p_w) and row.delta_score == pytest.approx(delta_score)
        assert row.delta_pass_ci_low <= row.delta_pass <= row.delta_pass_ci_high
        # the level changes only the repair: the first answers are the same under every level
        assert (row.single_shot_level_only, row.single_shot_baseline_only) == (0, 0)
        assert "Holm" in row.method

    # the expected direction: told the lines, every broken first answer is repaired; told "check failed", none is
    a_diag, a_bare, b_full = rows[(MODELS[0], "diagnostics")], rows[(MODELS[0], "bare")], rows[(MODELS[1], "full")]
    assert (a_diag.level_only, a_diag.baseline_only, a_diag.delta_pass) == (10, 0, 1.0)
    assert a_diag.p_mcnemar == pytest.approx(2 * 0.5 ** 10) and a_diag.p_mcnemar_adjusted < 0.05
    assert a_diag.delta_pass_ci_low > 0 and a_diag.delta_score > 0
    assert (a_bare.level_only, a_bare.baseline_only, a_bare.p_mcnemar, a_bare.delta_pass) == (0, 0, 1.0, 0.0)
    assert (b_full.level_only, b_full.pass_baseline) == (6, 0.4)
    md = (tmp_path / "compare" / "compare.md").read_text()
    assert "## uml_class" in md and "diagnostics vs none" in md and "p McNemar (Holm)" in md


def merged_experiment(runs: Path, ids: list[str], name: str) -> Path:
    """One experiment ``name`` holding every attempt and score of ``ids`` (their arms), written with the store's
    API: what one run with a list of strategies records."""
    from sysmo.store import AttemptRecord, Store

    (runs / name).mkdir()
    target = Store(runs / name / "results.sqlite")
    first = Store(runs / ids[0] / "results.sqlite")
    target.save_experiment(name, {**first.experiment(ids[0])["config"], "id": name}, {}, is_control=False)
    first.close()
    for source_id in ids:
        source = Store(runs / source_id / "results.sqlite")
        for attempt in source.attempts(source_id):
            (meta,) = source.query("SELECT benchmark, kind, domain, difficulty FROM attempts WHERE id=?", (attempt.id,))
            target.save_attempts(name, [AttemptRecord.of(attempt, dict(meta))])
            card = source.scorecard(attempt.id)
            if card is not None:
                target.save_scores(name, [(attempt.id, card, None)])
        source.close()
    target.close()
    return runs / name


def cot_helps_on_the_first_tasks(body: dict, text: str, task_index: int) -> bool:
    return task_index == 0 or ("Think step by step first" in text and task_index < 4)


@pytest.mark.slow
def test_two_experiments_that_differ_in_strategy_give_the_numbers_of_one_with_both(tmp_path: Path) -> None:
    from sysmo.evals.report import write_report

    env = {"SYSMO_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-fake")}
    settings = tmp_path / "light.yaml"
    settings.write_text(LIGHT_SCORING)
    runs = tmp_path / "runs"
    common = ["--ids", ",".join(TASKS), "--agent", "base_modeling", "--model", MODELS[0], "--samples", str(SAMPLES),
              "--max-rounds", "0", "-o", str(runs), "--no-progress", "--checkpoints", "none", "--no-report"]
    with scripted_server(cot_helps_on_the_first_tasks) as server:
        for name, strategy in (("own", []), ("cot", ["--strategy", "cot"])):
            result = run_sysmo("run", str(settings), *common, "--api-base", server.base_url, *strategy, "--id", name,
                               env=env)
            assert result.code == 0, result.output
    compared = run_sysmo("compare", "own", "cot", "--experiments-dir", str(runs), "-o", str(tmp_path / "cmp"), env=env)
    assert compared.code == 0 and "factor(s): strategy" in compared.stdout, compared.output
    across = pd.read_csv(tmp_path / "cmp" / "paired.csv")

    write_report(merged_experiment(runs, ["own", "cot"], "both"))
    within = pd.read_csv(runs / "both" / "report" / "paired.csv")
    pd.testing.assert_frame_equal(across, within)
    (row,) = across.itertuples()
    assert (row.factor, row.baseline, row.level, row.n_pairs) == ("strategy", "default", "cot", len(TASKS) * SAMPLES)
    assert (row.level_only, row.baseline_only, row.single_shot_level_only) == (6, 0, 6)
    assert row.p_mcnemar == pytest.approx(2 * 0.5 ** 6) and row.delta_score > 0
    assert "## What each level buys" in (runs / "both" / "report" / "report.md").read_text()
