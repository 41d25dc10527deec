"""R2ABench loading from a checkout of the replication package's layout, the SRS input and the ablations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sysmo.benchmarks import r2abench
from sysmo.benchmarks.selection import TaskSelection
from sysmo.cli.benchmarks import app
from sysmo.errors import TaskError

PRD = """# Library Loans PRD

## 1. Core Objectives
Members borrow and return books online.

## 2. Functional Features
- Search the catalogue
- Reserve a copy

## 3. System Architecture Description
A web front end calls a loan service backed by PostgreSQL.

## 4. Non-functional Requirements
Pages load within two seconds.
"""
SRS = "# Software Requirements Specification\n\nFR-1 The system shall let a member reserve a copy.\n"
REFERENCE = """@startuml
package "Frontend" {
  [Web App]
}
package "Backend" {
  [Loan Service]
  database "PostgreSQL\\n(loans)" as PG
}
[Web App] --> [Loan Service]
[Loan Service] --> PG
@enduml
"""


def _checkout(root: Path) -> Path:
    """A repository-shaped tree: Dataset/E-R2A/<JAVA|Python>/<project>/ with AD/ad.puml, plus an Output/ copy."""
    for lang, project in (("JAVA", "library_loans"), ("Python", "recipe_share")):
        folder = root / "Dataset" / "E-R2A" / lang / project
        (folder / "AD").mkdir(parents=True)
        (folder / f"{project}_E.md").write_text(PRD.replace("Library Loans", project))
        (folder / "AD" / "ad.puml").write_text(REFERENCE)
        (folder / "checked_srs.md").write_text(SRS)
    out = root / "Output" / "E-R2A" / "Direct" / "gpt-5" / "library_loans"
    out.mkdir(parents=True)
    (out / "library_loans_E.md").write_text(PRD)  # not a project
    (out / "predicted.puml").write_text(REFERENCE)
    return root


def test_a_checkout_of_the_replication_package_loads_with_its_srs(tmp_path):
    tasks = r2abench.load(_checkout(tmp_path))
    ids = [t.id for t in tasks]
    assert len(ids) == 8 and "r2abench/library_loans/srs" in ids and "r2abench/recipe_share/min" in ids
    srs = next(t for t in tasks if t.id == "r2abench/library_loans/srs")
    assert srs.inputs.requirement == SRS and srs.labels["input_file"] == "checked_srs.md"
    assert srs.labels["language"] == "JAVA"
    assert "PostgreSQL" in srs.references.model.main_text


def test_no_project_is_an_error_that_names_the_expected_files(tmp_path):
    (tmp_path / "Dataset").mkdir()
    with pytest.raises(TaskError, match=r"AD/ad\.puml"):
        r2abench.load(tmp_path)


def test_the_ablation_option_and_an_ablation_glob_select_the_min_tasks(tmp_path):
    tasks = r2abench.load(_checkout(tmp_path))
    by_option = TaskSelection(ablations=["min"]).apply(tasks)
    by_glob = TaskSelection(ids=["r2abench/*/min"]).apply(tasks)
    assert {t.id for t in by_option} == {t.id for t in by_glob} == {
        "r2abench/library_loans/min",
        "r2abench/recipe_share/min",
    }
    assert len(TaskSelection().apply(tasks)) == 2  # the full input by default
    assert len(TaskSelection(ids=["r2abench/*"]).apply(tasks)) == 2  # an id glob without an ablation: still full
    assert len(TaskSelection(ablations=["all"]).apply(tasks)) == 8


def test_tasks_list_takes_the_ablation(tmp_path, monkeypatch):
    monkeypatch.delenv("SYSMO_R2ABENCH_DIR", raising=False)  # it would take the place of <data>/r2abench
    data = tmp_path / "data"
    _checkout(data / "r2abench")
    result = CliRunner().invoke(
        app, ["list", "--data-dir", str(data), "-b", "r2abench", "--ablation", "srs", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [t["id"] for t in payload["tasks"]] == ["r2abench/library_loans/srs", "r2abench/recipe_share/srs"]


def test_run_rejects_an_unknown_similarity_in_one_line(tmp_path):
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", "from sysmo.cli import main; main()", "run", "-m", "reference", "-b", "r2abench",
         "--similarity", "fuzzy", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode != 0
    assert "--similarity must be exact, token, embedding or judge" in run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr


def test_a_partial_checkout_without_prds_gives_the_srs_tasks(tmp_path):
    # a copy of the package that kept each project's reference and SRS but not its PRD (the published predictions
    # answered the SRS): the srs task loads; a project with a reference and no input at all is skipped
    _checkout(tmp_path)
    for prd in (tmp_path / "Dataset").rglob("*_E.md"):
        prd.unlink()
    bare = tmp_path / "Dataset" / "E-R2A" / "JAVA" / "no_inputs" / "AD"
    bare.mkdir(parents=True)
    (bare / "ad.puml").write_text(REFERENCE)
    tasks = r2abench.load(tmp_path)
    assert [t.id for t in tasks] == ["r2abench/library_loans/srs", "r2abench/recipe_share/srs"]
    assert tasks[0].inputs.requirement == SRS and "PostgreSQL" in tasks[0].references.model.main_text


def test_the_checkout_can_live_outside_the_data_directory(tmp_path, monkeypatch):
    from sysmo.benchmarks import datadir

    checkout = _checkout(tmp_path / "R2ABench")
    monkeypatch.setenv("SYSMO_R2ABENCH_DIR", str(checkout))
    data = tmp_path / "data"
    data.mkdir()
    assert datadir.dataset_dir(data, "r2abench") == checkout
    assert datadir.dataset_dir(None, "r2abench") == checkout
    monkeypatch.setenv("SYSMO_R2ABENCH_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(Exception, match="SYSMO_R2ABENCH_DIR"):
        datadir.dataset_dir(data, "r2abench")
