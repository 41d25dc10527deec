"""Element trees are cached by content: a task's reference model keeps its tree however many predictions are
scored between two uses of it (DesignBench re-scored file by file: 151 references and 151 predictions per file)."""

from __future__ import annotations

import importlib

import pytest

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.evals.cascades import sysml as cascade
from sysmo.tools.sysml.element_tree import ElementTree


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models that reached OpenSysML (the real load, counted); caches of 16 references and 4 candidates
    stand for the real 4096 and 256."""
    seen: list[str] = []
    module = importlib.import_module("sysmo.tools.sysml.element_tree")
    real = module.element_tree

    def counted(model: Artifact) -> ElementTree:
        seen.append(model.main_text)
        return real(model)

    monkeypatch.setattr(module, "element_tree", counted)
    monkeypatch.setattr(cascade, "_REFERENCE_TREES", cascade._TreeCache(16))
    monkeypatch.setattr(cascade, "_TREES", cascade._TreeCache(4))
    return seen


def _model(text: str) -> Artifact:
    return Artifact(language=Language.SYSML, files={"model.sysml": text})


def test_references_survive_many_predictions(loads: list[str]) -> None:
    for _ in range(3):  # three prediction files over the same 6 tasks
        for task in range(6):
            cascade._tree(_model(f"package Ref{task};"), reference=True)
            cascade._tree(_model(f"package Prediction{len(loads)};"))
    assert sum(text.startswith("package Ref") for text in loads) == 6  # each reference loaded once


def test_a_prediction_equal_to_a_reference_is_served_from_the_reference_cache(loads: list[str]) -> None:
    cascade._tree(_model("package Same;"), reference=True)
    cascade._tree(_model("package Same;"))
    assert loads == ["package Same;"]


def test_candidates_are_least_recently_used_out(loads: list[str]) -> None:
    for i in range(6):
        cascade._tree(_model(f"package P{i};"))
    cascade._tree(_model("package P5;"))
    cascade._tree(_model("package P0;"))  # pushed out by 4 newer ones: loaded again
    assert loads.count("package P5;") == 1 and loads.count("package P0;") == 2


def test_a_verdict_is_kept_for_a_failing_model_too(loads: list[str]) -> None:
    broken = "package Broken { part x : Missing; }"
    first = cascade._tree(_model(broken))
    assert first.check is not None and first.check.outcome == Outcome.FAILED
    assert cascade._tree(_model(broken)) is first and loads == [broken]
