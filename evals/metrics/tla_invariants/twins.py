"""Liveness templates that are one formula, checked once in a shared TLC run (``invariants.dedupe_liveness``).

TLC builds a behaviour graph per instance of every temporal property it checks, so two templates that state the
same thing cost that work twice: PGo locksvc's ProgressOK (``\\A i \\in ProcSet : (pc[i] = "acquireLock" ~> ...)``,
a one-parameter template made a quantified one) and SystemLiveness (``\\A i \\in NodeSet : ProgressOK(i)``, the
model's own ``ProgressOK``) are the same property, since ``ProcSet = NodeSet`` in the model. A template is the
*twin* of another of the same run when both are ``\\A <names> \\in <sets> : <body>`` (``instances.plan``), with no
helpers of their own, and their bodies are the same token for token once the bound names are renamed alike and
the model's one-parameter operators applied to a bound name are expanded (``ProgressOK(i)`` -> ``(pc[i] = ...)``:
the only definition of that name in the model's files, one that binds no name of its own); that much is read from
the text. That the bound sets are equal is not: TLC evaluates ``(S_a) = (S_b)`` in the run itself (an ``ASSUME PrintT`` of the shared module). A twin is
left out of the run's PROPERTY list; when TLC printed TRUE for it and the run decided its twin's formula without a
violation (complete, or ended by the state bound), it gets its own verdict from that same result, exactly as it got
it when it was in the run (same formula, same state graph: the same verdict). In every other case (FALSE printed,
nothing printed, a violation, an error) it is checked as it was without this lever. A set that is not constant makes
TLC reject the ASSUME (an error, so the fallback runs), where TLC rejects a temporal formula quantified over a
state's values anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sysmo.evals.metrics.tla_invariants import instances
from sysmo.evals.metrics.tla_invariants.checks import _Check
from sysmo.evals.metrics.tla_syntax import blank_comments

MARKER = "sysmo-twins"
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z0-9_]+|\\[A-Za-z]+|\S')
_OPERATOR = re.compile(r"^([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*\)[ \t]*==(.*?)(?=^\S|\Z)", re.DOTALL | re.MULTILINE)
_BINDERS = {"\\A", "\\E", "\\AA", "\\EE", "\\forall", "\\exists", "CHOOSE", "LET", "\\in"}  # what binds a name
# a name defined at the start of a line (after blanks: ``[^\S\n]``, never ``\s``, which crosses line ends: on PGo
# raftkvs's 2.3 MB module, its comments blanked, ``^\s*`` rescanned each blank block from every line in it, 243 s)
_DEFINED = re.compile(r"^[^\S\n]*(?:LOCAL\s+)?([A-Za-z_]\w*)\s*(?:\(|==|\[)", re.MULTILINE)


@dataclass(frozen=True)
class Twin:
    """``check`` states the same formula as ``of``, if the bound sets are equal (``same_sets``, evaluated by TLC)."""

    check: _Check
    of: _Check
    same_sets: str


def _operators(texts: list[str]) -> dict[str, tuple[str, str]]:
    """The model's one-parameter operators defined exactly once, at the start of a line: name -> (parameter, body)."""
    found: dict[str, list[tuple[str, str]]] = {}
    counts: dict[str, int] = {}
    for text in texts:
        blanked = blank_comments(text)
        for name in _DEFINED.findall(blanked):
            counts[name] = counts.get(name, 0) + 1
        for match in _OPERATOR.finditer(blanked):
            found.setdefault(match.group(1), []).append((match.group(2), match.group(3)))
    return {name: defs[0] for name, defs in found.items() if len(defs) == 1 and counts.get(name) == 1}


def _unwrapped(tokens: list[str]) -> list[str]:
    """Without parentheses that enclose the whole expression."""
    while len(tokens) >= 2 and tokens[0] == "(" and tokens[-1] == ")":
        depth = 0
        for k, token in enumerate(tokens):
            depth += (token == "(") - (token == ")")
            if depth == 0 and k < len(tokens) - 1:
                return tokens
        tokens = tokens[1:-1]
    return tokens


def _normal(body: str, names: tuple[str, ...], operators: dict[str, tuple[str, str]]) -> list[str] | None:
    """``body``'s tokens, bound names renamed by position, the model's operators applied to a bound name expanded."""
    tokens = _TOKEN.findall(blank_comments(body))
    renamed = {name: f"SysmoBound{k}" for k, name in enumerate(names)}
    if any(t.startswith("SysmoBound") for t in tokens):
        return None
    for _ in range(8):  # operators calling operators: a few levels
        expanded: list[str] = []
        k, changed = 0, False
        while k < len(tokens):
            head = tokens[k]
            if (head in operators and tokens[k + 1:k + 2] == ["("] and tokens[k + 3:k + 4] == [")"]
                    and tokens[k + 2] in names and (k == 0 or tokens[k - 1] not in (".", "!"))):
                parameter, definition = operators[head]
                inner = _TOKEN.findall(definition)
                if _BINDERS.intersection(inner) or (tokens[k + 2] != parameter and tokens[k + 2] in inner):
                    return None
                expanded += ["(", *[tokens[k + 2] if t == parameter else t for t in inner], ")"]
                k, changed = k + 4, True
                continue
            expanded.append(head)
            k += 1
        tokens = expanded
        if not changed:
            break
    return _unwrapped([renamed.get(t, t) for t in tokens])


def find(checks: list[_Check], texts: list[str], constants: set[str]) -> list[Twin]:
    """The twins among ``checks`` (temporal properties of one run), each paired with the first check it repeats.
    The model's files are read only when two checks or more could be twins."""
    planned = []
    for check in checks:
        candidate = check.candidate
        if not check.as_property or candidate.possibility or candidate.helpers:
            continue
        plan = instances.plan(candidate, constants, temporal=False)
        if plan is not None and plan.guard is None:
            planned.append((check, plan))
    if len(planned) < 2:
        return []
    operators = _operators(texts)
    seen: list[tuple[_Check, instances.InstancePlan, list[str]]] = []
    twins: list[Twin] = []
    for check, plan in planned:
        normal = _normal(plan.body, plan.names, operators)
        if not normal:
            continue
        same = next((s for s in seen if len(s[1].names) == len(plan.names) and s[2] == normal), None)
        if same is None:
            seen.append((check, plan, normal))
            continue
        sets = " /\\ ".join(f"(({a}) = ({b}))" for a, b in zip(same[1].sets, plan.sets))
        twins.append(Twin(check=check, of=same[0], same_sets=sets))
    return twins


def assumptions(twins: list[Twin]) -> str:
    """The module lines asking TLC whether each twin's bound sets are its formula's (``MARKER``, index, TRUE/FALSE)."""
    return "\n".join(f'ASSUME PrintT(<<"{MARKER}", {t.check.index}, {t.same_sets}>>)' for t in twins)


def proven(printed: list[str]) -> set[int]:
    """The indexes of the twins TLC printed TRUE for."""
    found = set()
    for line in printed:
        match = re.search(rf'"{MARKER}",\s*(\d+),\s*(TRUE|FALSE)', line)
        if match and match.group(2) == "TRUE":
            found.add(int(match.group(1)))
    return found
