"""Element-level precision/recall/F1 of a SysML v2 model against a reference, over OpenSysML element trees (no judge).

Definition. Each model is exported to its element tree (``sysmo.tools.sysml.element_tree``). Every tree
element except packages becomes one key; the keys of the two models are compared as multisets:
matched = sum over keys of min(count in reference, count in candidate),
P = matched / candidate keys, R = matched / reference keys, F1 = 2PR/(P+R) (each 0 when its
denominator is 0).

- ``named`` keys: (kind, normalised name, normalised names of the enclosing elements, outermost first).
  A normalised name is lower-case with everything but letters and digits removed, so ``fuel_tank``,
  ``FuelTank`` and ``'Fuel Tank'`` are equal; anonymous elements have the name ``""``.
- ``structure`` keys: (kind, kinds of the enclosing elements): the same tree with every name
  forgotten, so consistent renaming leaves it unchanged while a missing or misplaced element still counts.

Packages are transparent (neither counted nor part of paths): a generated model rarely names its
package like the reference, and that one choice would otherwise mismatch every element under it.
Kinds are the tree's ``ElementKind`` (part_def, part, attribute, port, action, state, transition, ...);
types, multiplicities and values are not compared.

>>> ref = ElementTree(elements=[Element(id="1", kind="part_def", metatype="PartDefinition", name="Car")])
>>> compare(ref, ref).f1
1.0
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel

from sysmo.tools.sysml.element_tree import Element, ElementKind, ElementTree

_NOT_ALNUM = re.compile(r"[^0-9a-z]+")


def normalise_name(name: str | None) -> str:
    return _NOT_ALNUM.sub("", (name or "").lower())


def _ancestors(tree: ElementTree, element: Element, index: dict[str, Element]) -> list[Element]:
    """Enclosing non-package elements, outermost first."""
    chain: list[Element] = []
    current = index.get(element.owner) if element.owner else None
    while current is not None and len(chain) < 10_000:  # bounded: owners come from an external export
        if current.kind != ElementKind.PACKAGE:
            chain.append(current)
        current = index.get(current.owner) if current.owner else None
    return chain[::-1]


def element_keys(tree: ElementTree, *, named: bool = True) -> Counter[tuple]:
    """The multiset of keys of one tree (see the module docstring)."""
    index = tree.by_id()
    keys: Counter[tuple] = Counter()
    for element in tree.elements:
        if element.kind == ElementKind.PACKAGE:
            continue
        ancestors = _ancestors(tree, element, index)
        if named:
            keys[
                (
                    element.kind.value,
                    normalise_name(element.name),
                    tuple(normalise_name(a.name) for a in ancestors),
                )
            ] += 1
        else:
            keys[(element.kind.value, tuple(a.kind.value for a in ancestors))] += 1
    return keys


class ElementScores(BaseModel):
    """Named and structure-only P/R/F1 with the counts behind them."""

    precision: float
    recall: float
    f1: float
    structure_precision: float
    structure_recall: float
    structure_f1: float
    n_reference: int
    n_candidate: int
    matched: int
    structure_matched: int
    missing: list[str] = []  # a few unmatched reference keys (named), for the report
    extra: list[str] = []  # a few unmatched candidate keys (named)

    def metrics(self) -> dict[str, float | None]:
        return {k: float(v) for k, v in self.model_dump(exclude={"missing", "extra"}).items()}


def _prf(matched: int, n_reference: int, n_candidate: int) -> tuple[float, float, float]:
    precision = matched / n_candidate if n_candidate else 0.0
    recall = matched / n_reference if n_reference else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def _render(key: tuple) -> str:
    kind, name, path = key
    return f"{kind} {'::'.join([*path, name or '<anonymous>'])}"


def compare(reference: ElementTree, candidate: ElementTree, *, examples: int = 10) -> ElementScores:
    """Element-level scores of ``candidate`` against ``reference``."""
    ref_named, cand_named = element_keys(reference), element_keys(candidate)
    ref_struct, cand_struct = element_keys(reference, named=False), element_keys(candidate, named=False)
    matched = sum((ref_named & cand_named).values())
    structure_matched = sum((ref_struct & cand_struct).values())
    n_ref, n_cand = sum(ref_named.values()), sum(cand_named.values())
    p, r, f = _prf(matched, n_ref, n_cand)
    sp, sr, sf = _prf(structure_matched, n_ref, n_cand)
    return ElementScores(
        precision=p,
        recall=r,
        f1=f,
        structure_precision=sp,
        structure_recall=sr,
        structure_f1=sf,
        n_reference=n_ref,
        n_candidate=n_cand,
        matched=matched,
        structure_matched=structure_matched,
        missing=[_render(k) for k in list((ref_named - cand_named).elements())[:examples]],
        extra=[_render(k) for k in list((cand_named - ref_named).elements())[:examples]],
    )
