"""The openhands agent reads the system's source through its tools: the code is not in its first prompt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import fake_llm
from agent_tasks import LOCK_COUNTER_PY, lock_counter_task
from fake_openai import FakeOpenAI, tool_reply
from sysmo.agents.run import run_attempt
from sysmo.agents.source_tools import MAX_VIEW_LINES, search_sources, view_source
from sysmo.contracts.attempt import AttemptStatus
from sysmo.contracts.events import LLMCallEvent
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact

PRICE = (1000.0, 2000.0)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_view_and_search_number_lines_and_bound_the_view() -> None:
    files = {"big.go": "\n".join(f"line {i}" for i in range(1, 1001))}
    shown = view_source(files, "big.go", 990)
    assert shown.startswith("big.go lines 990-1000 of 1000:") and shown.endswith("\n1000  line 1000")
    assert len(view_source(files, "big.go", 1, 900).splitlines()) == MAX_VIEW_LINES + 1
    assert search_sources(files, r"line 99\d$").splitlines()[0] == "big.go:990: line 990"
    with pytest.raises(KeyError, match="no source file 'x.go'; the sources are: big.go"):
        view_source(files, "x.go")


@pytest.mark.slow
def test_openhands_reads_a_source_file_through_its_tool_and_finishes(server: FakeOpenAI, tmp_path: Path) -> None:
    task = lock_counter_task(tmp_path)
    server.push(
        tool_reply(("list_source", {}), ("search_source", {"pattern": "def work"})),
        tool_reply(("view_source", {"path": "lock_counter.py", "start": 1, "end": 12})),
        tool_reply(*[("write_file", {"path": n, "content": t}) for n, t in task.references.model.files.items()],
                   ("finish", {})),  # the hand-off is checked
    )
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url, price_per_mtok=PRICE), checker=check_artifact,
                       agent="openhands", attempt_id="a1")

    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED and len(attempt.rounds) == 1
    from sysmo.contracts.agent_events import Action, AgentEventList, Observation

    events = AgentEventList.validate_python(attempt.extras["events"])
    assert [type(e) for e in events[:3]] == [Action, Observation, Observation]
    assert [e.tool for e in events if isinstance(e, Observation)][-1] == "finish"
    assert events[0].tool_calls[1].arguments == {"pattern": "def work"}
    first_prompt = "\n".join(m["content"] for m in server.requests[0]["messages"])
    assert "class LockCounter" not in first_prompt and "lock_counter.py" in first_prompt
    observed = {m["content"].split(":")[0] for m in server.requests[2]["messages"] if m["role"] == "tool"}
    assert "lock_counter.py lines 1-12 of " + str(len(LOCK_COUNTER_PY.splitlines())) in observed
    tool_text = "\n".join(m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool")
    assert "class LockCounter:" in tool_text and "lock_counter.py:" in tool_text  # view and search answered
    # every model call reaches the attempt's tokens, cost and events
    calls = [e for e in attempt.events if isinstance(e, LLMCallEvent)]
    assert len(calls) == server.calls == 3
    assert attempt.prompt_tokens == 3 * 12 and attempt.completion_tokens == 3 * 7
    assert attempt.cost_usd == pytest.approx(3 * (12 * 1000 + 7 * 2000) / 1e6)
