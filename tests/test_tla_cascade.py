"""TLA+ cascade: syntax partial credit, timeouts, runtime errors, defaults, generated cfgs, helper roles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact, Language
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.task import InvariantTemplate, Task, TaskKind, TaskReferences, TraceSet
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_runtime, tla_syntax
from sysmo.llm import LLM
from sysmo.llm.mockllm import MockAnswer, MockScript

FAST = {"runtime.runs": 1, "invariants.timeout_s": 60}
# the spinlock's SANY check, its first seeded simulation and the renamed model's template wrappers recur across
# tests: each distinct run is made once for the file (the run cache); a run that times out is never stored
pytestmark = pytest.mark.usefixtures("tla_run_cache")


def _spinlock() -> Task:
    return load_task_folder(STARTER_DIR / "tla" / "spinlock")


def _spin_text() -> str:
    return _spinlock().references.model.files["Spinlock.tla"]


def _artifact(
    text: str, cfg: str | None = "CONSTANT N = 3\nSPECIFICATION Spec\n", name: str = "Spinlock"
) -> Artifact:
    files = {f"{name}.tla": text}
    if cfg is not None:
        files[f"{name}.cfg"] = cfg
    return Artifact(language=Language.TLA, files=files)


def _helper(*answers: str) -> tuple[LLM, list]:
    calls: list = []
    script = MockScript(mode="strict", responses=[MockAnswer(text=a) for a in answers])
    llm = LLM(
        {"generator": "mockllm/helper", "helper": "mockllm/helper"},
        cache=False,
        scripts={"helper": script},
        on_call=calls.append,
    )
    return llm, calls


# ------------------------------------------------------------------------------------------ syntax


def test_definitions_are_split_at_column_one_ignoring_comments_let_and_strings() -> None:
    text = """---- MODULE M ----
EXTENDS Naturals
CONSTANT N
VARIABLES x, y
(* Fake == 1
   inside a comment *)
\\* Other == 2
LOCAL Helper(a) == a + 1 \\* a comment with Foo == 3
f[i \\in 1..N] == IF i = 1 THEN 1 ELSE f[i - 1] + 1
a \\prec b == a < b
RECURSIVE Sum(_)
Sum(s) == IF s = {} THEN 0 ELSE LET e == CHOOSE v \\in s : TRUE
                                    Rest == s \\ {e}
                                IN e + Sum(Rest)
Msg == "Str == not a definition"
Init == x = 0 /\\ y = Helper(0)
Next == x' = Sum({x}) /\\ UNCHANGED y
Spec == Init /\\ [][Next]_<<x, y>> /\\ WF_<<x, y>>(Next)
====
Trailing == 1
"""
    units = tla_syntax.split_module(text)
    assert units.module == "M"
    assert [d.name for d in units.definitions] == [
        "Helper",
        "f",
        "\\prec",
        "Sum",
        "Msg",
        "Init",
        "Next",
        "Spec",
    ]
    needed = tla_syntax.needed_units(units, units.definition("Next"))
    # Next needs Sum, and Sum its RECURSIVE declaration; declarations always come along; Init does not
    assert [u.name or u.kind for u in needed] == [
        "extends",
        "constants",
        "variables",
        "recursive",
        "Sum",
        "Next",
    ]
    assert [u.name for u in tla_syntax.needed_units(units, units.definition("Spec")) if u.name] == [
        "Helper",
        "Sum",
        "Init",
        "Next",
        "Spec",
    ]


@pytest.mark.slow
def test_every_definition_of_each_starter_reference_passes_alone() -> None:
    for name in ("spinlock", "bounded_buffer", "leader_election", "two_phase_commit"):
        model = load_task_folder(STARTER_DIR / "tla" / name).references.model
        score = tla_syntax.score(model, check_definitions="always")
        assert score.definitions_checked and score.definitions_total >= 9
        assert score.definitions_passed == score.definitions_total, [
            d for d in score.definitions if not d.passed
        ]
        assert score.value == 1.0


@pytest.mark.parametrize(
    ("good", "broken", "kind"),
    [
        ("    /\\ locked\n    /\\ UNCHANGED vars", "    /\\ lockd\n    /\\ UNCHANGED vars", "semantic"),
        ("    /\\ pc[p] = \"spin\"\n    /\\ locked\n",
         "    /\\ (pc[p] = \"spin\"\n    /\\ locked\n", "parse"),
    ],
)
def test_one_broken_action_scores_half_of_the_share_of_the_actions(good: str, broken: str, kind: str) -> None:
    assert good in _spin_text()
    text = _spin_text().replace(good, broken)
    card = cascade_for(TaskKind.TLA).score(_artifact(text), _spinlock(), ScoringContext(options=FAST))
    syntax = card.stage("syntax")
    # n_t counts the four actions (Request, Acquire, Spin, Release), not the 13 top-level definitions
    assert syntax.metrics["actions_total"] == 4 and syntax.detail["partial_over"] == "actions"
    assert syntax.detail["actions"] == ["Request", "Acquire", "Spin", "Release"]
    assert syntax.metrics["s_full"] == 0.0 and syntax.metrics["actions_passed"] == 3
    assert syntax.value == pytest.approx(0.5 * 0 + 0.5 * 3 / 4)
    assert not syntax.passed and syntax.outcome == "failed"
    assert syntax.detail["failing_actions"] == ["Spin"]
    # a definition that uses the broken action cannot pass alone either; it is listed, not counted
    assert [d["name"] for d in syntax.detail["failing_definitions"]] == ["Spin", "Next", "Spec"]
    message = syntax.detail["failing_definitions"][0]["message"]
    assert f"error[{kind}]" in message
    if kind == "semantic":  # the error points at the line the author wrote, not into the generated module
        assert message.startswith("Spinlock.tla:34:")
    assert [s.outcome for s in card.stages[1:]] == ["skipped"] * 4
    assert all(s.value == 0.0 and "syntax" in s.skipped_because for s in card.stages[1:4])  # gated
    assert card.stages[4].stage == "transitions" and card.flat()["transitions"] is None  # no windows: n/a
    assert syntax.provenance["tool_version"].startswith("SANY")


def test_a_broken_helper_costs_only_the_whole_module_half() -> None:
    text = _spin_text().replace("TypeOK == locked \\in BOOLEAN", "TypeOK == lockd \\in BOOLEAN")
    score = tla_syntax.score(_artifact(text))
    assert score.s_full == 0.0 and score.share == 1.0 and score.value == 0.5
    assert score.definitions_passed == score.definitions_total - 1


def test_without_any_action_formula_the_share_falls_back_to_all_definitions() -> None:
    text = "---- MODULE M ----\nEXTENDS Naturals\nA == 1\nB == C + 1\n===="
    score = tla_syntax.score(_artifact(text, cfg=None, name="M"))
    assert score.partial_over == "definitions" and (score.actions_passed, score.actions_total) == (1, 2)


def test_a_sany_timeout_is_inconclusive_and_blocks_the_later_stages() -> None:
    card = cascade_for(TaskKind.TLA).score(
        _artifact(_spin_text()), _spinlock(), ScoringContext(options={"syntax.timeout_s": 0.01})
    )
    syntax = card.stage("syntax")
    assert syntax.outcome == "inconclusive" and not syntax.passed and syntax.value == 0.0
    assert all(s.outcome == "skipped" for s in card.stages[1:])


# ----------------------------------------------------------------------------------------- runtime

ERRING = """---- MODULE Erring ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Inc == x < 5 /\\ x' = x + 1
Bad == x = 3 /\\ x' = {bad}
Never == x > 100 /\\ x' = 0
Next == Inc \\/ Bad \\/ Never
Spec == Init /\\ [][Next]_x
====
"""


@pytest.mark.parametrize("bad", ["1 \\div (x - 3)", 'x + "a"'])
def test_a_runtime_error_fails_the_runtime_stage_and_blocks_nothing(bad: str) -> None:
    # 'x + "a"' is reported by TLC 2.15 as a failed Java override without any verdict: still an error here
    artifact = _artifact(ERRING.replace("{bad}", bad), cfg=None, name="Erring")
    task = Task(id="t/erring", benchmark="test", kind=TaskKind.TLA)
    card = cascade_for(TaskKind.TLA).score(artifact, task, ScoringContext(options={"runtime.runs": 2}))
    runtime = card.stage("runtime")
    assert card.stage("syntax").value == 1.0
    assert runtime.outcome == "failed" and not runtime.passed
    assert runtime.detail["actions"] == ["Inc", "Bad", "Never"] and runtime.value < 1.0
    assert runtime.detail["error_actions"] and runtime.metrics["failed_runs"] == 2.0
    assert runtime.detail["cfg_source"] == "generated" and "SPECIFICATION Spec" in runtime.detail["cfg"]
    # only syntax gates: the later stages are skipped for what the task lacks, not because runtime failed
    assert card.stage("conformance").skipped_because == tla.NO_TRACES
    assert card.stage("invariants").skipped_because == tla.NO_TEMPLATES


OOPS = """
Oops(p) ==
    /\\ pc[p] = "cs"
    /\\ locked' = 1 \\div (N - N)
    /\\ UNCHANGED pc
"""


def test_conformance_and_invariants_are_scored_even_when_runtime_fails(tmp_path: Path) -> None:
    # the paper reports them side by side for executable models (Etcd Raft: runtime 25%, consistency 7.69%)
    text = _spin_text().replace("Next == \\E p \\in Procs : Request(p)",
                                OOPS + "\nNext == \\E p \\in Procs : Oops(p) \\/ Request(p)")
    task = _task_with_traces(tmp_path)
    # one template is enough to be scored: with the division by zero reachable, a group of templates would fail as
    # a whole and be checked again one by one (tests/test_tla_invariants_grouped.py)
    task.references.invariants = task.references.invariants[:1]
    card = cascade_for(TaskKind.TLA).score(_artifact(text), task, ScoringContext(options=FAST))
    assert card.stage("syntax").passed
    runtime = card.stage("runtime")
    assert not runtime.passed and runtime.detail["error_actions"] and 0 < runtime.value < 1
    conformance, invariants = card.stage("conformance"), card.stage("invariants")
    assert conformance.outcome != "skipped" and conformance.metrics["code_actions"] == 4.0
    assert invariants.outcome != "skipped" and invariants.metrics["templates"] >= 1


@pytest.mark.slow
def test_runtime_defaults_are_sysmobench_and_seeds_are_reproducible() -> None:
    assert tla_runtime.seeds(1, 20) == tla_runtime.seeds(1, 20)
    assert len(set(tla_runtime.seeds(1, 20))) == 20 and tla_runtime.seeds(2, 20) != tla_runtime.seeds(1, 20)
    task = _spinlock()
    result = tla.runtime_stage(task.references.model, task, ScoringContext(options={"mode": "harness"}))
    assert result.detail["settings"] == {"runs": 20, "num": 50, "depth": 50, "seed": 1, "timeout_s": 30.0,
                                         "batched": 0, "cut_short_coverage": 1}
    assert [r["seed"] for r in result.detail["runs"]] == tla_runtime.seeds(1, 20)
    # the sysmo mode: the same runs (runs x num x depth and the seeds bound them), a generous time limit only
    # for a pathologically slow run, whose partial coverage does not count (docs/tla-verdicts.md). Its first two
    # runs stand for the twenty (the same options reach both modes): each covers what the harness's run of the
    # same seed covered
    sysmo = tla.runtime_stage(task.references.model, task, ScoringContext(options={"runtime.runs": 2}))
    assert sysmo.detail["settings"] == {**result.detail["settings"], "runs": 2,
                                        "timeout_s": tla_runtime.SYSMO_TIMEOUT_S, "cut_short_coverage": 0}
    assert [(r["seed"], r["covered"], r["outcome"]) for r in sysmo.detail["runs"]] == \
        [(r["seed"], r["covered"], r["outcome"]) for r in result.detail["runs"][:2]]
    assert (sysmo.value, sysmo.detail["covered"]) == (result.value, result.detail["covered"])
    assert result.value == 1.0 and result.passed and result.metrics["actions"] == 4.0
    assert result.provenance["tool_version"].startswith("TLC 2.15")


def test_without_a_cfg_the_constants_come_from_the_reference_cfg() -> None:
    task = _spinlock()
    config = tla_runtime.model_config(_artifact(_spin_text(), cfg=None), task)
    assert config.source == "generated" and config.config.specification == "Spec"
    assert config.config.constants == ["N = 3"]
    unknown = tla_runtime.model_config(
        _artifact(_spin_text(), cfg=None), Task(id="x", benchmark="t", kind="tla")
    )
    assert unknown.config.constants == ["N = N"] and "model value" in unknown.notes[0]


# ------------------------------------------------------------------------------------- conformance


def _task_with_traces(tmp_path: Path, edit=None) -> Task:
    task = _spinlock()
    files = []
    for path in task.references.traces.files[:2]:
        lines = path.read_text().splitlines()
        if edit is not None:
            lines = edit(lines)
        copy = tmp_path / path.name
        copy.write_text("\n".join(lines) + "\n")
        files.append(copy)
    return task.model_copy(
        update={
            "references": task.references.model_copy(
                update={"traces": TraceSet(format="ndjson", files=files)}
            )
        }
    )


def test_a_mismatch_on_the_last_trace_line_is_caught_and_reported(tmp_path: Path) -> None:
    def edit(lines: list[str]) -> list[str]:
        last = json.loads(lines[-1])
        last["state"]["locked"] = not last["state"]["locked"]
        return lines[:-1] + [json.dumps(last)]

    task = _task_with_traces(tmp_path, edit)
    result = tla.conformance_stage(task.references.model, task, ScoringContext())
    assert result.outcome == "failed" and not result.passed
    # per code action (the paper's M_c): the last line's event is the one the model cannot reproduce
    last_event = json.loads(task.references.traces.files[0].read_text().splitlines()[-1])["event"]
    assert result.detail["inconsistent_actions"] == [last_event]
    assert result.metrics["code_actions"] == 4.0 and result.value == 3 / 4
    assert result.metrics["trace_share"] == 0.0 and result.metrics["accepted"] == 0.0
    first = result.detail["first_failure"]
    lines = len(task.references.traces.files[0].read_text().splitlines())
    assert first["line"] == lines and first["trace"] == task.references.traces.files[0].name
    assert result.detail["mapping"]["source"] == "names"


def test_unmatched_event_names_are_mapped_by_the_helper_and_the_mapping_is_recorded(tmp_path: Path) -> None:
    task = _task_with_traces(tmp_path)
    text = _spin_text().replace("Acquire", "TakeLock")  # the model names the step differently from the log
    mapping = {
        "actions": [
            {"event": "Request", "action": "Request", "arguments": ["actor"]},
            {"event": "Acquire", "action": "TakeLock", "arguments": ["actor"]},
            {"event": "Spin", "action": "Spin", "arguments": ["actor"]},
            {"event": "Release", "action": "Release", "arguments": ["actor"]},
        ],
        "variables": [{"field": "locked", "variable": "locked"}, {"field": "pc", "variable": "pc"}],
        "constants": {"N": "N"},
        "notes": [],
    }
    helper, calls = _helper(f"```json\n{json.dumps(mapping)}\n```")
    result = tla.conformance_stage(_artifact(text), task, ScoringContext(helper=helper))
    assert result.value == 1.0 and result.passed
    assert result.detail["mapping"]["source"] == "llm"
    assert {"event": "Acquire", "action": "TakeLock", "arguments": ["actor"]} in result.detail["mapping"][
        "actions"
    ]
    assert result.provenance["helper_model"] == "mockllm/helper"
    assert len(calls) == 1 and "Acquire" in calls[0].messages[0]["content"]


def test_a_task_without_traces_skips_conformance_but_not_the_invariants() -> None:
    task = _spinlock()
    task = task.model_copy(
        update={
            "references": TaskReferences(
                model=task.references.model, invariants=task.references.invariants[:1]
            ),
            "inputs": task.inputs.model_copy(update={"traces": None}),
        }
    )
    card = cascade_for(TaskKind.TLA).score(task.references.model, task, ScoringContext(options=FAST))
    conformance = card.stage("conformance")
    assert conformance.outcome == "skipped" and conformance.skipped_because == tla.NO_TRACES
    assert card.stage("invariants").value == 1.0 and card.stage("invariants").outcome == "ok"


# -------------------------------------------------------------------------------------- invariants

RENAMED = "state"  # the model calls ``pc`` ``state``: the templates' examples no longer fit


def _renamed_task() -> tuple[Artifact, Task]:
    task = _spinlock()
    mutual = next(t for t in task.references.invariants if t.name == "MutualExclusion")
    task = task.model_copy(
        update={"references": TaskReferences(model=task.references.model, invariants=[mutual])}
    )
    return _artifact(_spin_text().replace("pc", RENAMED)), task


def test_a_template_that_does_not_fit_is_concretised_by_the_helper_and_checked() -> None:
    artifact, task = _renamed_task()
    answer = (
        "```tla\nMutualExclusion ==\n  \\A p, q \\in Procs : "
        f'({RENAMED}[p] = "cs" /\\ {RENAMED}[q] = "cs") => p = q\n```'
    )
    helper, calls = _helper(answer)
    result = tla.invariants_stage(artifact, task, ScoringContext(helper=helper, options=FAST))
    verdict = result.detail["invariants"][0]
    assert result.value == 1.0 and result.passed and verdict["source"] == "helper"
    assert f"{RENAMED}[p]" in verdict["formula"] and verdict["checked_as"] == "INVARIANT"
    assert result.provenance["helper_model"] == "mockllm/helper"
    prompt = calls[0].messages[0]["content"]
    assert "MutualExclusion" in prompt and "INVARIANT Init" not in prompt


def test_the_initial_predicate_is_never_accepted_as_an_invariant() -> None:
    # the reference harness offers ``Init`` as a candidate invariant; an answer that takes it must not pass
    artifact, task = _renamed_task()
    helper, calls = _helper("```tla\nMutualExclusion == Init\n```", "MutualExclusion ==\n    Init\n")
    result = tla.invariants_stage(artifact, task, ScoringContext(helper=helper, options=FAST))
    verdict = result.detail["invariants"][0]
    assert result.value == 0.0 and not result.passed and result.outcome == "error"
    assert verdict["source"] == "none" and verdict["outcome"] == "error"
    assert any("not the property" in note for note in verdict["notes"]) and len(calls) == 2


def test_without_a_helper_an_unfitting_template_is_an_error_not_a_pass() -> None:
    artifact, task = _renamed_task()
    result = tla.invariants_stage(artifact, task, ScoringContext(options=FAST))
    assert (
        result.value == 0.0 and result.outcome == "error" and result.detail["errors"] == ["MutualExclusion"]
    )
    assert "does not fit" in " ".join(result.detail["invariants"][0]["notes"])


def test_a_liveness_template_is_checked_as_a_property_under_the_spec_fairness() -> None:
    task = _spinlock()
    live = InvariantTemplate(
        name="Progress",
        type="liveness",
        natural_language="someone eventually holds the lock",
        tla_example='Progress == (\\E p \\in Procs : pc[p] = "spin") ~> (\\E p \\in Procs : pc[p] = "cs")',
    )
    task = task.model_copy(
        update={"references": TaskReferences(model=task.references.model, invariants=[live])}
    )
    # the cfg names INIT/NEXT (no fairness); the property is still checked with Spec's WF
    artifact = _artifact(_spin_text(), cfg="CONSTANT N = 3\nINIT Init\nNEXT Next\n")
    result = tla.invariants_stage(artifact, task, ScoringContext(options=FAST))
    verdict = result.detail["invariants"][0]
    assert result.value == 1.0 and verdict["checked_as"] == "PROPERTY"
    assert any("SPECIFICATION Spec" in note for note in verdict["notes"])
