"""TLA+ invariant score: concretise each invariant template for the model's names, then TLC checks each alone.

Concretisation, per template, first that works:
1. the template's ``tla_example`` as written, if SANY accepts it in a module that EXTENDS the model
   (the example's own helper definitions are kept unless the model already defines those names);
2. the helper model (prompt ``evals/prompts/tla_invariant.md``), answering with one definition, checked by
   SANY the same way; a rejected answer is sent back once with SANY's message. An answer that is just the
   initial predicate, the next-state relation, the specification or TRUE is refused (it cannot fail, or
   fails at the first step: the reference harness even offers ``Init`` as a candidate).
Without either, the template is not concretised: an ``error``, not holding.

Templates that are not plain formulas (two in SysMoBench's data, locksvc's): a one-parameter template
``P(i) == ...`` ("each node ...") is checked for every ``i`` of the set the model's Init gives the variable it
indexes (``pc = [self \\in ProcSet |-> ...]`` gives ``\\A i \\in ProcSet : ...``); an action template (primes or
UNCHANGED, no temporal operator, e.g. "the server may idle") is checked as a possibility: it holds when some
reachable state enables the step (TLC violates ``~ENABLED step``), and fails when none does (``POSSIBLE``).

A template the modelled system is documented to violate (``expected="violated"``, e.g. locksvc's
NoPriorityInversion, see ``benchmarks/sysmobench.KNOWN_VIOLATIONS``) counts as holding when TLC finds the
violation, and as failed when the property holds: the model then hides the system's real behaviour.

Checking: the formula is defined as ``SysmoInvariant`` in a module ``SysmoInv<k>`` extending the model, and
TLC model-checks that one name: a safety template whose formula is a state predicate under INVARIANT;
liveness templates and temporal safety formulas (``[][A]_v``) under PROPERTY, with the model's own
specification formula (its fairness) even when its cfg names INIT/NEXT. Deadlocks are not reported.
Grouped checks (``grouped``, cascade option ``invariants.grouped``, default true): the safety templates that
TLC names when violated (state predicates, and ``[]P`` / ``[][A]_v`` with nothing temporal inside) and that
run under the same cfg are checked in ONE TLC run of a module defining each as ``SysmoInvariant_<i>``. With
one worker TLC explores the states in the same order whatever it checks, so the first violation it reports
is the first state where that template fails: that template gets the verdict it gets alone (same
counterexample, same distinct-state count), and the run is repeated without it until none is violated; a
complete run without violation, or a time-out, is then every remaining template's verdict, as each alone
would get it. Anything TLC does not pin on one template (an evaluation error, a violation it does not name)
sends the remaining templates to one run each. Liveness templates expected to hold that run under the same
cfg are likewise checked in ONE TLC run under PROPERTY (``group_liveness``, cascade option
``invariants.grouped_liveness``, default true): a complete run without violation, or a time-out, is each one's
verdict; a violation, which TLC does not pin on one temporal property, sends each to a run alone (PGo
locksvc: ProgressOK, SystemLiveness and SpecNoDeadlock over the same 29,074 states, about 45 s of TLC alone,
about 39 s together; PGo raftkvs: ClientsLiveness and ElectionLiveness both reach the time limit, one run
instead of two). The two groups of one cfg share ONE TLC run (``merge_liveness``, cascade option
``invariants.merge_liveness``, default true): the safety templates under INVARIANT, the liveness ones under
PROPERTY. A complete run without violation is every template's verdict (a correct model: one JVM and one
exploration of the state space less); a violated safety template gets its verdict from it as in the safety
group's own run, and the rest of each group goes on as without the merge; a time-out is the liveness templates'
verdict, and the safety group runs on its own (it may finish within the limit alone); a violated temporal
property, named by TLC or the only PROPERTY, is that template's verdict; when TLC does not say which of several
failed, each liveness template runs alone, as after its group's own run; anything else sends both groups to their
own runs. The safety group then runs on its own in every case where the shared run did not decide it, so a
model that breaks liveness costs the JVMs it cost before. Possibility checks and templates expected to be
violated are always checked alone. Only a
time limit tells grouped and alone apart: the grouped run evaluates every template on each state, so within
the same limit it may explore fewer states than a run per template would (``grouped=False``: one TLC run per
template, as the harness runs them). Temporal checks are started first (they take longest). SANY likewise
checks all candidate formulas in one module (``combined_definitions``), then each wrapper alone only if that
module is rejected: one parse of the model instead of two per template (the PGo raftkvs spec is 2.3 MB).

SANY first only when needed (``sany_first``, cascade option ``invariants.sany_first``, default false): when every
template's ``tla_example`` uses only names the model defines (``unknown_names``: its own helpers, parameters and
bound variables, TLA+'s words and the standard modules' operators aside), the wrappers go to TLC without a SANY run
of their own: TLC parses them with the same SANY, so the verdicts are the ones the SANY-first path gives (tested);
one JVM less per stage (a gold or reference model, or a model that kept the names; the PGo raftkvs spec's parse
alone is about 4 s). If TLC's parse rejects one of them, the stage is scored again from the start with SANY first
(``true``: always, as the harness does). The stage's ``sany_version`` then names TLC's.

Outcomes: ``ok`` (holds), ``failed`` (violated, with the counterexample's length), ``inconclusive`` (time
or state bound: reported, counted as not holding, never a pass), ``error`` (no formula, or TLC could not
evaluate it). Score = holding / templates.

Counting a bounded check (``bounded``, cascade option ``invariants.bounded``): ``"harness"`` (default) counts
a check that TLC ran until the time limit without finding a violation (nor an evaluation error) as holding,
as SysMoBench's harness does (its ``runtime_check.py`` treats ``subprocess.TimeoutExpired`` with no violation
or deadlock in the output as success, and ``manual_invariant_evaluator.py`` counts that template as passed):
the paper's figures are computed that way, and a gold model whose state space outgrows the time limit keeps
full marks. For a template the system is documented to violate, a time-out without the violation also counts
as passed under ``"harness"`` (the harness has no such notion: its check just finds no violation).
``"strict"`` keeps such a check ``inconclusive`` (never a pass). ``"sysmo"`` (the ``sysmo`` scoring mode's default,
with a state bound, ``SYSMO_MAX_STATES``, and a generous wall-clock limit, ``SYSMO_TIMEOUT_S``): the state bound,
which TLC honours deterministically with one worker, ends a check, not the clock. A state predicate (INVARIANT,
not a possibility) that TLC checked on every state up to the bound without a violation holds *within the bound*
(``WITHIN_BOUND_NOTE`` in its notes), and so does a temporal property (liveness, ``[][A]_v``) for which TLC found
no counterexample in the graph explored up to the bound (the frontier states look like stuttering, which can only
add counterexamples: one found under the bound is ``inconclusive``); a possibility, or a template the system is
documented to violate, whose check stops at the bound stays ``inconclusive`` (it may lie beyond); a check that still
reaches the wall-clock limit is ``inconclusive``, never holding (docs/tla-verdicts.md). The harness runs each template alone, with
``-deadlock`` (no deadlock check, as here), under the model's cfg, with a per-check limit of 60 s
(``ManualInvariantEvaluator(tlc_timeout=60)``), sysmo's default too (``timeout_s``, cascade option
``invariants.timeout_s``; it was 120 s, which changed no score of the 13 PGo gold and example specs and made a
time-out cost twice the harness's). The verdict says which it was (``notes``,
``reason``); state/depth bounds, resource exhaustion and early exits are never counted as holding.

State-constraint templates: a safety template that is a conjunct of the model's own state CONSTRAINT (raftkvs's
``LimitTerm`` and ``LimitCommitIndex`` are conjuncts of its ``MCConstraint``) is a bound on the explored
state space, not a property: TLC checks invariants on every generated state, including the boundary states it
prunes afterwards for violating the constraint, so checked alone it always fails on the model that defines it.
It is checked as ``Constraint => T`` (the conjunction of the cfg's CONSTRAINTs implies it), which holds exactly
when it holds on every state TLC explores further; the verdict's notes say so.

``strategy="hunt"`` (cascade option ``invariants.strategy``; default ``"bfs"``, SysMoBench's one BFS per
template) replaces the single BFS by ``sysmo.tools.tla.bug_hunt.hunt`` within the same ``timeout_s``: BFS,
then random simulation, then BFS and simulation with smaller finite-set constants, stopping at the first counterexample
(the steps taken are in the verdict's notes). It is for bug controls, whose bug lies deeper than BFS reaches.

>>> s = score(artifact, task.references.invariants, model_config(artifact, task))
>>> s.value, [v.name for v in s.verdicts if v.outcome == "failed"]
"""

from __future__ import annotations

import importlib.resources
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import InvariantTemplate
from sysmo.errors import ConfigError, LLMError
from sysmo.evals.metrics.tla_runtime import ModelConfig, without_checks
from sysmo.evals.metrics.tla_syntax import blank_comments, check_modules, split_module
from sysmo.log import get_logger
from sysmo.contracts.check import CheckResult, Outcome
from sysmo.tools.tla import bug_hunt
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla import jvm, tlc
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.trace_validation import signature

log = get_logger(__name__)

DEFAULT_TIMEOUT_S = 60.0  # SysMoBench's ManualInvariantEvaluator(tlc_timeout=60)
BOUNDED_POLICIES = ("harness", "strict", "sysmo")
DEFAULT_BOUNDED = "harness"
# ``sysmo`` scoring mode: the state bound, not the clock, ends a check (docs/tla-verdicts.md). 100,000 distinct
# states hold the PGo locksvc gold spec's whole space (29,074) and keep a check above ``jvm.SHORT_CHECK_STATES``
# (a long liveness check keeps C2: on C1 alone locksvc's took twice the CPU); the wall-clock limit only catches a
# check that is slow on few states (a large liveness tableau), and such a check is inconclusive.
SYSMO_MAX_STATES = 100_000
# Temporal properties (liveness, ``[][A]_v``) get a bound of their own: TLC's liveness check of the explored graph
# grows much faster than the graph (PGo raftkvs: its two liveness templates decided within 10,000 states in 77 s,
# not within 600 s at 100,000). 30,000 still holds the whole space of the PGo locksvc gold spec (29,074), so its
# liveness templates are decided exactly.
SYSMO_MAX_TEMPORAL_STATES = 30_000
SYSMO_TIMEOUT_S = 600.0
SYSMO_BOUNDED = "sysmo"
WITHIN_BOUND_NOTE = "bounded: holds within the state bound"
DEFAULT_GROUPED = True
DEFAULT_GROUP_LIVENESS = True
DEFAULT_MERGE_LIVENESS = True
DEFAULT_SANY_FIRST = False
DEFAULT_HELPER_ATTEMPTS = 2
CHECKED_NAME = "SysmoInvariant"
WRAPPER_PREFIX = "SysmoInv"
STANDARD_MODULES = "Naturals, Sequences, FiniteSets, TLC"
PROMPT_FILE = "tla_invariant.md"
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
DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*==(.*?)(?=^\S|\Z)", re.DOTALL | re.MULTILINE)
CODE_BLOCK = re.compile(r"```(?:tla\+?|TLA\+?)?[ \t]*\n(.*?)```", re.DOTALL)


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


class InvariantVerdict(BaseModel):
    name: str
    type: Literal["safety", "liveness"]
    outcome: Outcome
    source: Literal["template", "helper", "none"] = "none"
    formula: str | None = None  # the definitions TLC checked (``SysmoInvariant == ...``)
    checked_as: Literal["INVARIANT", "PROPERTY", "POSSIBLE"] | None = None
    reason: str = ""
    counterexample_states: int | None = None
    distinct_states: int | None = None
    duration_s: float = 0.0
    notes: list[str] = Field(default_factory=list)

    @property
    def holds(self) -> bool:
        return self.outcome == Outcome.OK


class InvariantsScore(BaseModel):
    verdicts: list[InvariantVerdict] = Field(default_factory=list)
    tlc_version: str = ""
    sany_version: str = ""
    helper_model: str | None = None
    cfg_notes: list[str] = Field(default_factory=list)
    bounded: str = DEFAULT_BOUNDED  # how a time-out without violation was counted (module doc)
    max_states: int | None = None  # the state bound of every check (None: none)
    max_states_temporal: int | None = None  # the bound of a run with temporal properties (None: max_states)
    timeout_s: float = DEFAULT_TIMEOUT_S  # the wall-clock limit of every check

    @property
    def value(self) -> float:
        return sum(v.holds for v in self.verdicts) / len(self.verdicts) if self.verdicts else 0.0

    def count(self, outcome: Outcome) -> int:
        return sum(v.outcome == outcome for v in self.verdicts)

    @property
    def outcome(self) -> Outcome:
        """failed if any invariant is violated; else inconclusive if any hit a bound; else error; else ok."""
        for worst in (Outcome.FAILED, Outcome.INCONCLUSIVE, Outcome.ERROR):
            if self.count(worst):
                return worst
        return Outcome.OK if self.verdicts else Outcome.ERROR


# ------------------------------------------------------------------------------------ concretisation


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


def _examples_as_written(artifact: Artifact, templates: list[InvariantTemplate],
                         ) -> list[tuple[Candidate | None, str | None, str, list[str]]] | None:
    """``concretise``'s answer without running SANY, when every template's example is usable and uses only names
    the model defines (``unknown_names``): each wrapper as SANY would accept it. None otherwise."""
    resolver = _Resolver(artifact, 0.0)
    results: list[tuple[Candidate | None, str | None, str, list[str]]] = []
    for i, template in enumerate(templates):
        candidate = resolver.example(template)
        if candidate is None or unknown_names(candidate, resolver.spec_names):
            return None
        results.append((candidate, wrapper_module(f"{resolver.prefix}{i}", resolver.spec.main_module, candidate),
                        "template", []))
    return results or None


def _parse_failure(result: CheckResult) -> bool:
    return any(v.kind == "parse" for v in tlc.report_of(result).violations)


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


class _Resolver:
    """Finds a candidate per template that SANY accepts against the model, batching the SANY runs."""

    def __init__(self, artifact: Artifact, timeout_s: float) -> None:
        self.spec = prepare(artifact)
        self.tla_files = {n: t for n, t in self.spec.files.items() if n.endswith(".tla")}
        sig = signature(Artifact(language=Language.TLA, files=self.tla_files), self.spec.main_module)
        self.spec_names = set(sig.operators) | set(sig.variables) | set(sig.constants)
        self.timeout_s = timeout_s
        self.sany_version = ""
        taken = {n.removesuffix(".tla") for n in self.tla_files}
        self.prefix = WRAPPER_PREFIX
        while any(t.startswith(self.prefix) for t in taken):
            self.prefix += "X"

    def example(self, template: InvariantTemplate) -> Candidate | None:
        """The template's ``tla_example`` as a candidate for this model, or None (none, or a vacuous one)."""
        if not template.tla_example.strip():
            return None
        candidate = parse_candidate(template.tla_example, template.name, self.spec_names,
                                    self.spec.files[self.spec.main_file])
        return None if candidate is None or _vacuous(candidate) else candidate

    def check(self, candidates: dict[int, Candidate]) -> dict[int, tuple[str | None, str]]:
        """index -> (the wrapper module text SANY accepts, or None; SANY's first error).

        Several candidates are first checked together in one module (``combined_definitions``): one parse of
        the model instead of two per candidate (the PGo raftkvs spec is 2.3 MB). If SANY rejects it, or the
        candidates are not isolated from each other, each wrapper is checked on its own, as always."""
        if len(candidates) > 1:
            name = f"{self.prefix}All"
            module = combined_module(name, self.spec.main_module, candidates, self.spec_names)
            if module is not None:
                together, version = check_modules({name: module}, self.tla_files, self.timeout_s)
                self.sany_version = self.sany_version or version
                if together[name].outcome == Outcome.OK:
                    return {i: (wrapper_module(f"{self.prefix}{i}", self.spec.main_module, c), "")
                            for i, c in candidates.items()}
        modules: dict[str, str] = {}
        for index, candidate in candidates.items():
            for standard in (True, False):  # the standard modules may clash with the model's own names
                name = f"{self.prefix}{index}{'' if standard else 'b'}"
                modules[name] = wrapper_module(name, self.spec.main_module, candidate, standard)
        if not modules:
            return {}
        verdicts, version = check_modules(modules, self.tla_files, self.timeout_s)
        self.sany_version = self.sany_version or version
        out: dict[int, tuple[str | None, str]] = {}
        for index in candidates:
            first, second = f"{self.prefix}{index}", f"{self.prefix}{index}b"
            if verdicts[first].outcome == Outcome.OK:
                out[index] = (modules[first], "")
            elif verdicts[second].outcome == Outcome.OK:
                out[index] = (modules[second], "")
            else:
                out[index] = (None, verdicts[first].message)
        return out


def _prompt(template: InvariantTemplate, spec_text: str) -> str:
    text = importlib.resources.files("sysmo.evals.prompts").joinpath(PROMPT_FILE).read_text(encoding="utf-8")
    kind_rule = (
        "It is a safety property: a state predicate that must hold in every reachable state (or, for a "
        "property of steps, a formula [][A]_v)."
        if template.type == "safety"
        else "It is a liveness property: a temporal formula (for example P ~> Q, or []<>P) that the "
        "specification's fairness conditions should guarantee."
    )
    values = {
        "spec": spec_text,
        "name": template.name,
        "kind": template.type,
        "natural_language": template.natural_language,
        "formal_description": template.formal_description,
        "tla_example": template.tla_example.strip() or "(none)",
        "kind_rule": kind_rule,
    }
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def _answer_text(text: str) -> str:
    blocks = CODE_BLOCK.findall(text or "")
    return blocks[-1] if blocks else (text or "")


def concretise(
    artifact: Artifact,
    templates: list[InvariantTemplate],
    *,
    helper: Any = None,
    task_id: str | None = None,
    attempts: int = DEFAULT_HELPER_ATTEMPTS,
    timeout_s: float = 60.0,
) -> tuple[list[tuple[Candidate | None, str | None, str, list[str]]], str, str | None]:
    """Per template: (candidate, wrapper text or None, source, notes); and the SANY version, helper model."""
    resolver = _Resolver(artifact, timeout_s)
    results: list[tuple[Candidate | None, str | None, str, list[str]]] = [
        (None, None, "none", []) for _ in templates
    ]
    first: dict[int, Candidate] = {}
    for i, template in enumerate(templates):
        candidate = resolver.example(template)
        if candidate is not None:
            first[i] = candidate
        else:
            results[i][3].append("the template has no usable tla_example")
    for i, (wrapper, error) in resolver.check(first).items():
        if wrapper is not None:
            results[i] = (first[i], wrapper, "template", results[i][3])
        else:
            results[i][3].append(f"the template's example does not fit the model: {error[:300]}")
    helper_model = None
    if helper is not None:
        from sysmo.llm import CallContext

        spec_text = resolver.spec.files[resolver.spec.main_file]
        conversations = {
            i: [{"role": "user", "content": _prompt(templates[i], spec_text)}]
            for i, r in enumerate(results)
            if r[1] is None
        }
        for _ in range(max(1, attempts)):
            if not conversations:
                break
            proposed: dict[int, Candidate] = {}
            for i, messages in list(conversations.items()):
                try:
                    response = helper.complete(
                        messages,
                        role="helper",
                        temperature=0.0,
                        context=CallContext(task_id=task_id, purpose="invariant"),
                    )
                except LLMError as exc:
                    results[i][3].append(f"helper failed: {str(exc)[:300]}")
                    conversations.pop(i)
                    continue
                helper_model = helper_model or response.model
                messages.append({"role": "assistant", "content": response.text or ""})
                candidate = parse_candidate(
                    _answer_text(response.text), templates[i].name, resolver.spec_names, spec_text
                )
                if candidate is None or _vacuous(candidate):
                    why = (
                        "answered with no definition of the property"
                        if candidate is None
                        else f"answered with {candidate.body.strip()!r}, which is not the property"
                    )
                    results[i][3].append(f"helper {why}")
                    messages.append(
                        {
                            "role": "user",
                            "content": f"That is not usable: you {why}. Answer with the "
                            f"definition {templates[i].name} == ... of the property itself.",
                        }
                    )
                    continue
                proposed[i] = candidate
            for i, (wrapper, error) in resolver.check(proposed).items():
                if wrapper is not None:
                    results[i] = (proposed[i], wrapper, "helper", results[i][3])
                    conversations.pop(i)
                else:
                    results[i][3].append(f"SANY rejected the helper's formula: {error[:300]}")
                    conversations[i].append(
                        {
                            "role": "user",
                            "content": "SANY rejects it when the definition is "
                            f"added to a module that EXTENDS the specification:\n{error}\n"
                            "Correct the definition; answer with the whole definition again.",
                        }
                    )
    return results, resolver.sany_version, helper_model


# -------------------------------------------------------------------------------------------- checking


def templates_from_cfg(artifact: Artifact) -> list[InvariantTemplate]:
    """The checks a spec's own cfg lists, as templates whose example is the spec's own definition."""
    spec = prepare(artifact)
    own = spec.files.get(f"{spec.main_module}.cfg")
    if own is None:
        return []
    config = tlc_cfg.parse(own)
    units = split_module(spec.files[spec.main_file])
    templates = []
    for kind, name in config.checks:
        definition = units.definition(name)
        templates.append(
            InvariantTemplate(
                name=name,
                type="safety" if kind == "invariant" else "liveness",
                natural_language=f"{name}, as the specification's own configuration checks it",
                tla_example=definition.text if definition else name,
            )
        )
    return templates


def _check_config(
    config: tlc_cfg.TlcConfig, spec_operators: set[str], as_property: bool, liveness: bool
) -> tuple[tlc_cfg.TlcConfig, list[str]]:
    notes = []
    base = without_checks(config)
    if liveness and base.specification is None and "Spec" in spec_operators:
        base = base.model_copy(update={"specification": "Spec", "init": None, "next": None})
        notes.append("checked under SPECIFICATION Spec (the model's fairness), not the cfg's INIT/NEXT")
    checked = base.model_copy(
        update={"properties": [CHECKED_NAME]} if as_property else {"invariants": [CHECKED_NAME]}
    )
    return checked, notes


def _verdict(
    template: InvariantTemplate,
    result: CheckResult,
    as_property: bool,
    candidate: Candidate,
    source: str,
    notes: list[str],
    bounded: str = DEFAULT_BOUNDED,
) -> InvariantVerdict:
    report = tlc.report_of(result)
    verdict = InvariantVerdict(
        name=template.name,
        type=template.type,
        source=source,  # type: ignore[arg-type]
        formula=candidate.definitions(),
        checked_as="PROPERTY" if as_property else "INVARIANT",
        outcome=result.outcome,
        duration_s=result.duration_s,
        notes=notes,
        reason=str(result.details.get("reason", "")),
        distinct_states=report.distinct_states,
    )
    if result.outcome == Outcome.FAILED:
        kinds = {v.kind for v in report.violations}
        bound = result.details.get("bound_hit")
        if kinds & {"invariant", "property", "action-property"} and as_property and bound:
            # states cut off by the bound have no successors, so they look like stuttering forever:
            # a temporal counterexample found under a bound may be an artefact of the bound
            verdict.outcome = Outcome.INCONCLUSIVE
            verdict.counterexample_states = len(report.trace) or None
            verdict.reason = (
                f"a temporal counterexample was found, but under a bound ({bound}): not conclusive"
            )
        elif kinds & {"invariant", "property", "action-property"}:
            verdict.counterexample_states = len(report.trace) or None
            verdict.reason = f"violated; counterexample of {len(report.trace)} states"
        else:  # the model or the formula could not be evaluated: no verdict on the property
            verdict.outcome = Outcome.ERROR
            verdict.reason = f"TLC could not evaluate it: {result.summary(2)[:500]}"
    elif result.outcome == Outcome.ERROR and result.details.get("early_exit"):
        verdict.reason = f"not checked to the end: {result.details.get('reason', '')}"
    elif result.outcome == Outcome.ERROR:
        verdict.reason = f"TLC did not run the check: {result.summary(2)[:500]}"
    if template.expected == "violated":  # the system violates it: the model should show that violation
        if verdict.outcome == Outcome.FAILED:
            verdict.outcome = Outcome.OK
            verdict.reason = (f"violated, as the modelled system is documented to violate it "
                              f"({template.expected_source[:200]}); counterexample of "
                              f"{verdict.counterexample_states} states")
        elif verdict.outcome == Outcome.OK:
            verdict.outcome = Outcome.FAILED
            verdict.reason = f"holds, but the modelled system violates it ({template.expected_source[:200]})"
    if (bounded == "sysmo" and verdict.outcome == Outcome.INCONCLUSIVE and result.details.get("bound_hit")
            and not result.details.get("timed_out") and not report.violations
            and not candidate.possibility and template.expected != "violated"):
        # checked on the state graph explored up to a deterministic state/depth bound, with no violation: it
        # holds there (the deterministic counterpart of the harness's time-out rule). For a temporal property
        # the bound's frontier states look like stuttering, which can only add counterexamples, never hide one
        # inside the explored graph; a counterexample found under the bound is inconclusive (above). A
        # possibility or an expected violation not found within the bound may lie beyond it: inconclusive.
        verdict.outcome = Outcome.OK
        verdict.reason = (f"holds within the bound: {result.details.get('bound_hit')}, no violation "
                          f"(invariants.bounded=sysmo; the bound, not the clock, ended the check)")
        verdict.notes.append(f"{WITHIN_BOUND_NOTE} ({report.distinct_states} distinct states)")
        return verdict
    if bounded == "sysmo" and verdict.outcome == Outcome.INCONCLUSIVE and result.details.get("timed_out"):
        verdict.reason = (f"inconclusive: the wall-clock limit ({result.duration_s:.0f} s) ended the check "
                          f"before its state bound ({report.distinct_states} distinct states); a time-out is "
                          f"never counted as holding (invariants.bounded=sysmo)")
    if (bounded == "harness" and verdict.outcome == Outcome.INCONCLUSIVE and result.details.get("timed_out")
            and not result.details.get("bound_hit") and not report.violations):
        verdict.outcome = Outcome.OK
        verdict.reason = (f"no violation within the time limit ({result.duration_s:.0f} s, "
                          f"{report.distinct_states} distinct states): counted as holding, as SysMoBench's "
                          f"harness counts a time-out (invariants.bounded=harness; strict: inconclusive)")
        verdict.notes.append("bounded=harness: time-out without violation counted as holding")
        return verdict
    if candidate.possibility:  # ``~ENABLED step`` violated = a reachable state where the step can happen
        verdict.checked_as = "POSSIBLE"
        if verdict.outcome == Outcome.FAILED:
            verdict.outcome, verdict.counterexample_states = Outcome.OK, None
            verdict.reason = f"possible: TLC reached a state where the step is enabled ({len(report.trace)} states)"
        elif verdict.outcome == Outcome.OK:
            verdict.outcome = Outcome.FAILED
            verdict.reason = "never possible: no reachable state enables the step"
    return verdict


def _definition_bodies(texts: list[str]) -> dict[str, str]:
    """Top-level ``Name == body`` definitions (no parameters) of the given module texts, comments blanked."""
    bodies: dict[str, str] = {}
    for text in texts:
        for match in DEFINITION.finditer(blank_comments(text, strings=True)):
            bodies.setdefault(match.group(1), match.group(2))
    return bodies


def constraint_conjuncts(constraints: list[str], texts: list[str]) -> set[str]:
    """Names that are conjuncts of the given CONSTRAINT operators, followed through named conjunctions."""
    bodies = _definition_bodies(texts)
    found: set[str] = set()
    pending = list(constraints)
    while pending:
        name = pending.pop()
        for conjunct in re.split(r"/\\", bodies.get(name, "")):
            conjunct = conjunct.strip().strip("()").strip()
            if IDENT.fullmatch(conjunct) and conjunct not in found:
                found.add(conjunct)
                pending.append(conjunct)
    return found


def _under_constraint(
    template: InvariantTemplate, candidate: Candidate, wrapper: str, constraints: list[str], conjuncts: set[str]
) -> tuple[Candidate, str] | None:
    """The candidate checked as ``Constraint => T`` when the template is a conjunct of the cfg's CONSTRAINT."""
    body = candidate.body.strip()
    if template.type != "safety" or candidate.possibility or candidate.temporal:
        return None
    if template.name not in conjuncts and not (IDENT.fullmatch(body) and body in conjuncts):
        return None
    constraint = " /\\ ".join(constraints)
    guarded = candidate.model_copy(update={"body": f"({constraint}) =>\n    ({body})"})
    return guarded, wrapper.replace(candidate.definitions(), guarded.definitions())


@dataclass
class _Check:
    """One concretised template, ready for TLC: its formula, its wrapper module and the cfg it runs under."""

    index: int
    template: InvariantTemplate
    candidate: Candidate
    wrapper: str
    source: str
    notes: list[str]
    as_property: bool
    config: tlc_cfg.TlcConfig
    cfg_notes: list[str]

    @property
    def module(self) -> str:
        return re.search(r"MODULE (\w+)", self.wrapper).group(1)  # type: ignore[union-attr]

    @property
    def standard(self) -> bool:
        return f", {STANDARD_MODULES}\n" in self.wrapper.split("\n\n", 1)[0] + "\n"

    def verdict(self, result: CheckResult, bounded: str, extra: list[str] | None = None) -> InvariantVerdict:
        return _verdict(self.template, result, self.as_property, self.candidate, self.source,
                        self.notes + self.cfg_notes + (extra or []), bounded)


def groupable(check: _Check) -> bool:
    """A safety template TLC names when it is violated: a state predicate (INVARIANT), or ``[]P`` / ``[][A]_v``
    under PROPERTY with nothing temporal inside. Possibility checks (expected to be violated at once) and
    liveness properties (TLC does not say which temporal property failed) are checked alone."""
    candidate = check.candidate
    if check.template.type != "safety" or candidate.possibility:
        return False
    if not candidate.temporal:
        return True
    body = blank_comments(candidate.body, strings=True).strip()
    helpers = blank_comments("\n".join(candidate.helpers), strings=True)
    return body.startswith("[]") and not TEMPORAL.search(body[2:]) and not TEMPORAL.search(helpers)


def liveness_groupable(check: _Check) -> bool:
    """A liveness template expected to hold, checked under PROPERTY: several such are checked in one TLC run
    (``group_liveness``); a violation, which TLC does not pin on one property, sends each to a run alone."""
    return (check.template.type == "liveness" and check.as_property and not check.candidate.possibility
            and check.template.expected != "violated")


def _attributed(result: CheckResult, names: dict[str, _Check]) -> _Check | None:
    """The one template of a grouped run that TLC reports violated, if the run failed on exactly that."""
    if result.outcome != Outcome.FAILED:
        return None
    violations = tlc.report_of(result).violations
    failing = [v for v in violations if v.kind in tlc.FAILING_KINDS | tlc.ERROR_KINDS]
    named = {v.name for v in failing if v.kind in ("invariant", "property", "action-property")}
    if len(named) != 1 or len(failing) != sum(v.name in named for v in failing):
        return None
    return names.get(next(iter(named)))


def _temporal_violation(result: CheckResult) -> bool:
    """The run failed on a violated temporal property and nothing else."""
    failing = [v for v in tlc.report_of(result).violations if v.kind in tlc.FAILING_KINDS | tlc.ERROR_KINDS]
    return result.outcome == Outcome.FAILED and bool(failing) and all(v.kind == "property" for v in failing)


def score(
    artifact: Artifact,
    templates: list[InvariantTemplate],
    config: ModelConfig,
    *,
    helper: Any = None,
    task_id: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_states: int | None = None,
    max_depth: int | None = None,
    max_states_temporal: int | None = None,
    helper_attempts: int = DEFAULT_HELPER_ATTEMPTS,
    parallel: int | None = None,
    strategy: str = "bfs",
    bounded: str = DEFAULT_BOUNDED,
    grouped: bool = DEFAULT_GROUPED,
    group_liveness: bool = DEFAULT_GROUP_LIVENESS,
    sany_first: bool = DEFAULT_SANY_FIRST,
    merge_liveness: bool = DEFAULT_MERGE_LIVENESS,
) -> InvariantsScore:
    """Concretise every template, then check each with TLC: the safety templates together in one run per
    cfg when ``grouped``, every other template alone (see the module doc). ``sany_first=False``: when every
    template's example uses only the model's names, the examples go to TLC without a SANY run of their own (TLC
    parses them with the same SANY); if TLC's parse rejects one, the whole stage is scored again with SANY first."""
    if bounded not in BOUNDED_POLICIES:
        raise ConfigError(f"invariants.bounded must be one of {', '.join(BOUNDED_POLICIES)}, not {bounded!r}")
    temporal_bound = max_states if max_states_temporal is None else max_states_temporal
    if temporal_bound != max_states:
        merge_liveness = False  # a safety check keeps its own bound: not in the temporal properties' run

    def bound_of(members: list[_Check]) -> int | None:
        """The state bound of a TLC run of ``members``: the temporal one when it checks a temporal property."""
        return temporal_bound if any(c.as_property for c in members) else max_states

    written = None if sany_first else _examples_as_written(artifact, templates)
    if written is not None:
        concretised, sany_version, helper_model = written, "", None
    else:
        concretised, sany_version, helper_model = concretise(
            artifact, templates, helper=helper, task_id=task_id, attempts=helper_attempts
        )
    rejected: list[int] = []  # templates whose unchecked example TLC's parse rejected (``written`` only)
    spec = prepare(artifact)
    tla_files = {n: t for n, t in spec.files.items() if n.endswith(".tla")}
    sig = signature(Artifact(language=Language.TLA, files=tla_files), spec.main_module)
    operators = set(sig.operators)
    reserved = operators | set(sig.variables) | set(sig.constants)
    constraints = list(config.config.constraints)
    conjuncts = constraint_conjuncts(constraints, list(tla_files.values())) if constraints else set()
    verdicts: dict[int, InvariantVerdict] = {}
    checks: list[_Check] = []
    for index, template in enumerate(templates):
        candidate, wrapper, source, notes = concretised[index]
        if candidate is None or wrapper is None:
            verdicts[index] = InvariantVerdict(
                name=template.name,
                type=template.type,
                outcome=Outcome.ERROR,
                notes=notes,
                reason="no formula for the model's names was found",
            )
            continue
        guarded = _under_constraint(template, candidate, wrapper, constraints, conjuncts)
        if guarded is not None:
            candidate, wrapper = guarded
            notes = notes + [f"a conjunct of the model's state CONSTRAINT ({', '.join(constraints)}): checked "
                             f"as Constraint => {template.name} (TLC prunes the states that violate it)"]
        as_property = not candidate.possibility and (template.type == "liveness" or candidate.temporal)
        config_, cfg_notes = _check_config(config.config, operators, as_property, template.type == "liveness")
        checks.append(_Check(index=index, template=template, candidate=candidate, wrapper=wrapper, source=source,
                             notes=notes, as_property=as_property, config=config_, cfg_notes=cfg_notes))

    def single(check: _Check) -> tuple[InvariantVerdict, str]:
        files = {**tla_files, f"{check.module}.tla": check.wrapper}
        if strategy == "hunt":  # escalating search for a counterexample (sysmo.tools.tla.bug_hunt)
            found = bug_hunt.hunt(
                Artifact(language=Language.TLA, files=files),
                check.config,
                ("property" if check.as_property else "invariant", CHECKED_NAME),
                module=check.module,
                budget_s=timeout_s,
            )
            sent_back(found.result, check)
            verdict = check.verdict(found.result, bounded)
            verdict.notes += found.notes()
            verdict.duration_s = found.seconds
            return verdict, found.result.tool_version
        result = tlc.model_check(
            Artifact(language=Language.TLA, files=files),
            check.config,
            module=check.module,
            check_deadlock=False,
            timeout_s=timeout_s,
            max_states=bound_of([check]),
            max_depth=max_depth,
        )
        sent_back(result, check)
        return check.verdict(result, bounded), result.tool_version

    def sent_back(result: CheckResult, first: _Check) -> bool:
        """TLC's parse rejected an example sent without a SANY run of its own: the stage is scored again with
        SANY first (``sany_first``)."""
        if written is not None and _parse_failure(result):
            rejected.append(first.index)
            return True
        return False

    def combined_run(suffix: str, members: list[_Check], base: tlc_cfg.TlcConfig) -> CheckResult | None:
        """One TLC run of a module defining every member's formula (None: they cannot share one module): the
        state predicates under INVARIANT, the rest under PROPERTY, on ``base``'s cfg."""
        name = f"{members[0].module}{suffix}"
        module = combined_module(name, spec.main_module, {c.index: c.candidate for c in members}, reserved,
                                 standard=members[0].standard)
        if module is None:
            return None
        config_ = base.model_copy(update={
            "invariants": [member_name(c.index) for c in members if not c.as_property],
            "properties": [member_name(c.index) for c in members if c.as_property]})
        return tlc.model_check(Artifact(language=Language.TLA, files={**tla_files, f"{name}.tla": module}),
                               config_, module=name, check_deadlock=False, timeout_s=timeout_s,
                               max_states=bound_of(members), max_depth=max_depth)

    def together(group: list[_Check]) -> list[tuple[int, InvariantVerdict, str]]:
        """One TLC run checks the group; a violated template gets its verdict and the run is repeated
        without it (TLC explores the states in the same order, so each template meets the same first
        violation as alone); anything TLC does not pin on one template falls back to one run each."""
        out: list[tuple[int, InvariantVerdict, str]] = []
        remaining = list(group)
        while len(remaining) > 1:
            result = combined_run("G", remaining, remaining[0].config)
            if result is None:
                break
            by_name = {member_name(c.index): c for c in remaining}
            if sent_back(result, remaining[0]):  # scored again with SANY first: no verdict here
                return out + [(c.index, c.verdict(result, bounded), result.tool_version) for c in remaining]
            kind = "liveness" if remaining[0].template.type == "liveness" else "safety"
            note = [f"checked in one TLC run with {len(remaining) - 1} other {kind} template(s) "
                    f"(invariants.grouped)"]
            violated = _attributed(result, by_name)
            if violated is not None:
                out.append((violated.index, violated.verdict(result, bounded, note), result.tool_version))
                remaining.remove(violated)
                continue
            if result.outcome in (Outcome.OK, Outcome.INCONCLUSIVE):
                out += [(c.index, c.verdict(result, bounded, note), result.tool_version) for c in remaining]
                return out
            log.info("tla_invariants.group_fallback", module=spec.main_module, templates=len(remaining),
                     outcome=result.outcome.value, reason=str(result.details.get("reason", ""))[:200])
            break
        return out + [(c.index, *single(c)) for c in remaining]

    def group(checks_: list[_Check]) -> list[tuple[int, InvariantVerdict, str]]:
        if len(checks_) > 1:
            return together(checks_)
        return [(c.index, *single(c)) for c in checks_]

    def merged(safety: list[_Check], liveness: list[_Check]) -> list[tuple[int, InvariantVerdict, str]]:
        """The safety group and the liveness group of one cfg in one TLC run (``merge_liveness``, module doc):
        what the run decides is kept, the rest of each group goes on as it would without the merge."""
        members = [*safety, *liveness]
        result = combined_run("M", members, liveness[0].config)
        if result is None:
            return group(safety) + group(liveness)
        version = result.tool_version
        if sent_back(result, members[0]):  # scored again with SANY first: no verdict here
            return [(c.index, c.verdict(result, bounded), version) for c in members]
        note = [(f"checked in one TLC run with {len(members) - 1} other safety and liveness template(s) "
                 "(invariants.grouped, invariants.merge_liveness)")]
        violated = _attributed(result, {member_name(c.index): c for c in members})
        if violated is not None:
            decided = [(violated.index, violated.verdict(result, bounded, note), version)]
            if violated in safety:
                return decided + group([c for c in safety if c is not violated]) + group(liveness)
            return decided + group([c for c in liveness if c is not violated]) + group(safety)
        if result.outcome == Outcome.OK:
            return [(c.index, c.verdict(result, bounded, note), version) for c in members]
        if result.outcome == Outcome.INCONCLUSIVE:
            return [(c.index, c.verdict(result, bounded, note), version) for c in liveness] + group(safety)
        log.info("tla_invariants.merged_fallback", module=spec.main_module, templates=len(members),
                 outcome=result.outcome.value, reason=str(result.details.get("reason", ""))[:200])
        if _temporal_violation(result) and not any(c.as_property for c in safety):
            # a liveness template is violated and TLC does not say which: each alone, as after the group's run
            return [(c.index, *single(c)) for c in liveness] + group(safety)
        return group(safety) + group(liveness)

    jobs: list[list[_Check]] = []
    if grouped and strategy != "hunt":
        groups: dict[tuple[str, bool, bool], list[_Check]] = {}
        for check in checks:
            live = group_liveness and liveness_groupable(check)
            if live or groupable(check):
                # merge_liveness: the safety and the liveness templates of one cfg make one group (``merged``)
                key = (without_checks(check.config).render(), check.standard, live and not merge_liveness)
                groups.setdefault(key, []).append(check)
        jobs += [g for g in groups.values() if len(g) > 1]
    in_groups = {c.index for g in jobs for c in g}
    jobs += [[c] for c in checks if c.index not in in_groups]
    # temporal checks first (they take longest: liveness over the tableau): the last one to start ends sooner
    jobs.sort(key=lambda job: not any(c.as_property and not c.candidate.possibility for c in job))

    def run(job: list[_Check]) -> list[tuple[int, InvariantVerdict, str]]:
        safety = [c for c in job if c.template.type != "liveness"]
        liveness = [c for c in job if c.template.type == "liveness"]
        return merged(safety, liveness) if safety and liveness else group(job)

    versions: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, parallel or jvm.default_parallel())) as pool:
        for done in pool.map(run, jobs):
            for index, verdict, version in done:
                verdicts[index] = verdict
                versions.append(version)
    if rejected:
        log.info("tla_invariants.examples_rejected_by_tlc", module=spec.main_module,
                 templates=[templates[i].name for i in rejected])
        return score(artifact, templates, config, helper=helper, task_id=task_id, timeout_s=timeout_s,
                     max_states=max_states, max_depth=max_depth, max_states_temporal=max_states_temporal,
                     helper_attempts=helper_attempts, parallel=parallel,
                     strategy=strategy, bounded=bounded, grouped=grouped, group_liveness=group_liveness,
                     sany_first=True, merge_liveness=merge_liveness)
    tlc_version = next((t for t in versions if t), "")
    if written is not None and tlc_version:
        sany_version = f"the SANY of {tlc_version} (the formulas were parsed by the TLC runs)"
    score_ = InvariantsScore(
        verdicts=[verdicts[i] for i in range(len(templates))],
        sany_version=sany_version,
        tlc_version=tlc_version,
        helper_model=helper_model,
        cfg_notes=config.notes,
        bounded=bounded,
        max_states=max_states,
        max_states_temporal=temporal_bound,
        timeout_s=timeout_s,
    )
    log.info(
        "tla_invariants.scored",
        module=spec.main_module,
        value=round(score_.value, 3),
        outcome=score_.outcome.value,
        templates=len(templates),
        helper=helper_model,
        tlc_runs_grouped=sum(len(j) for j in jobs if len(j) > 1),
    )
    return score_
