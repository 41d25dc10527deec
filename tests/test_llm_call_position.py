"""The response cache keys a call on its place in the attempt (round, role, call index): a request repeated word for
word within an attempt is asked again (metagpt's Reviewer reading the same broken model in two rounds), while a
re-run of the same attempt (``sysmo run --resume`` after a SIGKILL) asks the server nothing it already answered.
Driven by the fake OpenAI server; the agents' models checked by the real PlantUML."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from agent_scripts import fake_llm, replies_for
from agent_tasks import task_of
from fake_openai import FakeOpenAI, FakeReply, reply
from sysmo.agents.control_script import broken_artifact
from sysmo.agents.run import run_attempt
from sysmo.contracts.attempt import AttemptStatus
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.llm import LLM, ModelRoles, RoleConfig
from sysmo.llm.cache import ResponseCache
from sysmo.llm.response import CallContext
from sysmo.tools.checkers import check_artifact

USER = [{"role": "user", "content": "Write a TLA+ spec of a lock."}]
BROKEN = "```plantuml\n@startuml\nclass Book {\n  +title: String\n@enduml\n```"


def _llm(server: FakeOpenAI, tmp_path: Path) -> LLM:
    config = RoleConfig(model="openai/fake-model", api_base=server.base_url, temperature=0.7, timeout_s=30)
    return LLM(ModelRoles(generator=config), cache=ResponseCache(tmp_path / "cache.sqlite"))


def test_the_same_request_at_another_place_in_the_attempt_is_asked_again(tmp_path: Path) -> None:
    with FakeOpenAI(default=reply("an answer")) as server:
        llm = _llm(server, tmp_path)
        at = {(r, i): CallContext(attempt_id="a", round=r, call_index=i) for r in (0, 1) for i in (0, 1)}
        first = llm.complete(USER, context=at[0, 0])
        assert not first.cached and server.calls == 1
        # another call of round 0, then round 1's first call: the same words, asked each time
        assert not llm.complete(USER, context=at[0, 1]).cached and server.calls == 2
        assert not llm.complete(USER, context=at[1, 0]).cached and server.calls == 3
        # the same place again (a re-run of the attempt): answered by the cache, no HTTP call
        again = llm.complete(USER, context=at[0, 0])
        assert again.cached and again.request_hash == first.request_hash and server.calls == 3
        # another role at the same place is another call
        helper = LLM(ModelRoles(generator=llm.config("generator"), helper=llm.config("generator")),
                     cache=llm.cache)
        assert not helper.complete(USER, role="helper", context=at[0, 0]).cached and server.calls == 4
        # a call with no place (a scoring stage's judge) keeps the key it always had
        plain = llm.complete(USER)
        assert plain.request_hash == llm._request(USER, "generator", 0, None, None, None, None, None, None)[1].key(
            positioned=False)


def test_metagpts_reviewer_is_asked_anew_in_every_round_at_temperature_above_zero(tmp_path: Path) -> None:
    """The modeler's model never gets fixed, so the Reviewer reads the same model and the same diagnostics after
    rounds 0, 1 and 2: three identical requests, each of which reaches the server (a cache hit used to answer the
    second and third with the first review)."""
    task = task_of(TaskKind.UML_CLASS, tmp_path)
    with FakeOpenAI() as server:
        server.push(*replies_for("metagpt", task, [broken_artifact(task)] * 4))
        ctx = AgentContext(task=task, llm=fake_llm(server.base_url, cache=ResponseCache(tmp_path / "c.sqlite")),
                           checker=check_artifact, agent="metagpt", attempt_id="review-anew", max_rounds=3,
                           temperature=0.2)
        attempt = run_attempt("metagpt", ctx, model_name="openai/fake-model")
        reviews = [r for r in server.requests if "Reviewer" in r["messages"][0]["content"]]
    assert attempt.status == AttemptStatus.FAILED and attempt.repair_rounds == 3, attempt.error
    assert len(reviews) == 3 and len({json.dumps(r["messages"]) for r in reviews}) == 1
    assert {r["temperature"] for r in reviews} == {0.2}
    assert server.pending == 0  # every scripted reply was asked for: none answered from the cache
    review_calls = [c for rnd in attempt.rounds for c in rnd.llm_calls if c.purpose == "review"]
    assert len(review_calls) == 3 and not any(c.cached for c in review_calls)
    assert len({c.request_hash for c in review_calls}) == 3


class HoldingServer:
    """A fake server's answers: ``BROKEN`` at once, except the ``hold_at``-th request (1-based), which is held
    (never answered while the run lives) so the run can be killed with that call in flight."""

    def __init__(self, hold_at: int) -> None:
        self.hold_at = hold_at
        self.seen = 0
        self.held = threading.Event()
        self.release = threading.Event()
        self.answered: list[str] = []  # request bodies answered, in order
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> FakeReply:
        key = json.dumps(body, sort_keys=True)
        with self.lock:
            self.seen += 1
            hold = self.seen == self.hold_at
        if hold:
            self.held.set()
            self.release.wait(120)
            return reply(BROKEN)
        with self.lock:
            self.answered.append(key)
        return reply(BROKEN)


@pytest.mark.slow
def test_a_run_killed_mid_attempt_and_resumed_asks_the_server_nothing_it_answered(tmp_path: Path) -> None:
    """``sysmo run`` (a process of its own, one attempt at a time, two calls per attempt) is SIGKILLed while the
    server holds its 4th request (the second attempt's repair call); ``--resume`` re-runs that attempt from its
    start: its first call is answered by the cache, the held one is asked again, and no answered request is
    repeated."""
    out = tmp_path / "runs"
    env = {**os.environ, "SYSMO_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    script = HoldingServer(hold_at=4)
    with FakeOpenAI(default=script) as server:
        args = ["--agent", "base_modeling", "--model", "openai/fake-model", "--api-base", server.base_url,
                "--ids", "starter/uml_class/library_loans", "--samples", "3", "--max-rounds", "1",
                "--concurrency", "1", "--no-score", "--no-report", "--no-progress", "-o", str(out)]
        victim = subprocess.Popen([sys.executable, "-m", "sysmo.cli", "run", *args, "--id", "killed"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        try:
            assert script.held.wait(300), "the run never reached its 4th model call"
            assert victim.poll() is None
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
        finally:
            if victim.poll() is None:
                os.killpg(victim.pid, signal.SIGKILL)
        before = list(script.answered)
        assert len(before) == 3 and server.calls == 4
        held = json.dumps(server.requests[3], sort_keys=True)
        script.release.set()

        resumed = subprocess.run([sys.executable, "-m", "sysmo.cli", "run", "--resume", "killed", "-o", str(out),
                                  "--no-progress", "--no-report"], env=env, capture_output=True, text=True,
                                 timeout=600)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        after = [json.dumps(body, sort_keys=True) for body in server.requests[4:]]
    # 3 samples x 2 calls: the 3 answered before the kill are not asked again; the held one is, once
    assert not set(after) & set(before)
    assert after.count(held) == 1 and len(after) == 3 and len(set(before) | set(after)) == 6
    from sysmo.store import Store

    store = Store(out / "killed" / "results.sqlite")
    try:
        attempts = [store.attempt(row["id"]) for row in store.query("SELECT id FROM attempts")]
    finally:
        store.close()
    calls = [c for a in attempts for rnd in a.rounds for c in rnd.llm_calls]
    assert len(attempts) == 3 and len(calls) == 6
    # the re-run attempt's first call, answered before the kill (and any stored attempt's, if none was stored yet)
    assert sum(c.cached for c in calls) >= 1
