"""Conformance that a wrong model cannot pass (``sysmo`` mode), on SysMoBench's PGo locksvc and its real traces and
on the starter TLA+ tasks: the gold keeps 1.0; a renamed variable, a model unrelated to the system and an action
left out of ``Next`` lose points; ``harness`` mode keeps the reference harness's values (documented divergence,
docs/conformance.md). The mutants come from the sensitivity suite's operators (``sysmo.evals.sensitivity.tla``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sysmo.benchmarks import sysmobench
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.scorecard import StageResult
from sysmo.contracts.task import Task
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.sensitivity import MutationError
from sysmo.evals.sensitivity import tla as mutants_tla
from sysmo.evals.metrics import tla_next_relation
from sysmo.evals.trace_view import mapping_lines
from sysmo.cli.tools import _stage_notes
from sysmo.tools.tla import trace_validation as tv
from sysmo.tools.tla.cfg import TlcConfig

LOCKSVC_MUTANTS = ("gold", "q renamed queue", "unrelated", "unlock not in Next")
STARTER = {"spinlock": ("locked", "Release"), "bounded_buffer": ("buffer", "Get"),
           "leader_election": ("status", "Elected"), "two_phase_commit": ("rmState", "Commit")}


def _mutant(gold: Artifact, name: str, variable: str, action: str) -> Artifact:
    main = gold.main_file
    text = gold.files[main]
    files = {
        "gold": gold.files,
        "q renamed queue": {**gold.files, main: mutants_tla.rename_variable(text, variable, f"{variable}_renamed")},
        "unrelated": {main: mutants_tla.trivial_unrelated_spec(text)},
        "unlock not in Next": {**gold.files, main: mutants_tla.drop_action_from_next(text, action)},
    }[name]
    return Artifact(language=Language.TLA, files=files)


def _score_all(jobs: list[tuple[Task, Artifact, str]]) -> list[StageResult]:
    def one(job: tuple[Task, Artifact, str]) -> StageResult:
        task, artifact, mode = job
        return tla.conformance_stage(artifact, task, ScoringContext(options={"mode": mode}))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, jobs))


@pytest.fixture(scope="module")
def locksvc(shared_benchmarks: Path) -> Task:
    return next(t for t in sysmobench.load(shared_benchmarks / "sysmobench") if t.id == "sysmobench/locksvc")


@pytest.fixture(scope="module")
def locksvc_scores(locksvc: Task) -> dict[tuple[str, str], StageResult]:
    gold = locksvc.references.model
    keys = [(mode, name) for mode in ("sysmo", "harness") for name in LOCKSVC_MUTANTS
            if not (mode == "harness" and name == "gold")]
    found = _score_all([(locksvc, _mutant(gold, name, "q", "unlock"), mode) for mode, name in keys])
    return dict(zip(keys, found, strict=True))


# -- PGo locksvc, real TLC


@pytest.mark.slow
def test_locksvc_gold_keeps_full_conformance_with_every_step_checked_against_its_next(
        locksvc_scores: dict[tuple[str, str], StageResult]) -> None:
    gold = locksvc_scores[("sysmo", "gold")]
    assert (gold.value, gold.outcome) == (1.0, "ok"), gold.detail["first_failure"]
    assert gold.metrics["mapping_coverage"] == 1.0 and gold.detail["unplaced"] == []
    assert gold.detail["refinement"]["checked"] and gold.detail["refinement"]["action"] == "Next \\/ ServerIsIdle"
    assert gold.detail["refinement"]["source"] == "SPECIFICATION SpecNoDeadlock"


@pytest.mark.slow
def test_locksvc_variable_renamed_loses_the_unplaced_field(locksvc_scores: dict[tuple[str, str], StageResult]) -> None:
    renamed = locksvc_scores[("sysmo", "q renamed queue")]
    assert renamed.detail["unplaced"] == ["field q"]
    assert renamed.metrics["m_c"] == 1.0 and renamed.metrics["mapping_coverage"] == pytest.approx(8 / 9)
    assert renamed.value == pytest.approx(8 / 9) and renamed.outcome == "failed"
    assert "unplaced: field q" in _stage_notes(renamed.detail)


@pytest.mark.slow
def test_locksvc_unrelated_spec_scores_zero(locksvc_scores: dict[tuple[str, str], StageResult]) -> None:
    unrelated = locksvc_scores[("sysmo", "unrelated")]
    assert unrelated.metrics["mapping_coverage"] == 0.0 and unrelated.value == 0.0
    assert set(unrelated.detail["unplaced"]) == {"event serverLoop", "event serverReceive", "event serverRespond",
                                                 "event acquireLock", "event criticalSection", "event unlock",
                                                 "field pc", "field msg", "field q"}


@pytest.mark.slow
def test_locksvc_action_left_out_of_next_is_an_inconsistent_code_action(
        locksvc_scores: dict[tuple[str, str], StageResult]) -> None:
    dropped = locksvc_scores[("sysmo", "unlock not in Next")]
    assert dropped.detail["inconsistent_actions"] == ["unlock"]
    assert dropped.value == pytest.approx(5 / 6) and dropped.outcome == "failed"
    assert dropped.metrics["accepted"] < dropped.metrics["traces"]
    failure = dropped.detail["first_failure"]
    assert failure["event"] == "unlock" and "no step of the spec reproduces" in failure["reason"]


@pytest.mark.slow
def test_harness_mode_keeps_the_reference_values_that_the_mutants_pass(
        locksvc_scores: dict[tuple[str, str], StageResult]) -> None:
    for name in LOCKSVC_MUTANTS[1:]:  # today's (reference harness) rule: every trace accepted, M_c = 1
        result = locksvc_scores[("harness", name)]
        assert (result.value, result.outcome) == (1.0, "ok"), name
        assert result.detail["refinement"]["checked"] is False and result.detail["coverage"]["scaled"] is False
    # the coverage is still measured and shown, only not applied
    assert locksvc_scores[("harness", "unrelated")].metrics["mapping_coverage"] == 0.0


# -- the starter TLA+ tasks, real TLC


@pytest.mark.slow
def test_starter_golds_keep_full_conformance_and_their_mutants_lose_points() -> None:
    tasks = {name: load_task_folder(STARTER_DIR / "tla" / name) for name in STARTER}
    keys = [(name, mutant) for name in STARTER for mutant in LOCKSVC_MUTANTS]
    jobs = [(tasks[name], _mutant(tasks[name].references.model, mutant, *STARTER[name]), "sysmo")
            for name, mutant in keys]
    scores = dict(zip(keys, _score_all(jobs), strict=True))
    for name, (variable, action) in STARTER.items():
        gold = scores[(name, "gold")]
        assert (gold.value, gold.outcome) == (1.0, "ok"), (name, gold.detail["first_failure"])
        assert gold.detail["refinement"]["checked"], name
        assert scores[(name, "q renamed queue")].detail["unplaced"] == [f"field {variable}"], name
        assert 0 < scores[(name, "q renamed queue")].value < 1, name
        assert scores[(name, "unrelated")].value == 0.0, name
        dropped = scores[(name, "unlock not in Next")]
        assert dropped.value < 1 and action in dropped.detail["inconsistent_actions"], name


# -- no TLC: the next-state relation, the coverage, the generated module, the mutants


LOCKSVC_TAIL = """---- MODULE M ----
VARIABLES x, y
vars == <<x, y>>
Init == x = 0 /\\ y = 0
A == x' = 1 /\\ y' = y
Next == A \\/ UNCHANGED vars
Spec == Init /\\ [][Next]_vars
Idle == UNCHANGED vars
SpecNoDeadlock ==
    /\\ Init
    /\\ [][Next \\/ Idle]_vars  \\* [][Wrong]_vars in a comment
Wrapped == SpecNoDeadlock /\\ WF_vars(Next)
Tupled == Init /\\ [][Next]_<<x, y>>
====
"""


def test_the_next_state_relation_comes_from_the_cfg_the_specification_or_spec_and_is_said_when_missing() -> None:
    find = tla_next_relation.find
    found = find(LOCKSVC_TAIL, TlcConfig(specification="SpecNoDeadlock"), ["x", "y"])
    assert (found.action, found.subscript, found.source) == ("Next \\/ Idle", "vars", "SPECIFICATION SpecNoDeadlock")
    assert find(LOCKSVC_TAIL, TlcConfig(specification="Wrapped"), ["x", "y"]).action == "Next \\/ Idle"
    assert find(LOCKSVC_TAIL, TlcConfig(specification="Tupled"), ["x", "y"]).subscript == "<<x, y>>"
    assert find(LOCKSVC_TAIL, TlcConfig(init="Init", next="Next"), ["x", "y"]).source == "cfg NEXT"
    assert find(LOCKSVC_TAIL, TlcConfig(), ["x", "y"]).source == "definition Spec"
    missing = find("---- MODULE M ----\nVARIABLE x\nInit == x = 0\nStep == x' = 1\n====\n", TlcConfig(), ["x"])
    assert not missing.found and "not found" in missing.note


def _line(event: str, **state: object) -> tv.TraceLine:
    return tv.TraceLine(event=event, actor=1, state=state)


def test_mapping_coverage_counts_unplaced_events_and_fields_and_next_only_events_with_a_checked_field() -> None:
    trace = tv.Trace(name="t", lines=[tv.TraceLine(event="Init", state={"a": 1}), _line("E", a=1, b=2),
                                      _line("F", a=2), _line("G", b=3)])
    mapping = tv.TraceMapping(actions=[tv.ActionMapping(event="E", action="Act", arguments=["actor"]),
                                       tv.ActionMapping(event="F"), tv.ActionMapping(event="G")],
                              variables=[tv.VariableMapping(field="a", variable="a")])
    coverage = tv.mapping_coverage(mapping, [trace])
    assert coverage.unplaced == ["event G", "field b"] and coverage.next_only_events == ["F"]
    assert coverage.value == pytest.approx(3 / 5)
    assert tv.mapping_coverage(tv.TraceMapping(), [trace]).value == 0.0


def test_the_replay_checks_every_step_against_the_relation_only_when_asked() -> None:
    trace = tv.Trace(name="t", lines=[_line("E", a=1)])
    mapping = tv.TraceMapping(actions=[tv.ActionMapping(event="E", action="Act", arguments=["actor"])],
                              variables=[tv.VariableMapping(field="a", variable="a")])
    plain = tv.checking_module([trace], mapping, "M", None)
    relation = tv.NextRelation(action="Next \\/ Idle", subscript="vars", source="SPECIFICATION S")
    checked = tv.checking_module([trace], mapping, "M", None, refinement=relation)
    assert "TV__Refines" not in plain.text
    assert "TV__Refines == [Next \\/ Idle]_vars" in checked.text and "/\\ TV__Refines = TRUE" in checked.text


def test_mutants_rename_drop_and_noop_real_specs_and_refuse_what_is_not_there(shared_benchmarks: Path) -> None:
    locksvc = (shared_benchmarks / "sysmobench/pgo/locksvc/locksvc.tla").read_text()
    # a PGo process: Next reaches unlock through client(self), whose disjunction loses it
    dropped = mutants_tla.drop_action_from_next(locksvc, "unlock")
    assert "client(self) == acquireLock(self) \\/ criticalSection(self)\n" in dropped
    assert "unlock(self) == /\\ pc[self] = \"unlock\"" in dropped  # the definition stays, only Next loses it
    renamed = mutants_tla.rename_variable(locksvc, "q", "queue")
    assert "VARIABLES msg, queue" in renamed and "queue' = [queue EXCEPT" in renamed
    assert renamed.count("\"unlock\"") == locksvc.count("\"unlock\"")  # string literals untouched
    spin = (STARTER_DIR / "tla/spinlock/Spinlock.tla").read_text()
    assert "Next == \\E p \\in Procs : Acquire(p) \\/ Spin(p) \\/ Release(p)" in \
        mutants_tla.drop_action_from_next(spin, "Request")
    buffer = (STARTER_DIR / "tla/bounded_buffer/BoundedBuffer.tla").read_text()
    assert "ConsumerIds" not in mutants_tla.drop_action_from_next(buffer, "Get").split("Next ==")[1].split("Spec")[0]
    two_pc = (STARTER_DIR / "tla/two_phase_commit/TwoPhaseCommit.tla").read_text()
    # '\/ Commit \/ Abort' as one bullet: the bullet keeps its column
    assert "\n    \\/ Abort\n    \\/ Terminated\n" in mutants_tla.drop_action_from_next(two_pc, "Commit")
    assert "\n    \\/ Commit\n    \\/ Terminated\n" in mutants_tla.drop_action_from_next(two_pc, "Abort")
    nooped = mutants_tla.noop_action(spin, "Release")
    assert "Release(p) ==\n    /\\ pc[p] = \"cs\"\n    /\\ UNCHANGED <<locked, pc>>" in nooped
    unrelated = mutants_tla.trivial_unrelated_spec(locksvc)
    assert unrelated.startswith("---- MODULE locksvc ----") and "CONSTANTS NumClients" in unrelated
    assert len(unrelated.splitlines()) == 8
    with pytest.raises(MutationError, match="not a declared variable"):
        mutants_tla.rename_variable(spin, "nothing", "x")
    with pytest.raises(MutationError, match="no disjunction reachable from Next"):
        mutants_tla.drop_action_from_next(spin, "Nothing")


def test_the_mapping_and_what_it_could_not_place_are_shown() -> None:
    detail = {"mapping": tv.TraceMapping(actions=[tv.ActionMapping(event="E", action="Act", arguments=["actor"]),
                                                  tv.ActionMapping(event="F")],
                                         variables=[tv.VariableMapping(field="a", variable="a")]).model_dump(),
              "unplaced": ["event F", "field q"], "coverage": {"value": 0.5},
              "refinement": {"checked": False, "action": None, "note": "the model's next-state relation was not found"}}
    lines = mapping_lines(detail)
    assert "  event E -> Act(actor)" in lines and "  event F -> Next (state only)" in lines
    assert "unplaced: event F, field q (mapping coverage 0.500)" in lines
    assert any(line.startswith("steps not checked against the model's Next") for line in lines)
    assert _stage_notes(detail) == "  (unplaced: event F, field q; steps not checked against the model's Next " \
                                   "(not found))"
    assert mapping_lines({"diagnostics": []}) == []


def test_a_relation_written_over_several_lines_keeps_its_columns_in_the_replay() -> None:
    text = ("---- MODULE M ----\nVARIABLE x\nInit == x = 0\nA == x' = 1\nB == x' = 2\n"
            "Spec == Init /\\ [][\\/ A\n"
            "                   \\/ B]_x\n====\n")
    found = tla_next_relation.find(text, TlcConfig(specification="Spec"), ["x"])
    assert found.action == "                   \\/ A\n                   \\/ B" and found.subscript == "x"
    module = tv.checking_module([tv.Trace(name="t", lines=[_line("E", a=1)])], tv.TraceMapping(), "M", None,
                                refinement=found)
    assert "TV__Refines == \n                  [\\/ A\n                   \\/ B]_x\n" in module.text


def test_the_view_shows_the_mapping_and_the_unplaced_as_tables() -> None:
    from sysmo.view.gather import stage_view

    mapping = tv.TraceMapping(actions=[tv.ActionMapping(event="E", action="Act", arguments=["actor"])],
                              variables=[tv.VariableMapping(field="a", variable="a")])
    view = stage_view(StageResult(stage="conformance", value=0.5, passed=False, outcome="failed",
                                  detail={"mapping": mapping.model_dump(), "unplaced": ["field q"]}))
    tables = {t.title: t for t in view.tables}
    assert tables["mapping: actions"].rows == [["E", "Act", '["actor"]']]
    assert tables["mapping: variables"].rows == [["a", "a", "value"]]
    assert tables["unplaced"].rows == [["field q"]]
    assert ["source", "names"] in tables["mapping"].rows


def test_the_mode_sets_the_defaults_and_an_explicit_option_wins() -> None:
    from sysmo.errors import ConfigError

    def ctx(**options: str) -> ScoringContext:
        return ScoringContext(options=options)

    assert tla._coverage_scales(ctx()) and not tla._coverage_scales(ctx(mode="harness"))
    assert tla._coverage_scales(ctx(mode="harness", **{"conformance.coverage": "scale"}))
    assert ctx().flag_by_mode("conformance.refinement", sysmo=True, harness=False)
    assert not ctx(**{"conformance.refinement": "off"}).flag_by_mode("conformance.refinement",
                                                                      sysmo=True, harness=False)
    with pytest.raises(ConfigError):
        tla._coverage_scales(ctx(**{"conformance.coverage": "half"}))
