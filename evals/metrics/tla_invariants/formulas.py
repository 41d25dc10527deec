"""Invariant formulas: a template's text as a candidate definition, and the modules TLC and SANY check it in.

Templates that are not plain formulas (two in SysMoBench's data, locksvc's): a one-parameter template
``P(i) == ...`` ("each node ...") is checked for every ``i`` of the set the model's Init gives the variable it
indexes (``pc = [self \\in ProcSet |-> ...]`` gives ``\\A i \\in ProcSet : ...``); an action template (primes or
UNCHANGED, no temporal operator, e.g. "the server may idle") is checked as a possibility: it holds when some
reachable state enables the step (TLC violates ``~ENABLED step``), and fails when none does (``POSSIBLE``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sysmo.evals.metrics.tla_syntax import blank_comments, split_module

CHECKED_NAME = "SysmoInvariant"
WRAPPER_PREFIX = "SysmoInv"
STANDARD_MODULES = "Naturals, Sequences, FiniteSets, TLC"

TEMPORAL = re.compile(r"\[\]|<>|~>|\bWF_|\bSF_|\\EE|\\AA")
VACUOUS = {"Init", "Next", "Spec", "TRUE", "vars"}
ACTION = re.compile(r"'|\bUNCHANGED\b")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a wrapper module knows besides the model's names: TLA+'s own words and the operators of STANDARD_MODULES
BUILT_IN_NAMES = frozenset({
    "TRUE", "FALSE", "BOOLEAN", "SUBSET", "UNION", "DOMAIN", "ENABLED", "UNCHANGED", "CHOOSE", "LET", "IN", "IF",
    "THEN", "ELSE", "CASE", "OTHER", "EXCEPT", "LAMBDA", "STRING",  # TLA+
    "Nat",  # Naturals
    "Seq", "Len", "Append", "Head", "Tail", "SubSeq", "SelectSeq",  # Sequences
    "IsFiniteSet", "Cardinality",  # FiniteSets
    "Print", "PrintT", "Assert", "JavaTime", "TLCGet", "TLCSet", "Permutations", "SortSeq", "RandomElement", "Any",
    "ToString", "TLCEval",  # TLC
})
_BOUND_BY_IN = re.compile(r"([A-Za-z_]\w*)(?=\s*(?:,\s*[A-Za-z_]\w*\s*)*(?:>>\s*)?\\in\b)")
_BOUND_BY_COLON = re.compile(r"(?:\\A|\\E|CHOOSE)\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:")
_DEFINED = re.compile(r"([A-Za-z_]\w*)\s*(?:\(([^()]*)\))?\s*==")
_NOT_A_REFERENCE = re.compile(r"\\[A-Za-z]+|(?<=[\w\])!])\.(?!\.)\s*[A-Za-z_]\w*|[A-Za-z_]\w*(?=\s*\|->)|\b[WS]F_|(?<=[\]>])_")


class Candidate(BaseModel):
    """A concretised formula: helper definitions and the body of the checked definition."""

    helpers: list[str] = Field(default_factory=list)  # definitions the formula needs, as written
    body: str
    possibility: bool = False  # an action template: checked as "the step can happen" (``~ENABLED`` violated)

    def definitions(self, name: str = CHECKED_NAME) -> str:
        return "\n".join(self.helpers + [self.checked_definition(name)])

    def checked_definition(self, name: str = CHECKED_NAME) -> str:
        body = f"~ENABLED (\n    {self.body.strip()})" if self.possibility else self.body.strip()
        return f"{name} ==\n    {body}"

    @property
    def temporal(self) -> bool:
        return bool(TEMPORAL.search(blank_comments(self.definitions(), strings=True)))


def parse_candidate(text: str, name: str, spec_names: set[str], spec_text: str = "") -> Candidate | None:
    """The definition ``name`` (or the only definition, or a bare formula) from an example or an answer."""
    units = split_module(f"---- MODULE SysmoCandidate ----\n{text.strip()}\n====\n")
    definitions = [u for u in units.units if u.kind == "definition"]
    if not definitions:
        body = blank_comments(text).strip()
        return Candidate(body=body) if body and "==" not in body else None
    plain = [u for u in definitions if "(" not in u.text.partition("==")[0]]
    main = next(
        (u for u in definitions if u.name == name),
        definitions[-1] if len(definitions) == 1 else (plain[0] if len(plain) == 1 else None),
    )  # an example may name its conclusion otherwise (``ClientsOK`` for ClientsLiveness), after its helpers
    if main is None:
        return None
    head, _, body = main.text.partition("==")
    helpers = [u.text for u in definitions if u is not main and u.name not in spec_names]
    if "[" in head:
        return None
    if "(" in head:  # per-process template ``P(i) == ...``: every i of the domain Init gives what P(i) indexes
        quantified = _quantified(head, body, spec_text)
        return Candidate(helpers=helpers, body=quantified) if quantified else None
    if ACTION.search(blank_comments(body, strings=True)) and not TEMPORAL.search(blank_comments(body, strings=True)):
        return Candidate(helpers=helpers, body=body.strip(), possibility=True)
    return Candidate(helpers=helpers, body=body.strip())


def _quantified(head: str, body: str, spec_text: str) -> str | None:
    """``\\A i \\in S : body`` for a one-parameter template whose body indexes a variable ``v[i]``, where the
    model's Init sets ``v = [x \\in S |-> ...]`` (S is then the model's own set of processes)."""
    params = [p.strip() for p in head.split("(", 1)[1].rsplit(")", 1)[0].split(",")]
    if len(params) != 1 or not IDENT.fullmatch(params[0]):
        return None
    param = params[0]
    init = split_module(spec_text).definition("Init") if spec_text else None
    if init is None:
        return None
    init_text = blank_comments(init.text, strings=True)
    for variable in dict.fromkeys(re.findall(rf"(\w+)\s*\[\s*{re.escape(param)}\s*\]", body)):
        found = re.search(rf"\b{re.escape(variable)}\s*=\s*\[\s*\w+\s*\\in\s+(.+?)\s*\|->", init_text, re.S)
        if found:
            return f"\\A {param} \\in {found.group(1).strip()} : ({body.strip()})"
    return None


def unknown_names(candidate: Candidate, spec_names: set[str]) -> set[str]:
    """Names the candidate uses that neither the model, TLA+, the standard modules nor the candidate itself
    (its helpers, parameters, bound variables) define: a quick reading, not SANY's. It only decides whether the
    formulas go to TLC unchecked (``score``'s ``sany_first``): a name it takes for bound by mistake is still met by
    TLC's parse, and the formulas are then checked by SANY first after all."""
    text = blank_comments(candidate.definitions(), strings=True)
    bound = {name.strip() for found in _BOUND_BY_COLON.findall(text) for name in found.split(",")}
    bound |= set(_BOUND_BY_IN.findall(text))
    for name, params in _DEFINED.findall(text):
        bound.add(name)
        bound |= {p.strip() for p in params.split(",") if p.strip()}
    used = set(IDENT.findall(_NOT_A_REFERENCE.sub(" ", text)))
    return used - bound - BUILT_IN_NAMES - spec_names


def _vacuous(candidate: Candidate) -> bool:
    return re.sub(r"\s+", "", candidate.body) in VACUOUS


def _module(name: str, spec_module: str, definitions: str, standard: bool) -> str:
    """A module extending the model (and the standard modules, unless they clash with its names)."""
    extends = f"{spec_module}, {STANDARD_MODULES}" if standard else spec_module
    return f"---- MODULE {name} ----\nEXTENDS {extends}\n\n{definitions}\n====\n"


def wrapper_module(module: str, spec_module: str, candidate: Candidate, standard: bool = True) -> str:
    return _module(module, spec_module, candidate.definitions(), standard)


def combined_module(name: str, spec_module: str, candidates: dict[int, Candidate], reserved: set[str],
                    standard: bool = True) -> str | None:
    """``combined_definitions`` as a module extending the model; None when the candidates are not isolated."""
    combined = combined_definitions(candidates, reserved)
    return None if combined is None else _module(name, spec_module, combined, standard)


def member_name(index: int) -> str:
    """The name of template ``index``'s checked formula in a combined module (``SysmoInvariant_<index>``)."""
    return f"{CHECKED_NAME}_{index}"


def _helper_name(helper: str) -> str | None:
    units = split_module(f"---- MODULE SysmoHelper ----\n{helper}\n====\n").units
    definitions = [u for u in units if u.kind == "definition"]
    return definitions[0].name if len(definitions) == 1 and definitions[0].name else None


def combined_definitions(candidates: dict[int, Candidate], reserved: set[str]) -> str | None:
    """Several candidates' definitions in one module, template ``i``'s formula named ``SysmoInvariant_<i>``.

    None unless the candidates are isolated from each other: no helper name with two different texts (one
    text is kept for a helper several candidates define alike), no candidate naming a helper it does not
    define itself, no clash with ``reserved`` (the model's names). Then SANY accepting the combined module
    (which EXTENDS the model and the standard modules) means it accepts each candidate's own wrapper, and
    TLC can check the formulas in one run."""
    helpers: dict[str, str] = {}
    own: dict[int, set[str]] = {}
    for index, candidate in candidates.items():
        own[index] = set()
        for helper in candidate.helpers:
            name = _helper_name(helper)
            if name is None or helpers.setdefault(name, helper.strip()) != helper.strip():
                return None
            own[index].add(name)
    names = {member_name(i) for i in candidates}
    if names & (reserved | set(helpers)) or CHECKED_NAME in reserved:
        return None
    for index, candidate in candidates.items():
        used = set(IDENT.findall(blank_comments(candidate.definitions(), strings=True)))
        if (used & (set(helpers) | names)) - own[index]:
            return None
    return "\n".join([*helpers.values(), *(candidates[i].checked_definition(member_name(i)) for i in candidates)])
