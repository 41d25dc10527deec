"""One damaged store in a runs folder does not hide the others: the viewer's index lists every healthy experiment
with its numbers and the damaged ones marked with why their store cannot be read; only the damaged experiment's
own pages answer 503."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.store import Store
from sysmo.view.app import create_app


def _experiment(runs, name: str, attempts: int) -> None:
    store = Store(runs / name / "results.sqlite")
    store.save_experiment(name, {"samples": 1}, {}, is_control=True)
    for i in range(attempts):
        store.save_attempt(name, Attempt(id=f"{name}-{i}", task_id=f"starter/uml_class/t{i}", agent="base_modeling",
                                         model="reference", status=AttemptStatus.PASSED, is_control=True),
                           {"benchmark": "starter", "kind": "uml_class"})
    store.close()


@pytest.fixture
def runs(tmp_path):
    """Two healthy experiments, one store that is not a database and one whose pages were overwritten."""
    _experiment(tmp_path, "good1", 2)
    _experiment(tmp_path, "good2", 3)
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "results.sqlite").write_bytes(b"this is not an SQLite file\n" * 200)
    _experiment(tmp_path, "torn", 40)
    store = tmp_path / "torn" / "results.sqlite"
    data = bytearray(store.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page after the first (the schema's root) overwritten
    store.write_bytes(bytes(data))
    return tmp_path


def test_the_index_lists_every_healthy_experiment_beside_the_damaged_ones(runs):
    client = TestClient(create_app(runs), base_url="http://localhost", raise_server_exceptions=False)
    index = client.get("/")
    assert index.status_code == 200, index.text
    for name, attempts in (("good1", 2), ("good2", 3)):
        assert f'href="/e/{name}"' in index.text
        row = index.text.split(f'<tr data-experiment="{name}">')[1].split("</tr>")[0]
        assert f'data-field="done">{attempts}' in row
    for name in ("garbage", "torn"):
        row = index.text.split(f'<tr data-experiment="{name}" class="unreadable">')[1].split("</tr>")[0]
        assert "its store cannot be read" in row and "damaged" in row, row
        assert f'href="/e/{name}"' not in row
    assert client.get("/e/good2").status_code == 200
    torn = client.get("/e/torn")
    assert torn.status_code == 503 and "damaged" in torn.text
    assert sorted(client.get("/progress.json").json()) == ["good1", "good2"]
