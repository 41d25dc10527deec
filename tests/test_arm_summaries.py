"""Every summary of a 4-arm experiment counts per arm, and they agree with the report on every number.

One run with ``--feedback none,bare,diagnostics,full`` against the scripted fake OpenAI server of the paired
analysis' tests (``test_paired_ablation.scripted_server``: model ``fake-b`` answers the first two tasks right at
once; a repair is right only when told the checker's lines, so ``none`` and ``bare`` pass 4 of 6, ``diagnostics``
and ``full`` 6 of 6, and an average over arms would be 5 of 6 everywhere), checked by the real PlantUML. Read
back through ``sysmo view``'s pages (Starlette's TestClient), ``sysmo trace EXP --json`` and the report's files;
then ``sysmo report --baseline`` and ``--all-pairs`` rewrite its paired section."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from starlette.testclient import TestClient
from sysmo_cli import run_sysmo
from test_paired_ablation import LIGHT_SCORING, TASKS, scripted_server

LEVELS = ["none", "bare", "diagnostics", "full"]
EXPERIMENT = "four"
SAMPLES = 2
RUN_TASKS = TASKS[:3]
PASSED = {"none": 4, "bare": 4, "diagnostics": 6, "full": 6}  # of 3 tasks x 2 samples per arm


class Tables(HTMLParser):
    """The text of every cell of every ``<table id=...>`` of a page: id -> rows of cells (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table" and dict(attrs).get("id"):
            self._table = dict(attrs)["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables_of(page: str) -> dict[str, list[dict[str, str]]]:
    parser = Tables()
    parser.feed(page)
    return {name: [dict(zip(rows[0], row)) for row in rows[1:]] for name, rows in parser.tables.items() if rows}


def markdown_rows(text: str, heading: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table after ``heading``."""
    lines = text[text.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = lines[start:end]
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table]
    return [dict(zip(cells[0], row)) for row in cells[2:]]


pytestmark = pytest.mark.slow  # a 24-attempt run checked by the real PlantUML


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("arms")
    env = {"SYSMO_HOME": str(folder / "home"), "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-fake")}
    settings = folder / "light.yaml"
    settings.write_text(LIGHT_SCORING)
    with scripted_server() as server:
        result = run_sysmo("run", str(settings), "--ids", ",".join(RUN_TASKS), "--agent", "base_modeling",
                           "--model", "openai/fake-b", "--api-base", server.base_url, "--samples", str(SAMPLES),
                           "--feedback", ",".join(LEVELS), "--id", EXPERIMENT, "-o", str(folder / "runs"),
                           "--no-progress", "--checkpoints", "none", env=env)
    assert result.code == 0, result.output
    return folder / "runs"


def report_by_arm(runs: Path) -> dict[str, dict]:
    """Per arm (``feedback=...``), the report's numbers: summary.csv's row and the counts of attempts.csv."""
    summary = pd.read_csv(runs / EXPERIMENT / "report" / "summary.csv")
    attempts = pd.read_csv(runs / EXPERIMENT / "report" / "attempts.csv")
    out = {}
    for level in LEVELS:
        (row,) = summary[summary["agent"] == f"base_modeling [feedback={level}]"].to_dict("records")
        mine = attempts[attempts["feedback"] == level]
        out[f"feedback={level}"] = {
            **row, "passed": int(mine["passed"].sum()), "failed": int((mine["status"] == "failed").sum()),
            "errors": int((mine["status"] == "error").sum()), "mean n_rounds": float(mine["n_rounds"].mean())}
    return out


def test_the_experiment_page_the_list_and_trace_count_per_arm_as_the_report_does(runs: Path) -> None:
    from sysmo.view.app import create_app

    report = report_by_arm(runs)
    assert {arm: r["passed"] for arm, r in report.items()} == {f"feedback={k}": v for k, v in PASSED.items()}
    client = TestClient(create_app(runs), base_url="http://localhost")

    # the experiment page's summary: one row per arm, every number the report's
    page = client.get(f"/e/{EXPERIMENT}")
    assert page.status_code == 200
    summary = {row["arm"]: row for row in tables_of(page.text)["summary"]}
    assert list(summary) == list(report)  # in the levels' order: none, bare, diagnostics, full
    for arm, r in report.items():
        row = summary[arm]
        assert (row["agent"], row["model"], row["kind"]) == ("base_modeling", "openai/fake-b", "uml_class")
        assert int(row["attempts"]) == r["samples"] == len(RUN_TASKS) * SAMPLES
        assert (int(row["passed"]), int(row["failed"]), int(row["errors"])) == (r["passed"], r["failed"], r["errors"])
        assert row["pass rate"] == f"{r['pass@1']:.3f}" == f"{r['passed'] / r['samples']:.3f}"
        assert row["without errors"] == f"{r['pass@1']:.3f}"  # no attempt errored
        assert row["mean rounds"] == f"{r['mean n_rounds']:.2f}"
        assert row["cost"] == f"${r['cost $']:.4f}"
        # its count links to exactly the arm's attempts
        listed = client.get(f"/e/{EXPERIMENT}", params={"agent": "base_modeling", "model": "openai/fake-b",
                                                          "kind": "uml_class", "arm": arm})
        assert f">{r['samples']} of {4 * len(RUN_TASKS) * SAMPLES}<" in listed.text

    # the experiments list: each arm's rate, no rate over the four arms
    listing = client.get("/").text
    for arm, r in report.items():
        assert re.search(rf'data-arm-rate="{arm}">{round(100 * r["pass@1"])}%<', listing), arm
    assert [listing.index(f'data-arm-rate="{arm}"') for arm in report] == \
        sorted(listing.index(f'data-arm-rate="{arm}"') for arm in report)
    assert 'data-field="pass_rate"' not in listing
    progress = client.get("/progress.json").json()[EXPERIMENT]
    assert progress["arm_pass_rates"] == {arm: pytest.approx(r["pass@1"]) for arm, r in report.items()}

    # sysmo trace EXP: the same summary, per arm
    traced = run_sysmo("trace", EXPERIMENT, "--json", "-o", str(runs))
    assert traced.code == 0, traced.output
    groups = {g["arm"]: g for g in json.loads(traced.stdout)["summary"]}
    assert {arm: (g["attempts"], g["passed"], g["failed"], g["errors"]) for arm, g in groups.items()} == \
        {arm: (r["samples"], r["passed"], r["failed"], r["errors"]) for arm, r in report.items()}
    shown = " ".join(run_sysmo("trace", EXPERIMENT, "-o", str(runs)).stdout.split())
    assert "summary of four per agent, model, arm and kind" in shown
    for arm, r in report.items():  # a table row, or a block on a narrow terminal
        assert re.search(rf"{arm}\W+(agent: base_modeling · model: openai/fake-b · )?(kind: )?uml_class\W+"
                         rf"(attempts: )?6\W+(passed: )?{r['passed']}\W+(failed: )?{6 - r['passed']}\W+"
                         rf"(errors: )?0\W+(pass rate: )?{r['passed'] / 6:.3f}", shown), arm


def test_the_viewers_report_page_and_the_report_agree_on_every_number_of_every_arm(runs: Path) -> None:
    from sysmo.view.app import create_app

    client = TestClient(create_app(runs), base_url="http://localhost")
    page = client.get(f"/e/{EXPERIMENT}/report").text
    tables = tables_of(page)
    markdown = (runs / EXPERIMENT / "report" / "report.md").read_text()
    board = markdown_rows(markdown, "### uml_class")
    assert sorted(r["agent"] for r in board) == sorted(f"base_modeling [feedback={level}]" for level in LEVELS)
    viewer = {r[next(iter(r))]: list(r.values()) for r in tables["board-uml_class"]}
    summary = pd.read_csv(runs / EXPERIMENT / "report" / "summary.csv").set_index("agent")
    for row in board:
        cells = viewer[row["agent"]]
        # the page shows each mean without its CI text (the CI is a bar): compare what both print
        for shown, (column, written) in zip(cells, row.items()):
            assert written.split(" [")[0] == shown.replace("★", "").strip().split(" ")[0] or (
                written == "—" and shown == "—"), (row["agent"], column, written, shown)
        at = next(i for i, column in enumerate(row) if column.startswith("pass@1"))
        assert float(cells[at].replace("★", "").split(" ")[0]) == pytest.approx(summary.loc[row["agent"], "pass@1"],
                                                                               abs=5e-4)
    # each leaderboard row links to its own arm's attempts
    assert "arm=feedback%3Dnone" in page and "arm=feedback%3Dfull" in page

    # the paired tests: the same table, with the same (default) baseline said
    assert "baseline: feedback=none (default)" in page and "baseline: feedback=none (default)" in markdown
    paired_md = markdown_rows(markdown, "## What each level buys")
    assert tables["paired-uml_class"] == paired_md
    assert {r["level vs baseline"] for r in paired_md} == {f"{level} vs none" for level in LEVELS[1:]}


def test_report_takes_a_baseline_or_every_pair_and_says_which(runs: Path) -> None:
    from sysmo.evals.paired import holm

    paired = runs / EXPERIMENT / "report" / "paired.csv"
    chosen = run_sysmo("report", EXPERIMENT, "-o", str(runs), "--baseline", "feedback=bare")
    assert chosen.code == 0, chosen.output
    rows = pd.read_csv(paired)
    assert {(r.baseline, r.level) for r in rows.itertuples()} == {("bare", "none"), ("bare", "diagnostics"),
                                                                   ("bare", "full")}
    # diagnostics vs bare: bare repairs nothing, diagnostics the two broken samples of the third task
    (diag,) = rows[rows["level"] == "diagnostics"].itertuples()
    assert (diag.n_pairs, diag.level_only, diag.baseline_only, diag.delta_pass) == (6, 2, 0, pytest.approx(2 / 6))
    assert "baseline: feedback=bare (--baseline)" in (runs / EXPERIMENT / "report" / "report.md").read_text()

    every = run_sysmo("report", EXPERIMENT, "-o", str(runs), "--all-pairs")
    assert every.code == 0, every.output
    rows = pd.read_csv(paired)
    assert len(rows) == 6 and {(r.baseline, r.level) for r in rows.itertuples()} == {
        (a, b) for i, a in enumerate(LEVELS) for b in LEVELS[i + 1:]}
    assert list(rows["p_mcnemar_adjusted"]) == pytest.approx(holm(list(rows["p_mcnemar"])))  # all six together
    assert "baseline: feedback: every pair of levels (--all-pairs)" in \
        (runs / EXPERIMENT / "report" / "report.md").read_text()

    refused = run_sysmo("report", EXPERIMENT, "-o", str(runs), "--baseline", "feedback=some")
    assert refused.code == 2 and " ".join(refused.stderr.split()).endswith(  # after "writing the report of ..."
        "error: --baseline feedback=some: no attempt ran feedback some; its levels here: none, bare, diagnostics, "
        "full")
    refused = run_sysmo("report", EXPERIMENT, "-o", str(runs), "--baseline", "seed=1")
    assert refused.code == 2 and " ".join(refused.stderr.split()).endswith(
        "error: --baseline seed=1: no factor 'seed'; name one of agent, model, feedback, strategy, temperature, "
        "max_rounds")
    assert run_sysmo("report", EXPERIMENT, "-o", str(runs)).code == 0  # the default again, for the other tests
