"""Properties of the architecture metrics (hypothesis): identical graphs score GED_acc 100, ranges hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sysmo.evals.metrics import architecture as arch
from sysmo.evals.metrics.embedding import ExactSimilarity, TokenSimilarity
from sysmo.tools.plantuml.architecture import ArchEdge, ArchitectureGraph, ArchNode

NAMES = st.text(alphabet="abcdeXYZ ", min_size=1, max_size=10).map(str.strip).filter(bool)


@st.composite
def graphs(draw) -> ArchitectureGraph:
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique_by=str.casefold))
    nodes: list[ArchNode] = []
    for k, name in enumerate(names):
        # a parent among the nodes declared before: nesting without cycles
        parent = draw(st.one_of(st.none(), st.sampled_from([n.id for n in nodes]))) if nodes else None
        nodes.append(ArchNode(id=f"n{k}", name=name, kind="component", parent=parent))
    parents = {n.parent for n in nodes}
    for node in nodes:
        node.leaf = node.id not in parents
    ids = [n.id for n in nodes]
    edges = [
        ArchEdge(
            source=draw(st.sampled_from(ids)), target=draw(st.sampled_from(ids)), directed=draw(st.booleans())
        )
        for _ in range(draw(st.integers(0, 8)))
    ]
    return ArchitectureGraph(nodes=nodes, edges=edges)


def _structure(reference, predicted, similarity, timeout_s=0.05):
    alignment = arch.align_by_similarity(reference, predicted, similarity)
    return arch.structure(reference, predicted, alignment, similarity, ged_timeout_s=timeout_s)


@settings(max_examples=60, deadline=None)
@given(graphs(), st.sampled_from([ExactSimilarity(), TokenSimilarity()]))
def test_identical_graphs_have_ged_acc_100_and_every_metric_at_its_maximum(graph, similarity):
    result = _structure(graph, graph, similarity)
    assert result.ged == 0.0 and result.ged_acc == 100.0 and not result.ged_approximate
    assert (result.node_f1, result.edge_f1, result.layer_acc) == (1.0, 1.0, 1.0)


@settings(max_examples=30, deadline=None)
@given(graphs(), graphs())
def test_metrics_of_any_pair_stay_in_range(reference, predicted):
    result = _structure(reference, predicted, ExactSimilarity())
    for key in ("node_p", "node_r", "node_f1", "edge_p", "edge_r", "edge_f1", "layer_acc"):
        assert 0.0 <= getattr(result, key) <= 1.0, key
    assert 0.0 <= result.ged_acc <= 100.0 and result.ged >= 0.0
    found = arch.antipatterns(predicted)
    assert 0.0 <= found.orphan_ratio <= 1.0 and 0.0 <= found.god_ratio <= 1.0


def test_names_the_token_similarity_cannot_tell_apart_still_align_to_themselves():
    nodes = [
        ArchNode(id="n0", name="aX", kind="component"),
        ArchNode(id="n1", name="a X", kind="component"),
        ArchNode(id="n2", name="a_x", kind="component"),
    ]
    graph = ArchitectureGraph(
        nodes=nodes, edges=[ArchEdge(source="n0", target="n1"), ArchEdge(source="n2", target="n0")]
    )
    alignment = arch.align_by_similarity(graph, graph, TokenSimilarity())
    assert ("n0", "n0") in alignment.pairs and ("n1", "n1") in alignment.pairs
    result = arch.structure(graph, graph, alignment, TokenSimilarity(), ged_timeout_s=0.05)
    assert result.ged_acc == 100.0 and result.edge_f1 == 1.0
