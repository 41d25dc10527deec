"""``sysmo view`` in a real browser: headless Chromium (Debian's package) driven by Playwright, at 1440x900 and at a
390x844 phone, over an experiment of 504 attempts made once for the module by ``speed/view_speed.py``'s
``build_experiment`` (a real ``run_experiment`` of the offline ``reference``, ``mockllm/control`` and
``mockllm/stubborn`` models on three class-diagram and three architecture starter tasks, checked by the real PlantUML,
scored by the real cascades once per distinct artifact, no judge, then ``sysmo report``'s plots).

One experiment and one ``sysmo view`` server for the module. No page may scroll sideways and no page may log a
console error. Screenshots of every page go to ``$SYSMO_SCREENSHOTS_DIR``, else ``.ci/artifacts/screenshots/``
under CI (kept as CI artefacts), else the test's temporary folder; the folder is printed.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import pytest
from view_server import chromium, own_home, view_server

pytestmark = pytest.mark.slow  # a 504-attempt run with PlantUML scoring, then a browser

CHROMIUM = Path(os.environ.get("SYSMO_CHROMIUM", "/usr/bin/chromium"))
REPO = Path(__file__).resolve().parents[1]
WIDTHS = {"wide": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: pip install -e '.[view-test]'")
if not CHROMIUM.is_file():
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set SYSMO_CHROMIUM)", allow_module_level=True)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    if os.environ.get("SYSMO_SCREENSHOTS_DIR"):
        folder = Path(os.environ["SYSMO_SCREENSHOTS_DIR"])
    elif os.environ.get("CI"):
        folder = REPO / ".ci" / "artifacts" / "screenshots"
    else:
        folder = tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nsysmo view screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    from sysmo.speed.view_speed import build_experiment

    root = tmp_path_factory.mktemp("view")
    with own_home(root):
        build_experiment(root / "runs", attempts=504, experiment_id="wide")
    return root / "runs"


@pytest.fixture(scope="module")
def server(runs):
    with view_server(str(runs)) as url:
        yield url


@pytest.fixture(scope="module")
def browser(server):
    with chromium(playwright_api, CHROMIUM) as launched:
        yield launched


class Tab:
    """A page at one size that records every console error and uncaught exception."""

    def __init__(self, browser, size: dict[str, int]) -> None:
        self.page = browser.new_page(viewport=size, accept_downloads=True)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"{self.page.url}: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"{self.page.url}: {e}"))

    def open(self, url: str):
        response = self.page.goto(url, timeout=90_000)
        self.page.wait_for_load_state("load")
        return response

    def sideways_scroll(self) -> int:
        """How far the page scrolls sideways (0 when it fits its window)."""
        return self.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.fixture(scope="module")
def tabs(browser):
    made = {name: Tab(browser, size) for name, size in WIDTHS.items()}
    yield made
    for tab in made.values():
        tab.page.close()


@pytest.fixture(scope="module")
def ids(runs) -> dict[str, list[str]]:
    """Attempt ids by (kind): two failed mockllm/stubborn attempts of one task, and one of another task."""
    import sqlite3

    with sqlite3.connect(runs / "wide" / "results.sqlite") as conn:
        rows = conn.execute("SELECT id, task_id FROM attempts WHERE model='mockllm/stubborn' AND status='failed' "
                            "ORDER BY task_id, sample_index").fetchall()
    first = [i for i, t in rows if t == rows[0][1]][:2]
    other = next(i for i, t in rows if t != rows[0][1])
    return {"same_task": first, "other_task": [other]}


@pytest.mark.parametrize("size", list(WIDTHS))
def test_experiments_page_fits_and_shows_rate_progress_and_isolation(tabs, server, screenshots, size):
    tab = tabs[size]
    tab.open(server + "/")
    row = tab.page.locator("#experiments tbody tr[data-experiment=wide]")
    text = row.inner_text()
    assert "CONTROL" in text and "finished" in text
    assert row.locator('[data-field="done"]').inner_text() == "504 / 504"
    assert row.locator('[data-field="pass_rate"]').inner_text().endswith("%")
    badge = row.locator(".badge")
    assert badge.inner_text() and badge.get_attribute("title")  # the full isolation text on hover
    assert tab.sideways_scroll() == 0
    # every field of the row is in sight, the isolation badge included (on a phone: a card, not a scrolled table)
    width = tab.page.viewport_size["width"]
    box = badge.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    icon = tab.page.request.get(server + "/favicon.ico")
    assert icon.ok and "svg" in icon.headers["content-type"]
    tab.page.screenshot(path=str(screenshots / f"experiments_{size}.png"), full_page=True)


@pytest.mark.parametrize("size", list(WIDTHS))
def test_attempts_page_pages_searches_and_fits(tabs, server, screenshots, size):
    tab = tabs[size]
    tab.open(server + "/e/wide")
    assert tab.page.locator("#shown-count").inner_text() == "504 of 504"
    assert tab.page.locator("#attempts tbody tr").count() == 50  # one page
    assert "page 1 of 11" in tab.page.locator("#page-of").inner_text()
    headers = tab.page.locator("#attempts thead th.stage-col").all_inner_texts()
    assert {"syntax", "clue", "validity", "structure", "judge"} <= {h.strip() for h in headers}
    # "—" with the reason on hover for the judge, which no attempt was scored on
    dash = tab.page.locator("#attempts td.not-scored").first
    assert dash.inner_text() == "—" and dash.get_attribute("title").startswith("not scored:")
    assert tab.sideways_scroll() == 0
    tab.page.screenshot(path=str(screenshots / f"attempts_{size}.png"))
    tab.page.locator("#attempts-heading").scroll_into_view_if_needed()
    tab.page.evaluate("document.getElementById('attempts-heading').scrollIntoView()")
    tab.page.screenshot(path=str(screenshots / f"attempts_{size}_table.png"))
    # a search over task, prompt, reply and diagnostics
    tab.page.fill("#search", "library_loans")
    tab.page.press("#search", "Enter")
    tab.page.wait_for_url("**q=library_loans**")
    assert tab.page.locator("#shown-count").inner_text() == "84 of 504"
    assert all("library_loans" in t for t in tab.page.locator("#attempts td.task").all_inner_texts())
    tab.page.goto(server + "/e/wide?q=is+not+closed&model=mockllm%2Fstubborn")  # a PlantUML diagnostic of some tasks
    matched = int(tab.page.locator("#shown-count").inner_text().split(" of ")[0])
    assert 0 < matched < 168
    assert tab.sideways_scroll() == 0


def test_csv_export_is_the_filtered_view(tabs, server):
    tab = tabs["wide"]
    tab.open(server + "/e/wide?q=library_loans&status=failed")
    shown = int(tab.page.locator("#shown-count").inner_text().split(" of ")[0])
    with tab.page.expect_download() as download:
        tab.page.locator("#csv-link").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert len(rows) == shown > 0
    assert {r["status"] for r in rows} == {"failed"} and all("library_loans" in r["task_id"] for r in rows)
    assert "score.judge" in rows[0] and "score.clue" in rows[0]
    assert all(r["score.judge"] == "" for r in rows)  # not scored: empty, never 0


def test_sorting_and_filtering_are_query_parameters(tabs, server):
    page = tabs["wide"].page
    tabs["wide"].open(server + "/e/wide")
    page.select_option("select[name=model]", "reference")  # submits on change
    page.wait_for_url("**model=reference**")
    assert page.locator("#shown-count").inner_text() == "168 of 504"
    page.goto(server + "/e/wide?sort=rounds&desc=1")
    rounds = page.locator("#attempts tbody tr").first.locator('td[data-label="rounds"]').inner_text()
    assert rounds == "2"  # the most rounds first: the first answer and its repair


@pytest.mark.parametrize("size", list(WIDTHS))
def test_report_page_compares_with_plots_paired_tests_and_fits(tabs, server, screenshots, size):
    tab = tabs[size]
    tab.open(server + "/e/wide/report")
    assert tab.page.locator("table.leaderboard").count() == 2  # architecture and uml_class, each its own columns
    assert tab.page.locator("table.leaderboard td.best").count() >= 2  # the best of each column marked
    assert tab.page.locator("table.leaderboard svg.ci").count() >= 4  # CIs drawn as bars
    judge = tab.page.locator('#board-architecture td.not-scored[title*="no judge model"]')
    # the judge column of each of the three models (on a phone hidden: agent, model, pass@1 and the headline only)
    assert judge.count() == 3 and judge.first.text_content().strip() == "—"
    plots = tab.page.locator("#plots figure.plot img")
    assert plots.count() >= 5
    captions = tab.page.locator("#plots figcaption").all_inner_texts()
    assert all(not c.endswith(".png") for c in captions) and any("agent (rows)" in c for c in captions)
    assert not any("judge" in c for c in captions)  # no plot of a stage never scored
    paired = tab.page.locator("table.paired")
    assert paired.count() == 2 and "mockllm/control vs reference" in paired.first.inner_text()
    assert tab.page.locator("#task-matrix a.sq").count() == 504  # every sample, per task and agent / model
    assert tab.page.locator("#notes details").count() == 1  # the notes folded below
    assert tab.sideways_scroll() == 0
    # no agent or model name runs out of its cell into the next one (names break at their _ / - . joints)
    overflowing = tab.page.evaluate("""[...document.querySelectorAll('table.leaderboard td.wrap')]
        .filter(td => td.scrollWidth > td.clientWidth + 1).map(td => td.textContent.trim())""")
    assert overflowing == []
    tab.page.screenshot(path=str(screenshots / f"report_{size}.png"), full_page=True)
    tab.page.evaluate("window.scrollTo(0, 0)")
    tab.page.screenshot(path=str(screenshots / f"report_{size}_top.png"))
    # the leaderboard's secondary columns on request, still inside its own box
    tab.page.locator("button.toggle-columns").first.click()
    assert tab.page.locator("#board-architecture th.extra").first.is_visible()
    assert tab.sideways_scroll() == 0


def test_report_images_load_and_numbers_link_to_their_attempts(tabs, server):
    page = tabs["wide"].page
    tabs["wide"].open(server + "/e/wide/report")
    for img in page.locator("#plots img").all():
        img.scroll_into_view_if_needed()
    page.wait_for_function("[...document.querySelectorAll('#plots img')].every(i => i.complete && i.naturalWidth > 0)")
    row = page.locator("#board-uml_class tbody tr").filter(has_text="mockllm/control")
    row.locator("td").nth(4).get_by_role("link").click()  # pass@1 of base_modeling / mockllm/control on uml_class
    page.wait_for_url("**status=passed**")
    assert int(page.locator("#shown-count").inner_text().split(" of ")[0]) > 0
    assert all("mockllm/control" in t for t in page.locator("#attempts tbody tr").all_inner_texts())


@pytest.mark.parametrize("size", list(WIDTHS))
def test_attempt_page_says_why_first_and_draws_the_graph(tabs, server, screenshots, ids, size):
    tab = tabs[size]
    attempt_id = ids["same_task"][0]
    tab.open(server + f"/e/wide/a/{attempt_id}")
    outcome = tab.page.locator("#outcome")
    assert outcome.is_visible() and outcome.bounding_box()["y"] < 300  # at the top
    assert re.search(r"\.puml:\d+", outcome.inner_text()), outcome.inner_text()  # PlantUML's diagnostic, file:line
    times = tab.page.locator("#time-split tbody tr")
    assert times.count() == 2 and "repair" in times.nth(1).inner_text()
    graph = tab.page.locator("#agent-graph svg.agent-graph")
    visited = {g.get_attribute("data-node") for g in graph.locator("g.node.visited").all()}
    assert {"first_request", "generate", "check"} <= visited
    assert graph.locator("path.edge.taken").count() >= 4
    assert tab.page.locator("#run-settings").count() == 1
    state = tab.page.locator("#graph-steps details.state").nth(3)  # after first_request: the state has a round
    state.locator("summary").click()
    assert '"round_index"' in state.locator("pre").inner_text()
    assert tab.sideways_scroll() == 0
    tab.page.screenshot(path=str(screenshots / f"attempt_{size}.png"))
    if size == "wide":
        tab.page.screenshot(path=str(screenshots / "attempt_full.png"), full_page=True)
        assert tab.page.locator("#round-1 table.sbs tr.d-replace, #round-1 table.sbs tr.d-insert, "
                                "#round-1 table.sbs tr.d-delete").count() + tab.page.locator("#round-0 tr.diag").count() >= 1
        tab.page.locator("#timeline a").filter(has_text="plantuml").first.click()
        assert tab.page.url.endswith("#round-0-check")


def test_compare_only_within_one_task_with_rounds_aligned_and_final_models_diffed(tabs, server, screenshots, ids):
    page = tabs["wide"].page
    a, b = ids["same_task"]
    other = ids["other_task"][0]
    tabs["wide"].open(server + "/e/wide?sort=task_id&status=failed&model=mockllm%2Fstubborn")
    button = page.locator("#compare-button")
    assert button.is_disabled()
    page.locator(f"input.pick[value='{a}']").check()
    if page.locator(f"input.pick[value='{other}']").count():
        page.locator(f"input.pick[value='{other}']").check()
        assert button.is_disabled() and "different tasks" in page.locator("#compare-why").inner_text()
        page.locator(f"input.pick[value='{other}']").uncheck()
    page.locator(f"input.pick[value='{b}']").check()
    assert button.is_enabled()
    assert page.locator("#compare-bar").evaluate("e => getComputedStyle(e).position") == "sticky"
    button.click()
    page.wait_for_url("**/compare?**")
    assert page.locator("section.side").count() == 2
    assert page.locator("#aligned-rounds tbody tr[id^=aligned-]").count() == 2  # round 0 beside round 0, 1 beside 1
    assert page.locator("#final-diff, #final-same").count() >= 1
    assert tabs["wide"].sideways_scroll() == 0
    page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
    refused = page.goto(server + f"/e/wide/compare?a={a}&b={other}")
    assert refused.status == 400 and "only attempts of one task compare" in page.locator("#error-detail").inner_text()


def test_an_unknown_attempt_is_a_404_page(tabs, server):
    page = tabs["wide"].page
    response = page.goto(server + "/e/wide/a/0123456789abcdef")
    assert response is not None and response.status == 404
    assert "no attempt" in page.locator("#error-detail").inner_text()


def test_no_console_errors_and_screenshots_were_written(tabs, screenshots):
    # the error pages above answer 400 and 404 on purpose: Chromium logs those loads, nothing else may appear
    errors = [e for tab in tabs.values() for e in tab.errors if "status of 40" not in e]
    assert errors == []
    names = {p.name for p in screenshots.glob("*.png")}
    assert {"experiments_wide.png", "attempts_wide.png", "report_wide.png", "report_phone.png", "attempt_wide.png",
            "compare.png"} <= names
