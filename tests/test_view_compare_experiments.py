"""The viewer's page over two or more experiments (``/compare?e=A&e=B``) shows ``sysmo compare``'s analysis with
the same numbers as the CLI's compare.md; a pick of fewer than two, or of experiments that share no task, is a
one-line 400 page. Experiments are written with the store's API (tests/test_compare.py's ``experiment``)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from starlette.testclient import TestClient

from sysmo.view.app import create_app
from sysmo_cli import run_sysmo
from test_compare import experiment


def _runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    tasks = [f"t{i}" for i in range(12)]
    experiment(runs, "plain", tasks, {(t, s): i < 2 for i, t in enumerate(tasks) for s in range(2)})
    experiment(runs, "cot", tasks, {(t, s): i < 11 for i, t in enumerate(tasks) for s in range(2)}, strategy="cot")
    experiment(runs, "elsewhere", ["u1"], {}, strategy="cot")
    return runs


def _cells(page: str, table_id: str) -> list[list[str]]:
    body = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).rstrip("*").strip()
             for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)] for row in rows]


def test_the_page_has_the_numbers_of_sysmo_compare(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    cli = run_sysmo("compare", "plain", "cot", "-o", str(runs), "--out", str(tmp_path / "out"))
    assert cli.code == 0, cli.stderr
    markdown = (tmp_path / "out" / "compare.md").read_text()
    md_rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in markdown.splitlines()
               if line.startswith("| ") and not line.startswith("| factor")]
    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    response = client.get("/compare?e=plain&e=cot")
    assert response.status_code == 200, response.text
    page = response.text
    assert "Factor(s) compared: <b>strategy</b>" in page and "tasks shared: 12" in page
    cells = _cells(page, "cross-uml_class")
    assert cells[1:] == md_rows and len(md_rows) == 1, (cells, md_rows)
    # 2 of 24 pairs pass without the strategy, 22 with it: significant after Holm's correction, and marked
    assert '<span class="sig-mark"' in page and "Holm-adjusted p &lt; 0.05" in page


def test_the_page_refuses_a_pick_it_cannot_compare_in_one_line(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    one = client.get("/compare?e=plain")
    assert one.status_code == 400 and "two or more experiments" in one.text
    apart = client.get("/compare?e=plain&e=elsewhere")
    assert apart.status_code == 400 and "share no tasks" in apart.text
    unknown = client.get("/compare?e=plain&e=nothere")
    assert unknown.status_code == 404 and "no experiment nothere" in unknown.text
    listing = client.get("/")
    assert 'id="cross-compare"' in listing.text and listing.text.count('name="e"') == 3
