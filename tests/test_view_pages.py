"""``sysmo view`` pages over a store written here (no tools, no browser): errored attempts are told apart from
model failures, filters and sorting are query parameters, diagnostics sit under their lines, diffs are aligned,
and URLs cannot reach outside the runs directory."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from sysmo.contracts.artifact import Artifact
from sysmo.evals.error_kinds import error_kind
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.contracts.attempt import Attempt, AttemptStatus, LLMCallSummary, Round
from sysmo.store import Store
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
from sysmo.view import gather
from sysmo.view.app import create_app
from sysmo.view.models import AttemptFilters

BROKEN = "@startuml\nclass A {\n  +x: int\nclass B\n@enduml\n"
FIXED = "@startuml\nclass A {\n  +x: int\n}\nclass B\nA --> B\n@enduml\n"
META = {"benchmark": "starter", "kind": "uml_class"}


def _rounds() -> list[Round]:
    call = LLMCallSummary(role="generator", model="mockllm/control", purpose="generate")
    bad = CheckResult(tool="plantuml", outcome=Outcome.FAILED, details={"isolation": ["bwrap", "netns"]}, diagnostics=[
        Diagnostic(tool="plantuml", message="body of A is not closed", line=2, code="unclosed-body")])
    return [Round(index=0, messages=[{"role": "user", "content": "Draw A and B."}], response="```\n" + BROKEN + "```",
                  llm_calls=[call], artifact=Artifact(language="plantuml", files={"m.puml": BROKEN}), check=bad),
            Round(index=1, kind="repair", messages=[{"role": "user", "content": "Fix: body of A is not closed"}],
                  response=FIXED, llm_calls=[call.model_copy(update={"purpose": "repair"})],
                  artifact=Artifact(language="plantuml", files={"m.puml": FIXED}),
                  check=CheckResult(tool="plantuml", outcome=Outcome.OK))]


@pytest.fixture()
def runs(tmp_path):
    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {"samples": 1}, {}, is_control=True)
    attempts = [
        Attempt(id="aa01", task_id="starter/uml_class/t1", agent="base_modeling", model="mockllm/control",
                status=AttemptStatus.PASSED, rounds=_rounds(), is_control=True),
        Attempt(id="aa02", task_id="starter/uml_class/t1", agent="base_modeling", model="reference",
                status=AttemptStatus.ERROR, error="PlantUML server crashed: exit 137", is_control=True),
        Attempt(id="aa03", task_id="starter/uml_class/t1", agent="metagpt", model="reference",
                status=AttemptStatus.ERROR, error="model call failed: RateLimitError", is_control=True),
        Attempt(id="aa04", task_id="starter/uml_class/t2", agent="metagpt", model="reference",
                status=AttemptStatus.FAILED, rounds=_rounds()[:1], is_control=True),
    ]
    for attempt in attempts:
        store.save_attempt("exp", attempt, META)
    store.save_score("exp", "aa04", ScoreCard(task_id="starter/uml_class/t2", cascade="uml_class", stages=[
        StageResult(stage="syntax", value=0.0, outcome="failed", detail={"n_diagnostics": 1}),
        StageResult(stage="clue", value=0.0, outcome="skipped", skipped_because="syntax failed", detail={"gated": True})]))
    store.save_score("exp", "aa01", ScoreCard(task_id="starter/uml_class/t1", cascade="uml_class", stages=[
        StageResult(stage="syntax", value=1.0, passed=True),
        StageResult(stage="clue", value=0.5, passed=True, detail={
            "class_pairs": [{"reference": "A", "candidate": "A", "similarity": 1.0}], "similarity": "exact",
            "leaf_map": {"A": "A", "B": None}}),
        StageResult(stage="judge", value=0.0, outcome="skipped", skipped_because="no judge model")]))
    store.close()
    return tmp_path


@pytest.fixture()
def client(runs):
    return TestClient(create_app(runs), base_url="http://localhost")


def test_error_kinds_tell_the_harness_from_the_model():
    assert error_kind("error", "model call failed: APIError") == "model"
    assert error_kind("error", "stopped: budget max_cost reached") == "budget"
    assert error_kind("error", "TLC crashed") == "infrastructure"
    assert error_kind("failed", "whatever") is None


def test_rows_carry_the_failed_stage_and_error_kind(runs):
    store = gather.open_store(runs, "exp")
    rows = {r.id: r for r in gather.attempt_rows(store, "exp")}
    store.close()
    assert rows["aa04"].failed_stage == "syntax"  # the first stage that failed, not the gated one after it
    assert rows["aa01"].failed_stage == ""  # a stage skipped for want of a judge did not fail
    assert (rows["aa02"].error_kind, rows["aa03"].error_kind, rows["aa01"].error_kind) == ("infrastructure", "model", "")
    shown = gather.apply_filters(list(rows.values()), AttemptFilters(agent="metagpt", sort="rounds", desc=True))
    assert [r.id for r in shown] == ["aa04", "aa03"]


def test_summary_says_when_a_zero_comes_from_errors(client):
    page = client.get("/e/exp").text
    assert "(1 errored)" in page  # base_modeling/reference: pass rate 0 with its error said
    assert "no attempt ran" in page  # ... and no pass rate over attempts that ran
    store_summary = client.get("/").text
    assert "infrastructure: 1" in store_summary and "model: 1" in store_summary
    assert "plantuml: bwrap+netns" in store_summary  # isolation as the tool checks recorded it


def test_filters_are_query_parameters(client):
    page = client.get("/e/exp", params={"error_kind": "infrastructure"}).text
    assert "aa02" in page and "aa03" not in page and "aa04" not in page
    page = client.get("/e/exp", params={"failed_stage": "syntax"}).text
    assert ">aa04<" in page and ">aa01<" not in page


def test_the_task_headers_descending_link_sorts_descending(client):
    page = client.get("/e/exp").text
    assert 'href="?desc=True"' in page  # the task column's header link, as the template writes it
    ids = lambda html: re.findall(r'class="attempt-link mono" href="[^"]*">(\w+)<', html)  # noqa: E731
    ascending, descending = ids(page), ids(client.get("/e/exp?desc=True").text)
    assert descending == sorted(ascending, key=ascending.index, reverse=True) and descending[0] == "aa04"


def test_attempt_page_anchors_diagnostics_and_aligns_the_diff(client):
    page = client.get("/e/exp/a/aa01")
    assert page.status_code == 200
    html = page.text
    assert "error[unclosed-body]: body of A is not closed" in html
    view = client.get("/e/exp/a/aa01/json").json()
    line2 = view["rounds"][0]["listings"][0]["lines"][1]
    assert line2["number"] == 2 and line2["diagnostics"] == ["error[unclosed-body]: body of A is not closed"]
    rows = view["rounds"][1]["diffs"][0]["rows"]
    inserted = [r for r in rows if r["tag"] == "insert"]
    assert {r["right"] for r in inserted} >= {"}", "A --> B"}
    assert all(r["left_number"] is None for r in inserted)
    clue = next(s for s in view["stages"] if s["stage"] == "clue")
    assert clue["tables"][0]["title"] == "class_pairs" and clue["tables"][0]["rows"] == [["A", "A", "1.000"]]
    assert clue["tables"][1] == {"title": "leaf_map", "columns": ["key", "value"], "rows": [["A", "A"], ["B", ""]]}
    kinds = [e["kind"] for e in view["timeline"]]
    assert kinds.count("llm_call") == 2 and kinds.count("tool_check") == 2


def test_errored_attempt_page_names_the_kind(client):
    html = client.get("/e/exp/a/aa02").text
    assert "infrastructure error: PlantUML server crashed" in html


def test_compare_and_bad_urls(client):
    assert client.get("/e/exp/compare", params={"a": "aa01", "b": "aa02"}).status_code == 200
    assert client.get("/e/exp/compare", params={"a": "aa01"}).status_code == 400
    assert client.get("/e/missing").status_code == 404
    assert client.get("/e/..%2F..%2Fetc/a/passwd").status_code == 404
    assert client.get("/e/exp/a/ffff").status_code == 404
    assert client.post("/e/exp").status_code == 405  # read-only


def test_side_by_side_folds_long_unchanged_runs():
    before = "\n".join(f"line {n}" for n in range(1, 41))
    after = before.replace("line 20", "line twenty")
    rows = gather.side_by_side(Artifact(language="plantuml", files={"m.puml": before}),
                               Artifact(language="plantuml", files={"m.puml": after}))[0].rows
    changed = [r for r in rows if r.tag == "replace"]
    assert [(r.left_number, r.left, r.right_number, r.right) for r in changed] == [(20, "line 20", 20, "line twenty")]
    skips = [r.left for r in rows if r.tag == "skip"]
    assert skips == ["... 16 unchanged lines ...", "... 17 unchanged lines ..."]
    assert [r.left_number for r in rows if r.tag == "equal"] == [17, 18, 19, 21, 22, 23]


def test_report_page_links_each_number_to_its_attempts(client):
    html = client.get("/e/exp/report").text
    assert "Errored attempts count as not passed" in html
    assert 'href="/e/exp?agent=base_modeling&amp;model=reference&amp;kind=uml_class&amp;status=error"' in html
    assert "clue: " in html  # the metric's one-line meaning


def test_view_command_says_in_one_line_when_the_port_is_taken(runs):
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "sysmo.cli", "view", str(runs), "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and f"port {port} on 127.0.0.1 is not free" in run.stderr
    assert "Traceback" not in run.stderr


def test_attempt_page_lists_every_model_call_of_the_event_stream_with_prompt_and_reply(tmp_path):
    from sysmo.contracts.events import LLMCallEvent

    def call(seq: int, role: str, purpose: str, prompt: str, reply: str, stage: str = "attempt") -> LLMCallEvent:
        return LLMCallEvent(seq=seq, stage=stage, role=role, purpose=purpose, model="mockllm/control",
                            provider="mockllm", request_hash=f"h{seq}", messages=[{"role": "user", "content": prompt}],
                            response={"text": reply, "model": "mockllm/control", "provider": "mockllm"})

    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {"samples": 1}, {}, is_control=True)
    attempt = Attempt(id="bb01", task_id="starter/uml_class/t1", agent="metagpt", model="mockllm/control",
                      status=AttemptStatus.PASSED, rounds=_rounds(), is_control=True,
                      events=[call(0, "generator", "analyst", "Analyse the requirements.", "Actors: A, B"),
                              call(1, "generator", "generate", "Draw A and B.", FIXED)])
    store.save_attempt("exp", attempt, META)
    store.save_score("exp", "bb01", ScoreCard(task_id="starter/uml_class/t1", cascade="uml_class", stages=[]),
                     events=[call(0, "judge", "rubric", "Grade this diagram.", "Score: 4/5", stage="score")])
    store.close()
    view = TestClient(create_app(tmp_path), base_url="http://localhost").get("/e/exp/a/bb01/json").json()
    calls = [(c["stage"], c["role"], c["purpose"], c["messages"][0]["content"], c["reply"]) for c in view["model_calls"]]
    assert calls == [("attempt", "generator", "analyst", "Analyse the requirements.", "Actors: A, B"),
                     ("attempt", "generator", "generate", "Draw A and B.", FIXED),
                     ("score", "judge", "rubric", "Grade this diagram.", "Score: 4/5")]
    html = TestClient(create_app(tmp_path), base_url="http://localhost").get("/e/exp/a/bb01").text
    assert "Model calls, every role and stage (3)" in html and "Analyse the requirements." in html


def test_a_stage_not_scored_is_a_dash_with_its_reason_never_a_zero(client):
    html = client.get("/e/exp").text
    assert 'title="not scored: no judge model">—</td>' in html  # aa01's judge
    assert 'title="not scored: syntax failed (the cascade stopped' in html  # aa04's clue, gated
    csv_text = client.get("/e/exp/attempts.csv", params={"task": "starter/uml_class/t1"}).text
    header, *lines = csv_text.strip().splitlines()
    judge = header.split(",").index("score.judge")
    aa01 = next(line.split(",") for line in lines if line.startswith("aa01,"))
    assert aa01[judge] == "" and aa01[header.split(",").index("score.clue")] == "0.5"
    attempt = client.get("/e/exp/a/aa01").text
    assert 'title="not scored: no judge model">—</td>' in attempt and "0.000 skipped" not in attempt


def test_search_reaches_prompts_and_the_csv_follows_the_filters(client):
    html = client.get("/e/exp", params={"q": "fix: body of a"}).text  # round 1's prompt of aa01, any case
    assert ">aa01<" in html and ">aa04<" not in html and 'id="shown-count">1 of 4' in html
    assert 'href="/e/exp/attempts.csv?q=fix%3A+body+of+a"' in html
    assert client.get("/e/exp/attempts.csv", params={"q": "RateLimitError"}).text.count("\n") == 2  # header + aa03


def test_compare_refuses_two_tasks_and_aligns_one_tasks_rounds(client):
    refused = client.get("/e/exp/compare", params={"a": "aa01", "b": "aa04"})
    assert refused.status_code == 400 and "only attempts of one task compare" in refused.text
    html = client.get("/e/exp/compare", params={"a": "aa01", "b": "aa02"}).text
    assert 'id="aligned-1"' in html and "no such round" in html  # aa02 errored before any round


def test_favicon_and_progress(client):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    progress = client.get("/progress.json").json()["exp"]
    assert (progress["attempts"], progress["passed"], progress["errors"]) == (4, 1, 2)


def test_attempt_page_opens_with_why_it_failed_and_splits_round_time(client):
    view = client.get("/e/exp/a/aa04/json").json()
    assert view["outcome"]["headline"] == "failed at stage syntax"
    assert view["outcome"]["reason"] == "m.puml:2: body of A is not closed"  # the user's file and line
    assert view["outcome"]["anchor"] == "round-0-check"
    assert [(t["round_index"], t["kind"]) for t in view["times"]] == [(0, "generate")]
    html = client.get("/e/exp/a/aa04").text
    assert html.index('id="outcome"') < html.index('id="attempt-header"')  # the answer first


def test_graph_drawing_highlights_the_path_taken():
    from sysmo.view.graph_svg import draw

    nodes = ["__start__", "first_request", "generate", "check", "__end__"]
    edges = [("__start__", "first_request"), ("first_request", "generate"), ("generate", "check"),
             ("check", "generate"), ("check", "__end__")]
    svg = draw(nodes, edges, ["first_request", "generate", "check", "generate", "check"])
    assert svg.startswith("<svg") and svg.count('class="node visited"') == 5  # start and end with the three nodes
    assert "generate ×2" in svg and "check ×2" in svg
    assert svg.count('class="edge taken"') == 5  # every edge of the path, the loop back included
    assert draw(nodes, edges, []).count("visited") == 0


def test_the_attempt_table_shows_the_score_columns_of_the_kinds_in_view_only(runs):
    store = Store(runs / "exp" / "results.sqlite")
    store.save_attempt("exp", Attempt(id="cc01", task_id="starter/architecture/shop", agent="base_modeling",
                                      model="mockllm/control", status=AttemptStatus.FAILED, is_control=True),
                       {"benchmark": "starter", "kind": "architecture"})
    store.save_score("exp", "cc01", ScoreCard(task_id="starter/architecture/shop", cascade="architecture", stages=[
        StageResult(stage="components", value=0.25, outcome="failed")]))
    store.close()
    client = TestClient(create_app(runs), base_url="http://localhost")

    def score_headers(**params) -> list[str]:
        html = client.get("/e/exp", params=params).text
        return re.findall(r'<th class="stage-col"><a [^>]*>([^<]+)</a>', html)

    assert "components" in score_headers() and "clue" in score_headers()
    assert "components" not in score_headers(kind="uml_class") and "clue" in score_headers(kind="uml_class")
    assert score_headers(kind="architecture") == ["components"]
    html = client.get("/e/exp", params={"kind": "architecture"}).text
    # the task's short name, its full id on hover; the row opens the attempt
    assert '<td class="task" data-label="task" title="starter/architecture/shop">shop</td>' in html
    assert 'data-href="/e/exp/a/cc01" tabindex="0"' in html


def test_a_model_call_of_tool_calls_shows_them_its_parameters_and_no_null(tmp_path):
    from sysmo.contracts.events import LLMCallEvent

    calls = [{"id": "c1", "type": "function", "function": {"name": "write_file",
                                                           "arguments": '{"path": "m.puml", "content": "@startuml"}'}}]
    event = LLMCallEvent(
        seq=0, role="generator", purpose="step", round=1, model="openai/fake", provider="openai", request_hash="h",
        messages=[{"role": "user", "content": "Draw A."}, {"role": "assistant", "content": None, "tool_calls": calls},
                  {"role": "tool", "tool_call_id": "c1", "content": "Wrote m.puml (1 lines)."}],
        params={"temperature": 0.2, "seed": 7, "tools": [{"type": "function", "function": {"name": "write_file"}}]},
        response={"text": "", "tool_calls": [{"id": "c2", "name": "run_check", "arguments": {}}],
                  "finish_reason": "tool_calls", "params_sent": {"temperature": 0.2}},
        prompt_tokens=30, completion_tokens=5, cost_usd=0.001, latency_s=1.5)
    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {"samples": 1}, {}, is_control=False)
    rounds = [Round(index=0, messages=event.messages, response="-> run_check({})")]
    store.save_attempt("exp", Attempt(id="dd01", task_id="starter/uml_class/t1", agent="openhands", model="openai/fake",
                                      status=AttemptStatus.FAILED, rounds=rounds, events=[event]), META)
    store.close()
    client = TestClient(create_app(tmp_path), base_url="http://localhost")
    (call,) = client.get("/e/exp/a/dd01/json").json()["model_calls"]
    assert call["messages"][1]["content"] == "" and call["messages"][1]["tool_calls"][0]["name"] == "write_file"
    assert call["messages"][1]["tool_calls"][0]["arguments"] == "path = m.puml\ncontent = @startuml"
    assert call["messages"][2]["tool_call_id"] == "c1"
    assert [t["name"] for t in call["reply_tool_calls"]] == ["run_check"] and call["tools"] == ["write_file"]
    params = dict(call["params"])
    assert params["temperature"] == "0.2" and params["seed"] == "7"
    assert params["reply params_sent"] == '{"temperature": 0.2}'  # a request-parameter field of the record, shown as held
    html = client.get("/e/exp/a/dd01").text
    assert "<pre>null</pre>" not in html and "→ write_file" in html and "result of c1" in html
    assert "1.50&nbsp;s" in html and "$0.0010" in html  # the unit never wraps away from its number


def test_a_check_served_from_the_tla_run_cache_says_so(tmp_path):
    """A check whose run came from the TLA+ run cache is marked on the attempt page; a check that ran is not."""
    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {"samples": 1}, {}, is_control=True)
    served = CheckResult(tool="tlc", outcome=Outcome.OK, duration_s=0.002, details={"cached": True})
    rounds = [Round(index=0, messages=[{"role": "user", "content": "Spec"}], response="x",
                    artifact=Artifact(language="tla", files={"M.tla": "---- MODULE M ----\n====\n"}),
                    check=CheckResult(tool="sany", outcome=Outcome.FAILED)),
              Round(index=1, kind="repair", messages=[{"role": "user", "content": "Fix"}], response="y",
                    artifact=Artifact(language="tla", files={"M.tla": "---- MODULE M ----\n====\n"}), check=served)]
    store.save_attempt("exp", Attempt(id="tc01", task_id="starter/tla/t", agent="base_modeling", model="reference",
                                      status=AttemptStatus.PASSED, rounds=rounds, is_control=True),
                       {"benchmark": "starter", "kind": "tla"})
    store.close()
    view = TestClient(create_app(tmp_path), base_url="http://localhost").get("/e/exp/a/tc01/json").json()
    checks = [e["detail"] for e in view["timeline"] if e["kind"] == "tool_check"]
    assert len(checks) == 2 and "run cache" not in checks[0] and checks[1].endswith("(served from the TLA+ run cache)")
    assert [r["check"]["cached"] for r in view["rounds"]] == [False, True]
