"""``sysmo view`` in a real browser: headless Chromium (Debian's package) driven by Playwright over a control
experiment made here with ``sysmo run`` (two starter tasks, the reference and mockllm/control providers).

One experiment and one ``sysmo view`` server for the module. Screenshots of every page go to
``$SYSMO_SCREENSHOTS_DIR``, else ``.ci/artifacts/screenshots/`` under CI (kept as CI artefacts), else the test's
temporary folder; the folder is printed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sysmo_cli import run_sysmo

pytestmark = pytest.mark.slow  # a sysmo run over real PlantUML and OpenSysML, then a browser

CHROMIUM = Path(os.environ.get("SYSMO_CHROMIUM", "/usr/bin/chromium"))
TASKS = "starter/uml_class/library_loans,starter/sysml/electric_kettle"
REPO = Path(__file__).resolve().parents[1]

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: pip install -e '.[view-test]'")
if not CHROMIUM.is_file():
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set SYSMO_CHROMIUM)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    """A control experiment: 2 tasks x 1 agent x (reference, mockllm/control) x 1 sample."""
    root = tmp_path_factory.mktemp("view")
    # every stage scored, names compared by their tokens: the run does not import torch to load MiniLM and
    # BERTScore (the pages show whatever scores there are; the embeddings are tested on their own). `sysmo run`'s
    # own code, in this process: no interpreter start of its own
    settings = root / "light-scoring.yaml"
    settings.write_text("scoring:\n  embedding: token\n  similarity: token\n  text.bertscore: false\n")
    done = run_sysmo("run", str(settings), "--ids", TASKS, "--agent", "base_modeling", "--model", "reference",
                     "--model", "mockllm/control", "--samples", "1", "--no-progress", "--no-report", "--id", "ctl",
                     "-o", str(root / "runs"), env={"SYSMO_HOME": str(root / "home")})
    assert done.code == 0, done.output
    return root / "runs"


@pytest.fixture(scope="module")
def server(runs):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sysmo.cli", "view", str(runs), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"sysmo view did not start: {proc.communicate()[0]}")
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def page(server):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        yield page
        browser.close()


def test_experiments_page_lists_the_control_with_its_counts(page, server, screenshots):
    page.goto(server + "/")
    row = page.locator("#experiments tbody tr").filter(has_text="ctl")
    assert row.count() == 1
    text = row.inner_text()
    assert "CONTROL" in text and "finished" in text
    assert row.locator("td").nth(3).inner_text() == "4"  # attempts
    page.screenshot(path=str(screenshots / "experiments.png"), full_page=True)
    row.get_by_role("link", name="ctl").click()
    page.wait_for_url(server + "/e/ctl")
    assert page.locator("#attempts tbody tr").count() == 4


def test_a_filter_narrows_the_attempt_table_and_lands_in_the_url(page, server, screenshots):
    page.goto(server + "/e/ctl")
    page.select_option("select[name=model]", "mockllm/control")  # submits on change
    page.wait_for_url("**model=mockllm%2Fcontrol**")
    rows = page.locator("#attempts tbody tr")
    assert rows.count() == 2
    assert all("mockllm/control" in rows.nth(i).inner_text() for i in range(2))
    assert page.locator("#shown-count").inner_text() == "2 of 4"
    page.screenshot(path=str(screenshots / "attempts_filtered.png"), full_page=True)
    # sorting by rounds, descending: the mock (2 rounds) first
    page.goto(server + "/e/ctl?sort=rounds&desc=1")
    first = page.locator("#attempts tbody tr").first.inner_text()
    assert "mockllm/control" in first


def test_summary_counts_link_to_the_attempts_behind_them(page, server):
    page.goto(server + "/e/ctl")
    row = page.locator("#summary tbody tr").filter(has_text="reference").filter(has_text="uml_class")
    row.locator("td").nth(4).get_by_role("link").click()  # "passed" count
    page.wait_for_url("**status=passed**")
    rows = page.locator("#attempts tbody tr")
    assert rows.count() == 1
    assert "library_loans" in rows.first.inner_text() and "reference" in rows.first.inner_text()


def test_report_numbers_link_to_their_attempts(page, server, screenshots):
    page.goto(server + "/e/ctl")
    page.locator("#report-link").click()
    page.wait_for_url("**/e/ctl/report")
    assert page.locator("table.leaderboard").count() == 2  # sysml and uml_class, each with its own columns
    assert "clue" in page.locator("#board-uml_class thead").inner_text()
    assert "clue" not in page.locator("#board-sysml thead").inner_text()
    assert page.locator("#metric-lines li").count() >= 4
    page.screenshot(path=str(screenshots / "report.png"), full_page=True)
    row = page.locator("#board-sysml tbody tr").filter(has_text="mockllm/control")
    row.locator("td").nth(4).get_by_role("link").click()  # pass@1 of base_modeling / mockllm/control on sysml
    page.wait_for_url("**status=passed**")
    rows = page.locator("#attempts tbody tr")
    assert rows.count() == 1
    assert "electric_kettle" in rows.first.inner_text() and "mockllm/control" in rows.first.inner_text()


def test_attempt_page_shows_rounds_diff_diagnostics_scores_and_checkpoints(page, server, screenshots):
    page.goto(server + "/e/ctl?model=mockllm%2Fcontrol&kind=uml_class")
    link = page.locator("a.attempt-link").first
    attempt_id = link.inner_text()
    link.click()
    page.wait_for_url(f"**/a/{attempt_id}")
    assert page.locator("#attempt-id").inner_text() == attempt_id  # the full id, never cut
    assert page.locator("section.round").count() == 2  # the scripted mistake, then its repair
    # round 0: PlantUML's diagnostic sits under the line it names; round 1: a side-by-side diff
    assert page.locator("#round-0 tr.diag").count() >= 1
    assert page.locator("#round-1 table.sbs tr.d-replace, #round-1 table.sbs tr.d-insert").count() >= 1
    timeline = page.locator("#timeline").inner_text()
    assert "LLM CALL" in timeline.upper() and "TOOL CHECK" in timeline.upper() and "GRAPH STEP" in timeline.upper()
    assert page.locator("#graph-steps tbody tr").count() >= 4
    assert page.locator("table.scores tbody tr").filter(has_text="clue").count() == 1
    page.screenshot(path=str(screenshots / "attempt.png"))
    page.screenshot(path=str(screenshots / "attempt_full.png"), full_page=True)
    # a timeline entry jumps to the tool check it names
    page.locator("#timeline a").filter(has_text="plantuml").first.click()
    assert page.url.endswith("#round-0-check")


def test_compare_page_from_the_attempt_table(page, server, screenshots):
    page.goto(server + "/e/ctl?kind=sysml")
    picks = page.locator("input.pick")
    assert picks.count() == 2
    assert page.locator("#compare-button").is_disabled()
    picks.nth(0).check()
    picks.nth(1).check()
    page.locator("#compare-button").click()
    page.wait_for_url("**/compare?**")
    sides = page.locator("section.side")
    assert sides.count() == 2
    headings = [sides.nth(i).locator("h2").first.inner_text() for i in range(2)]
    assert sorted(h.split(" / ")[1] for h in headings) == ["mockllm/control", "reference"]
    assert "different tasks" not in page.content()
    page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
    # a link from the compare page leads back to one attempt
    sides.nth(0).locator("h2 a").click()
    page.wait_for_url("**/a/**")
    assert page.locator("#attempt-header").count() == 1


def test_an_unknown_attempt_is_a_404_page(page, server):
    response = page.goto(server + "/e/ctl/a/0123456789abcdef")
    assert response is not None and response.status == 404
    assert "no attempt" in page.locator("#error-detail").inner_text()


def test_screenshots_were_written(screenshots):
    names = {p.name for p in screenshots.glob("*.png")}
    assert {"experiments.png", "attempts_filtered.png", "report.png", "attempt.png", "compare.png"} <= names
