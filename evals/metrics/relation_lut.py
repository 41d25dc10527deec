"""The relation-type lookup table of CLUE: how alike two UML relationship types are, in [0, 1].

OODEval takes this table from the NINHS paper, which does not publish it; this is ours. It is symmetric,
1 on the diagonal, and grades a confusion by how much of the relationship's meaning survives it:

==============  ====  ====  ====  ====  ====  ====
                AS    AG    CO    DE    GE    RE
==============  ====  ====  ====  ====  ====  ====
association     1     .6    .4    .4    0     0
aggregation     .6    1     .8    .2    0     0
composition     .4    .8    1     .2    0     0
dependency      .4    .2    .2    1     0     .2
generalization  0     0     0     0     1     .6
realization     0     0     0     .2    .6    1
==============  ====  ====  ====  ====  ====  ====

Why these numbers:

- aggregation ~ composition (.8): both whole-part with the diamond at the whole; they differ only in
  ownership of the part's lifetime, the most common and least harmful confusion in student diagrams.
- association ~ aggregation (.6) > association ~ composition (.4): an aggregation is an association with
  a weak whole-part reading; composition adds lifetime ownership that a plain association lacks.
- association ~ dependency (.4): both say "uses"; a dependency is transient (a parameter, a call) where an
  association is a structural link.
- generalization ~ realization (.6): both are "is-a" (a subtype of a class / an implementer of an
  interface) and only differ in what the general end is.
- dependency ~ whole-part (.2), dependency ~ realization (.2): a realization is a kind of dependency in
  UML's metamodel, and a part is something its whole uses, but little meaning survives either swap.
- structural vs inheritance (0): "has"/"uses" and "is-a" are different design decisions.

>>> lut(RelationType.AGGREGATION, RelationType.COMPOSITION)
0.8
"""

from __future__ import annotations

from sysmo.tools.plantuml.class_model import RelationType

AS, AG, CO = RelationType.ASSOCIATION, RelationType.AGGREGATION, RelationType.COMPOSITION
DE, GE, RE = RelationType.DEPENDENCY, RelationType.GENERALIZATION, RelationType.REALIZATION

# the upper triangle; ``lut`` mirrors it
_PAIRS: dict[frozenset[RelationType], float] = {
    frozenset({AS, AG}): 0.6,
    frozenset({AS, CO}): 0.4,
    frozenset({AS, DE}): 0.4,
    frozenset({AG, CO}): 0.8,
    frozenset({AG, DE}): 0.2,
    frozenset({CO, DE}): 0.2,
    frozenset({GE, RE}): 0.6,
    frozenset({DE, RE}): 0.2,
}

# the multiplicity groups of CLUE's sim_rm: structural relationships carry multiplicities, the others do not
MULTIPLICITY_TYPES = frozenset({AS, AG, CO})
PLAIN_TYPES = frozenset({DE, GE, RE})


def lut(a: RelationType | str, b: RelationType | str) -> float:
    """Similarity of two relationship types (symmetric, 1 when equal, 0 between structure and inheritance)."""
    a, b = RelationType(a), RelationType(b)
    if a == b:
        return 1.0
    return _PAIRS.get(frozenset({a, b}), 0.0)


def table() -> dict[str, dict[str, float]]:
    """The full table by type value, for reports and documentation."""
    return {a.value: {b.value: lut(a, b) for b in RelationType} for a in RelationType}
