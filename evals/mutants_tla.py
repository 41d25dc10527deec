"""Wrong TLA+ models made from right ones, for negative controls: a renamed variable, an action left out of
``Next``, an action that does nothing, and a spec unrelated to any system.

The functions are pure and textual (``str -> str``), working on identifier tokens with comments and string
literals left alone (so the program-counter labels a PGo spec compares against keep their values), and raise
``ValueError`` when the spec has nothing to mutate, so a control never silently scores the unchanged spec.

>>> drop_action_from_next(locksvc, "unlock")  # client(self) == acquireLock(self) \\/ criticalSection(self)
"""

from __future__ import annotations

import re

from sysmo.evals.metrics.tla_syntax import ModuleUnits, blank_comments, split_module

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# a string literal, a block comment, a line comment, or an identifier: only the last is renamed
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\(\*.*?\*\)|\\\*[^\n]*|' + _IDENT, re.DOTALL)


def _replace_identifier(text: str, old: str, new: str) -> tuple[str, int]:
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) == old:
            count += 1
            return new
        return match.group(0)

    return _TOKEN.sub(one, text), count


def rename_variable(spec: str, old: str, new: str) -> str:
    """Variable ``old`` renamed ``new`` everywhere in the spec (declaration, uses, primes, UNCHANGED tuples)."""
    if not re.fullmatch(_IDENT, new):
        raise ValueError(f"{new!r} is not a TLA+ identifier")
    clean = blank_comments(spec, strings=True)
    if not re.search(rf"\bVARIABLES?\b[^=]*?\b{re.escape(old)}\b", clean):
        raise ValueError(f"the spec declares no variable {old!r}")
    if re.search(rf"(?<![\w\\]){re.escape(new)}(?!\w)", clean):
        raise ValueError(f"the spec already uses the name {new!r}")
    renamed, _ = _replace_identifier(spec, old, new)
    return renamed


def _disjunct_call(action: str) -> str:
    """A call of ``action`` (with or without arguments), as a regular expression."""
    return rf"(?<![\w!]){re.escape(action)}(?:\s*\([^()]*(?:\([^()]*\)[^()]*)*\))?(?![\w(])"


def drop_action_from_next(spec: str, action: str) -> str:
    """``action`` left out of every disjunction that calls it (in ``Next`` or the process definitions ``Next``
    calls): ``A(self) \\/ B(self)`` becomes ``A(self)``, a ``\\/ B`` bullet line is removed. Its definition stays,
    so a replay that calls it by name still can; the model no longer takes that step."""
    units = split_module(spec)
    if units.definition(action) is None:
        raise ValueError(f"the spec defines no action {action!r}")
    call = _disjunct_call(action)
    out, dropped = spec, 0
    in_next = _reachable(units, "Next") if units.definition("Next") is not None else None
    for unit in units.definitions:
        if unit.name == action or action not in unit.uses or (in_next is not None and unit.name not in in_next):
            continue
        head, _, body = unit.text.partition("==")
        changed = body
        # a bullet line of its own: "    \/ action(self)"
        changed, n1 = re.subn(rf"\n[ \t]*\\/[ \t]*{call}[ \t]*(?=\n|$)", "", changed)
        # an infix disjunct after another on the same line: "X \/ action(self)"
        changed, n2 = re.subn(rf"(?<=\S)[ \t]*\\/[ \t]*{call}", "", changed)
        # the first disjunct of an infix disjunction: "action(self) \/ X" (a bullet before it keeps its column)
        changed, n3 = re.subn(rf"{call}[ \t]*\\/[ \t]*", "", changed)
        # any other call (e.g. "\E p \in S : action(p)" as a whole disjunct): FALSE, the unit of \/
        changed, n4 = re.subn(call, "FALSE", changed)
        n3 += n4
        if n1 + n2 + n3 == 0:
            continue
        original = _source_of(spec, unit.text)
        out = out.replace(original, _with_body(original, changed), 1)
        dropped += n1 + n2 + n3
    if dropped == 0:
        raise ValueError(f"no disjunction calls {action!r}: it is not in the next-state relation")
    return out


def _reachable(units: ModuleUnits, root: str) -> set[str]:
    """The definitions ``root`` names, directly or through others (``root`` included)."""
    seen, todo = set(), [root]
    while todo:
        name = todo.pop()
        unit = units.definition(name)
        if name in seen or unit is None:
            continue
        seen.add(name)
        todo += unit.uses
    return seen


def _source_of(spec: str, blanked: str) -> str:
    """The spec's own text of a unit whose comment-blanked text is ``blanked`` (same length and place)."""
    clean = blank_comments(spec)
    start = clean.find(blanked)
    if start < 0:
        raise ValueError("could not find the definition's text in the spec")
    return spec[start:start + len(blanked)]


def _with_body(original: str, body: str) -> str:
    head, _, _ = original.partition("==")
    return f"{head}=={body}"


def noop_action(spec: str, action: str) -> str:
    """``action`` keeps its name and parameters but changes nothing: its body becomes ``UNCHANGED <<every
    variable>>`` (a stutter wherever it is called)."""
    units = split_module(spec)
    unit = units.definition(action)
    if unit is None:
        raise ValueError(f"the spec defines no action {action!r}")
    variables = [name for u in units.units if u.kind == "variables"
                 for name in re.findall(_IDENT, re.sub(r"^\s*VARIABLES?\b", "", u.text))]
    if not variables:
        raise ValueError("the spec declares no variables")
    original = _source_of(spec, unit.text)
    return spec.replace(original, _with_body(original, f" UNCHANGED <<{', '.join(variables)}>>\n"), 1)


def trivial_unrelated_spec(module: str) -> str:
    """A seven-line spec named ``module`` that has nothing of any system: one bit flipping forever."""
    return (
        f"---- MODULE {module} ----\n"
        "EXTENDS Naturals\n"
        "VARIABLE x\n"
        "Init == x = 0\n"
        "Next == x' = (x + 1) % 2\n"
        "Spec == Init /\\ [][Next]_x\n"
        "====\n"
    )
