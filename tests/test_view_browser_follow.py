"""``sysmo view`` in Chromium (Playwright; tests/test_view_browser.py's set-up) at 1440x900 and 390x844: the report
page puts what each level buys right after the leaderboards and marks the comparisons significant after Holm's
correction, breaks no word or number inside, and on a phone keeps pass@1 and the kind's headline score in view; a
running experiment's attempts page follows the run (new attempts and statuses without a reload); two or more
experiments compared on one page (``sysmo compare``'s analysis).

Experiments: a real run of ``speed/view_speed.py``'s ``build_experiment`` (108 attempts: three offline models on six
starter tasks, scored, with ``sysmo report``'s plots), and experiments written with the store's API (a running one
that grows while the page is open; two that differ in their strategy)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from view_server import chromium, own_home, view_server

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.store import AttemptRecord, Store
from test_compare import experiment

pytestmark = pytest.mark.slow

CHROMIUM = Path(os.environ.get("SYSMO_CHROMIUM", "/usr/bin/chromium"))
WIDTHS = {"wide": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: pip install -e '.[view-test]'")
if not CHROMIUM.is_file():
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set SYSMO_CHROMIUM)", allow_module_level=True)

# every word of the element's cells laid out on one line: a word or a number broken inside has two boxes
BROKEN_WORDS = """(selector) => {
  const broken = [];
  for (const cell of document.querySelectorAll(selector)) {
    if (!cell.offsetParent) continue;  // hidden (a phone's off-screen columns)
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""


def _running_experiment(runs: Path, done: int) -> Store:
    store = Store(runs / "live" / "results.sqlite")
    store.save_experiment("live", {"agents": ["base_modeling"], "models": ["mockllm/control"], "samples": 1,
                                   "tasks": {"ids": []}}, {"planned_attempts": 6}, is_control=True)
    _add(store, range(done))
    return store


def _add(store: Store, indexes) -> None:
    store.save_attempts("live", [AttemptRecord.of(
        Attempt(id=f"live{i:02d}attempt", task_id=f"starter/uml_class/t{i}", agent="base_modeling",
                model="mockllm/control", status=AttemptStatus.PASSED if i % 2 == 0 else AttemptStatus.FAILED),
        {"benchmark": "starter", "kind": "uml_class"}) for i in indexes])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    from sysmo.speed.view_speed import build_experiment

    root = tmp_path_factory.mktemp("follow")
    with own_home(root):
        build_experiment(root / "runs", attempts=108, experiment_id="wide")
    tasks = [f"t{i}" for i in range(12)]
    experiment(root / "runs", "plain", tasks, {(t, s): i < 2 for i, t in enumerate(tasks) for s in range(2)})
    experiment(root / "runs", "cot", tasks, {(t, s): i < 11 for i, t in enumerate(tasks) for s in range(2)},
               strategy="cot")
    _running_experiment(root / "runs", done=2).close()
    return root / "runs"


@pytest.fixture(scope="module")
def server(runs):
    with view_server(str(runs)) as url:
        yield url


@pytest.fixture(scope="module")
def browser(server):
    with chromium(playwright_api, CHROMIUM) as launched:
        yield launched


@pytest.fixture(params=list(WIDTHS))
def page(request, browser):
    page = browser.new_page(viewport=WIDTHS[request.param])
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 40" not in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.size = request.param
    yield page
    page.close()
    assert errors == []


def _sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_report_page_has_what_each_level_buys_first_with_significance_marked(page, server):
    page.goto(server + "/e/wide/report", timeout=90_000)
    tops = {name: page.locator(f"#{name}").bounding_box()["y"] for name in ("leaderboards", "paired", "plots")}
    assert tops["leaderboards"] < tops["paired"] < tops["plots"]  # right after the leaderboards, before ~20 plots
    note = page.locator("#significance-note").inner_text()
    assert "Holm-adjusted p < 0.05" in note
    # stubborn fails where reference passes on every pair: significant after correction, its cells marked
    marked = page.locator("table.paired td.sig")
    assert marked.count() >= 2 and all(t.endswith("*") for t in marked.all_inner_texts())
    row = page.locator("table.paired tr").filter(has_text="mockllm/stubborn vs reference").first
    assert row.locator("td.sig").count() >= 2
    assert page.evaluate(BROKEN_WORDS, "table.paired td, table.paired th, table.leaderboard td, "
                                       "table.leaderboard th, table.matrix th") == []
    assert _sideways(page) == 0
    board = page.locator("#board-uml_class")
    visible = [h.strip() for h, shown in zip(board.locator("th").all_inner_texts(),
                                             [th.is_visible() for th in board.locator("th").all()]) if shown]
    assert {"agent", "model", "pass@1 after repair", "clue"} <= set(visible)
    if page.size == "phone":  # the headline score within the phone's width, the secondary columns hidden
        assert "tasks" not in visible and "samples" not in visible
        clue = board.locator("th", has_text="clue").first.bounding_box()
        assert clue["x"] + clue["width"] <= 390


def test_a_running_experiments_attempts_page_follows_the_run(page, server, runs):
    store = Store(runs / "live" / "results.sqlite")
    try:
        page.goto(server + "/e/live", timeout=90_000)
        assert page.locator("#live-note").is_visible()
        assert page.locator("#shown-count").inner_text() == "2 of 2"
        _add(store, range(2, 5))  # three more attempts finish while the page is open
        page.wait_for_function("document.getElementById('shown-count').textContent === '5 of 5'", timeout=20_000)
        assert page.locator("#attempts tbody tr").count() == 5
        assert page.locator("#attempts tbody tr").filter(has_text="live04attempt").count() == 1
        assert page.url.endswith("/e/live")  # no navigation: the content was swapped in
        assert _sideways(page) == 0
    finally:
        store.close()
        # the next run of this test (the other width) starts from two attempts again
        import sqlite3

        with sqlite3.connect(runs / "live" / "results.sqlite") as conn:
            conn.execute("DELETE FROM attempts WHERE id NOT IN ('live00attempt', 'live01attempt')")


def test_a_running_attempts_page_shows_its_rounds_as_they_finish(page, server, runs):
    from sysmo.contracts.attempt import Round
    from sysmo.graphs import live

    attempt = live.LiveAttempt(id=f"run{page.size}attempt", task_id="starter/uml_class/library_loans",
                               agent="base_modeling", model="mockllm/control")
    with live.publishing(runs / "live", attempt):
        live.round_finished([Round(index=0, extraction_error="no ```plantuml block in the reply")])
    try:
        page.goto(server + "/e/live", timeout=90_000)
        assert page.locator("#running-now").filter(has_text=attempt.id).count() == 1
        page.locator(f'#running-now a[href$="{attempt.id}"]').click()
        page.wait_for_url(f"**/a/{attempt.id}")
        assert page.locator("#live-status").inner_text() == "running"
        assert page.locator("section.live-round").count() == 1
        with live.publishing(runs / "live", attempt):  # the repair round finishes while the page is open
            live.round_finished([Round(index=0), Round(index=1, kind="repair")])
        page.wait_for_selector("#round-1", timeout=20_000)
        assert page.locator("#live-rounds").inner_text() == "2 round(s) finished"
        assert _sideways(page) == 0
    finally:
        live.stored(runs / "live", attempt.id)


def test_two_experiments_compared_on_one_page(page, server):
    page.goto(server + "/", timeout=90_000)
    form = page.locator("#cross-compare")
    form.locator('input[value="plain"]').check()
    form.locator('input[value="cot"]').check()
    form.locator("#cross-compare-button").click()
    page.wait_for_url("**/compare?**")
    assert "strategy" in page.locator("#cross-what").inner_text()
    table = page.locator("#cross-uml_class")
    assert "cot vs none" in table.inner_text() or "cot vs" in table.inner_text()
    assert page.locator("#cross-uml_class td.sig").count() >= 2
    assert "Holm-adjusted p < 0.05" in page.locator("#significance-note").inner_text()
    assert page.evaluate(BROKEN_WORDS, "table.paired td, table.paired th") == []
    assert _sideways(page) == 0
