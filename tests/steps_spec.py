"""A two-counter spec for the invariants stage's tests: x counts to 6, y to 2, in any interleaving (21 states)."""

from __future__ import annotations

from sysmo.contracts.artifact import Artifact, Language

SPEC = """---- MODULE Steps ----
EXTENDS Naturals
VARIABLES x, y
vars == <<x, y>>
Init == x = 0 /\\ y = 0
Next == \\/ x < 6 /\\ x' = x + 1 /\\ y' = y
        \\/ y < 2 /\\ y' = y + 1 /\\ x' = x
Spec == Init /\\ [][Next]_vars /\\ WF_vars(Next)
====
"""
CFG = "SPECIFICATION Spec\n"


def steps_artifact() -> Artifact:
    return Artifact(language=Language.TLA, files={"Steps.tla": SPEC, "Steps.cfg": CFG})
