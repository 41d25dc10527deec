"""Architecture-diagram (PlantUML component) mutation operators: pure text -> text, ``MutationError`` when one does
not apply. Elements are named by their alias (``[Ride Service] as RideSvc``), edges by their index in file order.

Mutants: ``drop_component`` (the element and its edges), ``move_component`` (the element into another container:
another layer), ``drop_edge``, ``reverse_edge``. Preserving: ``rename_alias`` (a consistent rename of an alias,
which the diagram does not show), ``reorder_edges`` (edges in reverse order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sysmo.evals.sensitivity import MutationError

_KINDS = ("component|database|queue|node|rectangle|actor|cloud|frame|package|collections|storage|artifact|interface|"
          "boundary|entity|control|file|folder|card|agent|usecase|stack|hexagon|person")
_ELEMENT = re.compile(rf'^(\s*)(?:({_KINDS})\s+)?(\[[^\]]+\]|"[^"]+")\s+as\s+([\w.]+)\s*(<<[^>]*>>)?\s*(\{{)?\s*$')
_CONTAINER = re.compile(rf'^\s*({_KINDS})\s+("[^"]+"|[\w.]+)(?:\s+as\s+[\w.]+)?\s*(<<[^>]*>>)?\s*\{{\s*$')
_ARROW = r"[<o*#]?[-.]+(?:\[[^\]]*\])?(?:up|down|left|right|u|d|l|r)?[-.]*[>o*#]?"
_EDGE = re.compile(rf"^(\s*)([\w.]+)(\s+)({_ARROW})(\s+)([\w.]+)(\s*:.*)?\s*$")


@dataclass
class Container:
    head: int  # line index of 'package "X" {'
    end: int  # line index of its '}'
    name: str


def _lines(text: str) -> list[str]:
    return text.split("\n")


def elements(text: str) -> dict[str, int]:
    """Alias -> line index of each leaf element declared with an alias."""
    return {m.group(4): i for i, line in enumerate(_lines(text))
            if (m := _ELEMENT.match(line)) and not m.group(6)}


def edges(text: str) -> list[int]:
    """Line indices of the edges (``A --> B : label``), in file order."""
    return [i for i, line in enumerate(_lines(text)) if _EDGE.match(line)]


def edge_ends(text: str, index: int) -> tuple[str, str]:
    match = _EDGE.match(_lines(text)[edges(text)[index]])
    assert match is not None
    return match.group(2), match.group(6)


def containers(text: str) -> list[Container]:
    lines = _lines(text)
    found: list[Container] = []
    for i, line in enumerate(lines):
        if not (_CONTAINER.match(line) or ((m := _ELEMENT.match(line)) and m.group(6))):
            continue
        depth, end = 0, i
        for end in range(i, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            if depth <= 0:
                break
        box = _CONTAINER.match(line)
        name = box.group(2) if box else _ELEMENT.match(line).group(3)  # type: ignore[union-attr]
        found.append(Container(i, end, name.strip('"[]')))
    return found


def container_of(text: str, alias: str) -> Container | None:
    """The innermost container around element ``alias``."""
    line = elements(text).get(alias)
    if line is None:
        raise MutationError(f"no element declared with the alias {alias!r}")
    around = [c for c in containers(text) if c.head < line < c.end]
    return min(around, key=lambda c: c.end - c.head) if around else None


def drop_component(text: str, alias: str) -> str:
    """The diagram without element ``alias`` and without every edge at it."""
    declared = elements(text)
    if alias not in declared:
        raise MutationError(f"no element declared with the alias {alias!r} (aliases: {', '.join(declared)})")
    lines = _lines(text)
    gone = {declared[alias]} | {i for n, i in enumerate(edges(text)) if alias in edge_ends(text, n)}
    return "\n".join(line for i, line in enumerate(lines) if i not in gone)


def move_component(text: str, alias: str, target: str | None = None) -> str:
    """Element ``alias`` moved into another container (``target``, a container's shown name; else the first
    container that holds leaves and does not hold ``alias``)."""
    current = container_of(text, alias)
    lines = _lines(text)
    line = elements(text)[alias]
    holding = {c.head for c in containers(text) if any(c.head < i < c.end for i in elements(text).values())}
    options = [c for c in containers(text) if c.head in holding and not (c.head < line < c.end)
               and (current is None or c.head != current.head) and (target is None or c.name == target)]
    if not options:
        raise MutationError(f"no other container to move {alias!r} into" + (f" named {target!r}" if target else ""))
    chosen = options[0]
    moved = lines[line]
    indent = re.match(r"\s*", lines[chosen.head]).group(0) + "  "  # type: ignore[union-attr]
    out = list(lines)
    out.insert(chosen.head + 1, indent + moved.strip())
    del out[line + (1 if line > chosen.head else 0)]
    return "\n".join(out)


def drop_edge(text: str, index: int = 0) -> str:
    found = edges(text)
    if index >= len(found):
        raise MutationError(f"the diagram has {len(found)} edges, no number {index}")
    return "\n".join(line for i, line in enumerate(_lines(text)) if i != found[index])


def reverse_edge(text: str, index: int = 0) -> str:
    """Edge number ``index`` pointing the other way (its source and target swapped, arrow and label kept)."""
    found = edges(text)
    if index >= len(found):
        raise MutationError(f"the diagram has {len(found)} edges, no number {index}")
    lines = _lines(text)
    match = _EDGE.match(lines[found[index]])
    assert match is not None
    if match.group(2) == match.group(6):
        raise MutationError("a self-loop reversed is the same edge")
    if not re.search(r"[<>]", match.group(4)) or ("<" in match.group(4) and ">" in match.group(4)):
        raise MutationError(f"edge {index} ({match.group(4)}) has no single direction to reverse")
    lines[found[index]] = (match.group(1) + match.group(6) + match.group(3) + match.group(4) + match.group(5)
                           + match.group(2) + (match.group(7) or ""))
    return "\n".join(lines)


def rename_alias(text: str, old: str, new: str) -> str:
    """Alias ``old`` is ``new`` in its declaration and every edge (the shown name is unchanged)."""
    if old not in elements(text):
        raise MutationError(f"no element declared with the alias {old!r}")
    if re.search(rf"\b{re.escape(new)}\b", text):
        raise MutationError(f"{new!r} is already used in the diagram")
    lines = _lines(text)
    targets = {elements(text)[old], *edges(text)}
    for i in targets:
        lines[i] = re.sub(rf"(?<![\w.\"\[]){re.escape(old)}(?![\w.\"\]])", new, lines[i])
    return "\n".join(lines)


def reorder_edges(text: str) -> str:
    """The edges in reverse order, each on the line of another (declarations stay where they are)."""
    found = edges(text)
    if len(found) < 2:
        raise MutationError("fewer than two edges: nothing to reorder")
    lines = _lines(text)
    originals = [lines[i] for i in found]
    for i, line in zip(found, reversed(originals), strict=True):
        lines[i] = line
    return "\n".join(lines)
