"""Properties of CLUE (hypothesis): OptMatch in [0, 1], self-score 1, every score in [0, 1]."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sysmo.evals.metrics import clue
from sysmo.tools.plantuml.class_model import (
    Attribute,
    ClassDiagram,
    Method,
    Parameter,
    Relationship,
    RelationType,
    UMLClass,
)

IDENT = st.text(alphabet="abcdefgXYZ_12", min_size=1, max_size=8)
TYPES = st.sampled_from(["int", "String", "double", "List<Item>", "", "Date"])
MULTIPLICITY = st.sampled_from([None, "1", "0..1", "*", "0..*", "1..*", "many"])


@st.composite
def diagrams(draw) -> ClassDiagram:
    names = draw(st.lists(IDENT, min_size=1, max_size=5, unique_by=str.casefold))
    classes = [
        UMLClass(
            name=name,
            attributes=[
                Attribute(name=a, type=draw(TYPES) or None) for a in draw(st.lists(IDENT, max_size=3))
            ],
            methods=[
                Method(
                    name=m,
                    return_type=draw(TYPES) or None,
                    parameters=[
                        Parameter(name=p, type=draw(TYPES) or None) for p in draw(st.lists(IDENT, max_size=2))
                    ],
                )
                for m in draw(st.lists(IDENT, max_size=3))
            ],
        )
        for name in names
    ]
    relations = [
        Relationship(
            type=draw(st.sampled_from(list(RelationType))),
            source=draw(st.sampled_from(names)),
            target=draw(st.sampled_from(names)),
            source_multiplicity=draw(MULTIPLICITY),
            target_multiplicity=draw(MULTIPLICITY),
            directed=draw(st.booleans()),
        )
        for _ in range(draw(st.integers(0, 4)))
    ]
    return ClassDiagram(classes=classes, relationships=relations)


@given(
    arrays(
        np.float64,
        st.tuples(st.integers(0, 6), st.integers(0, 6)),
        elements=st.floats(0.0, 1.0, allow_nan=False),
    )
)
def test_opt_match_is_in_the_unit_interval(matrix):
    value, pairs = clue.opt_match(matrix)
    assert 0.0 <= value <= 1.0
    assert len(pairs) <= min(matrix.shape)


@settings(max_examples=60, deadline=None)
@given(diagrams(), st.sampled_from(["exact", "token"]))
def test_clue_of_a_diagram_against_itself_is_one(diagram, similarity):
    result = clue.score(diagram, diagram, similarity)
    assert result.metrics() == dict.fromkeys(result.metrics(), 1.0)


@settings(max_examples=60, deadline=None)
@given(diagrams(), diagrams(), st.sampled_from(["exact", "token"]))
def test_clue_of_any_pair_is_in_the_unit_interval(reference, candidate, similarity):
    for value in clue.score(reference, candidate, similarity).metrics().values():
        assert 0.0 <= value <= 1.0
