"""Shared fixtures: where the published benchmark data lives for tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_BENCHMARKS = Path(os.environ.get("SYSMO_TEST_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "benchmarks"))


@pytest.fixture(scope="session")
def shared_benchmarks() -> Path:
    if not SHARED_BENCHMARKS.is_dir():
        pytest.fail(f"benchmark data not found at {SHARED_BENCHMARKS}; set SYSMO_TEST_DATA_DIR")
    return SHARED_BENCHMARKS
