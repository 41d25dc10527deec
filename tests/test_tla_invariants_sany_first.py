"""Template examples that use only the model's names go to TLC without a SANY run of their own
(``invariants.sany_first=false``, the default) and get the verdicts the SANY-first path gives; an example TLC's
parse rejects sends the whole stage through SANY first; an unknown name goes through SANY first at once."""

from __future__ import annotations

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import InvariantTemplate
from sysmo.evals.metrics import tla_invariants, tla_runtime
from sysmo.tools.tla import tlc

SPEC = """---- MODULE Tally ----
EXTENDS Naturals, FiniteSets
CONSTANT Procs
VARIABLES done, count
vars == <<done, count>>
Init == done = {} /\\ count = 0
Finish(p) == p \\notin done /\\ done' = done \\cup {p} /\\ count' = count + 1
Next == \\E p \\in Procs : Finish(p)
Spec == Init /\\ [][Next]_vars /\\ WF_vars(Next)
====
"""
CFG = "SPECIFICATION Spec\nCONSTANT Procs = {a, b, c}\n"
ARTIFACT = Artifact(language=Language.TLA, files={"Tally.tla": SPEC, "Tally.cfg": CFG})


def _template(name: str, kind: str, example: str) -> InvariantTemplate:
    return InvariantTemplate(name=name, type=kind, natural_language=name, tla_example=example)


FITTING = [
    _template("CountIsDone", "safety", "CountIsDone == count = Cardinality(done)"),
    _template("OnlyProcs", "safety", "OnlyProcs == \\A p \\in done : p \\in Procs"),
    _template("Grows", "safety", "Grows == [][count' >= count]_vars"),
    _template("AllDone", "liveness", "AllDone == <>(done = Procs)"),
]
# known names, wrong use: the quick reading lets it through, SANY (inside TLC or alone) rejects it
WRONG_ARITY = _template("TwoArgs", "safety", "TwoArgs == Cardinality(done, Procs) <= 3")
UNKNOWN = _template("UsesZ", "safety", "UsesZ == z > 0")


SANY_ALONE, MODEL_CHECK = tla_invariants.check_modules, tlc.model_check


def _key(verdict: tla_invariants.InvariantVerdict) -> tuple:
    return (verdict.name, verdict.outcome, verdict.checked_as, verdict.counterexample_states,
            verdict.distinct_states, verdict.reason, verdict.formula, verdict.source, tuple(verdict.notes))


def _scored(templates: list[InvariantTemplate], monkeypatch: pytest.MonkeyPatch, **options):
    """The score, and the order of SANY ("sany") and TLC ("tlc") runs it made."""
    runs: list[str] = []
    sany_alone, model_check = SANY_ALONE, MODEL_CHECK

    def counted_sany(modules, extra, timeout_s):
        runs.append("sany")
        return sany_alone(modules, extra, timeout_s)

    def counted_tlc(*args, **kwargs):
        runs.append("tlc")
        return model_check(*args, **kwargs)

    monkeypatch.setattr(tla_invariants.concretisation, "check_modules", counted_sany)
    monkeypatch.setattr(tlc, "model_check", counted_tlc)
    config = tla_runtime.model_config(ARTIFACT, None)
    return tla_invariants.score(ARTIFACT, templates, config, parallel=1, **options), runs


@pytest.mark.slow
def test_fitting_examples_skip_the_sany_run_and_keep_the_sany_first_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    names = {"Procs", "done", "count", "vars", "Init", "Next", "Spec", "Finish"}
    assert all(not tla_invariants.unknown_names(tla_invariants.parse_candidate(t.tla_example, t.name, names), names)
               for t in FITTING)
    fast, fast_runs = _scored(FITTING, monkeypatch)
    first, first_runs = _scored(FITTING, monkeypatch, sany_first=True)
    assert "sany" not in fast_runs and first_runs[0] == "sany" and len(first_runs) == len(fast_runs) + 1
    assert [_key(v) for v in fast.verdicts] == [_key(v) for v in first.verdicts]
    assert fast.value == first.value == 1.0
    assert "TLC" in fast.sany_version and "SANY" in first.sany_version


@pytest.mark.slow
def test_an_example_tlc_cannot_parse_sends_the_stage_through_sany_first(monkeypatch: pytest.MonkeyPatch) -> None:
    templates = [*FITTING[:2], WRONG_ARITY]
    fast, fast_runs = _scored(templates, monkeypatch)
    first, first_runs = _scored(templates, monkeypatch, sany_first=True)
    assert fast_runs[0] == "tlc" and "sany" in fast_runs  # TLC's parse rejected it, then SANY first
    assert fast_runs[fast_runs.index("sany"):] == first_runs
    assert [_key(v) for v in fast.verdicts] == [_key(v) for v in first.verdicts]
    assert fast.verdicts[2].outcome == "error" and fast.value == pytest.approx(2 / 3)


def test_an_unknown_name_goes_through_sany_first_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tla_invariants.unknown_names(tla_invariants.Candidate(body="z > 0"), {"done", "count"}) == {"z"}
    _, runs = _scored([FITTING[0], UNKNOWN], monkeypatch)
    assert runs[0] == "sany"


def test_the_quick_reading_of_names() -> None:
    names = {"Procs", "pc", "locked", "msgs", "N", "queue", "vars", "Next"}

    def unknown(body: str) -> set[str]:
        return tla_invariants.unknown_names(tla_invariants.Candidate(body=body), names)

    assert unknown('\\A i, j \\in Procs : (i # j) => ~(pc[i] = "cs" /\\ pc[j] = "cs")') == set()
    assert unknown('Cardinality({p \\in Procs : pc[p] = "cs"}) <= 1 /\\ locked') == set()
    assert unknown("[]<>(queue = <<>>) /\\ WF_vars(Next)") == set()
    assert unknown('\\E m \\in msgs : m.type = "ack" /\\ m.src \\in 1..N') == set()  # fields are not names
    assert unknown("LET f(x) == x + 1 IN \\A <<a, b>> \\in Procs \\X Procs : f(a) = b") == set()
    assert unknown("[kind |-> 1].kind = 1 /\\ held") == {"held"}
    assert unknown("Len(queue) < Max") == {"Max"}
