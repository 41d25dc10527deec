"""Transition validation: recorded pre/post windows checked with TLC as single steps of a spec's action, all windows
of an action in one run; the harness's tv-eval examples, mutants that must lose windows, malformed windows files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskKind, TaskReferences
from sysmo.errors import TaskError
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.metrics import tla_transitions
from sysmo.tools.tla import transition_validation as tv

SKILLS = Path("sysmobench") / "spec_additions" / "tla_eval" / "skills"

COUNTER = """---- MODULE Counter ----
EXTENDS Naturals
CONSTANT Max
VARIABLES x, mode
Init == x = 0 /\\ mode = "run"
Inc(k) == mode = "run" /\\ x + k <= Max /\\ x' = x + k /\\ UNCHANGED mode
Stop == mode' = "stopped" /\\ UNCHANGED x
Next == (\\E k \\in 1..2 : Inc(k)) \\/ Stop
====
"""


def _counter() -> Artifact:
    return Artifact(language=Language.TLA, files={"Counter.tla": COUNTER, "Counter.cfg": "CONSTANT Max = 5\n"})


def _windows(rows: list[dict], action: str = "Inc") -> tv.WindowSet:
    return tv.read_windows("\n".join(json.dumps(r) for r in rows), action=action, name=f"windows_{action}.ndjson")


# ------------------------------------------------------------------------------------------ windows files


@pytest.mark.parametrize("text, says", [
    ('{"id": 1, "pre": {"x": 0}, "post": {"x": 1}}\nnot json', "line 2 is not JSON"),
    ('{"id": 1, "pre": {"x": 0}}', "line 1 is not a window (post: Field required)"),
    ('{"id": "one", "pre": {"x": 0}, "post": {"x": 1}}', "line 1 is not a window (id:"),
    ('[1, 2]', "line 1 is not a window object"),
    ('{"id": 1, "pre": {"x": 0}, "post": {"x": 1}}\n{"id": 1, "pre": {"x": 1}, "post": {"x": 2}}',
     "line 2: window id 1 appears twice"),
    ("\n\n", "holds no windows"),
])
def test_a_malformed_windows_file_is_a_task_error_naming_the_file_and_line(tmp_path: Path, text: str,
                                                                            says: str) -> None:
    path = tmp_path / "windows_Inc.ndjson"
    path.write_text(text)
    with pytest.raises(TaskError) as error:
        tv.read_windows(path)
    assert "windows_Inc.ndjson" in str(error.value) and says in str(error.value)


def test_the_action_comes_from_the_file_name_and_node_is_read_as_the_actor(tmp_path: Path) -> None:
    path = tmp_path / "windows_HandleVote.ndjson"
    path.write_text('{"id": 7, "node": 2, "trace_id": "t", "pre": {"x": 0}, "post": {"x": 1}, "input": {"a": 1}}\n')
    windows = tv.read_windows(path)
    assert (windows.action, windows.windows[0].actor, windows.windows[0].input) == ("HandleVote", 2, {"a": 1})
    assert tv.windows_in(tmp_path)["HandleVote"].windows[0].id == 7
    with pytest.raises(TaskError, match="no action named"):
        tv.read_windows('{"id": 1, "pre": {}, "post": {}}')


def test_recorded_values_are_translated_into_the_specs_values() -> None:
    window = tv.Window(id=3, actor=2, pre={"mode": "RUNNING", "pc": ["None", 1]}, post={"mode": "HALTED"},
                       input={"from": 1, "entries": [{"term": 1}]})
    literal = tv.window_literal(window, {"RUNNING": '"run"', "HALTED": '"stopped"', "None": "Nil"})
    assert literal == ('[id |-> 3, pre |-> [mode |-> "run", pc |-> <<Nil, 1>>], post |-> [mode |-> "stopped"], '
                       "input |-> [from |-> 1, entries |-> <<[term |-> 1]>>], actor |-> 2]")


def test_a_mapping_that_leaves_a_variable_unbound_or_names_no_action_is_refused_before_tlc() -> None:
    windows = _windows([{"id": 1, "pre": {"x": 0}, "post": {"x": 1}}])
    partial = tv.TransitionMapping(action="Inc", parameters={"k": "1..2"},
                                   variables=[tv.VariableBinding(variable="x", field="x")])
    with pytest.raises(TaskError, match="mode have no binding"):
        tv.checking_module(_counter(), partial, windows.windows)
    with pytest.raises(TaskError, match="no action Dec"):
        tv.checking_module(_counter(), partial.model_copy(update={"action": "Dec"}), windows.windows)
    no_domain = partial.model_copy(update={"parameters": {}, "variables": partial.variables + [
        tv.VariableBinding(variable="mode", init='"run"')]})
    with pytest.raises(TaskError, match="say which set each parameter ranges over"):
        tv.checking_module(_counter(), no_domain, windows.windows)


HARNESS_MODULE = """---- MODULE TV_Inc ----
EXTENDS Naturals, TLC, Json, IOUtils
CONSTANTS Max
VARIABLES x, mode, step
S == INSTANCE Counter
AllWindows == ndJsonDeserialize("windows_Inc.ndjson")
w == AllWindows[atoi(IOEnv.WINDOW_INDEX)]
Twice(v) == 2 * v   \\* a helper the module defines
Init ==
    /\\ x = w.pre.x
    /\\ mode \\in {"run", "stopped"}
    /\\ step = 0
Next ==
    /\\ step = 0
    /\\ \\E k \\in 1..2 : S!Inc(k)
    /\\ step' = 1
PostReached ==
    /\\ step = 1
    /\\ x = w.post.x
    /\\ Twice(x) >= 0
NeverPost == ~PostReached
====
"""


def test_a_harness_tv_module_reads_as_a_mapping() -> None:
    mapping, instance, windows_file = tv.from_harness_module(HARNESS_MODULE, "CONSTANTS\n    Max = 5\n")
    assert (mapping.action, instance, windows_file, mapping.source) == ("Inc", "Counter", "windows_Inc.ndjson",
                                                                        "harness")
    assert mapping.call == "(\\E k \\in 1..2 : Inc(k))" and mapping.constants == ["Max = 5"]
    assert [(b.variable, b.field, b.init, b.relation) for b in mapping.variables] == [
        ("x", "x", None, "="), ("mode", None, '{"run", "stopped"}', "\\in")]
    assert [(c.name, c.projection, c.condition) for c in mapping.checks()] == [
        ("x", "x", None), ("post3", None, "Twice(x) >= 0")]
    assert "Twice(v) == 2 * v" in mapping.definitions and "AllWindows" not in mapping.definitions
    with pytest.raises(TaskError, match="not a harness TV module"):
        tv.from_harness_module("---- MODULE M ----\n====\n")


# ------------------------------------------------------------------------------------------ small spec, TLC


def test_every_window_of_an_action_is_decided_in_one_tlc_run_with_an_explanation_per_failure() -> None:
    windows = _windows([
        {"id": 1, "pre": {"x": 0, "mode": "run"}, "post": {"x": 2, "mode": "run"}},  # Inc(2)
        {"id": 2, "pre": {"x": 3, "mode": "run"}, "post": {"x": 6, "mode": "run"}},  # no k gives 6
        {"id": 3, "pre": {"x": 1, "mode": "stopped"}, "post": {"x": 2, "mode": "stopped"}},  # not enabled
        {"id": 4, "pre": {"x": 3, "mode": "run"}, "post": {"x": 4, "mode": "stopped"}},  # mode may not change
    ])
    mapping = tv.mapping_by_names(_counter(), windows)
    assert mapping.parameters == {"k": "1..2"} and mapping.source == "names"
    result = tv.validate_action(_counter(), mapping, windows)
    assert (result.windows, result.passed, result.failed, result.inconclusive, result.runs) == (4, 1, 3, 0, 1)
    assert result.pass_rate == pytest.approx(0.25)
    verdicts = {v.id: v for v in result.verdicts}
    assert verdicts[1].verdict == "passed" and verdicts[1].steps == 2
    assert "closest of 2 steps differs in x" in verdicts[2].explanation
    assert "x: the step gives 4, the recording has 6" in verdicts[2].explanation \
        or "x: the step gives 5, the recording has 6" in verdicts[2].explanation
    assert "Inc is not enabled in the recorded pre state" in verdicts[3].explanation
    assert [m.check for m in verdicts[4].closest] == ["mode"]
    assert result.first_failure["id"] == 2 and result.first_failure["post"] == {"x": 6, "mode": "run"}


def test_a_state_bound_makes_undecided_windows_inconclusive_never_passed() -> None:
    windows = _windows([{"id": i, "pre": {"x": 0, "mode": "run"}, "post": {"x": 9, "mode": "run"}}
                        for i in range(1, 4)])
    result = tv.validate_action(_counter(), tv.mapping_by_names(_counter(), windows), windows, max_states=2)
    assert result.passed == 0 and result.inconclusive == 3
    assert all("inconclusive" in v.explanation for v in result.verdicts)


def test_an_evaluation_error_is_pinned_to_its_window_and_the_others_are_still_decided() -> None:
    windows = _windows([
        {"id": 1, "pre": {"x": 0, "mode": "run"}, "post": {"x": 1, "mode": "run"}},
        {"id": 2, "pre": {"x": "zero", "mode": "run"}, "post": {"x": 1, "mode": "run"}},  # x + k fails
        {"id": 3, "pre": {"x": 4, "mode": "run"}, "post": {"x": 4, "mode": "run"}},
    ])
    result = tv.validate_action(_counter(), tv.mapping_by_names(_counter(), windows), windows)
    assert [v.verdict for v in result.verdicts] == ["passed", "error", "failed"]
    assert result.runs == 2 and (result.passed, result.failed, result.errors) == (1, 2, 1)
    assert result.verdicts[1].explanation.startswith("the spec fails to evaluate on this window")
    assert result.first_failure["id"] == 2


# ------------------------------------------------------------------------------------------ harness examples

# measured with `sysmo reproduce transitions` (docs/transition-validation.md); HandleVoteRequest as published
# in the harness's HandleVoteRequest_report.md (21/21 and 14/21)
MEASURED = {
    ("etcd", "ai_spec_1", "ClientProposal"): (29, 29),
    ("etcd", "ai_spec_1", "ElectionTimeout"): (0, 11),
    ("etcd", "ai_spec_1", "HandleAppendEntries"): (154, 154),
    ("etcd", "ai_spec_1", "HandleVoteRequest"): (21, 21),
    ("etcd", "ai_spec_2", "ClientRequest"): (29, 29),
    ("etcd", "ai_spec_2", "HandleAppendEntriesRequest"): (154, 154),
    ("etcd", "ai_spec_2", "HandleVoteRequest"): (14, 21),
    ("spin", "ai_spec_1", "AcquireLock"): (123, 210),
}


@pytest.fixture(scope="module")
def skills(shared_benchmarks: Path) -> Path:
    folder = shared_benchmarks / SKILLS
    if not folder.is_dir():
        pytest.skip(f"no tv-eval examples at {folder}")
    return folder


def _example_action(skills: Path, system: str, spec: str, action: str):
    from sysmo.reproduce.transitions import harness_examples

    example = next(e for e in harness_examples(skills.parents[2].parent) if (e.system, e.name) == (system, spec))
    return example, next(a for a in example.actions if a.action == action)


def test_the_examples_found_are_the_eight_actions_with_windows(skills: Path) -> None:
    from sysmo.reproduce.transitions import harness_examples, published_rates

    data = skills.parents[2].parent
    found = {(e.system, e.name, a.action) for e in harness_examples(data) for a in e.actions}
    assert found == set(MEASURED)
    assert published_rates(data) == {("etcd", "ai_spec_1", "HandleVoteRequest"): (21, (21, 21)),
                                     ("etcd", "ai_spec_2", "HandleVoteRequest"): (21, (14, 21))}


def test_a_failing_vote_window_is_explained_by_the_variable_and_node_that_differ(skills: Path) -> None:
    example, action = _example_action(skills, "etcd", "ai_spec_2", "HandleVoteRequest")
    mapping, instance, windows_file = tv.from_harness_module(action.module.read_text(), action.cfg.read_text())
    assert (mapping.action, instance, windows_file) == ("HandleVoteRequest", "etcdraft",
                                                        "windows_HandleVoteRequest.ndjson")
    spec = Artifact(language=Language.TLA, files={"etcdraft.tla": example.spec.read_text()})
    result = tv.validate_action(spec, mapping, tv.read_windows(action.windows))
    assert (result.passed, result.windows) == (14, 21)
    failing = [v for v in result.verdicts if v.verdict == "failed"]
    assert all([m.check for m in v.closest] == ["votedFor"] for v in failing)
    assert result.first_failure["id"] == 3
    assert "votedFor[1]: the step gives 1, the recording has 2" in result.first_failure["explanation"]


def test_the_reference_spin_spec_passes_every_window_once_values_and_both_acquire_actions_are_mapped(
        skills: Path) -> None:
    folder = skills / "wv-eval/examples/spin"
    spec = Artifact(language=Language.TLA, files={"spin.tla": (folder / "reference_spec/spin.tla").read_text()})
    windows = tv.read_windows(folder / "ai_spec_1/windows_AcquireLock.ndjson").windows[:12]
    mapping = tv.TransitionMapping(
        action="AcquireLock", call="\\E t \\in Threads : AcquireLock(t) \\/ AcquireLockDirect(t)",
        variables=[tv.VariableBinding(variable="lockState", field="lockState"),
                   tv.VariableBinding(variable="pc", field="pc")],
        values={"trying": '"acquiring"'}, constants=["Threads = {1, 2, 3}"])
    assert tv.validate_action(spec, mapping, windows).passed == 12  # 6 of them uncontended (AcquireLockDirect)


# ------------------------------------------------------------------------------------------ negative controls


def _spin(skills: Path, first: int = 12) -> tuple[Artifact, tv.TransitionMapping, tv.WindowSet]:
    """Spin's ai_spec_1, its AcquireLock mapping and the first windows (both contended and uncontended ones)."""
    example, action = _example_action(skills, "spin", "ai_spec_1", "AcquireLock")
    mapping, _, _ = tv.from_harness_module(action.module.read_text(), action.cfg.read_text())
    spec = Artifact(language=Language.TLA, files={"spin.tla": example.spec.read_text()})
    windows = tv.read_windows(action.windows)
    return spec, mapping, windows.model_copy(update={"windows": windows.windows[:first]})


ACQUIRE = """AcquireLock(t) ==
  /\\ pc[t] = "trying"
  /\\ lockState = "unlocked"
  /\\ lockState' = "locked"
  /\\ pc' = [pc EXCEPT ![t] = "locked"]
  /\\ UNCHANGED <<requestType>>"""


@pytest.mark.slow
def test_mutants_lose_windows_and_a_weakened_enabling_guard_cannot(skills: Path) -> None:
    spec, mapping, windows = _spin(skills)
    uncontended = sum(w.pre["pc"][w.actor - 1] == "idle" for w in windows.windows)
    assert 0 < uncontended < len(windows.windows)
    text = spec.files["spin.tla"]
    assert ACQUIRE in text

    def passed(body: str) -> int:
        mutant = Artifact(language=Language.TLA, files={"spin.tla": text.replace(ACQUIRE, body)})
        return tv.validate_action(mutant, mapping, windows).passed

    assert passed(ACQUIRE) == len(windows.windows) - uncontended
    # the action made a no-op: it is still enabled, but no step takes the lock
    assert passed('AcquireLock(t) ==\n  /\\ pc[t] = "trying"\n  /\\ UNCHANGED <<lockState, pc, requestType>>') == 0
    # the guard negated (the lock must be held to take it): never enabled where the recording took the lock
    assert passed(ACQUIRE.replace('lockState = "unlocked"', 'lockState = "locked"')) == 0
    # the wrong thread's pc changes: the recorded post state is missed in pc
    assert passed(ACQUIRE.replace("pc' = [pc EXCEPT ![t] = \"locked\"]",
                                  "pc' = [pc EXCEPT ![t] = \"idle\"]")) == 0
    # a weakened enabling guard only adds steps, so it never loses a window; here it gains the 87 uncontended
    # acquisitions the recording shows (idle -> locked, which the spec makes go through "trying"; 87 of all 210)
    assert passed(ACQUIRE.replace('  /\\ pc[t] = "trying"\n', "")) == len(windows.windows)


def test_a_negated_branch_condition_loses_every_append_window(skills: Path) -> None:
    example, action = _example_action(skills, "etcd", "ai_spec_1", "HandleAppendEntries")
    mapping, _, _ = tv.from_harness_module(action.module.read_text(), action.cfg.read_text())
    text = example.spec.read_text()
    guard = "IF LogMatches(n, m.prevIndex, m.prevTerm)"
    assert guard in text
    mutant = Artifact(language=Language.TLA, files={"etcdraft.tla": text.replace(guard, guard.replace("IF ", "IF ~"))})
    windows = tv.read_windows(action.windows)
    result = tv.validate_action(mutant, mapping, windows.windows[:20])
    assert (result.passed, result.windows) == (0, 20)  # the spec itself passes all 154 (MEASURED)
    assert "which fails \\A n \\in Nodes : Len(log[n]) = w.post.logLen[n]" in result.first_failure["explanation"]


# ------------------------------------------------------------------------------------------ the stage


def _task(windows: Path | None) -> Task:
    return Task(id="sysmobench/spin", benchmark="sysmobench", kind=TaskKind.TLA,
                references=TaskReferences(windows=windows))


def test_the_stage_is_skipped_with_a_reason_when_the_task_has_no_windows() -> None:
    result = tla_transitions.transitions_stage(_counter(), _task(None), ScoringContext())
    assert (result.outcome, result.skipped_because) == ("skipped", tla_transitions.NO_WINDOWS)


def test_the_stage_scores_by_names_and_the_headline_follows_the_scoring_mode(skills: Path, tmp_path: Path) -> None:
    spec, _, _ = _spin(skills)
    spec = spec.model_copy(update={"files": {**spec.files, "spin.cfg": "CONSTANTS Threads = {1, 2, 3}\n"}})
    folder = tmp_path / "spin"
    folder.mkdir()
    recorded = (skills / "wv-eval/examples/spin/ai_spec_1/windows_AcquireLock.ndjson").read_text().splitlines()
    (folder / "windows_AcquireLock.ndjson").write_text("\n".join(recorded[:12]) + "\n")  # 6 contended, 6 not
    (folder / "windows_ReleaseLock.ndjson").write_text(
        '{"id": 1, "actor": 1, "pre": {"lockState": "locked", "pc": ["locked", "idle", "idle"]}, '
        '"post": {"lockState": "unlocked", "pc": ["idle", "idle", "idle"]}}\n')
    (folder / "windows_Sleep.ndjson").write_text(
        '{"id": 1, "actor": 1, "pre": {"lockState": "locked", "pc": ["locked", "idle", "idle"]}, '
        '"post": {"lockState": "locked", "pc": ["locked", "idle", "idle"]}}\n')
    sysmo = tla_transitions.transitions_stage(spec, _task(folder), ScoringContext())
    rates = {a["action"]: (a["passed"], a["windows"]) for a in sysmo.detail["actions"]}
    assert rates == {"AcquireLock": (6, 12), "ReleaseLock": (1, 1), "Sleep": (0, 1)}
    assert "no action named like Sleep" in sysmo.detail["actions"][2]["error"]
    assert sysmo.outcome == "failed" and not sysmo.passed
    assert sysmo.value == pytest.approx((6 / 12 + 1 + 0) / 3) and sysmo.detail["headline"] == "mean_pass_rate"
    assert (sysmo.metrics["transitions"], sysmo.metrics["all_pass_share"]) == pytest.approx((7 / 14, 1 / 3))
    (folder / "windows_AcquireLock.ndjson").unlink()
    harness = tla_transitions.transitions_stage(spec, _task(folder), ScoringContext(options={"mode": "harness"}))
    assert harness.value == pytest.approx(1 / 2) and harness.detail["headline"] == "all_pass_share"


def test_the_sysmobench_loader_attaches_a_task_windows_folder(shared_benchmarks: Path, tmp_path: Path) -> None:
    from sysmo.benchmarks import sysmobench

    (tmp_path / "spin").mkdir()
    tasks = {t.id: t for t in sysmobench.load(shared_benchmarks / "sysmobench", windows_dir=tmp_path)}
    assert tasks["sysmobench/spin"].references.windows == tmp_path / "spin"
    assert tasks["sysmobench/etcd"].references.windows is None


# ------------------------------------------------------------------------------------------ the command


@pytest.mark.slow
def test_sysmo_reproduce_transitions_scores_every_example_action_as_the_docs_say(
        skills: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sysmo_cli import run_sysmo

    from sysmo.reproduce.registry import discover

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    assert "transitions" in discover()
    data = skills.parents[2].parent
    run = run_sysmo("reproduce", "transitions", "--data-dir", str(data), "--format", "json")
    assert run.code == 0, run.stderr
    rows = json.loads(run.stdout)
    assert {(r["system"], r["spec"], r["action"]): (r["passed"], r["windows"]) for r in rows} == MEASURED
    assert all(r["inconclusive"] == 0 and r["runs"] == 1 for r in rows)
    assert [(r["action"], r["published"], r["agrees"]) for r in rows if r["published"]] == [
        ("HandleVoteRequest", [21, 21], True), ("HandleVoteRequest", [14, 21], True)]
    spin = next(r for r in rows if r["system"] == "spin")
    assert spin["first_failure"]["id"] == 4 and "not enabled" in spin["first_failure"]["explanation"]
    etcd1 = [r for r in rows if (r["system"], r["spec"]) == ("etcd", "ai_spec_1")]
    assert sum(r["pass_rate"] for r in etcd1) / len(etcd1) == pytest.approx(0.75)
    run = run_sysmo("reproduce", "transitions", "--data-dir", str(data), "--format", "csv")
    assert run.code != 0 and "unknown --format 'csv'" in run.stderr


def test_sysmo_check_transitions_checks_a_spec_file_against_a_windows_folder(tmp_path: Path) -> None:
    from sysmo_cli import run_sysmo

    (tmp_path / "Counter.tla").write_text(COUNTER)
    (tmp_path / "Counter.cfg").write_text("CONSTANT Max = 5\n")
    folder = tmp_path / "windows"
    folder.mkdir()
    (folder / "windows_Inc.ndjson").write_text(
        '{"id": 1, "pre": {"x": 0, "mode": "run"}, "post": {"x": 2, "mode": "run"}}\n'
        '{"id": 2, "pre": {"x": 3, "mode": "run"}, "post": {"x": 6, "mode": "run"}}\n')
    run = run_sysmo("check-transitions", str(tmp_path / "Counter.tla"), "--windows", str(folder), "--json")
    assert run.code == 1, run.stderr  # a window failed
    report = json.loads(run.stdout)
    (action,) = report["actions"]
    assert (action["action"], action["passed"], action["windows"], action["mapping"]) == ("Inc", 1, 2, "names")
    assert action["first_failure"]["id"] == 2 and report["mean_pass_rate"] == 0.5
    (folder / "windows_Inc.ndjson").write_text('{"id": 1, "pre": {"x": 0}}\n')
    run = run_sysmo("check-transitions", str(tmp_path / "Counter.tla"), "--windows", str(folder))
    assert run.code != 0 and "windows_Inc.ndjson line 1 is not a window" in run.output
