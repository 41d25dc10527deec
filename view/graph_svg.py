"""An agent's compiled LangGraph (``get_graph()``) drawn as inline SVG for ``sysmo view``, the nodes and edges one
attempt took highlighted: layers by distance from the start (networkx), laid out here, no graphviz, no network."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from html import escape

import networkx as nx

from sysmo.log import get_logger
from sysmo.view.models import GraphDrawing

log = get_logger(__name__)

START, END = "__start__", "__end__"
ROW_H, NODE_H, GAP_X, CHAR_W, PAD_X = 64, 30, 24, 7.2, 14


@lru_cache(maxsize=32)
def _variants(agent: str) -> tuple[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], ...]:
    """Each variant of the agent's graph as (variant, nodes, edges), from its compiled LangGraph ((): unknown agent)."""
    from sysmo.agents.describe import drawings
    from sysmo.agents.registry import all_agents

    spec = next((s for s in all_agents() if s.name == agent), None)
    if spec is None:
        return ()
    return tuple((d.variant, tuple(d.nodes), tuple((a, b) for a, b in d.edges)) for d in drawings(spec))


def _layers(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Each node's row: its distance from the start; the end goes last; nodes not reached go above the end."""
    graph = nx.DiGraph(edges)
    graph.add_nodes_from(nodes)
    depth = nx.single_source_shortest_path_length(graph, START) if START in graph else {}
    last = max((d for n, d in depth.items() if n != END), default=0)
    layers = {n: depth.get(n, last + 1) for n in nodes if n != END}
    if END in nodes:
        layers[END] = max(layers.values(), default=0) + 1
    return layers


def _label(node: str) -> str:
    return {START: "start", END: "end"}.get(node, node)


def draw(nodes: list[str], edges: list[tuple[str, str]], path: list[str]) -> str:
    """SVG of the graph; ``path`` is the sequence of nodes the attempt ran (repeats count visits)."""
    layers = _layers(nodes, edges)
    rows: dict[int, list[str]] = {}
    for node in sorted(layers, key=lambda n: (layers[n], n)):
        rows.setdefault(layers[node], []).append(node)
    width_of = {n: max(60.0, len(_label(n)) * CHAR_W + 2 * PAD_X) for n in layers}
    row_widths = {r: sum(width_of[n] for n in ns) + GAP_X * (len(ns) - 1) for r, ns in rows.items()}
    total_w = max(row_widths.values(), default=100) + 160  # room on the right for edges going back up
    box: dict[str, tuple[float, float, float]] = {}  # node -> (x centre, y top, width)
    for r, ns in rows.items():
        x = (total_w - 160 - row_widths[r]) / 2
        for n in ns:
            box[n] = (x + width_of[n] / 2, 12 + r * ROW_H, width_of[n])
            x += width_of[n] + GAP_X
    visits = Counter(path)
    full = [START, *path, END] if path else []
    taken = {(a, b) for a, b in zip(full, full[1:])}
    height = 12 + (max(rows, default=0) + 1) * ROW_H
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="agent-graph" viewBox="0 0 {total_w:.0f} {height}" '
             f'width="{total_w:.0f}" height="{height}" role="img" aria-label="agent graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>']
    for a, b in edges:
        if a not in box or b not in box:
            continue
        (ax, ay, _), (bx, by, bw) = box[a], box[b]
        cls = "edge taken" if (a, b) in taken else "edge"
        if by > ay:  # downwards: a straight line from the bottom of one box to the top of the next
            d = f"M{ax:.1f},{ay + NODE_H} L{bx:.1f},{by - 2}"
        else:  # back up (a loop) or sideways: a curve round the right-hand side
            right = max(box[a][0] + box[a][2] / 2, bx + bw / 2) + 30 + 10 * (ay - by) / ROW_H
            d = (f"M{ax + box[a][2] / 2:.1f},{ay + NODE_H / 2} C{right:.1f},{ay + NODE_H / 2} {right:.1f},"
                 f"{by + NODE_H / 2} {bx + bw / 2 + 2:.1f},{by + NODE_H / 2}")
        parts.append(f'<path class="{cls}" d="{d}" fill="none" marker-end="url(#arrow)"><title>{escape(_label(a))} '
                     f'→ {escape(_label(b))}</title></path>')
    for node, (x, y, w) in box.items():
        n = visits.get(node, 0)
        cls = "node visited" if n or (node in (START, END) and path) else "node"
        label = _label(node) + (f" ×{n}" if n > 1 else "")
        parts.append(f'<g class="{cls}" data-node="{escape(node)}"><title>{escape(_label(node))}: '
                     f'{"ran " + str(n) + " time(s)" if n else "not run"}</title>'
                     f'<rect x="{x - w / 2:.1f}" y="{y}" width="{w:.1f}" height="{NODE_H}" rx="6"/>'
                     f'<text x="{x:.1f}" y="{y + NODE_H / 2 + 4}" text-anchor="middle">{escape(label)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def agent_graph(agent: str, path: list[str]) -> GraphDrawing | None:
    """The agent's graph (the variant whose nodes cover most of ``path``) with ``path`` highlighted."""
    try:
        variants = _variants(agent)
    except Exception as exc:  # noqa: BLE001 - an agent whose graph cannot be built here still has a page
        log.warning("view.agent_graph_unavailable", agent=agent, error=f"{type(exc).__name__}: {exc}")
        return None
    if not variants:
        return None
    variant, nodes, edges = max(variants, key=lambda v: sum(n in v[1] for n in path))
    ran = [n for n in path if n in nodes]
    return GraphDrawing(svg=draw(list(nodes), list(edges), ran), variant=variant, visited=list(dict.fromkeys(ran)))
