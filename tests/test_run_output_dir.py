"""`output_dir` of an experiment file is where `sysmo run` stores the experiment, unless `--output-dir` says
otherwise (the flag's default never overrides the file)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.sysmo_cli import run_sysmo


def _experiment_file(tmp_path: Path, output_dir: Path) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({
        "id": "from-file", "output_dir": str(output_dir), "agents": ["base_modeling"], "models": ["reference"],
        "tasks": {"ids": ["starter/uml_class/library_loans"]}, "samples": 1, "score": False,
    }))
    return path


def test_the_experiment_files_output_dir_is_used(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wanted = tmp_path / "elsewhere"
    result = run_sysmo("run", str(_experiment_file(tmp_path, wanted)), "--no-progress", "--no-report")
    assert result.code == 0, result.output
    assert (wanted / "from-file" / "results.sqlite").is_file()
    assert not (tmp_path / "runs").exists()


def test_the_flag_wins_over_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    flagged = tmp_path / "flagged"
    result = run_sysmo("run", str(_experiment_file(tmp_path, tmp_path / "elsewhere")), "-o", str(flagged),
                       "--no-progress", "--no-report")
    assert result.code == 0, result.output
    assert (flagged / "from-file" / "results.sqlite").is_file()
    assert not (tmp_path / "elsewhere").exists()
