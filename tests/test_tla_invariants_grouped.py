"""Safety templates checked together in one TLC run (``invariants.grouped``, the default) get the verdict each
gets alone: same outcome, counterexample and distinct states, on a spec with violated invariants (two at
once, an action property, a formula TLC cannot evaluate) and on a gold spec; SANY checks all candidate
formulas in one module; the option turns it off."""

from __future__ import annotations

import re

import pytest
from steps_spec import steps_artifact
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.errors import ConfigError
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_invariants, tla_runtime
from sysmo.tools.tla import tlc

# grouped and alone, the same template often needs the very same TLC run (a template the group sends alone, the
# liveness run): each distinct run is made once for the file (the run cache), the comparisons still see real TLC output
pytestmark = pytest.mark.usefixtures("tla_run_cache")



def _template(name: str, kind: str, body: str, example: str | None = None) -> InvariantTemplate:
    return InvariantTemplate(name=name, type=kind, natural_language=name, tla_example=example or f"{name} == {body}")


TEMPLATES = [
    _template("XBounded", "safety", "x <= 6"),
    _template("XSmall", "safety", "x < 4"),  # violated at the same states as SumSmall or later
    _template("SumSmall", "safety", "x + y < 4"),
    _template("YGrows", "safety", "[][y' >= y]_vars"),  # an action property that holds
    _template("XSkipsThree", "safety", "[][x' # 3]_vars"),  # an action property that fails
    _template("NotANumber", "safety", 'x < 5 \\/ x + "a" > 0'),  # TLC fails on it at x = 5: one run each
    _template("YReaches", "liveness", "<>(y = 2)"),
    _template("Helper", "safety", "", "Low(v) == v < 9\nHelper == Low(x) /\\ Low(y)"),
]


def _key(verdict: tla_invariants.InvariantVerdict) -> tuple:
    return (verdict.name, verdict.outcome, verdict.checked_as, verdict.counterexample_states,
            verdict.distinct_states, verdict.reason, verdict.formula, verdict.source)


def _both(artifact: Artifact, templates: list[InvariantTemplate], config, monkeypatch: pytest.MonkeyPatch):
    runs: list[str] = []
    original = tlc.model_check

    def counted(*args, **kwargs):
        runs.append(kwargs.get("module", ""))
        return original(*args, **kwargs)

    monkeypatch.setattr(tlc, "model_check", counted)
    scores = {}
    for grouped in (True, False):
        runs.clear()
        scores[grouped] = (tla_invariants.score(artifact, templates, config, timeout_s=60, grouped=grouped),
                           list(runs))
    return scores


@pytest.mark.slow
def test_grouped_verdicts_equal_one_run_per_template(monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = steps_artifact()
    scores = _both(artifact, TEMPLATES, tla_runtime.model_config(artifact), monkeypatch)
    (grouped, grouped_runs), (alone, alone_runs) = scores[True], scores[False]
    assert [_key(v) for v in grouped.verdicts] == [_key(v) for v in alone.verdicts]
    outcomes = {v.name: v.outcome for v in grouped.verdicts}
    assert outcomes == {"XBounded": Outcome.OK, "XSmall": Outcome.FAILED, "SumSmall": Outcome.FAILED,
                        "YGrows": Outcome.OK, "XSkipsThree": Outcome.FAILED, "NotANumber": Outcome.ERROR,
                        "YReaches": Outcome.OK, "Helper": Outcome.OK}
    assert len(alone_runs) == len(TEMPLATES)
    assert any(r.endswith("G") for r in grouped_runs)  # the group module ran
    noted = {v.name for v in grouped.verdicts if any("invariants.grouped" in n for n in v.notes)}
    assert "YReaches" not in noted and "SumSmall" in noted


@pytest.mark.slow
def test_grouped_runs_fewer_tlc_jvms_with_the_same_verdicts_on_gold_and_buggy(monkeypatch: pytest.MonkeyPatch) -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "two_phase_commit")
    buggy = next(b for b in task.references.buggy_variants if b.name == "partial_vote_commit")
    found = {}
    for label, artifact in (("gold", task.references.model), ("buggy", buggy.artifact)):
        found[label] = _both(artifact, task.references.invariants, tla_runtime.model_config(artifact, task),
                             monkeypatch)
        (grouped, _), (alone, _) = found[label][True], found[label][False]
        assert [_key(v) for v in grouped.verdicts] == [_key(v) for v in alone.verdicts]
    gold, bug = found["gold"], found["buggy"]
    assert gold[True][0].value == 1.0
    # the 3 safety templates and the liveness one in one run (invariants.merge_liveness; two runs without it:
    # test_tla_invariants_merged), against one run each
    assert (len(gold[True][1]), len(gold[False][1])) == (1, 4)
    assert {v.name for v in bug[True][0].verdicts if v.outcome == Outcome.FAILED} == {"Consistency",
                                                                                       "CommitNeedsAllYes"}


def test_candidates_are_combined_only_when_isolated() -> None:
    def candidate(body: str, *helpers: str) -> tla_invariants.Candidate:
        return tla_invariants.Candidate(body=body, helpers=list(helpers))

    combined = tla_invariants.combined_definitions(
        {0: candidate("x < 4"), 3: candidate("Low(x)", "Low(v) == v < 9"), 5: candidate("Low(y)", "Low(v) == v < 9")},
        {"x", "y"})
    assert combined is not None and combined.count("Low(v) ==") == 1
    assert "SysmoInvariant_3 ==\n    Low(x)" in combined and "SysmoInvariant_0 ==" in combined
    # a helper defined twice differently, or used by a candidate that does not define it: each checked alone
    assert tla_invariants.combined_definitions(
        {0: candidate("Low(x)", "Low(v) == v < 9"), 1: candidate("Low(y)", "Low(v) == v < 3")}, set()) is None
    assert tla_invariants.combined_definitions(
        {0: candidate("Low(x)", "Low(v) == v < 9"), 1: candidate("Low(y)")}, set()) is None
    assert tla_invariants.combined_definitions({0: candidate("x")}, {"SysmoInvariant_0"}) is None


@pytest.mark.slow
def test_sany_checks_the_candidates_in_one_module_and_falls_back_on_a_rejected_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = steps_artifact()
    calls: list[list[str]] = []
    original = tla_invariants.check_modules

    def counted(modules, extra, timeout_s):
        calls.append(sorted(modules))
        return original(modules, extra, timeout_s)

    monkeypatch.setattr(tla_invariants.concretisation, "check_modules", counted)
    fits = [TEMPLATES[0], TEMPLATES[7]]
    results, _, _ = tla_invariants.concretise(artifact, fits)
    assert calls == [["SysmoInvAll"]] and all(r[1] is not None for r in results)
    calls.clear()
    unknown = _template("UsesZ", "safety", "z > 0")
    together, _, _ = tla_invariants.concretise(artifact, [*fits, unknown])
    assert calls[0] == ["SysmoInvAll"] and len(calls) == 2  # rejected together: each wrapper alone, as before
    alone = [tla_invariants.concretise(artifact, [t])[0][0] for t in (*fits, unknown)]

    def text(wrapper: str | None) -> str | None:
        return wrapper.split("\n", 1)[1] if wrapper else None  # the module's name carries its index

    def notes(found: list[str]) -> list[str]:
        return [re.sub(r"SysmoInv\d+", "SysmoInv", n) for n in found]

    assert [(text(r[1]), notes(r[3])) for r in together] == [(text(r[1]), notes(r[3])) for r in alone]
    assert together[2][1] is None and "z" in together[2][3][-1]


def test_the_grouped_option_is_a_boolean() -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "spinlock")
    with pytest.raises(ConfigError, match="invariants.grouped"):
        tla.invariants_stage(task.references.model, task, ScoringContext(options={"invariants.grouped": "maybe"}))
    assert ScoringContext(options={"invariants.grouped": "false"}).flag("invariants.grouped", True) is False
    assert ScoringContext(options={}).flag("invariants.grouped", True) is True


@pytest.mark.slow
def test_liveness_templates_expected_to_hold_share_one_run_and_a_violation_sends_each_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = steps_artifact()
    config = tla_runtime.model_config(artifact)
    holding = [_template("YReaches", "liveness", "<>(y = 2)"), _template("XReaches", "liveness", "<>(x = 6)")]
    returns = _template("XReturns", "liveness", "[]<>(x = 0)")  # x never returns to 0: violated
    runs: list[str] = []
    original = tlc.model_check
    monkeypatch.setattr(tlc, "model_check", lambda *a, **k: runs.append(k.get("module", "")) or original(*a, **k))
    found = {}
    for templates in (holding, [*holding, returns]):
        for together in (True, False):
            runs.clear()
            score = tla_invariants.score(artifact, templates, config, timeout_s=60, group_liveness=together)
            found[len(templates), together] = (score, list(runs))
        assert [_key(v) for v in found[len(templates), True][0].verdicts] == \
            [_key(v) for v in found[len(templates), False][0].verdicts]
    assert [len(found[key][1]) for key in ((2, True), (2, False), (3, True), (3, False))] == [1, 2, 4, 3]
    assert [v.outcome for v in found[3, True][0].verdicts] == [Outcome.OK, Outcome.OK, Outcome.FAILED]
    assert all("other liveness template" in " ".join(v.notes) for v in found[2, True][0].verdicts)
