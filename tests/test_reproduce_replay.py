"""``sysmo reproduce`` through replay: the published predictions go through ``sysmo run`` as replay attempts and
the table computed from the stored attempts equals the one computed straight from the files."""

from __future__ import annotations

from pathlib import Path

import pytest

IDS = frozenset({1, 2, 3, 14, 27, 95, 120, 151})


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))


def test_table2_rows_from_replayed_attempts_equal_the_rows_from_the_files(shared_benchmarks: Path,
                                                                          tmp_path: Path) -> None:
    from sysmo.reproduce.sysmbench import table2
    from sysmo.reproduce.replay import replay_experiment

    models = ["gpt_4.1", "qwen3", "CodeLlama-13b-Instruct-hf"]  # CodeLlama: 144/151 whitespace-only replies
    direct = table2(shared_benchmarks, models=models, ids=IDS, workers=1)
    replayed = table2(shared_benchmarks, models=models, ids=IDS, workers=1, via_replay=True, output_dir=tmp_path)
    assert len(replayed) == 3
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in direct]
    # the numbers are linked to stored attempts: one replay attempt per model and sample
    runs = replay_experiment([f"replay/designbench:{m}/direct" for m in models], data_dir=shared_benchmarks,
                             output_dir=tmp_path, ids=[f"sysmbench/{i}" for i in sorted(IDS)],
                             name="reproduce-designbench-3")
    assert all(set(run.attempts) == set(IDS) for run in runs.values())
    gpt = runs["replay/designbench:gpt_4.1/direct"]
    assert all(a.rounds[0].valid is not None for a in gpt.attempts.values())  # OpenSysML checked every reply
    codellama = runs["replay/designbench:CodeLlama-13b-Instruct-hf/direct"]
    assert any(a.rounds[0].response.strip() == "" for a in codellama.attempts.values())
