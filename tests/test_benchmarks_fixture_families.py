"""OODEval and R2ABench loaders, on task files of our own in each family's layout (tests/fixtures/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sysmo.benchmarks import oodeval, r2abench
from sysmo.benchmarks.r2abench import Ablation
from sysmo.contracts.task import TaskKind
from sysmo.errors import TaskError

FIXTURES = Path(__file__).parent / "fixtures"


def test_oodeval_reads_task_folders_and_jsonl() -> None:
    tasks = {t.id: t for t in oodeval.load(FIXTURES / "oodeval")}
    assert sorted(tasks) == ["oodeval/library", "oodeval/parking_garage", "oodeval/vending_machine"]
    assert all(t.kind is TaskKind.UML_CLASS for t in tasks.values())
    library = tasks["oodeval/library"]
    assert library.inputs.requirement.startswith("# Library lending")
    assert "Person <|-- Member" in library.references.model.main_text
    assert (library.title, library.domain, library.difficulty) == ("Library lending", "Education", 2)
    assert library.labels == {"source": "written for the sysmo test suite", "origin": "library"}
    assert tasks["oodeval/vending_machine"].inputs.requirement.startswith("A vending machine")  # requirement.txt
    garage = tasks["oodeval/parking_garage"]
    assert garage.labels["origin"] == "tasks.jsonl" and garage.difficulty == 1
    assert "Vehicle <|-- Car" in garage.references.model.main_text


def test_oodeval_folder_without_reference_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "requirement.md").write_text("A shop sells items.")
    with pytest.raises(TaskError, match="reference.puml"):
        oodeval.load(tmp_path)


def test_oodeval_duplicate_id_and_missing_field_are_errors(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "oodeval" / "library", tmp_path / "library")
    row = {"id": "library", "requirement": "x", "reference_plantuml": "@startuml\nclass A\n@enduml"}
    (tmp_path / "more.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskError, match="defined twice"):
        oodeval.load(tmp_path)
    (tmp_path / "more.jsonl").write_text(json.dumps({"id": "x", "requirement": "y"}) + "\n")
    with pytest.raises(TaskError, match=r"more.jsonl:1"):
        oodeval.load(tmp_path)


def test_r2abench_gives_three_ablations_per_project() -> None:
    tasks = {t.id: t for t in r2abench.load(FIXTURES / "r2abench")}
    assert sorted(tasks) == [f"r2abench/{p}/{a}" for p in ("campus_parking", "clinic_booking") for a in ("full", "min", "no-arch")]
    assert all(t.kind is TaskKind.ARCHITECTURE for t in tasks.values())
    full = tasks["r2abench/campus_parking/full"]
    assert full.labels["ablation"] == "full" and full.title.startswith("Campus Parking Management System")
    assert full.inputs.requirement == (FIXTURES / "r2abench/campus_parking/campus_parking_E.md").read_text()
    assert full.references.model.main_text == (FIXTURES / "r2abench/campus_parking/ad.puml").read_text()
    assert len(full.labels["prd_sections"]) == 6


def test_r2abench_no_arch_drops_only_the_architecture_section() -> None:
    prd = (FIXTURES / "r2abench/clinic_booking/clinic_booking_E.md").read_text()
    no_arch = r2abench.ablate(prd, Ablation.NO_ARCH)
    assert "System Architecture Description" not in no_arch and "MySQL database" not in no_arch
    for kept in ("System Introduction", "Core Objectives", "Functional Features", "Technical Constraints",
                 "Non-functional Requirements", "HL7 FHIR"):
        assert kept in no_arch


def test_r2abench_min_keeps_title_objectives_and_features_with_subsections() -> None:
    prd = (FIXTURES / "r2abench/campus_parking/campus_parking_E.md").read_text()
    minimal = r2abench.ablate(prd, Ablation.MIN)
    assert minimal.startswith("# Campus Parking Management System\n\n## 2. Core Objectives")
    assert "### 3.4 Enforcement" in minimal and "issues a fine" in minimal
    for dropped in ("System Introduction", "Technical Constraints", "Non-functional", "Architecture", "PostgreSQL"):
        assert dropped not in minimal


def test_r2abench_sub_heading_mentioning_architecture_is_not_a_section() -> None:
    prd = "# P\n## Core Objectives\nGo fast.\n## Technical Constraints\n### Architecture constraints\nUse Java.\n" \
          "## System Architecture Description\nA monolith.\n"
    no_arch = r2abench.ablate(prd, Ablation.NO_ARCH)
    assert "### Architecture constraints\nUse Java." in no_arch and "monolith" not in no_arch


def test_r2abench_project_without_reference_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "shop_E.md").write_text("# Shop\n## Core Objectives\nSell.\n")
    with pytest.raises(TaskError, match="ad.puml"):
        r2abench.load(tmp_path)
