"""The suite's own schedule: the files named to run first exist, and the collection puts them first."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import RUN_FIRST, suite_path


def test_every_file_named_to_run_first_exists() -> None:
    here = Path(__file__).resolve().parent
    assert [name for name in RUN_FIRST if not (here / name).is_file()] == []
    assert len(set(RUN_FIRST)) == len(RUN_FIRST)


def test_the_collection_starts_with_the_files_named_to_run_first(request: pytest.FixtureRequest) -> None:
    files = list(dict.fromkeys(suite_path(item) for item in request.session.items))
    collected = [name for name in RUN_FIRST if name in files]  # a run of some files collects only those
    assert files[:len(collected)] == collected and set(files[len(collected):]).isdisjoint(RUN_FIRST)
