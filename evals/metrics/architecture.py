"""R2ABench architecture metrics: node alignment, node/edge P/R/F1, layers, GED_acc, anti-patterns, rubric.

Definitions (docs/BENCHMARKS.md section 4), with R the reference graph and P the predicted one, both parsed
by ``sysmo.tools.plantuml.parse_architecture``:

- Leaf nodes: nodes that contain no other node (``ArchNode.leaf``), declared or only named by an edge (both
  are drawn by PlantUML).
- Names are normalised before they are compared (``normalise_name``: case, punctuation, camelCase).
- Alignment: pairs (reference leaf, predicted leaf), 1:1, 1:N and N:1 allowed. By the judge
  (``align_by_judge``, the R2ABench way) or deterministically (``align_by_similarity``): a Hungarian 1:1
  assignment on the string similarity of the names, kept where it reaches a threshold, then every node
  still unmatched joins its most similar node on the other side when that reaches the threshold too.
- Node P = aligned predicted leaves / predicted leaves; R = aligned reference leaves / reference leaves.
- Containers are mapped 1:1 by a Hungarian assignment on votes (how many aligned leaf pairs sit in the two
  containers) with name similarity as the tie-break.
- Edge P/R (ancestor rule): a predicted edge u->v is correct when some reference edge a->b has a in the
  reference nodes u maps to or their ancestor containers, and b likewise for v. Direction counts unless
  either edge is undirected or two-headed. A reference edge is recovered when some predicted edge is
  correct for it.
- Layer accuracy: the share of aligned pairs whose predicted container maps to the reference container
  (no container on both sides also counts as right).
- GED_acc = 100 * max(0, 1 - GED / N) over all nodes and the connection edges, N the replication
  package's weighted worst case |Vt| (1.0 + 2.0) + 0.8 |Vp| + |Et| + 1.2 |Ep| (``ged_normalisation=
  "package"``, default; the paper's N = max(|Vp| + |Ep|, |Vt| + |Et|) is ``"paper"``: it clamps to 0
  on realistic diagrams because one edit costs up to 2),
  with the replication weights: missing node 1.0, hallucinated node 0.8, boundary error (the same node in
  another container) 2.0, missing edge 1.0, extra edge 1.2. The cost of the edit path given by the
  alignment is an upper bound; networkx then searches for a cheaper one within a time bound, and the
  result is marked approximate when the bound was hit.
- Orphan ratio = leaf nodes of degree 0 / leaf nodes; god-component ratio = leaves with degree > mean +
  2 std (population std) and degree > 2, over leaves (the package counts over leaves; the paper says |Vp|).
  A leaf inside a container that has an edge is not an orphan (``inherit_container_edges``).
- Containers earn edge credit only when an aligned leaf pair sits inside them: a container matched on
  its name alone, with no node aligned, gives no edge.
- Rubric: the judge rates completeness, accuracy, rationality and readability 1-5 as JSON with rationale.
"""

from __future__ import annotations

import importlib.resources
import re
import time
from collections.abc import Iterable
from typing import Any

import networkx as nx
import numpy as np
from pydantic import BaseModel, Field
from scipy.optimize import linear_sum_assignment

from sysmo.errors import LLMError
from sysmo.llm.response import json_payload
from sysmo.evals.metrics.embedding import EXACT, MINILM, TOKEN, StringSimilarity
from sysmo.log import get_logger
from sysmo.tools.plantuml.architecture import ArchEdge, ArchitectureGraph, ArchNode

log = get_logger(__name__)

# how similar two names must be to align them without a judge, per similarity (sigma of the embedding
# never drops far below .5 for unrelated strings, so it needs a higher bar)
ALIGNMENT_THRESHOLDS = {EXACT: 1.0, TOKEN: 0.6, MINILM: 0.85}
DEFAULT_THRESHOLD = 0.85


class GedWeights(BaseModel):
    """The R2ABench replication package's edit costs."""

    missing_node: float = 1.0
    hallucinated_node: float = 0.8
    boundary_error: float = 2.0
    missing_edge: float = 1.0
    extra_edge: float = 1.2


REPLICATION_WEIGHTS = GedWeights()
RUBRIC_DIMENSIONS = ("completeness", "accuracy", "rationality", "readability")


def prf(
    correct_predicted: int, n_predicted: int, correct_reference: int, n_reference: int
) -> tuple[float, ...]:
    """Precision, recall, F1; two empty sets agree perfectly, and nothing right out of something is 0."""
    if n_predicted == 0 and n_reference == 0:
        return 1.0, 1.0, 1.0
    precision = correct_predicted / n_predicted if n_predicted else 0.0
    recall = correct_reference / n_reference if n_reference else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


# -- alignment


class NodeAlignment(BaseModel):
    """Aligned (reference id, predicted id) leaf pairs and what produced them."""

    pairs: list[tuple[str, str]] = Field(default_factory=list)
    method: str  # "judge" or "similarity"
    source: str  # the judge model or the similarity name
    rationale: str | None = None
    ignored: list[str] = Field(default_factory=list)  # ids in a judge answer that name no node


_STOP_MARKUP = re.compile(r"[^0-9a-zA-Z]+")


def normalise_name(name: str) -> str:
    """A name as the aligner compares it: camelCase and snake_case split, punctuation dropped, case-folded.

    ``OrderService``, ``order_service`` and ``"Order Service"`` all become ``order service``; the parser has
    already cut description lines (``[MySQL\\n(DB)]`` is named ``MySQL``).
    """
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(_STOP_MARKUP.sub(" ", spaced).split()).casefold()


def _names(nodes: list[ArchNode]) -> list[str]:
    return [normalise_name(n.name) for n in nodes]


def _prefer_equal(scores: np.ndarray, left: list[ArchNode], right: list[ArchNode]) -> np.ndarray:
    """Break ties between equally similar names in favour of the identical one (``aB`` ~ ``a b``)."""
    equal = np.array([[a.name == b.name for b in right] for a in left], dtype=float).reshape(scores.shape)
    return scores + 1e-6 * equal


def align_by_similarity(
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
    similarity: StringSimilarity,
    threshold: float | None = None,
) -> NodeAlignment:
    """Deterministic alignment on leaf names: 1:1 Hungarian, then 1:N / N:1 for nodes left over."""
    if threshold is None:
        threshold = ALIGNMENT_THRESHOLDS.get(similarity.name, DEFAULT_THRESHOLD)
    ref, pred = reference.leaves(), predicted.leaves()
    alignment = NodeAlignment(method="similarity", source=similarity.name)
    if not ref or not pred:
        return alignment
    sims = similarity.matrix(_names(ref), _names(pred))
    pairs: set[tuple[int, int]] = set()
    for i, j in zip(*linear_sum_assignment(_prefer_equal(sims, ref, pred), maximize=True), strict=True):
        if sims[i, j] >= threshold:
            pairs.add((int(i), int(j)))
    ref_done, pred_done = {i for i, _ in pairs}, {j for _, j in pairs}
    for j in range(len(pred)):
        i = int(np.argmax(sims[:, j]))
        if j not in pred_done and sims[i, j] >= threshold:
            pairs.add((i, j))  # N:1: this predicted node is another part of a reference node
    for i in range(len(ref)):
        j = int(np.argmax(sims[i, :]))
        if i not in ref_done and sims[i, j] >= threshold:
            pairs.add((i, j))  # 1:N
    alignment.pairs = sorted((ref[i].id, pred[j].id) for i, j in pairs)
    return alignment


def _node_lines(graph: ArchitectureGraph, prefix: str) -> tuple[str, dict[str, str]]:
    lines, ids = [], {}
    for k, node in enumerate(graph.leaves(), start=1):
        key = f"{prefix}{k}"
        ids[key] = node.id
        parent = graph.node(node.parent) if node.parent else None
        where = f", in {parent.name!r}" if parent else ""
        tech = f", technology {node.technology}" if node.technology else ""
        lines.append(f"{key}: {node.name!r} ({node.kind}{tech}{where})")
    return "\n".join(lines) or "(none)", ids


def prompt_template(name: str) -> str:
    return (importlib.resources.files("sysmo.evals.prompts") / name).read_text(encoding="utf-8")


def fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders in one pass (a placeholder inside a filled-in diagram stays as is)."""
    pattern = re.compile("|".join(re.escape("{" + k + "}") for k in values))
    return pattern.sub(lambda m: values[m.group(0)[1:-1]], template)


def alignment_prompt(reference: ArchitectureGraph, predicted: ArchitectureGraph) -> tuple[str, dict, dict]:
    """The node-alignment prompt and the R<k> / C<k> keys it uses for each side's node ids."""
    ref_text, ref_ids = _node_lines(reference, "R")
    pred_text, pred_ids = _node_lines(predicted, "C")
    prompt = fill(
        prompt_template("architecture_node_alignment.md"), reference_nodes=ref_text, candidate_nodes=pred_text
    )
    return prompt, ref_ids, pred_ids


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | int):
        return [str(value)]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int)]
    return []


def parse_alignment(
    text: str,
    ref_ids: dict[str, str],
    pred_ids: dict[str, str],
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
) -> tuple[list[tuple[str, str]], list[str], str | None] | None:
    """Pairs from a judge answer, the keys it named that match no node, its rationale; None if no JSON."""
    payload = json_payload(text)
    if payload is None:
        return None
    groups = payload.get("matches", payload.get("alignment")) if isinstance(payload, dict) else payload
    if not isinstance(groups, list):
        return None
    rationale = payload.get("rationale") if isinstance(payload, dict) else None

    def resolve(key: str, ids: dict[str, str], graph: ArchitectureGraph) -> str | None:
        key = key.strip()
        if key.upper() in ids:
            return ids[key.upper()]
        node = graph.node(key)  # a judge that answered with names instead of keys
        return node.id if node is not None and node.leaf else None

    pairs: set[tuple[str, str]] = set()
    ignored: list[str] = []
    for group in groups:
        if isinstance(group, dict):
            refs = _as_list(group.get("reference", group.get("references")))
            preds = _as_list(group.get("candidate", group.get("candidates", group.get("generated"))))
        elif isinstance(group, list) and len(group) == 2:
            refs, preds = _as_list(group[0]), _as_list(group[1])
        else:
            continue
        ref_nodes = [(k, resolve(k, ref_ids, reference)) for k in refs]
        pred_nodes = [(k, resolve(k, pred_ids, predicted)) for k in preds]
        ignored += [k for k, node in ref_nodes + pred_nodes if node is None]
        pairs.update((r, p) for _, r in ref_nodes for _, p in pred_nodes if r and p)
    return sorted(pairs), ignored, rationale if isinstance(rationale, str) else None


def align_by_judge(
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
    judge: Any,
    context: Any = None,
    temperature: float | None = 0.0,
) -> tuple[NodeAlignment | None, str, str | None]:
    """(alignment or None, the judge's raw answer, why it failed) for the judge role."""
    prompt, ref_ids, pred_ids = alignment_prompt(reference, predicted)
    try:
        response = judge.complete(
            [{"role": "user", "content": prompt}], role="judge", temperature=temperature, context=context
        )
    except LLMError as exc:
        log.warning("architecture.alignment_failed", error=str(exc))
        return None, "", f"judge call failed: {exc}"
    parsed = parse_alignment(response.text or "", ref_ids, pred_ids, reference, predicted)
    if parsed is None:
        log.warning(
            "architecture.alignment_unparseable", model=response.model, chars=len(response.text or "")
        )
        return None, response.text or "", "the judge's answer holds no JSON list of matches"
    pairs, ignored, rationale = parsed
    alignment = NodeAlignment(
        pairs=pairs, method="judge", source=response.model, rationale=rationale, ignored=ignored
    )
    return alignment, response.text or "", None


# -- structure


class StructureResult(BaseModel):
    node_p: float
    node_r: float
    node_f1: float
    edge_p: float
    edge_r: float
    edge_f1: float
    layer_acc: float
    ged: float
    ged_acc: float
    ged_approximate: bool
    ged_seconds: float
    n_reference_leaves: int
    n_predicted_leaves: int
    n_reference_edges: int
    n_predicted_edges: int
    container_map: dict[str, str] = Field(default_factory=dict)  # predicted container -> reference container
    wrong_edges: list[str] = Field(default_factory=list)
    missed_edges: list[str] = Field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        return {
            "node_p": self.node_p,
            "node_r": self.node_r,
            "node_f1": self.node_f1,
            "edge_p": self.edge_p,
            "edge_r": self.edge_r,
            "edge_f1": self.edge_f1,
            "layer_acc": self.layer_acc,
            "ged_acc": self.ged_acc,
            "ged_approximate": 1.0 if self.ged_approximate else 0.0,
        }


def _hungarian(scores: np.ndarray) -> list[tuple[int, int]]:
    if scores.size == 0:
        return []
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if scores[i, j] > 0]


def container_map(
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
    pairs: Iterable[tuple[str, str]],
    similarity: StringSimilarity,
    threshold: float,
) -> dict[str, str]:
    """Predicted container id -> reference container id, 1:1, by votes of aligned leaves, then names."""
    ref_c = [n for n in reference.nodes if not n.leaf]
    pred_c = [n for n in predicted.nodes if not n.leaf]
    if not ref_c or not pred_c:
        return {}
    r_index = {n.id: i for i, n in enumerate(ref_c)}
    p_index = {n.id: j for j, n in enumerate(pred_c)}
    votes = np.zeros((len(ref_c), len(pred_c)))
    for r, p in pairs:
        rp, pp = reference.node(r).parent, predicted.node(p).parent
        if rp in r_index and pp in p_index:
            votes[r_index[rp], p_index[pp]] += 1
    names = similarity.matrix(_names(ref_c), _names(pred_c))
    # votes decide; a name alone counts only when it reaches the alignment threshold
    scores = votes + 0.5 * np.where(names >= threshold, names, 0.0)
    return {pred_c[j].id: ref_c[i].id for i, j in _hungarian(scores)}


def _contains(graph: ArchitectureGraph, container: str, node_id: str | None) -> bool:
    """``node_id`` is ``container`` or sits (at any depth) inside it."""
    return node_id is not None and (node_id == container or container in _ancestors(graph, node_id))


def _ancestors(graph: ArchitectureGraph, node_id: str) -> list[str]:
    out, seen = [], set()
    node = graph.node(node_id)
    while node is not None and node.parent is not None and node.parent not in seen:
        seen.add(node.parent)
        out.append(node.parent)
        node = graph.node(node.parent)
    return out


def _edge_text(edge: ArchEdge) -> str:
    return f"{edge.source} {edge.arrow or '->'} {edge.target}"


def _one_to_one(
    pairs: list[tuple[str, str]],
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
    similarity: StringSimilarity,
) -> dict[str, str]:
    """Predicted leaf -> reference leaf, 1:1, taken from the alignment (the most similar pairs first)."""
    refs = sorted({r for r, _ in pairs})
    preds = sorted({p for _, p in pairs})
    if not pairs:
        return {}
    names = similarity.matrix([reference.node(r).name for r in refs], [predicted.node(p).name for p in preds])
    scores = np.zeros((len(refs), len(preds)))
    r_index, p_index = {r: i for i, r in enumerate(refs)}, {p: j for j, p in enumerate(preds)}
    for r, p in pairs:
        scores[r_index[r], p_index[p]] = 1.0 + names[r_index[r], p_index[p]]
    scores = _prefer_equal(scores, [reference.node(r) for r in refs], [predicted.node(p) for p in preds])
    scores[scores < 1.0] = 0.0  # only aligned pairs
    return {preds[j]: refs[i] for i, j in _hungarian(scores)}


def _pair_leftovers(pred: nx.DiGraph, truth: nx.DiGraph, node_map: dict[str, str]) -> dict[str, str]:
    """``node_map`` plus pairs of unaligned nodes whose edges agree with it: relabelling a node costs as much
    as deleting and inserting it (0.8 + 1.0) but keeps its edges, so the bound gets tighter."""
    path = dict(node_map)
    for _ in range(3):  # a pair made in one round can support another in the next
        left = [n for n in pred.nodes if n not in path]
        taken = set(path.values())
        right = [n for n in truth.nodes if n not in taken]
        if not left or not right:
            break
        agree = np.zeros((len(left), len(right)))
        for i, u in enumerate(left):
            for j, v in enumerate(right):
                agree[i, j] = sum(
                    path.get(x) is not None and truth.has_edge(v, path[x]) for x in pred.successors(u)
                )
                agree[i, j] += sum(
                    path.get(x) is not None and truth.has_edge(path[x], v) for x in pred.predecessors(u)
                )
        pairs = _hungarian(agree)
        if not pairs:
            break
        path.update((left[i], right[j]) for i, j in pairs)
    return path


GED_NORMALISATIONS = ("package", "paper")


def ged_normaliser(truth: nx.DiGraph, pred: nx.DiGraph, weights: GedWeights, normalisation: str) -> float:
    """The GED that counts as 0 % accuracy.

    ``package`` (the replication package, which produced the published numbers): the weighted worst case,
    every reference node missed and misplaced, every predicted node hallucinated, every edge missed or extra:
    |Vt| (w_miss + w_boundary) + |Vp| w_hallu + |Et| w_miss_edge + |Ep| w_extra_edge.
    ``paper``: max(|Vp| + |Ep|, |Vt| + |Et|), unweighted, which clamps to 0 on realistic diagrams because
    single edits cost up to 2.
    """
    if normalisation == "paper":
        return float(
            max(pred.number_of_nodes() + pred.number_of_edges(), truth.number_of_nodes() + truth.number_of_edges())
        )
    if normalisation != "package":
        raise ValueError(f"GED normalisation must be one of {GED_NORMALISATIONS}, not {normalisation!r}")
    return (
        truth.number_of_nodes() * (weights.missing_node + weights.boundary_error)
        + pred.number_of_nodes() * weights.hallucinated_node
        + truth.number_of_edges() * weights.missing_edge
        + pred.number_of_edges() * weights.extra_edge
    )


def graph_edit_distance(
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
    node_map: dict[str, str],
    weights: GedWeights = REPLICATION_WEIGHTS,
    timeout_s: float = 5.0,
    normalisation: str = "package",
) -> tuple[float, float, bool, float]:
    """(GED, GED_acc, approximate, seconds). ``node_map``: predicted node id -> reference node id (1:1)."""
    truth = nx.DiGraph()
    for node in reference.nodes:
        truth.add_node(node.id, key=node.id, parent=node.parent)
    truth.add_edges_from((e.source, e.target) for e in reference.edges)
    pred = nx.DiGraph()
    for node in predicted.nodes:
        parent = None if node.parent is None else node_map.get(node.parent, f"?{node.parent}")
        pred.add_node(node.id, key=node_map.get(node.id), parent=parent)
    pred.add_edges_from((e.source, e.target) for e in predicted.edges)

    def node_subst(p: dict, t: dict) -> float:
        if p["key"] is not None and p["key"] == t["key"]:
            return 0.0 if p["parent"] == t["parent"] else weights.boundary_error
        return weights.hallucinated_node + weights.missing_node

    def path_cost(path: dict[str, str]) -> float:
        """The cost of the edit path that substitutes each ``path`` pair and deletes / inserts the rest."""
        image = set(path.values())
        cost = sum(
            node_subst(pred.nodes[n], truth.nodes[path[n]]) if n in path else weights.hallucinated_node
            for n in pred.nodes
        )
        cost += weights.missing_node * sum(1 for n in truth.nodes if n not in image)
        kept = {(path.get(u), path.get(v)) for u, v in pred.edges} & set(truth.edges)
        cost += weights.extra_edge * sum(1 for u, v in pred.edges if (path.get(u), path.get(v)) not in kept)
        cost += weights.missing_edge * sum(1 for e in truth.edges if e not in kept)
        return cost

    # the edit path the alignment gives, with unaligned nodes paired where that keeps edges: an upper bound
    bound = path_cost(_pair_leftovers(pred, truth, node_map))
    best, approximate, started = bound, False, time.monotonic()
    if bound > 0:
        paths = nx.optimize_edit_paths(
            pred,
            truth,
            node_subst_cost=node_subst,
            node_del_cost=lambda _: weights.hallucinated_node,
            node_ins_cost=lambda _: weights.missing_node,
            edge_subst_cost=lambda _a, _b: 0.0,
            edge_del_cost=lambda _: weights.extra_edge,
            edge_ins_cost=lambda _: weights.missing_edge,
            upper_bound=bound,
            strictly_decreasing=True,
            timeout=timeout_s,
        )
        for _nodes, _edges, cost in paths:
            best = min(best, float(cost))
        approximate = time.monotonic() - started >= timeout_s
    size = ged_normaliser(truth, pred, weights, normalisation)
    accuracy = 100.0 * max(0.0, 1.0 - best / size) if size else 100.0
    return round(best, 9), round(accuracy, 9), approximate, time.monotonic() - started


def structure(
    reference: ArchitectureGraph,
    predicted: ArchitectureGraph,
    alignment: NodeAlignment,
    similarity: StringSimilarity,
    threshold: float | None = None,
    ged_timeout_s: float = 5.0,
    weights: GedWeights = REPLICATION_WEIGHTS,
    ged_normalisation: str = "package",
) -> StructureResult:
    """Node/edge P/R/F1, layer accuracy and GED_acc of ``predicted`` under ``alignment``."""
    if threshold is None:
        threshold = ALIGNMENT_THRESHOLDS.get(similarity.name, DEFAULT_THRESHOLD)
    ref_leaves, pred_leaves = reference.leaves(), predicted.leaves()
    pairs = [(r, p) for r, p in alignment.pairs if reference.node(r) and predicted.node(p)]
    node_p, node_r, node_f1 = prf(
        len({p for _, p in pairs}), len(pred_leaves), len({r for r, _ in pairs}), len(ref_leaves)
    )
    containers = container_map(reference, predicted, pairs, similarity, threshold)

    # edges, with the ancestor rule
    maps_to: dict[str, set[str]] = {}
    for r, p in pairs:
        maps_to.setdefault(p, set()).add(r)
    # a container earns edge credit only when an aligned leaf pair sits in it (the package maps containers
    # only through the judge's matched pairs; a name match alone with no node aligned gives no edges)
    voted = {(predicted.node(p).parent, reference.node(r).parent) for r, p in pairs}
    for p, r in containers.items():
        if any(_contains(predicted, p, pp) and _contains(reference, r, rp) for pp, rp in voted):
            maps_to.setdefault(p, set()).add(r)
    reach = {p: set(rs).union(*(_ancestors(reference, r) for r in rs)) for p, rs in maps_to.items()}

    def correct(pe: ArchEdge, re_: ArchEdge) -> bool:
        su, sv = reach.get(pe.source, set()), reach.get(pe.target, set())
        forward = re_.source in su and re_.target in sv
        either_way = not (pe.directed and re_.directed) or pe.bidirectional or re_.bidirectional
        return forward or (either_way and re_.source in sv and re_.target in su)

    good_pred = [pe for pe in predicted.edges if any(correct(pe, re_) for re_ in reference.edges)]
    found_ref = [re_ for re_ in reference.edges if any(correct(pe, re_) for pe in predicted.edges)]
    edge_p, edge_r, edge_f1 = prf(len(good_pred), len(predicted.edges), len(found_ref), len(reference.edges))

    # layers
    def same_layer(r: str, p: str) -> bool:
        rp, pp = reference.node(r).parent, predicted.node(p).parent
        return (rp is None and pp is None) or (pp is not None and containers.get(pp) == rp)

    if pairs:
        layer_acc = sum(same_layer(r, p) for r, p in pairs) / len(pairs)
    else:
        layer_acc = 1.0 if not ref_leaves and not pred_leaves else 0.0

    node_map = {**_one_to_one(pairs, reference, predicted, similarity), **containers}
    ged, ged_acc, approximate, seconds = graph_edit_distance(
        reference, predicted, node_map, weights, ged_timeout_s, ged_normalisation
    )
    return StructureResult(
        node_p=node_p,
        node_r=node_r,
        node_f1=node_f1,
        edge_p=edge_p,
        edge_r=edge_r,
        edge_f1=edge_f1,
        layer_acc=layer_acc,
        ged=ged,
        ged_acc=ged_acc,
        ged_approximate=approximate,
        ged_seconds=round(seconds, 3),
        n_reference_leaves=len(ref_leaves),
        n_predicted_leaves=len(pred_leaves),
        n_reference_edges=len(reference.edges),
        n_predicted_edges=len(predicted.edges),
        container_map=containers,
        wrong_edges=[_edge_text(e) for e in predicted.edges if e not in good_pred][:50],
        missed_edges=[_edge_text(e) for e in reference.edges if e not in found_ref][:50],
    )


# -- anti-patterns


class AntipatternResult(BaseModel):
    orphan_ratio: float
    god_ratio: float
    orphans: list[str] = Field(default_factory=list)
    gods: list[str] = Field(default_factory=list)


def antipatterns(graph: ArchitectureGraph, inherit_container_edges: bool = True) -> AntipatternResult:
    """Orphan leaves (degree 0) and god components (degree > mean + 2 std and > 2), as shares of the LEAVES.

    As the replication package: only leaf nodes are counted, in the numerator and the denominator.
    ``inherit_container_edges`` (default): an edge drawn to or from a container also touches every leaf
    inside it, so a reference that connects its layers (``[API Layer] --> [Data Layer]``) has no orphans.
    With ``False`` a leaf's degree counts only the edges that name it, the package's literal rule.
    """
    leaves = graph.leaves() or list(graph.nodes)
    if not leaves:
        return AntipatternResult(orphan_ratio=0.0, god_ratio=0.0)
    degree = {n.id: 0 for n in leaves}
    for edge in graph.edges:
        for end in (edge.source, edge.target):
            if end in degree:
                degree[end] += 1
    if inherit_container_edges:
        for leaf in leaves:
            ancestors = set(_ancestors(graph, leaf.id))
            if degree[leaf.id] == 0 and any(
                e.source in ancestors or e.target in ancestors for e in graph.edges
            ):
                degree[leaf.id] = 1  # touched through its container: not an orphan (and no god weight)
    values = np.array(list(degree.values()), dtype=float)
    limit = values.mean() + 2 * values.std()  # numpy's std is the population std
    orphans = [n for n, d in degree.items() if d == 0]
    gods = [n for n, d in degree.items() if d > limit and d > 2]
    total = len(leaves)
    return AntipatternResult(
        orphan_ratio=len(orphans) / total, god_ratio=len(gods) / total, orphans=orphans, gods=gods
    )


# -- rubric


class RubricResult(BaseModel):
    """The judge's 1-5 scores per dimension (None where unreadable) and its rationale."""

    scores: dict[str, float | None] = Field(default_factory=dict)
    rationale: dict[str, str] = Field(default_factory=dict)
    model: str | None = None
    text: str = ""
    error: str | None = None

    @property
    def complete(self) -> bool:
        return all(self.scores.get(d) is not None for d in RUBRIC_DIMENSIONS)

    @property
    def mean(self) -> float | None:
        values = [v for v in self.scores.values() if v is not None]
        return sum(values) / len(values) if values else None


def _score(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("score", value.get("rating"))
    if isinstance(value, str):
        match = re.search(r"\d+(?:\.\d+)?", value)
        value = float(match.group(0)) if match else None
    if isinstance(value, int | float) and not isinstance(value, bool) and 1 <= value <= 5:
        return float(value)
    return None


def parse_rubric(text: str) -> RubricResult:
    """Scores from JSON (``{"accuracy": {"score": 4, "rationale": ...}}`` or ``{"accuracy": 4, ...}``), else
    from ``accuracy: 4`` lines; a score outside 1-5 is unreadable."""
    result = RubricResult(text=text or "")
    payload = json_payload(text or "")
    if isinstance(payload, dict):
        lowered = {str(k).strip().lower(): v for k, v in payload.items()}
        scores = lowered.get("scores") if isinstance(lowered.get("scores"), dict) else lowered
        scores = {str(k).strip().lower(): v for k, v in scores.items()}
        rationale = lowered.get("rationale")
        for dim in RUBRIC_DIMENSIONS:
            result.scores[dim] = _score(scores.get(dim))
            item = scores.get(dim)
            if isinstance(item, dict) and isinstance(item.get("rationale"), str):
                result.rationale[dim] = item["rationale"]
            elif isinstance(rationale, dict) and isinstance(rationale.get(dim), str):
                result.rationale[dim] = rationale[dim]
        if isinstance(rationale, str):
            result.rationale["overall"] = rationale
    for dim in RUBRIC_DIMENSIONS:
        if result.scores.get(dim) is None:
            match = re.search(rf"{dim}\W{{0,30}}?(\d+(?:\.\d+)?)\s*(?:/\s*5)?", text or "", re.I)
            result.scores[dim] = _score(match.group(1)) if match else None
    return result


def rubric_prompt(requirements: str, reference_text: str | None, candidate_text: str) -> str:
    return fill(
        prompt_template("architecture_rubric.md"),
        requirements=requirements or "(none given)",
        reference_diagram=reference_text or "(none given)",
        candidate_diagram=candidate_text,
    )


def judge_rubric(
    requirements: str,
    reference_text: str | None,
    candidate_text: str,
    judge: Any,
    context: Any = None,
    temperature: float | None = 0.0,
) -> RubricResult:
    """Ask the judge role for the four 1-5 ratings and parse its answer."""
    prompt = rubric_prompt(requirements, reference_text, candidate_text)
    try:
        response = judge.complete(
            [{"role": "user", "content": prompt}], role="judge", temperature=temperature, context=context
        )
    except LLMError as exc:
        log.warning("architecture.rubric_failed", error=str(exc))
        return RubricResult(error=f"judge call failed: {exc}")
    result = parse_rubric(response.text or "")
    result.model = response.model
    if not result.complete:
        log.warning("architecture.rubric_unparseable", model=response.model, scores=result.scores)
    return result
