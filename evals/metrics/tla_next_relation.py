"""The next-state relation a TLA+ model declares, for the conformance replay's refinement check.

Every replayed step must be a step of the model's own next-state relation (or a stutter), as PGo's trace
validation modules demand (``__IsRefinement == [][__instance!Next \\/ __Stuttering]_vars``): calling the logged
event's action by name is not enough, since an action the model defines but leaves out of ``Next`` is not a
behaviour of the model. The relation is read, in order, from the cfg's ``NEXT``; from the cfg's
``SPECIFICATION`` definition (``Init /\\ [][A]_v ...``: ``A`` with subscript ``v``, following definitions the
body names when it has no ``[][...]_`` of its own); from a ``Spec`` definition; and last from a definition
named ``Next`` (with a note). When none is found, ``NextRelation.action`` is None and the note says so.

>>> find("Spec == Init /\\\\ [][Next \\\\/ Idle]_vars", TlcConfig(specification="Spec"), ["x"]).action
'Next \\\\/ Idle'
"""

from __future__ import annotations

import re

from sysmo.evals.metrics.tla_syntax import ModuleUnits, blank_comments, split_module
from sysmo.tools.tla.cfg import TlcConfig
from sysmo.tools.tla.trace_validation import NextRelation

BOX = re.compile(r"\[\]\s*\[")
MAX_DEPTH = 4  # SPECIFICATION definitions that name other definitions, followed this deep


def _closing(text: str, start: int, opening: str, closing: str) -> int | None:
    """Index of the bracket closing the one opened just before ``start`` (nesting of all bracket kinds)."""
    depth = 1
    for index in range(start, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index if char == closing else None
    return None


def _subscript(text: str, start: int) -> str | None:
    """The subscript written at ``start`` (just after ``]_``): an identifier, ``<<...>>`` or ``(...)``."""
    rest = text[start:]
    word = re.match(r"\s*([A-Za-z_]\w*)", rest)
    if word:
        return word.group(1)
    if rest.lstrip().startswith("<<"):
        offset = start + len(rest) - len(rest.lstrip())
        depth = 0
        for index in range(offset, len(text) - 1):
            pair = text[index:index + 2]
            depth += pair == "<<"
            depth -= pair == ">>"
            if depth == 0:
                return text[offset:index + 2]
    if rest.lstrip().startswith("("):
        offset = start + len(rest) - len(rest.lstrip())
        end = _closing(text, offset + 1, "(", ")")
        return text[offset:end + 1] if end is not None else None
    return None


def box_action(body: str) -> tuple[str, str] | None:
    """``(A, v)`` of the first ``[][A]_v`` in a definition's body (comments and strings may be present)."""
    clean = blank_comments(body, strings=True)
    match = BOX.search(clean)
    if match is None:
        return None
    end = _closing(clean, match.end(), "[", "]")
    if end is None or clean[end + 1:end + 2] != "_":
        return None
    subscript = _subscript(blank_comments(body), end + 2)
    if subscript is None:
        return None
    text = blank_comments(body)[match.end():end]
    if "\n" not in text.strip():
        return text.strip(), subscript
    # over several lines its junction lists are aligned by column: keep the layout, the first line at its column
    column = match.end() - (body.rfind("\n", 0, match.end()) + 1)
    lines = text.rstrip().split("\n")
    return "\n".join([" " * column + lines[0], *lines[1:]]), subscript


def _from_definition(units: ModuleUnits, name: str, depth: int = 0) -> tuple[str, str] | None:
    unit = units.definition(name)
    if unit is None or depth > MAX_DEPTH:
        return None
    found = box_action(unit.text)  # the header too: a layout kept over several lines needs its true columns
    if found is not None:
        return found
    for used in unit.uses:  # e.g. SpecNoDeadlock == Spec /\ Fairness
        if used != name and units.definition(used) is not None:
            found = _from_definition(units, used, depth + 1)
            if found is not None:
                return found
    return None


def find(main_text: str, config: TlcConfig, variables: list[str]) -> NextRelation:
    """The model's next-state relation, found as the module docstring says."""
    units = split_module(main_text)
    every = f"<<{', '.join(variables)}>>"
    if config.next:
        boxed = _from_definition(units, "Spec")
        subscript = boxed[1] if boxed and boxed[0].strip() == config.next.strip() else every
        return NextRelation(action=config.next, subscript=subscript, source="cfg NEXT")
    for name, source in ((config.specification, f"SPECIFICATION {config.specification}"), ("Spec", "definition Spec")):
        if name:
            boxed = _from_definition(units, name)
            if boxed is not None:
                return NextRelation(action=boxed[0], subscript=boxed[1], source=source)
    if units.definition("Next") is not None:
        return NextRelation(action="Next", subscript=every, source="definition Next",
                            note="no [][A]_v in the specification: steps checked against the definition Next")
    return NextRelation(note="the model's next-state relation was not found (no cfg NEXT, no [][A]_v in its "
                             "SPECIFICATION or Spec, no definition Next): steps are checked against the logged "
                             "event's action only, not against the model's Next")
