"""``sysmo fork ATTEMPT --at STEP``: a stored attempt re-run from one of its graph steps with a change, stored as a
new attempt of its experiment linked to its parent. The parent is a real run (fake OpenAI server, PlantUML's real
check) of three failing rounds on a starter task."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import replies_for
from fake_openai import FakeOpenAI
from sysmo_cli import run_sysmo

TASK = "starter/uml_class/library_loans"
PARENT_MODEL = "openai/fake-parent"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _task():
    from sysmo.benchmarks.registry import load_tasks

    return next(t for t in load_tasks(None, families=["starter"]) if t.id == TASK)


def _experiment(runs: Path, server: FakeOpenAI, exp_id: str, *, checkpoints: str = "steps", rounds: int = 3):
    """An experiment of one attempt whose ``rounds`` replies all carry a broken diagram (it fails)."""
    from sysmo.agents.control_script import broken_artifact
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    task = _task()
    server.push(*replies_for("base_modeling", task, [broken_artifact(task)] * rounds))
    config = ExperimentConfig(id=exp_id, output_dir=runs, agents=["base_modeling"], samples=1,
                              max_rounds=rounds - 1, checkpoints=checkpoints,
                              models=[{"model": f"{PARENT_MODEL}-{exp_id}", "api_base": server.base_url}],
                              tasks=TaskSelection(benchmarks=["starter"], ids=[TASK]))
    run_experiment(config, progress=False)
    store = Store(runs / exp_id / "results.sqlite")
    try:
        (attempt_id,) = [r["id"] for r in store.query("SELECT id FROM attempts")]
        return store.attempt(attempt_id)
    finally:
        store.close()


@pytest.fixture(scope="module")
def parent(tmp_path_factory, server: FakeOpenAI):
    runs = tmp_path_factory.mktemp("fork-runs")
    attempt = _experiment(runs, server, "parent")
    assert attempt.status.value == "failed" and len(attempt.rounds) == 3
    return runs, attempt


def _store(runs: Path, exp_id: str = "parent"):
    from sysmo.store import Store

    return Store(runs / exp_id / "results.sqlite")


def test_a_fork_at_round_2_with_another_model_keeps_the_parents_first_rounds(parent, server: FakeOpenAI) -> None:
    from sysmo.graphs.checkpoint import history

    runs, stored = parent
    task = _task()
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    asked_before = len(server.requests)

    result = run_sysmo("fork", stored.id[:8], "--at", "round:2", "--model", "openai/fake-fork", "--api-base",
                       server.base_url, "--json", "-o", str(runs))

    assert result.code == 0, result.output
    fork_summary = json.loads(result.stdout)
    assert fork_summary["parent_attempt_id"] == stored.id and fork_summary["inherited_rounds"] == 2
    # the new model answered once, for round 2; rounds 0 and 1 were not asked again
    new_requests = server.requests[asked_before:]
    assert [r["model"] for r in new_requests] == ["fake-fork"]
    store = _store(runs)
    try:
        fork = store.attempt(fork_summary["attempt_id"])
        row = store.query("SELECT experiment_id, parent_attempt_id, forked_at FROM attempts WHERE id=?", (fork.id,))[0]
        card = store.scorecard(fork.id)
        llm_rows = store.query("SELECT round_idx, model FROM llm_calls WHERE attempt_id=? ORDER BY round_idx",
                               (fork.id,))
        assert store.forks_of(stored.id) == [fork.id]
        # the report's measurements leave the fork out (not a sample of the experiment's plan)
        from sysmo.evals.tables import attempts_frame

        assert list(attempts_frame(store, "parent")["id"]) == [stored.id]
    finally:
        store.close()
    assert (row["experiment_id"], row["parent_attempt_id"]) == ("parent", stored.id)
    assert fork.parent_attempt_id == stored.id and fork.model == "openai/fake-fork"
    # rounds before the fork point: the parent's, exactly; after it: the new model's reply, which passes
    assert [r.model_dump() for r in fork.rounds[:2]] == [r.model_dump() for r in stored.rounds[:2]]
    assert fork.status.value == "passed" and len(fork.rounds) == 3 and fork.rounds[2].passed
    assert [c.model for r in fork.rounds[:2] for c in r.llm_calls] == ["openai/fake-parent-parent"] * 2
    assert [c.model for c in fork.rounds[2].llm_calls] == ["openai/fake-fork"]
    assert [(r["round_idx"], r["model"]) for r in llm_rows] == [(0, "openai/fake-parent-parent"), (1, "openai/fake-parent-parent"),
                                                                 (2, "openai/fake-fork")]
    # the fork's own event stream holds only what ran after the fork point
    calls = [e for e in fork.events if e.type == "llm_call" and e.stage == "attempt"]
    assert [(c.model, c.round) for c in calls] == [("openai/fake-fork", 2)]
    assert card is not None and card.stages  # scored with the task's cascade like any attempt
    # graph steps: the parent's up to the fork point (same checkpoints), then the fork's own
    parent_steps, fork_steps = history(runs / "parent" / "checkpoints.sqlite", stored.id), \
        history(runs / "parent" / "checkpoints.sqlite", fork.id)
    at = next(i for i, s in enumerate(parent_steps) if s.checkpoint_id == row["forked_at"])
    assert parent_steps[at].next == ["generate"] and parent_steps[at].round_index == 2
    shared = [(s.step, s.node, s.checkpoint_id) for s in parent_steps[:at + 1]]
    assert [(s.step, s.node, s.checkpoint_id) for s in fork_steps[:at + 1]] == shared
    # the fork's update of the state (a model is not in it: only the round's clock, restarted), then the rest
    assert [s.node for s in fork_steps[at + 1:]] == ["update_state", "generate", "check"]
    assert fork_steps[-1].status == "passed"
    assert (runs / "parent" / "artifacts" / fork.id / "round2").is_dir()

    # sysmo trace names the parent and the step; the parent's names its fork
    shown = run_sysmo("trace", fork.id, "-o", str(runs), env={"COLUMNS": "200"})
    assert shown.code == 0 and f"forked from           {stored.id} at step {fork_summary['forked_at_step']}" in shown.stdout
    # the change as data (the panel's text wraps at the width of the console the process made first)
    as_json = json.loads(run_sysmo("trace", fork.id, "--json", "-o", str(runs)).stdout)
    assert as_json["fork_changes"] == {"model": "openai/fake-fork"} and as_json["parent_attempt_id"] == stored.id
    assert fork.id in run_sysmo("trace", stored.id, "-o", str(runs), env={"COLUMNS": "200"}).stdout
    listed = json.loads(run_sysmo("trace", "parent", "--all", "--json", "-o", str(runs)).stdout)
    assert {r["id"]: r["parent_attempt_id"] for r in listed}[fork.id] == stored.id
    assert f"0 (fork of {stored.id})" in run_sysmo("trace", "parent", "--all", "-o", str(runs),
                                                    env={"COLUMNS": "200"}).stdout


def test_sysmo_view_links_parent_and_fork_and_compares_them(parent, server: FakeOpenAI) -> None:
    from starlette.testclient import TestClient
    from sysmo.view.app import create_app

    runs, stored = parent
    task = _task()
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    result = run_sysmo("fork", stored.id, "--at", "round:1", "--model", "openai/fake-view", "--api-base",
                       server.base_url, "--json", "-o", str(runs))
    assert result.code == 0, result.output
    fork_id = json.loads(result.stdout)["attempt_id"]
    client = TestClient(create_app(runs), base_url="http://localhost")

    page = client.get(f"/e/parent/a/{fork_id}").text
    assert f'href="/e/parent/a/{stored.id}"' in page
    assert f'id="compare-parent" href="/e/parent/compare?a={stored.id}&amp;b={fork_id}"' in page
    assert f'href="/e/parent/a/{fork_id}"' in client.get(f"/e/parent/a/{stored.id}").text
    table = client.get("/e/parent").text  # the attempts table marks the fork; its group counts leave it out
    assert f'class="fork-of" href="/e/parent/a/{stored.id}"' in table
    from sysmo.view import gather

    store = _store(runs)
    try:
        assert sum(g.attempts for g in gather.group_summaries(gather.attempt_rows(store, "parent"))) == 1
    finally:
        store.close()
    compare = client.get(f"/e/parent/compare?a={stored.id}&b={fork_id}")
    assert compare.status_code == 200
    assert f"{fork_id}</span> is a fork of <span class=\"mono\">{stored.id}</span>" in compare.text
    assert "round 0 is the same on both sides, what follows is the fork's own" in compare.text


def test_feedback_and_prompt_file_change_the_next_request(parent, server: FakeOpenAI, tmp_path: Path) -> None:
    runs, stored = parent
    task = _task()
    # --feedback bare at round:1: the pending repair request is rebuilt at that level
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    result = run_sysmo("fork", stored.id, "--at", "round:1", "--feedback", "bare", "--model", "openai/fake-bare",
                       "--api-base", server.base_url, "-o", str(runs))
    assert result.code == 0, result.output
    request = server.requests[-1]["messages"]
    assert request[-1]["content"].startswith("Syntax error: Syntax check failed.\n\nFix every problem above")
    assert stored.rounds[1].messages[-1]["content"] != request[-1]["content"]  # the parent's was diagnostics
    assert request[:-1] == stored.rounds[1].messages[:-1]
    store = _store(runs)
    try:  # the level is recorded as one value, the parent's other settings with it
        row = store.query("SELECT arm, feedback FROM attempts WHERE id=?", (result.stdout.split()[1],))[0]
    finally:
        store.close()
    assert (row["feedback"], row["arm"]) == ("bare", "feedback=bare,strategy=default,temperature=0.2,max_rounds=2")

    # --prompt-file at round:0 (text): replaces the task prompt, the system prompt stays
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Draw the library loans class diagram in PlantUML, nothing else.")
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    result = run_sysmo("fork", stored.id, "--at", "round:0", "--prompt-file", str(prompt), "--model",
                       "openai/fake-prompt", "--api-base", server.base_url, "-o", str(runs))
    assert result.code == 0, result.output
    request = server.requests[-1]["messages"]
    assert request[-1] == {"role": "user", "content": prompt.read_text()}
    assert request[0] == stored.rounds[0].messages[0]

    # a JSON list of messages is the whole request
    whole = tmp_path / "request.json"
    whole.write_text(json.dumps([{"role": "system", "content": "You draw PlantUML."},
                                 {"role": "user", "content": "The library loans diagram."}]))
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    result = run_sysmo("fork", stored.id, "--at", "round:0", "--prompt-file", str(whole), "--model",
                       "openai/fake-json", "--api-base", server.base_url, "-o", str(runs))
    assert result.code == 0, result.output
    assert server.requests[-1]["messages"] == json.loads(whole.read_text())


def _attempt_count(runs: Path, exp_id: str = "parent") -> int:
    store = _store(runs, exp_id)
    try:
        return int(store.query("SELECT COUNT(*) AS n FROM attempts")[0]["n"])
    finally:
        store.close()


def test_errors_are_one_line_each(parent, server: FakeOpenAI, tmp_path: Path) -> None:
    runs, stored = parent
    before = _attempt_count(runs)
    unknown = run_sysmo("fork", stored.id, "--at", "round:9", "-o", str(runs))
    assert unknown.code != 0 and "Traceback" not in unknown.output
    assert f"attempt {stored.id} has no step 'round:9'; forkable steps: 0 (start), 1 (round:0), 2 (after generate)" \
        in " ".join(unknown.output.split())
    end = run_sysmo("fork", stored.id, "--at", "7", "-o", str(runs))
    assert end.code != 0 and "is its end: nothing runs after it" in " ".join(end.output.split())
    not_before_call = run_sysmo("fork", stored.id, "--at", "2", "--prompt-file", __file__, "-o", str(runs))
    assert not_before_call.code != 0 and "is not just before a model call" in " ".join(not_before_call.output.split())
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    assert "is empty" in run_sysmo("fork", stored.id, "--at", "round:1", "--prompt-file", str(empty), "-o",
                                   str(runs)).output
    model = run_sysmo("fork", stored.id, "--at", "round:1", "--model", "nonsense-model", "-o", str(runs))
    assert model.code != 0 and "Traceback" not in model.output
    assert "model 'nonsense-model' cannot be used: litellm does not know the model 'nonsense-model'" in \
        " ".join(model.output.split())
    assert _attempt_count(runs) == before  # none of the refused forks left an attempt behind

    without = _experiment(runs, server, "nockpt", checkpoints="none", rounds=1)
    refused = run_sysmo("fork", without.id, "--at", "round:0", "-o", str(runs))
    assert refused.code != 0 and "Traceback" not in refused.output
    assert "was stored without checkpoints (its experiment ran with `checkpoints: none`)" in \
        " ".join(refused.output.split())
    assert _attempt_count(runs, "nockpt") == 1


def test_a_store_written_before_forks_opens_with_the_new_columns(tmp_path: Path) -> None:
    from sysmo.store import Store

    db = tmp_path / "results.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE attempts (id TEXT PRIMARY KEY, experiment_id TEXT, task_id TEXT, benchmark TEXT, "
                 "kind TEXT, domain TEXT, difficulty INTEGER, agent TEXT, model TEXT, sample_index INTEGER, "
                 "status TEXT, n_rounds INTEGER, repair_rounds INTEGER, passed_round INTEGER, duration_s REAL, "
                 "llm_time_s REAL, tool_time_s REAL, prompt_tokens INTEGER, completion_tokens INTEGER, "
                 "cost_usd REAL, is_control INTEGER, error TEXT, finished_at TEXT, attempt_json TEXT)")
    conn.execute("INSERT INTO attempts (id, experiment_id, status) VALUES ('a1', 'old', 'passed')")
    conn.commit()
    conn.close()

    store = Store(db)
    try:
        columns = {r[1] for r in store.query("PRAGMA table_info(attempts)")}
        assert {"spend_usd", "parent_attempt_id", "forked_at"} <= columns
        assert store.forks_of("a1") == []
        assert store.query("SELECT parent_attempt_id FROM attempts WHERE id='a1'")[0][0] is None
    finally:
        store.close()


def test_a_step_is_named_by_round_by_number_or_by_checkpoint_id() -> None:
    from sysmo.graphs.checkpoint import CheckpointStep
    from sysmo.runner.fork import ForkError, resolve_step

    def step(n: int, node: str | None, nxt: list[str], cid: str, rnd: int | None = 0, status: str = "running"):
        return CheckpointStep(step=n, node=node, next=nxt, checkpoint_id=cid, round_index=rnd, status=status)

    steps = [step(-1, None, [], "1f1e-0000", None, None), step(0, None, ["first_request"], "1f1e-a000"),
             step(1, "first_request", ["generate"], "1f1e-a111"), step(2, "generate", ["check"], "1f1e-b222"),
             step(3, "check", ["generate"], "1f1e-b333", 1), step(4, "generate", ["check"], "1f1e-c444", 1),
             step(5, "check", [], "1f1e-c555", 1, "failed")]
    assert resolve_step(steps, "round:0", "a").step == 1
    assert resolve_step(steps, "round:1", "a").step == 3
    assert resolve_step(steps, " 4 ", "a").checkpoint_id == "1f1e-c444"
    assert resolve_step(steps, "1f1e-b333", "a").step == 3  # a whole id
    assert resolve_step(steps, "1f1e-c4", "a").step == 4  # a unique prefix
    with pytest.raises(ForkError, match="prefix '1f1e-b' is ambiguous"):
        resolve_step(steps, "1f1e-b", "a")
    with pytest.raises(ForkError, match="no step '1f1'"):  # too short to be taken as a prefix
        resolve_step(steps, "1f1", "a")
    with pytest.raises(ForkError, match="is its input: nothing runs after it"):
        resolve_step(steps, "-1", "a")
    with pytest.raises(ForkError, match=r"forkable steps: 0 \(start\), 1 \(round:0\), 2 \(after generate\), "
                                        r"3 \(round:1\), 4 \(after generate\) "):
        resolve_step(steps, "round:2", "a")


ARMS = "none,bare,diagnostics,full"  # every repair feedback level (sysmo.contracts.arms.FeedbackLevel)


@pytest.fixture(scope="module")
def four_arms(tmp_path_factory):
    """An experiment of four feedback arms, one sample, three rounds that all fail, on its own fake server
    (it answers the broken diagram to every request: the arms' first request is one, their repairs differ)."""
    from sysmo.agents.control_script import broken_artifact
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment

    task = _task()
    runs = tmp_path_factory.mktemp("fork-arms")
    (broken,) = replies_for("base_modeling", task, [broken_artifact(task)])
    with FakeOpenAI(default=broken) as fake:
        config = ExperimentConfig(id="arms", output_dir=runs, agents=["base_modeling"], samples=1, max_rounds=2,
                                  feedback=ARMS, seed=11,
                                  models=[{"model": "openai/fake-arms", "api_base": fake.base_url}],
                                  tasks=TaskSelection(benchmarks=["starter"], ids=[TASK]))
        run_experiment(config, progress=False)
        yield runs, fake


def test_a_fork_of_a_bare_attempt_runs_and_records_its_arm_its_seed_its_own_time_and_counts_apart(four_arms) -> None:
    import time

    from starlette.testclient import TestClient
    from sysmo.contracts.arms import sample_seed
    from sysmo.evals.report import write_report
    from sysmo.view import gather
    from sysmo.view.app import create_app

    runs, server = four_arms
    store = _store(runs, "arms")
    try:
        (bare_id,) = [r["id"] for r in store.query("SELECT id FROM attempts WHERE feedback='bare'")]
        bare = store.attempt(bare_id)
    finally:
        store.close()
    assert bare.seed == sample_seed(11, TASK, 0) and len(bare.rounds) == 3 and bare.status.value == "failed"
    time.sleep(1.0)  # the parent's round 1 request was built a while before the fork resumes it

    task = _task()
    server.push(*replies_for("base_modeling", task, [task.references.model]))  # the fork's model passes
    asked = len(server.requests)
    forked = run_sysmo("fork", bare_id, "--at", "round:1", "--model", "openai/fake-arms-fork", "--api-base",
                       server.base_url, "-o", str(runs), env={"COLUMNS": "200"})
    assert forked.code == 0, forked.output
    text = " ".join(forked.stdout.split())
    assert f"arm feedback=bare,strategy=default,temperature=0.2,max_rounds=2 (the parent's) · seed {bare.seed} " \
           "(the parent's)" in text
    # the fork's model call (round 1, at bare feedback) reached the server with the parent's seed
    sent = server.requests[asked:]
    assert [(r["model"], r["seed"]) for r in sent] == [("fake-arms-fork", bare.seed)]
    assert sent[0]["messages"][-1]["content"] == bare.rounds[1].messages[-1]["content"]  # bare, as the parent's

    # --feedback full (parsed as one level, not a list of letters): the parent's other settings, full feedback
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    full = json.loads(run_sysmo("fork", bare_id, "--at", "round:1", "--feedback", "full", "--model",
                                "openai/fake-arms-full", "--api-base", server.base_url, "--json",
                                "-o", str(runs)).stdout)
    assert full["arm"] == "feedback=full,strategy=default,temperature=0.2,max_rounds=2"
    assert full["seed"] == bare.seed and server.requests[-1]["seed"] == bare.seed

    store = _store(runs, "arms")
    try:
        fork_id = next(i for i in store.forks_of(bare_id) if i != full["attempt_id"])
        fork = store.attempt(fork_id)
        columns = {r["id"]: dict(r) for r in store.query(
            "SELECT id, arm, seed, feedback, max_rounds, duration_s, llm_time_s, tool_time_s FROM attempts "
            "WHERE parent_attempt_id IS NOT NULL")}
        summary = gather.experiment_summary(store, "arms")
    finally:
        store.close()
    assert fork.arm_label == bare.arm_label and fork.feedback == "bare" and fork.seed == bare.seed
    assert (columns[fork_id]["arm"], columns[fork_id]["seed"], columns[fork_id]["feedback"]) == \
        (bare.arm_label, bare.seed, "bare")
    assert (columns[full["attempt_id"]]["feedback"], columns[full["attempt_id"]]["max_rounds"]) == ("full", 2)

    # timings: round 0 is the parent's, as it was; round 1 falls within the fork's own run
    assert fork.status.value == "passed" and len(fork.rounds) == 2
    assert fork.inherited_rounds == 1 and fork.rounds[0].model_dump() == bare.rounds[0].model_dump()
    own = fork.rounds[1:]
    assert sum(r.duration_s for r in own) <= fork.duration_s
    assert all(r.llm_time_s + r.tool_time_s <= r.duration_s for r in own)
    row = columns[fork_id]
    assert row["llm_time_s"] == pytest.approx(sum(r.llm_time_s for r in own))
    assert row["llm_time_s"] + row["tool_time_s"] <= row["duration_s"]
    trace = " ".join(run_sysmo("trace", fork_id, "-o", str(runs), env={"COLUMNS": "200"}).stdout.split())
    assert f"0 / {bare.seed} (the parent's)" in trace and "(inherited: the parent's round)" in trace

    # counts: the plan's four attempts, the two forks beside them, never in them
    assert (summary.attempts, summary.planned, summary.failed, summary.forks) == (4, 4, 4, 2)
    assert summary.passed == 0 and summary.pass_rate == 0.0  # the forks passed; the plan's attempts did not
    progress = gather.progress(runs)["arms"]
    assert (progress["attempts"], progress["planned"], progress["passed"], progress["forks"]) == (4, 4, 0, 2)
    client = TestClient(create_app(runs), base_url="http://localhost")
    listing = client.get("/").text
    assert '<span data-field="done">4 / 4</span><span class="dim" data-field="forks"> · 2 forks</span>' in listing
    assert '· 2 forks</span>' in client.get("/e/arms").text
    page = client.get(f"/e/arms/a/{fork_id}").text
    assert "(inherited)" in page and f"0 / {bare.seed}" in page
    paths = write_report(runs / "arms")
    assert "forks: 2 attempt(s) made by `sysmo fork` are left out of every number here" in paths["markdown"].read_text()


def test_a_fork_of_a_one_shot_attempt_to_another_feedback_gets_its_arms_repair_rounds(four_arms) -> None:
    # feedback none runs one shot (no repair round in the state the fork copies); forked to diagnostics, the fork
    # runs as that arm would: its repair rounds (max_rounds 2), with diagnostics feedback
    from sysmo.agents.control_script import broken_artifact

    runs, server = four_arms
    store = _store(runs, "arms")
    try:
        (none_id,) = [r["id"] for r in store.query("SELECT id FROM attempts WHERE feedback='none' "
                                                   "AND parent_attempt_id IS NULL")]
        parent = store.attempt(none_id)
    finally:
        store.close()
    assert len(parent.rounds) == 1 and parent.status.value == "failed"
    task = _task()
    server.push(*replies_for("base_modeling", task, [broken_artifact(task), task.references.model]))
    forked = json.loads(run_sysmo("fork", none_id, "--at", "round:0", "--feedback", "diagnostics", "--model",
                                  "openai/fake-arms-repair", "--api-base", server.base_url, "--json",
                                  "-o", str(runs)).stdout)
    assert forked["arm"] == "feedback=diagnostics,strategy=default,temperature=0.2,max_rounds=2"
    store = _store(runs, "arms")
    try:
        fork = store.attempt(forked["attempt_id"])
    finally:
        store.close()
    assert fork.status.value == "passed" and len(fork.rounds) == 2, [r.error for r in fork.rounds]
    assert "error" in server.requests[-1]["messages"][-1]["content"].lower()  # a diagnostics repair request
