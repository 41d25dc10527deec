"""One cap on everything a reply carries: content, tool-call names and arguments, and reasoning count toward
``max_reply_chars``. Before, an openhands reply with empty content and six ``write_file`` calls of 2 MB each was
accepted, re-sent in each later request, and results.sqlite grew to 92 MB for one attempt. A workspace file and the
workspace have their own caps, and the conversation sent back to the model is bounded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from agent_scripts import fake_llm
from agent_tasks import text_task
from fake_openai import FakeOpenAI, FakeReply, tool_reply
from sysmo.agents.history import MAX_HISTORY_CHARS, bounded_history, history_chars
from sysmo.agents.run import run_attempt
from sysmo.contracts.events import EventLog, collecting
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.llm import LLM, ConcurrencyLimits, LLMCallError, ModelRoles, RoleConfig
from sysmo.tools.checkers import check_artifact

USER = [{"role": "user", "content": "Write a diagram."}]
TWO_MB = "x" * 2_000_000


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _client(server: FakeOpenAI, **settings: Any) -> LLM:
    config = RoleConfig(model="openai/fake-model", api_base=server.base_url, max_retries=0,
                        price_per_mtok=(1.0, 1.0), **settings)
    return LLM(ModelRoles(generator=config), cache=False, limits=ConcurrencyLimits())


def _six_writes() -> FakeReply:
    return tool_reply(*[("write_file", {"path": f"f{i}.puml", "content": TWO_MB}) for i in range(6)], text="",
                      usage=(50, 3_000_000))


def test_tool_call_arguments_count_toward_the_reply_cap(server):
    server.push(_six_writes())
    with collecting(EventLog()) as log, pytest.raises(LLMCallError) as caught:
        _client(server).complete(USER)  # the default cap: 2,000,000 characters
    assert caught.value.error_class == "ReplyTooLarge"
    assert "0 of content" not in str(caught.value) and "in tool calls), more than the cap of 2,000,000" in str(
        caught.value)
    (event,) = log.llm_calls()
    assert event.response is None and event.completion_tokens == 3_000_000  # not kept, and charged its usage


def test_reasoning_text_counts_toward_the_reply_cap(server):
    body = {"id": "r1", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok", "reasoning_content": "think " * 1_000}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1_500, "total_tokens": 1_505}}
    server.push(FakeReply(raw_body=json.dumps(body)))
    with pytest.raises(LLMCallError, match=r"6,002 characters \(2 of content, 6,000 of reasoning\)"):
        _client(server, max_reply_chars=5_000).complete(USER)


def test_the_issues_reply_ends_the_attempt_and_the_store_stays_small(server, tmp_path, monkeypatch):
    """The reply from the attack (six 2 MB write_file calls, empty content) is refused at the first step: nothing
    is written, nothing re-sent, and the experiment's store stays small (it grew to 92 MB)."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    server.default = _six_writes()
    model = {"model": "openai/fake-model", "api_base": server.base_url, "max_retries": 0, "cache": False}
    config = ExperimentConfig(id="big", output_dir=tmp_path / "runs", agents=["openhands"], models=[model],
                              samples=1, score=False, concurrency=1,
                              tasks=TaskSelection(benchmarks=["starter"], ids=["starter/uml_class/library_loans"]))
    run_experiment(config, progress=False)
    folder = tmp_path / "runs" / "big"
    store = Store(folder / "results.sqlite")
    try:
        [row] = store.query("SELECT status, error FROM attempts")
    finally:
        store.close()
    assert row["status"] == "error" and "more than the cap of 2,000,000" in row["error"]
    assert server.calls == 1
    stored = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert stored < 3_000_000, f"the experiment folder holds {stored:,} bytes"


def test_a_workspace_file_and_the_workspace_have_their_own_caps(server, tmp_path):
    """A 1.5 MB file is refused (1 MB per file), and five files of 0.9 MB fill the workspace's 4 MB at the
    fifth; the model is told each time."""
    task = text_task(TaskKind.ARCHITECTURE)
    diagram = task.references.model.main_text
    big = "y" * 900_000
    server.push(tool_reply(("write_file", {"path": "huge.puml", "content": "z" * 1_500_000})),
                tool_reply(*[("write_file", {"path": f"part{i}.txt", "content": big}) for i in range(5)]),
                tool_reply(("write_file", {"path": "diagram.puml", "content": diagram})))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url, max_reply_chars=5_000_000), checker=check_artifact,
                       agent="openhands", attempt_id="caps", workspace_dir=tmp_path / "ws", max_steps=3)
    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")
    told = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert told[0] == ("Error: the content is larger than 1,000,000 bytes (the cap of one workspace file); "
                       "write the model only")
    assert told[5] == ("Error: the workspace would hold more than 4,000,000 bytes (its other files hold "
                       "3,600,000); write the model only")
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["diagram.puml", *[f"part{i}.txt" for i in range(4)]]
    assert attempt.final_artifact.files == {"diagram.puml": diagram}


def test_the_conversation_sent_back_is_bounded(server, tmp_path):
    """Each of the first five steps writes a new 300k-character file: unbounded, the sixth request would carry 1.5M
    characters of old arguments; each request stays under the cap, the newest arguments whole, older ones elided.
    The sixth step writes the diagram, the attempt's artifact (a 300k-character run of one letter as the diagram
    keeps PlantUML busy past the check's 30 s time-out)."""
    task = text_task(TaskKind.ARCHITECTURE)
    for i in range(5):
        server.push(tool_reply(("write_file", {"path": f"notes{i}.txt", "content": chr(97 + i) * 300_000})))
    server.push(tool_reply(("write_file", {"path": "diagram.puml", "content": task.references.model.main_text})))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="openhands",
                       attempt_id="history", workspace_dir=tmp_path / "ws", max_steps=6, max_rounds=1)
    run_attempt("openhands", ctx, model_name="openai/fake-model")
    assert server.calls == 6
    sizes = [history_chars(r["messages"]) for r in server.requests]
    assert max(sizes) <= MAX_HISTORY_CHARS and sizes[-1] > 300_000, sizes
    last = server.requests[-1]["messages"]
    arguments = [c["function"]["arguments"] for m in last for c in m.get("tool_calls") or []]
    assert len(arguments) == 5 and "eeee" in arguments[-1]  # the newest write whole
    assert all("characters elided from the conversation; if this was a file's content, read_file shows the file"
               in a for a in arguments[:-1])


def test_bounding_keeps_the_system_prompt_the_task_and_what_fits():
    small = [{"role": "system", "content": "s"}, {"role": "user", "content": "t" * 5_000},
             {"role": "tool", "tool_call_id": "1", "content": "o" * 5_000}]
    assert bounded_history(small, 20_000) is small
    cut = bounded_history(small, 6_000)
    assert cut[:2] == small[:2] and cut[2]["content"].endswith("elided from the conversation; call the tool again "
                                                                "to see it]")
    assert history_chars(cut) <= 6_000
