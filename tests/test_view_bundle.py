"""``sysmo view --bundle DIR``: the viewer's pages as a static site. Without a browser: URLs map to files, every link of
every page is a relative path to a file of the bundle, a folder sysmo did not write is refused. In headless Chromium
(Debian's package, driven by Playwright) over a real run (mockllm/control and reference on one starter task, two
samples, checked by PlantUML, with ``sysmo report``'s plots): the pages open from file://, the links between the
experiments, the attempt table (filtered and sorted in the browser), the report, an attempt and a comparison work,
no request leaves the folder and no console error is logged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from view_server import own_home

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.errors import ConfigError
from sysmo.store import Store
from sysmo.view.bundle import MARKER, file_of, write_bundle

CHROMIUM = Path(os.environ.get("SYSMO_CHROMIUM", "/usr/bin/chromium"))
META = {"benchmark": "starter", "kind": "uml_class"}
LINK = re.compile(r'\b(?:href|src)="([^"#]*)(?:#[^"]*)?"')


def test_app_urls_map_to_bundle_files():
    assert file_of("/") == "index.html"
    assert file_of("/static/style.css") == "static/style.css"
    assert file_of("/e/exp") == "e/exp/index.html"
    assert file_of("/e/exp?status=passed") == "e/exp/index.html"  # the query stays on the link, read by the page
    assert file_of("/e/exp/report") == "e/exp/report.html"
    assert file_of("/e/exp/a/aa01") == "e/exp/a/aa01.html"
    assert file_of("/e/exp/a/aa01/json") == "e/exp/a/aa01.json"
    assert file_of("/e/exp/plots/cost.png") == "e/exp/plots/cost.png"
    assert file_of("/e/exp/compare?a=aa01&amp;b=aa02") == "e/exp/compare/aa01--aa02.html"
    assert file_of("/e/exp/compare") is None  # the compare form: handled by static/bundle.js
    assert file_of("/e/../etc/passwd") is None and file_of("/elsewhere") is None


@pytest.fixture()
def runs(tmp_path) -> Path:
    for experiment in ("exp", "other"):
        store = Store(tmp_path / "runs" / experiment / "results.sqlite")
        store.save_experiment(experiment, {"samples": 2}, {}, is_control=True)
        for i, status in enumerate((AttemptStatus.PASSED, AttemptStatus.FAILED, AttemptStatus.PASSED)):
            store.save_attempt(experiment, Attempt(
                id=f"{experiment}{i}", task_id=f"starter/uml_class/t{i // 2}", agent="base_modeling",
                model="mockllm/control", sample_index=i % 2, status=status, is_control=True), META)
        store.close()
    return tmp_path / "runs"


def test_every_link_of_a_bundle_is_a_file_inside_it(runs, tmp_path):
    out = tmp_path / "site"
    result = write_bundle(runs, out, ["exp"])
    assert result.experiments == ["exp"] and not result.unreachable
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert pages == ["e/exp/a/exp0.html", "e/exp/a/exp1.html", "e/exp/a/exp2.html",
                     "e/exp/compare/exp0--exp1.html", "e/exp/compare/exp1--exp0.html",  # one task's pair, both ways
                     "e/exp/index.html", "e/exp/report.html", "index.html"]
    assert result.pages == len(pages) and result.compare_pages == 2
    assert result.files == sum(1 for p in out.rglob("*") if p.is_file() and p.name != MARKER)
    assert result.bytes == sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and p.name != MARKER)
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert not re.search(r'\b(?:href|src|action)="/', html), page  # no absolute link left
        for link in LINK.findall(html):
            path = unquote(urlsplit(link.replace("&amp;", "&")).path)
            if path:
                assert (page.parent / path).resolve().is_file(), (page, link)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "e/exp/index.html" in index and "other" not in index and "data-progress" not in index
    table = (out / "e/exp/index.html").read_text(encoding="utf-8")
    assert table.count('class="attempt-link') == 3 and 'src="rows.js"' in table
    assert '"exp0--exp1"' in (out / "e/exp/rows.js").read_text(encoding="utf-8")
    assert (out / "progress.json").is_file() and (out / "static/bundle.js").is_file()


def test_a_bundle_writes_over_its_own_folder_only(runs, tmp_path):
    out = tmp_path / "site"
    write_bundle(runs, out)
    assert (out / "e/other/index.html").is_file()
    write_bundle(runs, out, ["exp"])  # bundled again: replaced whole
    assert not (out / "e/other").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not empty"):
        write_bundle(runs, mine)
    assert (mine / "notes.txt").read_text() == "keep me"
    with pytest.raises(ConfigError, match="no experiment nope"):
        write_bundle(runs, tmp_path / "new", ["nope"])


# ------------------------------------------------------------------------------------------------- in Chromium
@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> Path:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.evals.report import write_report
    from sysmo.runner import ExperimentConfig, run_experiment

    root = tmp_path_factory.mktemp("bundle")
    with own_home(root):
        config = ExperimentConfig(id="small", output_dir=root / "runs", agents=["base_modeling"],
                                  models=["mockllm/control", "reference"],
                                  tasks=TaskSelection(ids=["starter/uml_class/library_loans"]), samples=2,
                                  concurrency=2, max_rounds=[1],
                                  scoring={"embedding": "token", "similarity": "token", "text.bertscore": False})
        run_experiment(config, progress=False)
        write_report(root / "runs" / "small")
    return root / "runs"


@pytest.mark.slow
def test_the_bundle_browses_from_disk_without_leaving_its_folder(real_runs, tmp_path):
    playwright_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[view-test]'")
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set SYSMO_CHROMIUM)")
    out = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "sysmo.cli", "view", str(real_runs), "--bundle", str(out),
                           "--experiment", "small"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    size = re.search(r"wrote small: (\d+) pages, (\d+) files, ([\d.]+) MB", said)
    assert size, said
    files = [p for p in out.rglob("*") if p.is_file() and p.name != MARKER]
    assert int(size[2]) == len(files) and float(size[3]) == round(sum(p.stat().st_size for p in files) / 1e6, 1)

    root = out.resolve().as_uri() + "/"
    requests: list[str] = []
    errors: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        try:
            page.goto(root + "index.html")
            row = page.locator("#experiments tbody tr[data-experiment=small]")
            assert "finished" in row.inner_text() and "CONTROL" in row.inner_text()
            row.get_by_role("link", name="small").click()
            page.wait_for_url("**/e/small/index.html")
            assert page.locator("#shown-count").inner_text() == "4 of 4"

            page.locator("#filters select[name=model]").select_option("reference")  # the server's form, on disk
            page.wait_for_url("**/e/small/index.html?model=reference*")
            visible = page.locator("#attempts tbody tr:visible")
            assert visible.count() == 2 and all("reference" in t for t in visible.all_inner_texts())
            assert page.locator("#shown-count").inner_text() == "2 of 4"
            assert page.locator("#filters select[name=model]").input_value() == "reference"
            page.locator("#attempts thead a", has_text="#").click()  # sort by sample, filters kept
            page.wait_for_url("**sort=sample_index**")
            assert "model=reference" in page.url and page.locator("#attempts tbody tr:visible").count() == 2

            page.locator("#report-link").click()
            page.wait_for_url("**/e/small/report.html")
            for img in page.locator("#plots img").all():
                img.scroll_into_view_if_needed()
            page.wait_for_function("(imgs => imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0))"
                                   "([...document.querySelectorAll('#plots img')])")
            page.locator("#matrix a.sq").first.click()  # a sample of the task matrix: its attempt
            page.wait_for_url("**/e/small/a/*.html")
            assert page.locator("#outcome").is_visible()
            attempt_url = page.url

            page.locator("#siblings summary").click()
            page.locator("#siblings a.compare-link").first.click()
            page.wait_for_url("**/e/small/compare/*--*.html")
            assert page.locator("main h2").count() >= 2
            page.go_back()
            assert page.url == attempt_url
            page.locator("header .crumbs a").first.click()  # back to the attempt table
            page.wait_for_url("**/e/small/index.html")

            picks = page.locator("#attempts input.pick")
            tasks = picks.evaluate_all("els => els.map(e => e.dataset.task)")
            assert tasks[0] == tasks[1]
            picks.nth(0).check()
            picks.nth(1).check()
            page.locator("#compare-button").click()  # the compare form opens the pair's page from disk
            page.wait_for_url("**/e/small/compare/*--*.html")
            page.locator("header a.brand").click()
            page.wait_for_url("**/index.html")
            assert page.locator("#experiments tbody tr").count() == 1
        finally:
            browser.close()
    assert not errors, errors
    outside = [u for u in requests if not u.startswith(root)]
    assert not outside, outside
    assert any(u.endswith(".png") for u in requests) and any(u.endswith("/rows.js") for u in requests)


def test_a_link_to_a_page_the_viewer_refuses_is_kept_without_its_href(runs, tmp_path):
    store = Store(runs / "exp" / "results.sqlite")
    store.save_attempt("exp", Attempt(id="fork1", task_id="starter/uml_class/t0", agent="base_modeling",
                                      model="mockllm/control", status=AttemptStatus.PASSED, is_control=True,
                                      parent_attempt_id="gone"), META)  # its parent is no longer in the store
    store.close()
    out = tmp_path / "site"
    result = write_bundle(runs, out, ["exp"])
    assert result.unreachable.get("/e/exp/a/gone") == 404 and not (out / "e/exp/a/gone.html").exists()
    table = (out / "e/exp/index.html").read_text(encoding="utf-8")
    assert 'data-not-bundled="a/gone.html"' in table and 'href="a/gone.html"' not in table
    assert (out / "e/exp/a/fork1.html").is_file()
