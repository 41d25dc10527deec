"""Architecture cascade and metrics: gold controls (starter, ArDoCo), sensitivity, ancestor rule, judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.benchmarks import ardoco
from sysmo.benchmarks.registry import load_tasks
from sysmo.contracts.task import Task, TaskKind
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.metrics import architecture as arch
from sysmo.evals.metrics.embedding import ExactSimilarity
from sysmo.llm import LLM, MockScript
from sysmo.tools.plantuml import parse_architecture

TASKS = [t for t in load_tasks(families=["starter"]) if t.kind == TaskKind.ARCHITECTURE]
TELEMED = next(t for t in TASKS if t.id.endswith("telemedicine_platform"))
STRUCTURE_MAX = {
    "node_p": 1.0,
    "node_r": 1.0,
    "node_f1": 1.0,
    "edge_p": 1.0,
    "edge_r": 1.0,
    "edge_f1": 1.0,
    "layer_acc": 1.0,
    "ged_acc": 100.0,
    "ged_approximate": 0.0,
}
PERFECT_RUBRIC = json.dumps({d: {"score": 5, "rationale": "as required"} for d in arch.RUBRIC_DIMENSIONS})
FAST = {"structure.ged_timeout_s": 1.0}


def diagram(text: str) -> Artifact:
    return Artifact(language="plantuml", files={"architecture.puml": text})


def alignment_answer(pairs: list[tuple[str, str]], reference: str, candidate: str) -> str:
    """The judge's JSON for node-id pairs, in the R<k>/C<k> keys the prompt gives it."""
    _, ref_ids, cand_ids = arch.alignment_prompt(parse_architecture(reference), parse_architecture(candidate))
    ref_key = {v: k for k, v in ref_ids.items()}
    cand_key = {v: k for k, v in cand_ids.items()}
    matches = [{"reference": [ref_key[r]], "candidate": [cand_key[c]]} for r, c in pairs]
    return (
        "Here is the alignment.\n```json\n"
        + json.dumps({"matches": matches, "rationale": "by role"})
        + "\n```"
    )


def scripted_judge(task_id: str, alignment: str, rubric: str = PERFECT_RUBRIC) -> LLM:
    """The judge role served by a mockllm script: one answer per prompt purpose."""
    script = MockScript(
        responses=[
            {"when": {"task": task_id, "purpose": "architecture_node_alignment"}, "text": alignment},
            {"when": {"purpose": "architecture_rubric"}, "text": rubric},
        ]
    )
    return LLM(
        {"generator": "mockllm/judge", "judge": "mockllm/judge"}, cache=False, scripts={"judge": script}
    )


def identity_judge(task: Task) -> LLM:
    text = task.references.model.main_text
    leaves = [n.id for n in parse_architecture(text).leaves()]
    return scripted_judge(task.id, alignment_answer([(n, n) for n in leaves], text, text))


def test_starter_suite_has_architecture_references():
    assert len(TASKS) >= 5


@pytest.mark.parametrize("embedding", [None, "token"])
@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_reference_scored_against_itself_gets_the_maximum_without_a_judge(task, embedding):
    card = cascade_for("architecture").score(task.references.model, task, ScoringContext(embedding=embedding))
    assert [s.stage for s in card.stages] == ["validity", "structure", "judge", "antipatterns"]
    assert card.metric("validity") == 1.0, card.stage("validity").detail
    assert card.stage("structure").metrics == STRUCTURE_MAX
    assert card.metric("structure") == 1.0
    assert card.stage("structure").provenance["alignment"] == "similarity"
    assert card.stage("judge").outcome == "skipped"
    antipatterns = card.stage("antipatterns")
    assert antipatterns.value == 1.0
    assert antipatterns.metrics["orphan_ratio"] == antipatterns.metrics["reference_orphan_ratio"]
    assert antipatterns.metrics["god_ratio"] == antipatterns.metrics["reference_god_ratio"]


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_reference_scored_against_itself_gets_the_maximum_with_a_perfect_judge(task):
    card = cascade_for("architecture").score(
        task.references.model, task, ScoringContext(judge=identity_judge(task))
    )
    assert card.stage("structure").metrics == STRUCTURE_MAX
    assert card.stage("structure").provenance["alignment"] == "judge"
    assert card.stage("structure").provenance["alignment_source"] == "mockllm/judge"
    judge = card.stage("judge")
    assert judge.value == 1.0 and judge.passed and judge.outcome == "ok"
    assert all(judge.metrics[d] == 5.0 for d in arch.RUBRIC_DIMENSIONS)
    assert judge.detail["rationale"]["accuracy"] == "as required"
    assert all(s.passed for s in card.stages)


# -- sensitivity on a starter reference


def _mutate(pattern: str, replacement: str) -> str:
    text = TELEMED.references.model.main_text
    mutated = re.sub(pattern, replacement, text, flags=re.M)
    assert mutated != text, pattern
    return mutated


def _structure(text: str, judge: LLM | None = None, embedding="exact") -> dict[str, float]:
    # exact names unless a test says otherwise: these tests pin the metric rules, not the default similarity
    card = cascade_for("architecture").score(
        diagram(text), TELEMED, ScoringContext(judge=judge, embedding=embedding, options=FAST)
    )
    assert card.metric("validity") == 1.0, card.stage("validity").detail
    return card.stage("structure").metrics


def test_a_reversed_arrow_lowers_edge_f1_and_nothing_else():
    scores = _structure(_mutate(r"^Gateway --> IdP : verify tokens$", "IdP --> Gateway : verify tokens"))
    assert scores["edge_p"] == scores["edge_r"] == pytest.approx(22 / 23)
    assert scores["edge_f1"] < 1.0 and scores["ged_acc"] < 100.0
    assert scores["node_f1"] == scores["layer_acc"] == 1.0


def test_a_dropped_edge_lowers_edge_recall_and_f1_only():
    scores = _structure(_mutate(r"^Billing --> ClearingHouse : submit claim\n", ""))
    assert scores["edge_r"] == pytest.approx(22 / 23) and scores["edge_p"] == 1.0 and scores["edge_f1"] < 1.0
    assert scores["node_f1"] == scores["layer_acc"] == 1.0


def test_a_node_moved_to_another_layer_lowers_layer_accuracy_only():
    moved = _mutate(r"^  \[Billing Service\] as Billing\n", "")
    moved = moved.replace(
        'database "Billing DB" as BillingDB',
        'database "Billing DB" as BillingDB\n  [Billing Service] as Billing',
    )
    scores = _structure(moved)
    assert scores["layer_acc"] == pytest.approx(20 / 21)
    assert scores["node_f1"] == scores["edge_f1"] == 1.0
    assert scores["ged_acc"] < 100.0  # a boundary error


def test_a_renamed_node_lowers_exact_alignment_but_not_the_judges():
    renamed = _mutate(r"\[Billing Service\] as Billing", "[Invoicing Service] as Billing")
    exact = _structure(renamed)
    assert exact["node_f1"] == pytest.approx(20 / 21) and exact["edge_f1"] < 1.0
    # the cheapest edit relabels the node (0.8 + 1.0) and keeps its edges; the package's worst case for
    # 26 nodes and 23 edges on both sides is 26 (1.0 + 2.0) + 26 * 0.8 + 23 * 1.0 + 23 * 1.2 = 149.4
    assert exact["ged_acc"] == pytest.approx(100 * (1 - 1.8 / 149.4))
    ref = TELEMED.references.model.main_text
    leaves = [n.id for n in parse_architecture(ref).leaves()]
    judge = scripted_judge(TELEMED.id, alignment_answer([(n, n) for n in leaves], ref, renamed))
    semantic = _structure(renamed, judge=judge)
    assert semantic["node_f1"] == semantic["edge_f1"] == 1.0


def test_token_similarity_aligns_a_rename_that_keeps_its_words():
    renamed = _mutate(
        r"\[Patient Mobile App\] as PatientMobile", "[Mobile App for Patients] as PatientMobile"
    )
    assert _structure(renamed)["node_f1"] < 1.0
    assert _structure(renamed, embedding="token")["node_f1"] == 1.0


def test_a_dropped_node_lowers_node_recall():
    dropped = _mutate(
        r"^  \[Prescription Service\] as Prescription\n"
        r"|^Gateway --> Prescription .*\n|^Prescription --> .*\n",
        "",
    )
    scores = _structure(dropped)
    assert scores["node_r"] == pytest.approx(20 / 21) and scores["node_p"] == 1.0
    assert scores["edge_r"] == pytest.approx(21 / 23) and scores["edge_p"] == 1.0


# -- rules in isolation

CONTAINER_REF = """@startuml
package Front {
  [Web] as W
}
package Back {
  [Api] as A
  database Store as S
}
Front --> Back : calls
A --> S
@enduml"""


def _direct(reference: str, candidate: str, similarity=None) -> arch.StructureResult:
    sim = similarity or ExactSimilarity()
    ref, cand = parse_architecture(reference), parse_architecture(candidate)
    return arch.structure(ref, cand, arch.align_by_similarity(ref, cand, sim), sim, ged_timeout_s=1.0)


def test_an_edge_between_leaves_counts_when_the_reference_joins_their_containers():
    leaf_edge = CONTAINER_REF.replace("Front --> Back : calls", "W --> A : calls")
    result = _direct(CONTAINER_REF, leaf_edge)
    assert (result.edge_p, result.edge_r) == (1.0, 1.0)
    # the other way round is not implied: a container edge does not stand for a particular leaf edge
    result = _direct(leaf_edge, CONTAINER_REF)
    assert result.edge_p == 0.5 and result.edge_r == 0.5


def test_an_undirected_edge_matches_either_direction():
    undirected = CONTAINER_REF.replace("A --> S", "S -- A")
    assert _direct(CONTAINER_REF, undirected).edge_f1 == 1.0
    assert _direct(CONTAINER_REF, CONTAINER_REF.replace("A --> S", "S --> A")).edge_f1 == 0.5


def test_judge_alignment_allows_one_to_many_and_many_to_one():
    ref = "@startuml\n[Web]\ndatabase Database\nWeb --> Database\n@enduml"
    cand = "@startuml\n[Web]\ndatabase MySQL\ndatabase Redis\nWeb --> MySQL\nWeb --> Redis\n@enduml"
    answer = alignment_answer([("Web", "Web"), ("Database", "MySQL"), ("Database", "Redis")], ref, cand)
    judge = scripted_judge("t", answer)
    from sysmo.llm import CallContext

    alignment, _, problem = arch.align_by_judge(
        parse_architecture(ref),
        parse_architecture(cand),
        judge,
        CallContext(task_id="t", purpose="architecture_node_alignment"),
    )
    assert problem is None and alignment.method == "judge"
    result = arch.structure(parse_architecture(ref), parse_architecture(cand), alignment, ExactSimilarity())
    assert (result.node_p, result.node_r, result.edge_p, result.edge_r) == (1.0, 1.0, 1.0, 1.0)
    assert result.ged_acc < 100.0  # the extra node and edge still cost in the edit distance


def test_alignment_answers_are_parsed_robustly():
    ref, cand = parse_architecture(CONTAINER_REF), parse_architecture(CONTAINER_REF)
    _, ref_ids, cand_ids = arch.alignment_prompt(ref, cand)
    assert sorted(ref_ids) == ["R1", "R2", "R3"]
    by_name = (
        'Sure! {"matches": [{"reference": "Web", "candidate": ["c1"]}, ["R2", "C2"], '
        '{"reference": ["R9"], "candidate": []}]}'
    )
    pairs, ignored, _ = arch.parse_alignment(by_name, ref_ids, cand_ids, ref, cand)
    assert pairs == [("A", "A"), ("W", "W")] and ignored == ["R9"]
    assert arch.parse_alignment("I cannot tell.", ref_ids, cand_ids, ref, cand) is None


def test_an_unusable_judge_alignment_falls_back_to_the_similarity_and_says_so():
    judge = scripted_judge(TELEMED.id, "The diagrams look similar.")
    card = cascade_for("architecture").score(
        TELEMED.references.model, TELEMED, ScoringContext(judge=judge, options=FAST)
    )
    structure = card.stage("structure")
    assert structure.provenance["alignment"] == "similarity" and structure.metrics["node_f1"] == 1.0
    assert "no JSON" in structure.detail["alignment_fallback"]


def test_rubric_answers_are_parsed_robustly():
    nested = arch.parse_rubric(
        '```json\n{"Completeness": {"score": 4, "rationale": "misses SMS"}, "accuracy": {"score": "3/5"}, '
        '"rationality": 5, "readability": {"score": 2}}\n```'
    )
    assert nested.scores == {"completeness": 4.0, "accuracy": 3.0, "rationality": 5.0, "readability": 2.0}
    assert nested.rationale["completeness"] == "misses SMS" and nested.mean == 3.5
    prose = arch.parse_rubric("Completeness: 4/5\nAccuracy - 3\nRationality: 4\nReadability: 5")
    assert prose.complete and prose.scores["accuracy"] == 3.0
    out_of_range = arch.parse_rubric('{"completeness": 9, "accuracy": 0, "rationality": 3, "readability": 3}')
    assert out_of_range.scores["completeness"] is None and not out_of_range.complete


def test_an_incomplete_rubric_is_inconclusive_and_scores_zero():
    judge = scripted_judge(TELEMED.id, "no alignment", rubric='{"completeness": 5, "accuracy": 4}')
    card = cascade_for("architecture").score(
        TELEMED.references.model, TELEMED, ScoringContext(judge=judge, options=FAST)
    )
    stage = card.stage("judge")
    assert stage.outcome == "inconclusive" and not stage.passed and stage.value == 0.0
    assert stage.metrics["completeness"] == 5.0 and stage.metrics["rationality"] is None


def test_ged_uses_the_replication_weights():
    base = "@startuml\n[A]\n[B]\nA --> B\n@enduml"
    assert _direct(base, base.replace("@enduml", "[C]\n@enduml")).ged == pytest.approx(
        0.8
    )  # hallucinated node
    assert _direct(base.replace("@enduml", "[C]\n@enduml"), base).ged == pytest.approx(1.0)  # missing node
    assert _direct(base, base.replace("A --> B", "A --> B\nB --> A")).ged == pytest.approx(1.2)  # extra edge
    assert _direct(base.replace("A --> B", "A --> B\nB --> A"), base).ged == pytest.approx(
        1.0
    )  # missing edge
    extra = _direct(base, base.replace("@enduml", "[C]\n@enduml"))
    # the package's worst case: 2 (1.0 + 2.0) + 3 * 0.8 + 1 * 1.0 + 1 * 1.2 = 10.6
    assert extra.ged_acc == pytest.approx(100 * (1 - 0.8 / 10.6))
    ref, cand = parse_architecture(base), parse_architecture(base.replace("@enduml", "[C]\n@enduml"))
    sim = ExactSimilarity()
    paper = arch.structure(ref, cand, arch.align_by_similarity(ref, cand, sim), sim, ged_normalisation="paper")
    assert paper.ged_acc == pytest.approx(100 * (1 - 0.8 / 4))  # the paper's max(|Vp|+|Ep|, |Vt|+|Et|) = 3 + 1
    # C moves from P to Q: a boundary error (2.0) is cheaper than deleting and re-inserting C and its edge
    layered = "@startuml\npackage P {\n[A]\n[C]\n}\npackage Q {\n[B]\n}\nA --> B\nC --> A\n@enduml"
    moved = layered.replace("[C]\n}\npackage Q {\n", "}\npackage Q {\n[C]\n")
    assert _direct(layered, moved).ged == pytest.approx(2.0)
    # without the edge, deleting (0.8) and re-inserting (1.0) the node is the cheaper edit
    assert _direct(layered.replace("C --> A\n", ""), moved.replace("C --> A\n", "")).ged == pytest.approx(1.8)


def test_ged_marks_a_search_cut_short_by_its_time_bound_as_approximate():
    text = TELEMED.references.model.main_text
    renamed = text.replace("[Billing Service] as Billing", "[Invoicing Service] as Billing")
    ref, cand = parse_architecture(text), parse_architecture(renamed)
    sim = ExactSimilarity()
    result = arch.structure(ref, cand, arch.align_by_similarity(ref, cand, sim), sim, ged_timeout_s=1e-6)
    assert result.ged_approximate and 0.0 < result.ged_acc < 100.0


def test_orphans_and_god_components():
    hub = (
        "@startuml\n"
        + "\n".join(f"[Hub] --> [S{i}]" for i in range(8))
        + "\n[Lonely]\npackage P {\n}\n@enduml"
    )
    found = arch.antipatterns(parse_architecture(hub))
    assert found.orphans == ["Lonely", "P"] and found.orphan_ratio == pytest.approx(2 / 11)
    assert found.gods == ["Hub"] and found.god_ratio == pytest.approx(1 / 11)
    card = cascade_for("architecture").score(diagram(hub), TELEMED, ScoringContext(options=FAST))
    assert card.stage("antipatterns").value < 1.0


# -- real diagrams: ArDoCo component models


@pytest.fixture(scope="module")
def ardoco_tasks(shared_benchmarks: Path) -> list[Task]:
    return ardoco.load(shared_benchmarks / "ardoco")


def test_ardoco_references_score_the_maximum_against_themselves(ardoco_tasks):
    assert len(ardoco_tasks) == 5
    for task in ardoco_tasks:
        card = cascade_for("architecture").score(task.references.model, task, ScoringContext(options=FAST))
        assert card.metric("validity") == 1.0, (task.id, card.stage("validity").detail)
        assert card.stage("structure").metrics == STRUCTURE_MAX, task.id
        assert card.stage("antipatterns").value == 1.0


def test_a_perturbed_ardoco_reference_scores_lower(ardoco_tasks):
    task = next(t for t in ardoco_tasks if t.id == "ardoco/mediastore")
    text = task.references.model.main_text
    perturbed = text.replace("c_Facade ..> i_IUserManagement : uses\n", "")
    perturbed = re.sub(r'component "UserManagement"', 'component "AccountService"', perturbed)
    assert perturbed.count("\n") < text.count("\n")
    card = cascade_for("architecture").score(diagram(perturbed), task, ScoringContext(options=FAST))
    metrics = card.stage("structure").metrics
    assert metrics["node_f1"] < 1.0 and metrics["edge_f1"] < 1.0 and metrics["ged_acc"] < 100.0
    assert metrics["edge_r"] < metrics["edge_p"] <= 1.0


def test_an_invalid_diagram_fails_validity_and_blocks_the_rest():
    broken = TELEMED.references.model.main_text.replace('package "Edge Tier" {', 'package "Edge Tier" {{{ <<')
    card = cascade_for("architecture").score(diagram(broken), TELEMED, ScoringContext())
    if card.metric("validity") == 1.0:
        pytest.fail(f"PlantUML accepted a broken diagram: {card.stage('validity').detail}")
    assert all(s.outcome == "skipped" for s in card.stages[1:])
