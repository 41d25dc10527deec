"""Ablation arms in one experiment: attempts carry their arm and the (task, sample)'s seed, arms that differ only
after the first reply share it, a resume refuses result-changing flags and adds arms, every setting is in the
report and provenance.json, and an attempt past its wall-clock limit is an infrastructure error naming its step.
Driven by the fake OpenAI server (and mockllm/control), checked by the real PlantUML."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from fake_openai import FakeOpenAI, reply, slow
from sysmo_cli import run_sysmo

UML = ["starter/uml_class/library_loans", "starter/uml_class/hotel_booking"]
DIAGRAM = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\nclass Loan\nBook -- Loan\n@enduml\n```"
BROKEN = "```plantuml\n@startuml\nclass Book {\n  +title: String\n@enduml\n```"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))  # a cache of this test's own
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def config_for(tmp_path: Path, **overrides):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    fields = dict(id="arms", output_dir=tmp_path / "runs", agents=["base_modeling"], models=["mockllm/control"],
                  samples=2, score=False, concurrency=4, tasks=TaskSelection(benchmarks=["starter"], ids=UML))
    fields.update(overrides)
    return ExperimentConfig(**fields)


def warm_plantuml() -> None:
    """One PlantUML check, so the process's PlantUML server is up before a timed attempt."""
    from sysmo.contracts.artifact import Artifact
    from sysmo.contracts.task import Task
    from sysmo.tools.checkers import check_artifact

    diagram = DIAGRAM.split("\n", 1)[1].rsplit("\n", 1)[0]
    check_artifact(Artifact(language="plantuml", files={"model.puml": diagram}),
                   Task(id="warm", benchmark="starter", kind="uml_class"))


def rows(tmp_path: Path, experiment: str = "arms") -> list[dict]:
    conn = sqlite3.connect(tmp_path / "runs" / experiment / "results.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM attempts ORDER BY task_id, sample_index, arm")]
    finally:
        conn.close()


def cli(*args: str):
    return run_sysmo(*args, env={"COLUMNS": "80"})


def test_feedback_arms_share_the_task_the_seed_and_the_first_reply(tmp_path: Path) -> None:
    from sysmo.runner import run_experiment
    from sysmo.store import Store

    warm_plantuml()
    with FakeOpenAI(default=reply(DIAGRAM)) as server:
        model = {"model": "openai/fake-model", "api_base": server.base_url}
        summary = run_experiment(config_for(tmp_path, models=[model], feedback="none,full"), progress=False)
        assert summary.planned == summary.ran == 2 * 2 * 2  # tasks x samples x arms, all four at once
        # each (task, sample)'s first request reached the server once: the other arm was answered from the cache
        assert server.calls == 4
        sent = {(json.dumps(r["messages"]), r["seed"]) for r in server.requests}
    stored = rows(tmp_path)
    assert {r["arm"] for r in stored} == {"feedback=none,strategy=default,temperature=0.2,max_rounds=3",
                                          "feedback=full,strategy=default,temperature=0.2,max_rounds=3"}
    assert {r["feedback"] for r in stored} == {"none", "full"} and {r["max_rounds"] for r in stored} == {3}
    store = Store(tmp_path / "runs" / "arms" / "results.sqlite")
    try:
        by_sample: dict[tuple, list] = {}
        for row in stored:
            by_sample.setdefault((row["task_id"], row["sample_index"]), []).append(store.attempt(row["id"]))
    finally:
        store.close()
    seeds = set()
    for (task, sample), attempts in by_sample.items():
        assert len(attempts) == 2 and len({a.id for a in attempts}) == 2
        assert len({a.seed for a in attempts}) == 1  # the same seed in both arms...
        seeds.add(attempts[0].seed)
        first = [a.rounds[0] for a in attempts]
        # ...the same first request (its cache key) and reply, one of them paid, the other from the cache
        assert len({r.llm_calls[0].request_hash for r in first}) == 1
        assert len({r.response for r in first}) == 1
        assert sorted(r.llm_calls[0].cached for r in first) == [False, True]
        assert (json.dumps(first[0].messages), attempts[0].seed) in sent  # the seed went to the server
    assert len(seeds) == 4  # and each (task, sample) has its own


def test_the_first_arm_keeps_the_attempt_ids_of_an_experiment_without_arms(tmp_path: Path) -> None:
    from sysmo.contracts.task import Task
    from sysmo.runner import WorkUnit
    from sysmo.runner.units import expand

    task = Task(id="starter/tla/spin", benchmark="starter", kind="tla")
    single = expand(config_for(tmp_path), [task], "exp")[0]
    assert [u.attempt_id for u in single] == [WorkUnit(task, "base_modeling", "mockllm/control", s, "exp").attempt_id
                                              for s in range(2)]
    both = expand(config_for(tmp_path, feedback=["diagnostics", "full"], max_rounds=[3, 1]), [task], "exp")[0]
    assert len(both) == 8 and len({u.attempt_id for u in both}) == 8
    assert {u.attempt_id for u in both if u.arm_key == ""} == {u.attempt_id for u in single}
    assert {u.seed for u in both if u.sample == 0} == {single[0].seed}


def test_a_resume_refuses_result_changing_flags_in_one_line_and_adds_arms(tmp_path: Path) -> None:
    out = str(tmp_path / "runs")
    base = ["--agent", "base_modeling", "--model", "mockllm/control", "--ids", UML[0], "--samples", "1",
            "--no-score", "--no-progress", "--no-report", "-o", out]
    first = cli("run", *base, "--id", "res", "--feedback", "diagnostics")
    assert first.code == 0, first.output
    ids = {r["id"] for r in rows(tmp_path, "res")}

    # --model gives the stored value: no change; --samples would change what the attempts are
    refused = cli("run", "--resume", "res", "--samples", "3", "--model", "mockllm/control", "--no-progress", "-o", out)
    assert refused.code != 0
    message = " ".join(refused.output.split())  # the terminal wraps it; it is one sentence
    assert "--resume res cannot change --samples:" in message and "--model" not in message
    assert yaml.safe_load((tmp_path / "runs" / "res" / "config.yaml").read_text())["samples"] == 1

    same = cli("run", "--resume", "res", "--concurrency", "2", "--model", "mockllm/control", "--no-progress",
               "--no-report", "-o", out)
    assert same.code == 0 and "ran now: 0" in " ".join(same.output.split()), same.output

    added = cli("run", "--resume", "res", "--feedback", "full", "--no-progress", "--no-report", "-o", out)
    assert added.code == 0, added.output
    assert "adding arm feedback=full" in " ".join(added.output.split())
    after = rows(tmp_path, "res")
    assert len(after) == 2 and ids < {r["id"] for r in after}  # the old attempt kept, the new arm run
    config = yaml.safe_load((tmp_path / "runs" / "res" / "config.yaml").read_text())
    assert config["feedback"] == ["diagnostics", "full"]


def test_an_experiment_from_before_arms_still_resumes_to_the_same_attempts(tmp_path: Path) -> None:
    from sysmo.runner import run_experiment

    run_experiment(config_for(tmp_path, tasks={"ids": UML[:1]}), progress=False)
    folder = tmp_path / "runs" / "arms"
    old = yaml.safe_load((folder / "config.yaml").read_text())
    old.update(feedback="diagnostics", strategy=None, temperature=0.2, max_rounds=3)  # scalars, as written before
    old.pop("attempt_timeout")
    (folder / "config.yaml").write_text(yaml.safe_dump(old))
    conn = sqlite3.connect(folder / "results.sqlite")  # the arm columns of a store from before them: empty
    conn.execute("UPDATE attempts SET arm=NULL, seed=NULL, feedback=NULL, strategy=NULL, temperature=NULL, "
                 "max_rounds=NULL")
    conn.commit()
    conn.close()
    resumed = cli("run", "--resume", "arms", "--no-progress", "-o", str(tmp_path / "runs"))
    assert resumed.code == 0, resumed.output
    assert "planned: 2 · already done: 2 · ran now: 0" in " ".join(resumed.output.split())
    attempts = (folder / "report" / "attempts.csv").read_text().splitlines()
    assert attempts[0].endswith("arm,seed,feedback,strategy,temperature,max_rounds")
    assert all("feedback=diagnostics,strategy=default,temperature=0.2,max_rounds=3" in line for line in attempts[1:])


def test_a_store_from_before_arm_columns_gains_them_when_opened(tmp_path: Path) -> None:
    from sysmo.store import Store

    path = tmp_path / "results.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE attempts (id TEXT PRIMARY KEY, experiment_id TEXT, task_id TEXT, benchmark TEXT, "
                 "kind TEXT, domain TEXT, difficulty INTEGER, agent TEXT, model TEXT, sample_index INTEGER, "
                 "status TEXT, n_rounds INTEGER, repair_rounds INTEGER, passed_round INTEGER, duration_s REAL, "
                 "llm_time_s REAL, tool_time_s REAL, prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, "
                 "is_control INTEGER, error TEXT, finished_at TEXT, attempt_json TEXT)")
    conn.execute("INSERT INTO attempts (id, experiment_id, status) VALUES ('a1', 'old', 'passed')")
    conn.commit()
    conn.close()
    store = Store(path)
    try:
        row = store.query("SELECT id, status, arm, seed, feedback, max_rounds, spend_usd FROM attempts")[0]
        assert dict(row) == {"id": "a1", "status": "passed", "arm": None, "seed": None, "feedback": None,
                             "max_rounds": None, "spend_usd": None}
    finally:
        store.close()


def test_every_setting_is_in_the_report_header_and_provenance(tmp_path: Path) -> None:
    from sysmo.evals.report import write_report
    from sysmo.runner import run_experiment

    config = config_for(tmp_path, tasks={"ids": UML[:1]}, samples=1, feedback=["none", "full"], seed=7,
                        attempt_timeout=900, scoring_mode="harness")
    run_experiment(config, progress=False)
    paths = write_report(tmp_path / "runs" / "arms")
    settings = json.loads(paths["provenance"].read_text())["settings"]
    assert settings["feedback"] == ["none", "full"] and settings["seed"] == 7
    assert settings["arms"] == ["feedback=none,strategy=default,temperature=0.2,max_rounds=3",
                                "feedback=full,strategy=default,temperature=0.2,max_rounds=3"]
    assert settings["attempt_timeout_s"] == 900 and settings["scoring_mode"] == "harness"
    assert settings["agents"] == ["base_modeling"] and settings["models"] == ["mockllm/control"]
    assert settings["isolation"] and settings["versions"]["sysmo"]
    header = paths["markdown"].read_text().split("## Scoring notes")[0].split("## Leaderboards")[0]
    for line in ("- feedback: `none, full`", "- samples: `1`", "- seed: `7`", "- attempt_timeout_s: `900.0`",
                 "- scoring_mode: `harness`", "- agents: `base_modeling`", "- isolation: `"):
        assert line in header, line
    assert "<th>arms</th>" in paths["html"].read_text()

    # sysmo trace EXP: the settings, then the attempts with their arm; sysmo trace ATTEMPT --json: its run's settings
    listing = cli("trace", "arms", "--json", "-o", str(tmp_path / "runs"))
    data = json.loads(listing.stdout)
    assert data["settings"]["arms"] == settings["arms"] and len(data["attempts"]) == 2
    shown = cli("trace", "arms", "-o", str(tmp_path / "runs"))
    assert "settings of arms" in shown.stdout and "feedback=none" in shown.stdout and "harness" in shown.stdout
    one = json.loads(cli("trace", data["attempts"][0]["id"], "--json", "-o", str(tmp_path / "runs")).stdout)
    assert one["run_settings"]["feedback"] == ["none", "full"] and one["seed"] == data["attempts"][0]["seed"]
    assert one["arm_label"] == data["attempts"][0]["arm"] and one["time_limit_s"] == 900

    # sysmo view's experiment page: the settings box, and the arm column naming the varied factor
    from starlette.testclient import TestClient
    from sysmo.view.app import create_app

    page = TestClient(create_app(tmp_path / "runs"), base_url="http://localhost").get("/e/arms").text
    # closed by default (the arms' rates are in the summary above the table), its summary counting the arms
    assert '<details id="settings"><summary>settings of the run (2 arms)</summary>' in page and '<th>attempt_timeout_s</th><td class="wrap">900.0</td>' in page
    assert "<td>feedback=none</td>" in page and "<td>feedback=full</td>" in page
    viewer = TestClient(create_app(tmp_path / "runs"), base_url="http://localhost")
    attempt_page = viewer.get(f"/e/arms/a/{one['id']}").text
    assert one["arm_label"] in attempt_page and f"0 / {one['seed']}" in attempt_page


def test_an_attempt_past_its_time_limit_is_an_infrastructure_error_naming_its_step(tmp_path: Path) -> None:
    from sysmo.evals.error_kinds import error_kind
    from sysmo.runner import run_experiment
    from sysmo.store import Store

    warm_plantuml()  # round 0 then ends well within the limit, whatever PlantUML's start takes on this machine
    with FakeOpenAI() as server:
        # the first answer is broken (checked: round 0 is done), the repair's answer never comes in time
        server.push(reply(BROKEN), slow(DIAGRAM, 60))
        model = {"model": "openai/fake-model", "api_base": server.base_url}
        config = config_for(tmp_path, models=[model], tasks={"ids": UML[:1]}, samples=1, attempt_timeout=6)
        summary = run_experiment(config, progress=False)
    assert summary.errors == 1
    row = rows(tmp_path)[0]
    assert row["status"] == "error" and error_kind(row["status"], row["error"]) == "infrastructure"
    assert "wall-clock limit of 6 s" in row["error"] and "graph step 'generate'" in row["error"]
    store = Store(tmp_path / "runs" / "arms" / "results.sqlite")
    try:
        attempt = store.attempt(row["id"])
    finally:
        store.close()
    # what finished before the limit is kept: the first round, its artifact and its check, and the events
    assert len(attempt.rounds) == 1 and attempt.rounds[0].check is not None and not attempt.rounds[0].passed
    assert attempt.final_artifact is not None and attempt.time_limit_s == 6
    assert any(e.type == "error" and "AttemptTimeLimit" in (e.error_type or "") for e in attempt.events)
    assert (tmp_path / "runs" / "arms" / "artifacts" / attempt.id / "round0").is_dir()


def test_a_resume_names_the_flag_it_refuses_seed_and_api_base(tmp_path: Path) -> None:
    out = str(tmp_path / "runs")
    common = ["--ids", UML[0], "--samples", "1", "--no-score", "--no-progress", "--no-report", "-o", out]
    with FakeOpenAI(default=reply(DIAGRAM)) as server, FakeOpenAI(default=reply(DIAGRAM)) as other:
        first = cli("run", "--agent", "base_modeling", "--model", "openai/fake-model", "--api-base", server.base_url,
                    "--id", "ep", *common)
        assert first.code == 0, first.output

        def refusal(*args: str) -> str:
            result = cli("run", "--resume", "ep", *args, "--no-progress", "--no-report", "-o", out)
            assert result.code != 0 and "Traceback" not in result.output
            return " ".join(result.output.split())  # the terminal wraps it; it is one sentence

        tail = "that changes the results of attempts already run; start another experiment (--id) for it"
        assert refusal("--seed", "5") == f"error: --resume ep cannot change --seed: {tail}"
        # only the endpoint moved: --api-base is named, not --model (given alone it is the stored models' endpoint)
        assert refusal("--api-base", other.base_url) == f"error: --resume ep cannot change --api-base: {tail}"
        assert refusal("--model", "openai/fake-model", "--api-base", other.base_url) == \
            f"error: --resume ep cannot change --api-base: {tail}"
        assert refusal("--model", "openai/other-model", "--api-base", server.base_url) == \
            f"error: --resume ep cannot change --model: {tail}"
        same = cli("run", "--resume", "ep", "--api-base", server.base_url, "--no-progress", "--no-report", "-o", out)
        assert same.code == 0 and "ran now: 0" in " ".join(same.output.split()), same.output
