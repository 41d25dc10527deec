"""A temporal template quantified over a constant set, checked one instance at a time (``\\A i, j \\in S : F``).

TLC checks ``\\A i, j \\in NodeSet : i # j => F(i, j)`` under PROPERTY as one tableau per instance, all of them built
over the whole state graph during the one search (PGo locksvc's NoPriorityInversion: 30 ordered node pairs, 30
tableaux over 29,074 states, about 230 s on 2 loaded cores; one pair alone, about 10 s). A template the system is
documented to violate (``expected="violated"``) is decided by its first violated instance: the conjunction is
violated exactly when one of its instances is, in the same state graph. So the instances are checked one TLC run
each, in TLC's order of the set, until one is violated (``runs.TlcRuns.by_instance``).

The instance module names the instances without printing a value: ``SysmoInstances`` is the sequence of the
tuples of the bound set (TLC's own ``CHOOSE`` order), filtered by the template's constant guard (``i # j =>``: an
instance whose guard is false holds in every behaviour), instance ``k`` is ``\\A i \\in {SysmoInstances[k][1]},
j \\in {SysmoInstances[k][2]} : <the template's body>``, and an ``ASSUME PrintT`` prints how many there are. A
set that is not constant (TLC rejects the ASSUME), a body with nothing temporal, or a guard naming anything but
the bound names, the model's constants and TLA+'s words: no plan, the template is checked whole, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sysmo.evals.metrics.tla_invariants.formulas import (
    BUILT_IN_NAMES,
    CHECKED_NAME,
    IDENT,
    STANDARD_MODULES,
    TEMPORAL,
    Candidate,
)
from sysmo.evals.metrics.tla_syntax import blank_comments, bracket_depths

MARKER = "sysmo-instances"
SEQUENCE = "SysmoInstances"
INDEX = "SysmoInstanceIndex"  # the bound name of a batch of instances (``InstancePlan.module``)


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at every ``separator`` outside brackets."""
    depths = bracket_depths(text)
    parts, start, i = [], 0, 0
    while i < len(text):
        if depths[i] == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i = i + len(separator)
            continue
        i += 1
    return parts + [text[start:]]


@dataclass(frozen=True)
class InstancePlan:
    """How one quantified template is checked instance by instance."""

    names: tuple[str, ...]  # the bound names, in order
    sets: tuple[str, ...]  # the set each name ranges over
    guard: str | None  # a constant-level condition of the body's implication (``i # j``), or None
    body: str  # the formula under the quantifier, as written
    helpers: tuple[str, ...]  # the template's own helper definitions

    def instance_set(self) -> str:
        bound = self.names[0] if len(self.names) == 1 else f"<<{', '.join(self.names)}>>"
        product = " \\X ".join(f"({s})" for s in self.sets)
        return f"{{{bound} \\in {product} : {self.guard}}}" if self.guard else product

    def module(self, name: str, spec_module: str, k: int, last: int | None = None) -> str:
        """The module checking instance ``k`` (1-based) as ``SysmoInvariant``, or instances ``k..last`` in one
        formula (``\\A n \\in k..last : <instance n>``, which TLC expands into one tableau per instance, as it
        expands the template's own quantifier), printing the number of instances."""
        batch = last is not None and last != k
        element = f"{SEQUENCE}[{INDEX if batch else k}]"
        picks = [f"{element}" if len(self.names) == 1 else f"{element}[{n + 1}]" for n in range(len(self.names))]
        bounds = ", ".join(f"{v} \\in {{{p}}}" for v, p in zip(self.names, picks))
        if batch:
            bounds = f"{INDEX} \\in {k}..{last} : \\A {bounds}"
        definitions = "\n".join([
            *self.helpers,
            f"RECURSIVE {SEQUENCE}Of(_)",
            f"{SEQUENCE}Of(S) == IF S = {{}} THEN <<>> ELSE LET {SEQUENCE}Elem == CHOOSE {SEQUENCE}Elem \\in S : "
            f"TRUE IN <<{SEQUENCE}Elem>> \\o {SEQUENCE}Of(S \\ {{{SEQUENCE}Elem}})",
            f"{SEQUENCE} == {SEQUENCE}Of({self.instance_set()})",
            f'ASSUME PrintT(<<"{MARKER}", Len({SEQUENCE})>>)',
            f"{CHECKED_NAME} ==\n    \\A {bounds} :\n        {self.body.strip()}",
        ])
        return f"---- MODULE {name} ----\nEXTENDS {spec_module}, {STANDARD_MODULES}\n\n{definitions}\n====\n"


def plan(candidate: Candidate, constants: set[str], temporal: bool = True) -> InstancePlan | None:
    """The instance plan of a candidate whose whole body is ``\\A <names> \\in <sets> : <temporal body>``
    (``temporal=False``: whatever the body, e.g. an operator of the model that is temporal)."""
    if candidate.possibility:
        return None
    original = candidate.body.strip()
    text = blank_comments(original, strings=True)  # the same length: offsets in one are offsets in the other
    if not text.startswith("\\A") or any(word in part for word in (SEQUENCE, INDEX)
                                           for part in (text, *candidate.helpers)):
        return None
    depths = bracket_depths(text)
    colon = next((i for i in range(2, len(text)) if text[i] == ":" and depths[i] == 0
                  and text[i + 1:i + 2] != ":" and text[i - 1:i] != ":"), None)
    if colon is None:
        return None
    names: list[str] = []
    sets: list[str] = []
    pending: list[str] = []
    for item in _split_top(original[2:colon], ","):
        head, found, bound = item.partition("\\in")
        head = head.strip()
        if not IDENT.fullmatch(head):
            return None
        pending.append(head)
        if found:
            if not bound.strip():
                return None
            names += pending
            sets += [bound.strip()] * len(pending)
            pending = []
    body = original[colon + 1:]
    if pending or not names or (temporal and not TEMPORAL.search(text[colon + 1:])):
        return None
    implication = [i for i in range(colon + 1, len(text) - 1) if text.startswith("=>", i) and depths[i] == 0
                   and text[i - 1] not in "<="]
    guard = None
    if implication:
        condition = text[colon + 1:implication[0]]
        used = set(IDENT.findall(re.sub(r"\\[A-Za-z]+", " ", condition)))
        if (condition.strip() and "'" not in condition and not TEMPORAL.search(condition)
                and used <= set(names) | constants | BUILT_IN_NAMES):
            guard = original[colon + 1:implication[0]].strip()
    return InstancePlan(names=tuple(names), sets=tuple(sets), guard=guard, body=body,
                        helpers=tuple(candidate.helpers))


def count(printed: list[str]) -> int | None:
    """The number of instances the instance module printed, or None (the ASSUME did not run)."""
    for line in printed:
        found = re.search(rf'"{MARKER}",\s*(\d+)', line)
        if found:
            return int(found.group(1))
    return None
