"""The openhands agent's tools are bounded whatever the model asks: a regular expression that makes a backtracking
engine run for years (``(.|.)*!!!`` froze a run at 100% of a core, past ``--attempt-timeout``) is searched in linear
time, a search still going after its time stops and says so, answers are cut, and ``--attempt-timeout`` ends an
attempt whose model keeps its tools busy: the attempt is stored with the limit as its reason and the run goes on."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Iterator

import pytest
from fake_openai import FakeOpenAI, tool_reply
from sysmo.agents.source_tools import MAX_ANSWER_CHARS, search_sources, view_source

CATASTROPHIC = "(.|.)*!!!"  # Python's re: 2^n paths on a line of n characters without "!!!"


def _in_thread(fn, *args, wait_s: float = 60.0) -> str:
    """``fn(*args)``, which must end within ``wait_s`` (a bound on a hang, not a speed figure)."""
    out: list[str] = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)), daemon=True)
    worker.start()
    worker.join(wait_s)
    assert not worker.is_alive(), f"{fn.__name__} still running after {wait_s:g} s"
    return out[0]


def test_the_catastrophic_pattern_is_searched_in_linear_time():
    sources = {"lock.py": ("x = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'\n" * 2_000) + "done = '!!!'\n"}
    assert _in_thread(search_sources, sources, CATASTROPHIC) == "lock.py:2001: done = '!!!'"


def test_a_pattern_outside_re2_is_searched_as_plain_text():
    answer = _in_thread(search_sources, {"a.py": "(x)\\1 here\n"}, r"(x)\1")
    assert answer == "(not a regular expression RE2 accepts: searched as plain text)\na.py:1: (x)\\1 here"


def test_a_search_past_its_time_stops_and_says_so():
    answer = search_sources({"big.py": "y = 1\n" * 5_000}, "nothing", time_s=0.0)
    assert answer == ("No line matches 'nothing'.\n(the search stopped after 0 s; the matches found so far are shown: "
                      "narrow the pattern)")


def test_answers_are_cut_however_long_the_lines():
    sources = {"min.js": "var a=1;" * 200_000 + "\n", "many.py": "hit\n" * 10_000}
    viewed = view_source(sources, "min.js")
    assert len(viewed) < 1_000 and "[1,600,000 characters]" in viewed
    found = search_sources(sources, "a=1|hit")
    assert len(found) <= MAX_ANSWER_CHARS + 100 and "(9951 more matches not shown)" in found
    assert _in_thread(search_sources, sources, "x" * 2_000).startswith("Error: the pattern is 2,000 characters long")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_the_attempt_timeout_ends_an_attempt_whose_model_keeps_its_tools_busy(server, tmp_path, monkeypatch):
    """The model asks for the catastrophic search at every step (each reply 0.3 s apart, 33 steps allowed): each
    search answers at once, and the 4 s attempt limit ends each attempt, stored with the limit as its reason;
    the run goes on to its second attempt and ends on its own. (A 2 s limit let a loaded machine end the first
    attempt before its second request: what the model was told could not be read.)"""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    server.default = tool_reply(("search_source", {"pattern": CATASTROPHIC}),
                                ("search_source", {"pattern": CATASTROPHIC}), delay_s=0.3)
    model = {"model": "openai/fake-model", "api_base": server.base_url, "max_retries": 0, "cache": False}
    config = ExperimentConfig(id="busy", output_dir=tmp_path / "runs", agents=["openhands"], models=[model],
                              samples=2, score=False, concurrency=1, max_rounds=[10], attempt_timeout=4.0,
                              tasks=TaskSelection(benchmarks=["starter"], ids=["starter/tla/spinlock"]))
    summary = run_experiment(config, progress=False)

    assert summary.stopped is None
    store = Store(tmp_path / "runs" / "busy" / "results.sqlite")
    try:
        rows = store.query("SELECT status, error FROM attempts")
    finally:
        store.close()
    assert len(rows) == 2
    assert all(r["error"].startswith("attempt wall-clock limit of 4 s (--attempt-timeout) reached") for r in rows)
    assert 2 <= server.calls < 2 * 33  # a few steps each, not the 33 a step budget alone allows
    answered = [r for r in server.requests if any(m["role"] == "tool" for m in r["messages"])]
    assert answered, "no request carried the searches' results"
    told = [m["content"] for m in answered[0]["messages"] if m["role"] == "tool"]
    assert told == [f"No line matches {CATASTROPHIC!r}."] * 2


@pytest.mark.slow
def test_a_step_still_running_at_the_time_limit_stops_before_its_next_tool_call(server, tmp_path):
    """One reply asks for eight searches of 3M lines (each stopped at its own 2 s) and then a write: the 6 s limit
    ends the attempt during the searches, and the step, left running in its worker thread, makes no other tool
    call: the write never happens (before, the thread went on searching and wrote it)."""
    from agent_scripts import fake_llm
    from agent_tasks import text_task
    from fake_openai import reply
    from sysmo.agents import openhands
    from sysmo.agents.run import run_attempt
    from sysmo.contracts.task import TaskKind
    from sysmo.graphs.context import AgentContext
    from sysmo.tools.checkers import check_artifact

    task = text_task(TaskKind.ARCHITECTURE)
    task = task.model_copy(update={"inputs": task.inputs.model_copy(
        update={"source_files": {"big.py": "a = 1\n" * 3_000_000}})})
    server.push(reply("warm"), tool_reply(*[("search_source", {"pattern": "never there"})] * 8,
                                          ("write_file", {"path": "late.puml", "content": "@startuml\n@enduml\n"})))
    llm = fake_llm(server.base_url)
    llm.complete([{"role": "user", "content": "warm up"}])  # litellm's first call sets itself up for seconds
    root = tmp_path / "ws"
    ctx = AgentContext(task=task, llm=llm, checker=check_artifact, agent="openhands", attempt_id="late",
                       workspace_dir=root, time_limit_s=6.0)
    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")
    assert attempt.error.startswith("attempt wall-clock limit of 6 s (--attempt-timeout) reached in graph step 'act'")
    # the step's thread ends (within its current search's 2 s, or after the eight searches and the write had it
    # gone on): only then is the absent write a fact
    deadline = time.monotonic() + 60.0
    while _threads_running(openhands.act) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _threads_running(openhands.act), "the step still ran 60 s after the attempt's limit"
    assert not (root / "late.puml").exists()


def _threads_running(function) -> list[int]:
    """The threads with ``function`` on their stack."""
    code = function.__code__
    return [ident for ident, frame in sys._current_frames().items()
            if any(f.f_code is code for f, _ in traceback.walk_stack(frame))]
