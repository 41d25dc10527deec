"""A liveness template stating another's formula over sets TLC shows equal is left out of their shared run and
decided by that one's check (``invariants.dedupe_liveness``): the same verdicts as with it in the run."""

from __future__ import annotations

import time

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.evals.metrics import tla_invariants, tla_runtime
from sysmo.evals.metrics.tla_invariants import twins
from sysmo.tools.tla import tlc

# each process counts from 0 to 2 (9 states); Done(p) is the model's own one-parameter operator
SPEC = """---- MODULE Steps ----
EXTENDS Naturals
VARIABLES c
Procs == {1, 2}
Nodes == {2, 1}
Few == {1}
vars == <<c>>
Init == c = [p \\in Procs |-> 0]
Step(p) == c[p] < 2 /\\ c' = [c EXCEPT ![p] = @ + 1]
Next == \\E p \\in Procs : Step(p)
Spec == Init /\\ [][Next]_vars /\\ \\A p \\in Procs : WF_vars(Step(p))
Done(p) == c[p] = 1 ~> c[p] = 2
Safe == \\A p \\in Procs : c[p] <= 2
====
"""
ARTIFACT = Artifact(language=Language.TLA, files={"Steps.tla": SPEC, "Steps.cfg": "SPECIFICATION Spec\n"})


def _template(name: str, body: str, kind: str = "liveness") -> InvariantTemplate:
    return InvariantTemplate(name=name, type=kind, natural_language=name, tla_example=f"{name} == {body}")


SAFE = _template("Bounded", "\\A p \\in Procs : c[p] <= 2", "safety")
WRITTEN = _template("Progress", "\\A i \\in Procs : (c[i] = 1 ~> c[i] = 2)")
CALLED = _template("AllProgress", "\\A n \\in Nodes : Done(n)")  # Nodes = Procs: the same formula
FEWER = _template("FirstProgress", "\\A n \\in Few : Done(n)")  # the same body over another set: not proven
BROKEN = _template("Reaches3", "\\A i \\in Procs : <>(c[i] = 3)")  # violated
BROKEN_CALLED = _template("Reaches3Too", "\\A n \\in Nodes : <>(c[n] = 3)")


def test_twins_are_read_after_renaming_and_expanding_the_models_operators() -> None:
    operators = twins._operators([SPEC])
    assert operators["Done"][0] == "p" and "Safe" not in operators
    assert twins._normal("(c[i] = 1 ~> c[i] = 2)", ("i",), operators) == \
        twins._normal(" Done(n)", ("n",), operators)
    assert twins._normal("Done(n)", ("n",), {"Done": ("p", "\\A i \\in Procs : c[i] = p")}) is None  # binds
    assert twins._normal("c[i] = 1 ~> c[i] = 3", ("i",), operators) != twins._normal("Done(i)", ("i",), operators)
    assert twins.proven(['<<"sysmo-twins", 3, TRUE>>', '<<"sysmo-twins", 4, FALSE>>']) == {3}


def test_the_models_definitions_are_read_in_time_linear_in_its_size() -> None:
    # a generated module's long comment blocks become blank lines (PGo raftkvs: 2.3 MB); a definition's name is
    # read from its own line, never by scanning blank lines from every line before it (243 s of CPU on raftkvs)
    block = ("(*" + "\n".join(" " * 70 for _ in range(20_000)) + "*)\n")
    text = SPEC.replace("Done(p) ==", block + "Done(p) ==").replace("Safe ==", block + "  Safe ==")
    started = time.process_time()
    operators = twins._operators([text])
    assert time.process_time() - started < 5.0  # about 0.1 s; quadratic, it took minutes
    assert operators["Done"][0] == "p" and operators.keys() == twins._operators([SPEC]).keys()


def test_fewer_than_two_candidates_never_read_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def unread(texts: list[str]) -> dict[str, tuple[str, str]]:
        raise AssertionError("the model's files were read")

    monkeypatch.setattr(twins, "_operators", unread)
    assert twins.find([], [SPEC], set()) == []


def _score(templates: list[InvariantTemplate], dedupe: bool, modules: list[str], properties: list[list[str]]):
    modules.clear()
    properties.clear()
    return tla_invariants.score(ARTIFACT, templates, tla_runtime.model_config(ARTIFACT), timeout_s=120,
                                max_states=1000, max_states_temporal=1000, bounded="sysmo", liveness_at_end=True,
                                dedupe_liveness=dedupe, parallel=1)


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[list[str]]]:
    modules: list[str] = []
    properties: list[list[str]] = []
    original = tlc.model_check

    def recording(artifact, config, **kwargs):  # type: ignore[no-untyped-def]
        modules.append(kwargs.get("module", ""))
        properties.append(list(config.properties))
        return original(artifact, config, **kwargs)

    monkeypatch.setattr(tlc, "model_check", recording)
    return modules, properties


@pytest.mark.slow
def test_a_twin_gets_its_formulas_verdict_from_the_shared_run(recorded) -> None:  # type: ignore[no-untyped-def]
    modules, properties = recorded
    scored = {}
    for dedupe in (True, False):
        result = _score([SAFE, WRITTEN, CALLED, FEWER], dedupe, modules, properties)
        scored[dedupe] = ([(v.name, v.outcome, v.holds) for v in result.verdicts], result.value, list(properties))
        notes = " ".join(result.verdicts[2].notes)
        assert ("the same formula as Progress" in notes) == dedupe
        assert "the same formula" not in " ".join(result.verdicts[3].notes)
    (deduped, value, runs), (whole, whole_value, whole_runs) = scored[True], scored[False]
    assert deduped == whole == [("Bounded", Outcome.OK, True), ("Progress", Outcome.OK, True),
                                ("AllProgress", Outcome.OK, True), ("FirstProgress", Outcome.OK, True)]
    assert value == whole_value
    # with the lever: AllProgress and FirstProgress left out of the merged run; FirstProgress's set differs in the
    # model (TLC printed FALSE), so it runs alone
    assert whole_runs[0] == ["SysmoInvariant_1", "SysmoInvariant_2", "SysmoInvariant_3"]
    assert runs[0] == ["SysmoInvariant_1"] and len(runs) == 2


@pytest.mark.slow
def test_a_violated_formula_sends_its_twin_to_the_runs_it_had_without_the_lever(
        recorded) -> None:  # type: ignore[no-untyped-def]
    modules, properties = recorded
    scored = {}
    for dedupe in (True, False):
        result = _score([WRITTEN, BROKEN, BROKEN_CALLED], dedupe, modules, properties)
        scored[dedupe] = [(v.name, v.outcome, v.holds) for v in result.verdicts]
    assert scored[True] == scored[False]
    assert [name for name, outcome, _ in scored[True] if outcome == Outcome.FAILED] == ["Reaches3", "Reaches3Too"]
