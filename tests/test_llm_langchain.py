"""LangChain chat models as the model (``langchain:openai/<model>``, ``langchain:<module>:<factory>``): the same
attempts, tokens, cost and scores as litellm's ``openai/<model>`` against the same server; tool calls (openhands)
and structured output (code_translation's plan) through ``bind_tools`` / ``with_structured_output``; a user's own
``BaseChatModel``; and a LangChain callback handler seeing every model call as an LLM run under its graph node."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from agent_scripts import model_reply, replies_for
from agent_tasks import lock_counter_task, text_task
from fake_openai import FakeOpenAI, reply, tool_reply
from sysmo.agents.run import run_attempt
from sysmo.contracts.attempt import AttemptStatus
from sysmo.contracts.events import LLMCallEvent
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.llm import LLM, ModelRoles, RoleConfig
from sysmo.tools.checkers import check_artifact

pytestmark = pytest.mark.usefixtures("tla_run_cache")

UML = ["starter/uml_class/library_loans"]
BROKEN = "```plantuml\n@startuml\nclass Book {\n  +title: String\n@enduml\n```"
FIXED = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\n@enduml\n```"
PRICE = [1.5, 4.0]  # USD per million input / output tokens


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))


@pytest.fixture
def server() -> Any:
    with FakeOpenAI() as fake:
        yield fake


def first_broken_then_fixed(body: dict[str, Any]) -> Any:
    """A broken diagram for a first request, the fixed one for a repair (which carries the tool's diagnostics)."""
    repairing = sum(m.get("role") == "user" for m in body["messages"]) > 1
    return reply(FIXED if repairing else BROKEN, usage=(40 + len(body["messages"]), 20))


def run_through(model: str, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """The scripted experiment (a task, two samples, two temperatures) through ``model``: per attempt what it
    recorded, and the request bodies the server received."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    with FakeOpenAI(default=first_broken_then_fixed) as fake:
        config = ExperimentConfig(
            id="same", output_dir=tmp_path / model.replace("/", "_").replace(":", "_"), agents=["base_modeling"],
            models=[{"model": model, "api_base": fake.base_url, "price_per_mtok": PRICE}], samples=2,
            temperature=[0.2, 0.7], max_tokens=900, concurrency=1, checkpoints="none",
            tasks=TaskSelection(benchmarks=["starter"], ids=UML))
        summary = run_experiment(config, progress=False)
        bodies = [{k: v for k, v in b.items() if k != "stream"} for b in fake.requests]
    store = Store(config.output_dir / "same" / "results.sqlite")
    try:
        rows = []
        for attempt in sorted(store.attempts("same"), key=lambda a: (a.task_id, a.sample_index, a.temperature)):
            calls = [e for e in store.events(attempt.id) if isinstance(e, LLMCallEvent)]
            card = store.scorecard(attempt.id)
            rows.append({"task": attempt.task_id, "sample": attempt.sample_index, "temperature": attempt.temperature,
                         "seed": attempt.seed, "status": attempt.status, "rounds": len(attempt.rounds),
                         "passed": [r.passed for r in attempt.rounds], "prompt_tokens": attempt.prompt_tokens,
                         "completion_tokens": attempt.completion_tokens, "cost_usd": attempt.cost_usd,
                         "score": card.flat() if card else None, "params": [c.params for c in calls],
                         "messages": [c.messages for c in calls], "providers": {c.provider for c in calls}})
    finally:
        store.close()
    return rows, bodies, summary


def test_the_same_experiment_through_litellm_and_langchain_gives_the_same_attempts(tmp_path: Path) -> None:
    through_litellm, litellm_bodies, litellm_summary = run_through("openai/fake-model", tmp_path)
    through_langchain, langchain_bodies, langchain_summary = run_through("langchain:openai/fake-model", tmp_path)

    assert len(through_litellm) == 4  # 2 samples x 2 temperatures
    assert {r["status"] for r in through_litellm} == {AttemptStatus.PASSED}
    assert all(r["passed"] == [False, True] for r in through_litellm)  # a repair round: the loop ran
    assert through_litellm[0]["prompt_tokens"] > 0 and through_litellm[0]["cost_usd"] > 0
    assert through_litellm[0]["score"]  # scored
    for by_litellm, by_langchain in zip(through_litellm, through_langchain, strict=True):
        assert by_litellm.pop("providers") == {"openai"} and by_langchain.pop("providers") == {"langchain/openai"}
        assert by_langchain == by_litellm
    # the per-sample seed and the arm's temperature were sent, and recorded as sent
    assert all(call["seed"] == row["seed"] and call["temperature"] == row["temperature"] and call["max_tokens"] == 900
               for row in through_langchain for call in row["params"])
    assert langchain_bodies == litellm_bodies  # the same requests reached the server (stream=false aside)
    assert langchain_summary.tokens == litellm_summary.tokens > 0
    assert langchain_summary.cost_usd == pytest.approx(litellm_summary.cost_usd) and langchain_summary.cost_usd > 0


def langchain_llm(base_url: str, **role: Any) -> LLM:
    config = RoleConfig(model="langchain:openai/fake-model", api_base=base_url, retry_initial_s=0.01,
                        retry_max_s=0.05, max_retries=2, timeout_s=30, **role)
    return LLM(ModelRoles(generator=config), cache=False)


def test_openhands_tool_calls_work_through_the_langchain_model(server: FakeOpenAI, tmp_path: Path) -> None:
    task = text_task(TaskKind.SYSML)
    server.push(tool_reply(("read_file", {"path": "missing.sysml"})),
                *replies_for("openhands", task, [task.references.model]))
    ctx = AgentContext(task=task, llm=langchain_llm(server.base_url), checker=check_artifact, agent="openhands")

    attempt = run_attempt("openhands", ctx, model_name="langchain:openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert server.requests[0]["tools"] and {t["function"]["name"] for t in server.requests[0]["tools"]} >= {
        "write_file", "read_file", "run_check"}
    # the tool call went back to the model as the assistant's call and the tool's observation
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert second[-1]["role"] == "tool" and "missing.sysml" in second[-1]["content"]
    assert attempt.final_artifact is not None and attempt.final_artifact.files == task.references.model.files


def test_code_translation_plan_is_structured_output_through_the_langchain_model(server: FakeOpenAI,
                                                                                tmp_path: Path) -> None:
    task = lock_counter_task(tmp_path)
    plan = {"operators": [{"name": "Acquire", "role": "action"}], "state_variables": ["lock", "counter"],
            "dropped_variables": [], "atomic_steps": [], "notes": ["keep the counter"]}
    draft = "```tla\n" + task.references.model.files["LockCounter.tla"] + "```"
    server.push(reply(draft), reply(json.dumps(plan)), model_reply("code_translation", task.references.model))
    ctx = AgentContext(task=task, llm=langchain_llm(server.base_url), checker=check_artifact,
                       agent="code_translation")

    attempt = run_attempt("code_translation", ctx, model_name="langchain:openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert server.requests[1]["response_format"]["type"] == "json_schema"
    assert server.requests[1]["response_format"]["json_schema"]["name"] == "AbstractionPlan"
    assert attempt.extras["abstraction"]["state_variables"] == ["lock", "counter"]
    assert attempt.extras["abstraction_error"] is None
    assert [c.purpose for c in attempt.rounds[0].llm_calls] == ["translate", "abstract", "generate"]


CHAT_MODULE = '''
"""A user's own LangChain chat model: answers from a script, reports its usage, takes a temperature (no seed)."""
import asyncio
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

SEEN: list[dict[str, Any]] = []
REPLIES: list[str] = []
DELAY_S: list[float] = []  # how long an asynchronous call waits before it answers
ASKED: list[int] = []  # one entry per asynchronous call started


class ScriptedChat(BaseChatModel):
    temperature: float | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        SEEN.append({"temperature": self.temperature, "kwargs": kwargs, "messages": len(messages)})
        message = AIMessage(content=REPLIES.pop(0), usage_metadata={"input_tokens": 100, "output_tokens": 10,
                                                                    "total_tokens": 110})
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        ASKED.append(1)
        await asyncio.sleep(DELAY_S[0] if DELAY_S else 0)
        return self._generate(messages, stop, None, **kwargs)


def chat() -> ScriptedChat:
    return ScriptedChat()
'''


def test_a_chat_model_from_a_users_factory_runs_an_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_chat_models.py").write_text(textwrap.dedent(CHAT_MODULE))
    monkeypatch.chdir(tmp_path)  # found in the working directory, as a user's file would be
    monkeypatch.delitem(sys.modules, "my_chat_models", raising=False)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    task = text_task(TaskKind.UML_CLASS)
    config = RoleConfig(model="langchain:my_chat_models:chat", price_per_mtok=PRICE)
    llm = LLM(ModelRoles(generator=config), cache=False)
    ctx = AgentContext(task=task, llm=llm, checker=check_artifact, agent="base_modeling", temperature=0.3, seed=11)
    llm.validate()  # builds the provider: imports the module from the working directory
    module = importlib.import_module("my_chat_models")
    module.REPLIES.extend([BROKEN, model_reply("base_modeling", task.references.model).text or ""])

    attempt = run_attempt("base_modeling", ctx, model_name=config.model)

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert len(attempt.rounds) == 2 and [s["temperature"] for s in module.SEEN] == [0.3, 0.3]
    assert all("seed" not in s["kwargs"] for s in module.SEEN)
    assert attempt.prompt_tokens == 200 and attempt.completion_tokens == 20
    assert attempt.cost_usd == pytest.approx((200 * PRICE[0] + 20 * PRICE[1]) / 1e6)
    calls = [e for e in attempt.events if isinstance(e, LLMCallEvent)]
    # asked for both; recorded as received: the temperature it has a field for, the seed it cannot take dropped
    assert [c.params for c in calls] == [{"temperature": 0.3, "seed": 11}] * 2
    assert [(c.sent_params["sent"], list(c.sent_params["dropped"])) for c in calls] == [({"temperature": 0.3},
                                                                                         ["seed"])] * 2
    assert {c.provider for c in calls} == {"langchain/scripted"}  # LangChain's name for the model's provider


def test_a_factory_models_async_call_stops_at_its_deadline_and_a_tool_agent_needs_bind_tools(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from sysmo.llm import LLMCallError

    (tmp_path / "slow_chat_models.py").write_text(textwrap.dedent(CHAT_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("slow_chat_models")
    config = RoleConfig(model="langchain:slow_chat_models:chat", timeout_s=0.3, max_retries=1, retry_initial_s=0.01)
    llm = LLM(ModelRoles(generator=config), cache=False)
    module.DELAY_S.append(30.0)
    module.REPLIES.extend(["late", "late"])
    with pytest.raises(LLMCallError, match="did not answer within its deadline of 0.3 s") as raised:
        asyncio.run(llm.acomplete(USER))
    assert len(module.ASKED) == 2  # a timeout is retried, then reported

    module.DELAY_S.clear()
    answer = llm.complete(USER, temperature=0.9)  # a synchronous call (the judge's and helper's way) as well
    assert answer.text == "late" and module.SEEN[-1]["temperature"] == 0.9 and answer.usage.prompt_tokens == 100
    task = text_task(TaskKind.UML_CLASS)
    ctx = AgentContext(task=task, llm=llm, checker=check_artifact, agent="openhands")
    attempt = run_attempt("openhands", ctx, model_name=config.model)
    assert attempt.status == AttemptStatus.ERROR
    assert "cannot call tools" in (attempt.error or "")


def test_an_unknown_langchain_name_or_factory_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    from sysmo.errors import ConfigError, UnknownNameError

    (tmp_path / "not_models.py").write_text("def chat():\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, error, words in [("langchain:nope", UnknownNameError, "langchain:openai/<model>"),
                               ("langchain:no_such_module_here:chat", UnknownNameError, "cannot import"),
                               ("langchain:not_models:missing", UnknownNameError, "has no 'missing'"),
                               ("langchain:not_models:chat", ConfigError, "not a LangChain chat model")]:
        with pytest.raises(error) as raised:
            LLM(ModelRoles(generator=name), cache=False).validate()
        assert words in str(raised.value), (name, str(raised.value))


class RunRecorder:
    """A LangChain callback handler recording every run's id, parent, kind and name (as a tracer would)."""

    def __init__(self) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        recorder = self
        self.runs: dict[UUID, dict[str, Any]] = {}

        class Handler(BaseCallbackHandler):
            def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                               metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
                recorder.runs[run_id] = {"kind": "chain", "parent": parent_run_id, "name": kwargs.get("name"),
                                         "node": (metadata or {}).get("langgraph_node")}

            def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                                    parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                                    **kwargs: Any) -> None:
                recorder.runs[run_id] = {"kind": "llm", "parent": parent_run_id, "name": (serialized or {}).get("name"),
                                         "purpose": (metadata or {}).get("sysmo_purpose")}

        self.handler = Handler()

    def chain(self, run_id: UUID) -> list[dict[str, Any]]:
        """The run and its ancestors, innermost first."""
        out = []
        while run_id in self.runs:
            out.append(self.runs[run_id])
            run_id = self.runs[run_id]["parent"]
        return out


TRACER: ContextVar[Any] = ContextVar("sysmo_test_tracer", default=None)


def test_a_langchain_callback_handler_sees_each_model_call_under_the_graph_node_that_made_it(
        server: FakeOpenAI, tmp_path: Path) -> None:
    from langchain_core.tracers.context import register_configure_hook

    # how LangSmith's and other tracers attach to every run: a configure hook reading a context variable
    register_configure_hook(TRACER, inheritable=True)
    recorder = RunRecorder()
    task = text_task(TaskKind.UML_CLASS)
    server.push(reply(BROKEN), model_reply("base_modeling", task.references.model))
    ctx = AgentContext(task=task, llm=langchain_llm(server.base_url), checker=check_artifact, agent="base_modeling")
    token = TRACER.set(recorder.handler)
    try:
        attempt = run_attempt("base_modeling", ctx, model_name="langchain:openai/fake-model")
    finally:
        TRACER.reset(token)

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    llm_runs = [run_id for run_id, run in recorder.runs.items() if run["kind"] == "llm"]
    assert len(llm_runs) == server.calls == 2  # one LLM run per model call
    for run_id, purpose in zip(llm_runs, ["generate", "repair"], strict=True):
        chain = recorder.chain(run_id)
        assert chain[0]["purpose"] == purpose and chain[0]["name"] == "ChatOpenAI"
        assert chain[1]["kind"] == "chain" and chain[1]["node"] == "generate"  # the node that made the call
        assert chain[-1]["parent"] is None and chain[-1]["name"] == "LangGraph"  # ... inside the graph's run


# --- the client's contract through ChatOpenAI: deadline, reply cap, malformed replies, retries, cache, budget ------
USER = [{"role": "user", "content": "Write a TLA+ spec of a spinlock."}]


def guarded_llm(server: FakeOpenAI, cache: Any = False, **settings: Any) -> LLM:
    from sysmo.llm import ConcurrencyLimits

    config = RoleConfig(model="langchain:openai/fake-model", api_base=server.base_url, retry_initial_s=0.01,
                        retry_max_s=0.05, price_per_mtok=(1.0, 1.0), **settings)
    return LLM(ModelRoles(generator=config), cache=cache, limits=ConcurrencyLimits())


def refused(call: Any) -> tuple[Any, LLMCallEvent]:
    from sysmo.contracts.events import EventLog, collecting
    from sysmo.llm import LLMCallError

    with collecting(EventLog()) as log:
        with pytest.raises(LLMCallError) as caught:
            call()
    (event,) = log.llm_calls()
    return caught.value, event


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_dripping_server_holds_a_langchain_call_no_longer_than_its_deadline(server: FakeOpenAI, mode: str) -> None:
    import asyncio
    import time

    from fake_openai import drip

    server.push(reply("warm"), drip(reply("a" * 200), every_s=0.1))
    client = guarded_llm(server, timeout_s=2.0)
    client.complete([{"role": "user", "content": "warm up"}])
    start = time.monotonic()
    error, event = refused(lambda: client.complete(USER) if mode == "sync" else asyncio.run(client.acomplete(USER)))
    assert time.monotonic() - start < 2.0 + 8.0
    assert error.error_class == "DeadlineExceeded" and server.calls == 2  # a drip is not retried
    assert event.completion_tokens > 0 and event.cost_usd > 0  # what arrived before the deadline is counted


def test_a_flood_is_cut_at_the_cap_through_langchain_and_still_charged(server: FakeOpenAI) -> None:
    from fake_openai import flood

    server.push(flood(200_000_000))
    error, event = refused(lambda: guarded_llm(server, max_reply_chars=10_000).complete(USER))
    assert error.error_class == "ReplyTooLarge"
    assert sum(server.bytes_sent) < 20_000_000  # the client hung up near its cap, not at 200 MB
    assert event.completion_tokens >= 10_000 // 4 and event.cost_usd > 0


def test_a_langchain_reply_over_the_character_cap_is_refused_and_charged_its_usage(server: FakeOpenAI) -> None:
    server.push(reply("b" * 5_000, usage=(10, 1_000_000)))
    error, event = refused(lambda: guarded_llm(server, max_reply_chars=1_000).complete(USER))
    assert error.error_class == "ReplyTooLarge"  # the client's shared check, after the provider's answer
    assert (event.prompt_tokens, event.completion_tokens) == (10, 1_000_000)
    assert event.cost_usd == pytest.approx(1.00001)


def test_a_langchain_200_reply_that_is_not_json_is_recorded_as_malformed(server: FakeOpenAI) -> None:
    from fake_openai import FakeReply

    server.push(FakeReply(raw_body='{"id": "x", "choices": [{"message": '))
    error, event = refused(lambda: guarded_llm(server).complete(USER))
    assert error.error_class == "MalformedReply" and event.error_type == "MalformedReply"


def test_a_reply_without_usage_is_counted_by_the_same_tokenizer_through_both_providers() -> None:
    counted = {}
    for model in ("openai/fake-model", "langchain:openai/fake-model"):
        with FakeOpenAI() as fake:
            fake.push(reply("MODULE Spinlock\nVARIABLE lock\n====", usage=(0, 0)))
            config = RoleConfig(model=model, api_base=fake.base_url, price_per_mtok=(1.0, 1.0))
            answer = LLM(ModelRoles(generator=config), cache=False).complete(USER)
        counted[model] = (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.estimated)
    assert counted["langchain:openai/fake-model"] == counted["openai/fake-model"]
    assert counted["openai/fake-model"][0] > 0 and counted["openai/fake-model"][2]


def test_langchain_calls_are_retried_then_cached(server: FakeOpenAI, tmp_path: Path) -> None:
    from fake_openai import http_error

    server.push(http_error(429, "slow down"), http_error(500), reply("after two retries", usage=(30, 5)))
    client = guarded_llm(server, cache=tmp_path / "cache.sqlite")
    first = client.complete(USER, sample_index=1)
    assert first.text == "after two retries" and first.attempts == 3 and server.calls == 3
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (30, 5) and first.cost_usd > 0
    again = client.complete(USER, sample_index=1)
    assert again.cached and again.text == first.text and again.spend_usd == 0 and server.calls == 3


def test_a_token_cap_counts_langchain_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import Budget, ExperimentConfig, run_experiment

    with FakeOpenAI(default=reply(FIXED, usage=(40, 20))) as fake:  # 60 tokens per call
        config = ExperimentConfig(
            id="cap", output_dir=tmp_path, agents=["base_modeling"], samples=3, score=False, concurrency=1,
            models=[{"model": "langchain:openai/fake-model", "api_base": fake.base_url}], checkpoints="none",
            budget=Budget(max_tokens=100), tasks=TaskSelection(benchmarks=["starter"], ids=UML))
        summary = run_experiment(config, progress=False)
        assert summary.stopped and "token cap reached" in summary.stopped
        assert summary.ran == 2 and summary.tokens == 120 == fake.calls * 60
