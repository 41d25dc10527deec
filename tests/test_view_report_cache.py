"""The report page's view model kept beside the report (``view.report_cache``): written as the report is, read at
the viewer's first request of the page instead of computed, and computed anew once the store changed."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.store import AttemptRecord, Store
from sysmo.view import gather
from sysmo.view.app import create_app
from sysmo.view.report_cache import save_report_view
from test_compare import experiment


def test_the_kept_view_is_read_until_the_store_changes(tmp_path: Path, monkeypatch) -> None:
    runs = tmp_path / "runs"
    tasks = [f"t{i}" for i in range(4)]
    directory = experiment(runs, "exp", tasks, {(t, s): i < 2 for i, t in enumerate(tasks) for s in range(2)})
    (directory / "report").mkdir()
    kept = save_report_view(directory)
    assert kept.is_file()
    computed = []
    real = gather.report_view
    monkeypatch.setattr(gather, "report_view", lambda *a, **k: computed.append(1) or real(*a, **k))
    page = TestClient(create_app(runs), base_url="http://127.0.0.1").get("/e/exp/report")
    assert page.status_code == 200 and 'id="board-uml_class"' in page.text
    assert computed == []  # read from view.json
    store = Store(directory / "results.sqlite")
    store.save_attempts("exp", [AttemptRecord.of(Attempt(
        id="exp-t9-0", task_id="t9", agent="base_modeling", model="openai/m", status=AttemptStatus.PASSED),
        {"benchmark": "starter", "kind": "uml_class"})])
    store.close()
    again = TestClient(create_app(runs), base_url="http://127.0.0.1").get("/e/exp/report")
    assert again.status_code == 200 and computed == [1]  # the store changed: computed, and kept for next time
    TestClient(create_app(runs), base_url="http://127.0.0.1").get("/e/exp/report")
    assert computed == [1]
