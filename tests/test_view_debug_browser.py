"""Debugging an ablation in ``sysmo view``, in a real browser (Debian's Chromium driven by Playwright, at 1440x900 and
at a 390x844 phone): the attempts table, compare, every model call, the graph steps.

The experiment is a real run of the tool-calling ``openhands`` agent against the fake OpenAI server, two arms
(``--feedback none,diagnostics``) of one starter class-diagram task, checked by the real PlantUML, with checkpoints
kept; then ``sysmo fork`` of the diagnostics arm's attempt at step 3 with another model and another request
(``--prompt-file``). No page may scroll sideways or log a console error. Screenshots go to
``$SYSMO_SCREENSHOTS_DIR``, else the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from view_server import view_server
from agent_scripts import model_reply, replies_for
from fake_openai import FakeOpenAI
from sysmo_cli import run_sysmo

pytestmark = pytest.mark.slow  # a real run (PlantUML checks and scoring), a fork, then a browser

CHROMIUM = Path(os.environ.get("SYSMO_CHROMIUM", "/usr/bin/chromium"))
WIDTHS = {"wide": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
TASK = "starter/uml_class/library_loans"

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: pip install -e '.[view-test]'")
if not CHROMIUM.is_file():
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set SYSMO_CHROMIUM)", allow_module_level=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, str]:
    """The runs folder and the ids: ``<agent>/<feedback>`` for the four attempts of the two agents and two arms,
    ``fork`` (of ``base_modeling/diagnostics`` at round 1 with another model and bare feedback) and its step."""
    from sysmo.agents.control_script import broken_artifact
    from sysmo.benchmarks.registry import load_tasks
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment

    runs = tmp_path_factory.mktemp("debug-view")
    task = next(t for t in load_tasks(None, families=["starter"]) if t.id == TASK)

    def broken(request: dict) -> object:  # every attempt answers a broken diagram, each agent in its own way
        return model_reply("openhands" if request.get("tools") else "base_modeling", broken_artifact(task), task)

    with FakeOpenAI(default=broken) as server:
        config = ExperimentConfig(id="ab", output_dir=runs, agents=["base_modeling", "openhands"], samples=1,
                                  max_rounds=1, feedback=["none", "diagnostics"], checkpoints="steps",
                                  models=[{"model": "openai/fake-a", "api_base": server.base_url}],
                                  tasks=TaskSelection(benchmarks=["starter"], ids=[TASK]))
        run_experiment(config, progress=False)
        with sqlite3.connect(runs / "ab" / "results.sqlite") as conn:
            ids = {f"{agent}/{arm.split(',')[0].split('=')[1]}": attempt_id
                   for attempt_id, agent, arm in conn.execute("SELECT id, agent, arm FROM attempts")}
        server.push(*replies_for("base_modeling", task, [task.references.model]))
        forked = run_sysmo("fork", ids["base_modeling/diagnostics"], "--at", "round:1", "--model", "openai/fake-fork",
                           "--api-base", server.base_url, "--feedback", "bare", "--json", "-o", str(runs))
    assert forked.code == 0, forked.output
    fork = json.loads(forked.stdout)
    return {"runs": str(runs), **ids, "parent": ids["base_modeling/diagnostics"], "fork": fork["attempt_id"],
            "fork_step": str(fork["forked_at_step"])}


@pytest.fixture(scope="module")
def server(run):
    with view_server(run["runs"]) as url:
        yield url


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("SYSMO_SCREENSHOTS_DIR") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nsysmo view screenshots: {folder}")
    return folder


class Tab:
    """A page at one size that records every console error and uncaught exception."""

    def __init__(self, browser, size: dict[str, int]) -> None:
        self.page = browser.new_page(viewport=size)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"{self.page.url}: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"{self.page.url}: {e}"))

    def open(self, url: str) -> None:
        response = self.page.goto(url, timeout=90_000)
        assert response is not None and response.status == 200, url
        self.page.wait_for_load_state("load")

    def fits(self) -> None:
        sideways = self.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert sideways == 0, f"{self.page.url} scrolls {sideways} px sideways"


@pytest.fixture(scope="module")
def tabs(server):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        made = {name: Tab(browser, size) for name, size in WIDTHS.items()}
        yield made
        for tab in made.values():
            assert tab.errors == [], tab.errors
        browser.close()


# ---------------------------------------------------------------------------------------------- 1. attempts table
@pytest.mark.parametrize("size", list(WIDTHS))
def test_attempt_rows_open_on_click_or_enter_with_status_arm_and_link_in_sight(tabs, server, run, screenshots, size):
    tab = tabs[size]
    page = tab.page
    tab.open(f"{server}/e/ab")
    tab.fits()
    if size == "wide":
        headers = [h.strip() for h in page.locator("#attempts thead th").all_inner_texts()]
        assert headers[:4] == ["cmp", "status", "arm", "attempt"]
        assert [h for h in headers if h in ("syntax", "clue")] == ["syntax", "clue"]
        assert len(headers) == 13  # 11 columns, then the stages of the one kind shown (class diagrams) only
    row = page.locator(f'tr[data-href="/e/ab/a/{run["fork"]}"]')
    task = row.locator("td.task")
    assert task.inner_text().strip() == "library_loans" and task.get_attribute("title") == TASK
    # status, arm and the link are in sight, inside the table's box and the window
    box = page.locator("#attempts").locator("xpath=..").bounding_box()
    for cell in ("td.st", "td.arm", "td.link a.attempt-link"):
        found = row.locator(cell).bounding_box()
        assert found is not None and found["x"] >= 0 and found["x"] + found["width"] <= min(
            box["x"] + box["width"], WIDTHS[size]["width"]) + 1, (cell, found, box)
    if size == "phone":  # a card per attempt: the cells flow in rows, not one table row off the screen
        assert row.evaluate("r => getComputedStyle(r).display") == "flex"
        assert page.locator("#attempts thead").evaluate("h => getComputedStyle(h).display") == "none"
    page.locator("#attempts-heading").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / f"debug_attempts_{size}.png"))
    row.locator("td.task").click()  # a click anywhere on the row opens its attempt
    page.wait_for_url(f"**/e/ab/a/{run['fork']}")
    tab.open(f"{server}/e/ab")
    other = page.locator(f'tr[data-href="/e/ab/a/{run["openhands/none"]}"]')
    other.focus()
    page.keyboard.press("Enter")  # ... and Enter on a focused row
    page.wait_for_url(f"**/e/ab/a/{run['openhands/none']}")
    tab.open(f"{server}/e/ab")
    page.locator(f'input.pick[value="{run["openhands/none"]}"]').check()  # ticking a row to compare does not open it
    assert page.url.endswith("/e/ab")


# ---------------------------------------------------------------------------------------------- 2. compare
@pytest.mark.parametrize("size", list(WIDTHS))
def test_compare_names_both_sides_diffs_the_requests_and_aligns_a_forks_steps(tabs, server, run, screenshots, size):
    tab = tabs[size]
    page = tab.page
    tab.open(f"{server}/e/ab/a/{run['fork']}")
    page.locator("#compare-parent").click()  # from the fork: compare with parent
    page.wait_for_load_state("load")
    tab.fits()
    assert page.locator("#side-1 .side-id").inner_text() == run["parent"]
    assert page.locator("#side-2 .side-id").inner_text() == run["fork"]
    differs = {s: page.locator(f"#side-{s} td.differs").all_inner_texts() for s in (1, 2)}
    assert "openai/fake-a" in differs[1] and "openai/fake-fork" in differs[2]
    assert "base_modeling" not in differs[1] + differs[2]  # a setting both sides share is not marked
    assert f"fork of {run['parent']} at step {run['fork_step']}" in page.locator("#side-2 .fork-line").inner_text()
    assert run["fork"] in page.locator("#side-1 .fork-line").inner_text()
    # round 1's requests differ (the fork's bare feedback): side by side, the parent's left, the fork's right
    diff = page.locator("#prompt-1 details.prompt-diff")
    assert diff.count() == 1
    right = " ".join(diff.locator("tr.d-replace td.code:nth-child(4), tr.d-insert td.code:nth-child(4)").all_inner_texts())
    left = " ".join(diff.locator("tr.d-replace td.code:nth-child(2), tr.d-delete td.code:nth-child(2)").all_inner_texts())
    assert "Syntax check failed." in right and "unclosed-body" in left and "unclosed-body" not in right
    assert page.locator("#prompt-0 details.prompt-same").count() == 1  # round 0: one request, the parent's
    # the graph steps: the parent's up to the fork point inherited, the rest new on each side
    inherited = page.locator("#step-pairs tr.inherited th").all_inner_texts()
    assert inherited == [str(n) for n in range(int(run["fork_step"]) + 1)]
    assert page.locator("#step-pairs tr.new").count() >= 2
    page.screenshot(path=str(screenshots / f"debug_compare_fork_{size}.png"), full_page=True)
    # two arms: the differing setting is the feedback level
    tab.open(f"{server}/e/ab/compare?a={run['openhands/none']}&b={run['openhands/diagnostics']}")
    tab.fits()
    assert page.locator("#side-1 td.differs").all_inner_texts() == ["none"]
    assert page.locator("#side-2 td.differs").all_inner_texts() == ["diagnostics"]
    assert page.locator("#side-1 .fork-line").inner_text().startswith("not a fork")
    page.screenshot(path=str(screenshots / f"debug_compare_arms_{size}.png"), full_page=True)


# ---------------------------------------------------------------------------------------------- 3. model calls
@pytest.mark.parametrize("size", list(WIDTHS))
def test_every_model_call_shows_parameters_messages_tool_calls_and_reply_never_null(tabs, server, run, screenshots, size):
    tab = tabs[size]
    page = tab.page
    tab.open(f"{server}/e/ab/a/{run['openhands/diagnostics']}")
    tab.fits()
    calls = page.locator("#model-calls details.model-call")
    assert calls.count() == 2
    first = calls.first
    first.locator(":scope > summary").click()
    facts = first.inner_text()
    assert "generator" in facts and "openai/fake-a" in facts and "12+7 tokens" in facts and " s" in facts
    params = dict(zip(first.locator("table.params th").all_inner_texts(), first.locator("table.params td").all_inner_texts()))
    assert params["temperature"] == "0.2" and "write_file" in params["tools"] and "run_check" in params["tools"]
    assert "seed" in params  # the (task, sample)'s seed, as the record holds it
    reply = first.locator(".reply-tool-calls").inner_text()
    assert "write_file" in reply and "path = reference.puml" in reply and "run_check" in reply
    first.screenshot(path=str(screenshots / f"debug_model_call_{size}.png"))
    # the round view: openhands' assistant turn as its tool calls, then the tool results; no "null" anywhere
    round1 = page.locator("#round-1")
    round1.locator("details.prompt > summary").click()
    assistant = round1.locator(".msg-assistant")
    assert "write_file" in assistant.inner_text() and "null" not in assistant.inner_text()
    results = round1.locator(".msg-tool").all_inner_texts()
    assert any("Wrote reference.puml" in r for r in results) and any("plantuml check" in r for r in results)
    texts = page.locator(".msg pre, pre.reply-text").all_inner_texts()
    assert texts and all(t.strip() != "null" for t in texts)
    # a round's model call links to its full record, which unfolds
    round1.locator("a.call-record").first.click()
    record = page.locator(f"#model-calls details.model-call").nth(1)
    # the page unfolds it on the link's hashchange event, which comes after the click returns: waited for
    record.locator(":scope > summary").wait_for()
    page.wait_for_function("el => el.open", arg=record.element_handle(), timeout=10_000)
    assert record.get_attribute("open") is not None and "round 1" in record.locator(":scope > summary").inner_text()


# ---------------------------------------------------------------------------------------------- 6. graph steps
@pytest.mark.parametrize("size", list(WIDTHS))
def test_graph_steps_show_rounds_state_changes_inherited_steps_and_the_fork_command(tabs, server, run, screenshots,
                                                                                    size):
    from sysmo.graphs.checkpoint import history
    from sysmo.runner.fork import resolve_step

    tab = tabs[size]
    page = tab.page
    tab.open(f"{server}/e/ab/a/{run['fork']}")
    tab.fits()
    rows = page.locator("#graph-steps tbody tr")
    steps = [int(t.split()[0]) for t in page.locator("#graph-steps tbody tr td:first-child").all_inner_texts()]
    assert steps[0] == 0 and -1 not in steps  # no phantom input step
    rounds_shown = {int(t) for t in page.locator("#graph-steps tbody tr td:nth-child(4)").all_inner_texts() if t.strip()}
    rounds_run = {int(i.split("-")[1]) for i in page.locator("section.round").evaluate_all("s => s.map(e => e.id)")}
    assert rounds_shown == rounds_run == {0, 1}
    assert [r.split()[0] for r in page.locator("#graph-steps tr.inherited td:first-child").all_inner_texts()] == \
        [str(n) for n in range(int(run["fork_step"]) + 1)]
    # the state's changes since the step before, the full state behind a toggle
    step2 = page.locator("#step-2")
    assert step2.locator("ul.changes li").count() >= 1
    assert step2.locator("details.state").get_attribute("open") is None
    # checkpoint ids shortened on one line, the full id on hover and to copy
    cell = step2.locator("td.checkpoint .mono")
    full = cell.get_attribute("title")
    assert len(cell.inner_text()) < len(full) and full.startswith(cell.inner_text())
    assert step2.locator("td.checkpoint button.copy").get_attribute("data-copy") == full
    assert cell.bounding_box()["height"] < 20
    # the command that resumes from a step, with the step as `sysmo fork --at` takes it
    command = step2.locator("code.cmd").inner_text()
    assert command == f"sysmo fork {run['fork']} --at 2"
    found = resolve_step(history(Path(run["runs"]) / "ab" / "checkpoints.sqlite", run["fork"]),
                         command.split("--at ")[1], run["fork"])
    assert found.checkpoint_id == full
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    button = step2.locator("td:last-child button.copy")
    button.click()
    playwright_api.expect(button).to_have_text("copied")
    assert page.evaluate("navigator.clipboard.readText()") == command
    assert "end of the graph" in rows.last.inner_text()
    page.locator("#graph-steps").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / f"debug_graph_steps_{size}.png"))
