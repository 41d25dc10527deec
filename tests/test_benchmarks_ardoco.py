"""ArDoCo loader: architecture text + UML component model -> an architecture task with a PlantUML reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.benchmarks import ardoco
from sysmo.contracts.task import Task, TaskKind

# (components, interfaces, uml:Usage elements) per project, as counted in the model files
COUNTS = {"bigbluebutton": (12, 12, 12), "jabref": (6, 0, 0), "mediastore": (14, 9, 16),
          "teammates": (8, 8, 10), "teastore": (11, 8, 11)}


@pytest.fixture(scope="module")
def tasks(shared_benchmarks: Path) -> dict[str, Task]:
    return {t.labels["project"]: t for t in ardoco.load(shared_benchmarks / "ardoco")}


def test_five_projects_with_component_counts(tasks: dict[str, Task]) -> None:
    assert sorted(tasks) == sorted(COUNTS)
    for name, (components, interfaces, usages) in COUNTS.items():
        labels = tasks[name].labels
        assert (labels["n_components"], labels["n_interfaces"], labels["n_usages"]) == (components, interfaces, usages)
        assert tasks[name].kind is TaskKind.ARCHITECTURE and tasks[name].id == f"ardoco/{name}"


def test_reference_plantuml_names_every_component_and_interface(tasks: dict[str, Task]) -> None:
    for task in tasks.values():
        text = task.references.model.main_text
        assert text.startswith("@startuml") and text.rstrip().endswith("@enduml")
        for component in task.references.extra["components"]:
            assert f'component "{component}"' in text
        for interface in task.references.extra["interfaces"]:
            assert f'interface "{interface}"' in text


def test_mediastore_edges_follow_provided_and_required_interfaces(tasks: dict[str, Task]) -> None:
    extra = tasks["mediastore"].references.extra
    assert ("Facade", "IUserManagement") in extra["requires"]
    assert ("UserManagement", "IUserManagement") in extra["provides"]
    assert ("Facade", "UserManagement") in extra["component_edges"]
    text = tasks["mediastore"].references.model.main_text
    assert "c_Facade ..> i_IUserManagement : uses" in text and "c_UserManagement - i_IUserManagement" in text
    # the stored duplicate usage (DownloadLoadBalancer twice) is one edge in the diagram
    assert text.count("c_DownloadLoadBalancer ..> i_IDownload") == 1


def test_same_named_component_and_interface_get_distinct_aliases(tasks: dict[str, Task]) -> None:
    text = tasks["bigbluebutton"].references.model.main_text
    assert 'component "Apps" as c_Apps' in text and 'interface "Apps" as i_Apps' in text
    assert 'component "BBB web" as c_BBB_web' in text


def test_input_is_the_documentation_text_with_trace_links(tasks: dict[str, Task]) -> None:
    media = tasks["mediastore"]
    assert media.inputs.requirement.startswith("One of the main components of Media Store")
    assert media.labels["n_sentences"] == 37 and media.labels["n_trace_links"] > 0
    assert tasks["jabref"].references.extra["component_edges"] == []
