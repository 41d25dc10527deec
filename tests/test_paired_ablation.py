"""The paired analysis end to end: real runs against the fake OpenAI-compatible server, checked by the real
PlantUML, analysed by the report and by ``sysmo compare`` and confirmed by hand from attempts.csv with scipy.

The server is scripted so that line-numbered diagnostics help and bare ones do not: a repair request that quotes
the checker's lines (``>>`` marks them, feedback ``diagnostics`` and ``full``) gets the gold diagram, any other
gets the broken one again. Model ``fake-a`` answers every task broken at first; ``fake-b`` answers the first
``GOOD_FIRST`` tasks right at once.

The feedback levels are the arms of one run (``--feedback none,bare,diagnostics,full``, ``run_levels``), and the
analysis is that run's report, ``paired.csv`` (``paired_table``): every level against ``none`` per model, and
``fake-b`` against ``fake-a`` per level, Holm-adjusted together.
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


def run_levels(server: FakeOpenAI, runs: Path, env: dict[str, str], settings: Path, name: str = "fb") -> str:
    """One experiment whose arms are the feedback levels (both models, every task and sample); returns its id."""
    args = ["run", str(settings), "--ids", ",".join(TASKS), "--agent", "base_modeling", "--samples", str(SAMPLES),
            "--api-base", server.base_url, "--feedback", ",".join(LEVELS), "--id", name, "-o", str(runs),
            "--no-progress", "--checkpoints", "none"]
    for model in MODELS:
        args += ["--model", model]
    result = run_sysmo(*args, env=env)
    assert result.code == 0, result.output
    return name


def paired_table(experiment: str, runs: Path) -> pd.DataFrame:
    """The report's paired analysis of the run."""
    return pd.read_csv(runs / experiment / "report" / "paired.csv")


def attempts(ids: list[str], runs: Path) -> pd.DataFrame:
    return pd.concat([pd.read_csv(runs / i / "report" / "attempts.csv") for i in ids], ignore_index=True)


def mcnemar_and_wilcoxon(base: pd.DataFrame, other: pd.DataFrame) -> tuple:
    """By hand: discordant counts, exact McNemar p, Δpass, Wilcoxon p and Δscore of ``other`` against ``base``."""
    assert list(other.index) == list(base.index)
    gained = int(((other["passed"] == 1) & (base["passed"] == 0)).sum())
    lost = int(((other["passed"] == 0) & (base["passed"] == 1)).sum())
    p = stats.binomtest(gained, gained + lost, 0.5).pvalue if gained + lost else 1.0
    diffs = (other["headline"] - base["headline"]).to_numpy()
    p_w = stats.wilcoxon(diffs, zero_method="wilcox").pvalue if (diffs != 0).any() else 1.0
    return gained, lost, p, (other["passed"] - base["passed"]).mean(), p_w, diffs.mean()


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
        experiment = run_levels(server, runs, env, settings)
    table = paired_table(experiment, runs)
    frame = attempts([experiment], runs)
    assert len(frame) == len(LEVELS) * len(MODELS) * len(TASKS) * SAMPLES

    # by hand from attempts.csv, on (task, sample) pairs: each level against none per model, fake-b against fake-a
    # per level
    frame["first_passed"] = (frame["passed_round"] == 0).astype(int)
    gated = frame["score.clue.clue"].isna() & (frame["score.clue"] == 0)  # the syntax stage failed: clue counts 0
    frame["headline"] = frame["score.clue.clue"].where(~gated, 0.0)

    def arm(model: str, level: str) -> pd.DataFrame:
        chosen = frame[(frame["model"] == model) & (frame["feedback"] == level)]
        return chosen.set_index(["task_id", "sample_index"]).sort_index()

    expected = {("feedback", f"model={model}", level): mcnemar_and_wilcoxon(arm(model, "none"), arm(model, level))
                for model in MODELS for level in LEVELS[1:]}
    expected |= {("model", f"feedback={level}", MODELS[1]): mcnemar_and_wilcoxon(arm(MODELS[0], level),
                                                                                  arm(MODELS[1], level))
                 for level in LEVELS}
    assert len(table) == len(expected) == 10
    rows = {(r.factor, r.held_fixed, r.level): r for r in table.itertuples()}
    assert set(rows) == set(expected), sorted(rows)
    assert set(table[table["factor"] == "feedback"]["baseline"]) == {"none"}
    adjusted = dict(zip(expected, holm_by_hand([e[2] for e in expected.values()])))
    for key, (gained, lost, p, delta, p_w, delta_score) in expected.items():
        row = rows[key]
        assert (row.n_pairs, row.level_only, row.baseline_only) == (len(TASKS) * SAMPLES, gained, lost)
        assert row.p_mcnemar == pytest.approx(p) and row.delta_pass == pytest.approx(delta)
        assert row.p_mcnemar_adjusted == pytest.approx(adjusted[key])
        assert row.p_wilcoxon == pytest.approx(p_w) and row.delta_score == pytest.approx(delta_score)
        assert row.delta_pass_ci_low <= row.delta_pass <= row.delta_pass_ci_high
        assert "Holm" in row.method
        if key[0] == "feedback":  # the level changes only the repair: the first answers are the same in every arm
            assert (row.first_answer_passes_level_only, row.first_answer_passes_baseline_only) == (0, 0)

    # the expected direction: told the lines, every broken first answer is repaired; told "check failed", none is
    a_diag, a_bare, b_full = (rows[("feedback", f"model={model}", level)] for model, level in
                              ((MODELS[0], "diagnostics"), (MODELS[0], "bare"), (MODELS[1], "full")))
    assert (a_diag.level_only, a_diag.baseline_only, a_diag.delta_pass) == (10, 0, 1.0)
    assert a_diag.p_mcnemar == pytest.approx(2 * 0.5 ** 10) and a_diag.p_mcnemar_adjusted < 0.05
    assert a_diag.delta_pass_ci_low > 0 and a_diag.delta_score > 0
    assert (a_bare.level_only, a_bare.baseline_only, a_bare.p_mcnemar, a_bare.delta_pass) == (0, 0, 1.0, 0.0)
    assert (b_full.level_only, b_full.pass_baseline) == (6, 0.4)
    md = (runs / experiment / "report" / "report.md").read_text()
    assert "### uml_class" in md and "diagnostics vs none" in md and "p McNemar pass after repair (Holm)" in md


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
        # the same two arms in one experiment (its report, not sysmo compare)
        result = run_sysmo("run", str(settings), *common, "--api-base", server.base_url, "--strategy", "default,cot",
                           "--id", "both", env=env)
        assert result.code == 0, result.output
    compared = run_sysmo("compare", "own", "cot", "-o", str(runs), "--out", str(tmp_path / "cmp"), env=env)
    assert compared.code == 0 and "factor(s): strategy" in compared.stdout, compared.output
    across = pd.read_csv(tmp_path / "cmp" / "paired.csv")
    write_report(runs / "both")
    within = pd.read_csv(runs / "both" / "report" / "paired.csv")
    pd.testing.assert_frame_equal(across, within)
    (row,) = across.itertuples()
    assert (row.factor, row.baseline, row.level, row.n_pairs) == ("strategy", "default", "cot", len(TASKS) * SAMPLES)
    assert (row.level_only, row.baseline_only, row.first_answer_passes_level_only) == (6, 0, 6)
    assert row.p_mcnemar == pytest.approx(2 * 0.5 ** 6) and row.delta_score > 0
    assert "## What each level buys" in (runs / "both" / "report" / "report.md").read_text()
    # compare.md's table names are the report's, each defined once in its glossary
    from sysmo.evals.glossary import definitions_of
    from sysmo.evals.report import table_headers

    compare_md = (tmp_path / "cmp" / "compare.md").read_text()
    names = table_headers(compare_md)
    assert "Δfirst answer parses" in names and all(len(definitions_of(n)) == 1 for n in names)
    glossary = compare_md.split("## Glossary\n", 1)[1]
    assert all(f"- {definitions_of(n)[0].line()}" in glossary for n in names)
