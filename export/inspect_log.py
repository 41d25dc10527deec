"""A stored experiment as inspect_ai eval logs (``write_eval_logs``): one ``.eval`` log per (agent, model, arm), one
sample per attempt, readable by ``inspect_ai.log.read_eval_log`` and shown by ``inspect view``.

A sample: ``id`` the task, ``epoch`` the sample index + 1 (a fork of an attempt: the task with the fork's id);
``input`` the first request; ``messages`` every model call's request and reply in order (a request that continues
the conversation adds only its new messages); ``output`` the last reply; ``scores`` the cascade's stages (a stage
with no value, skipped for want of a judge, is left out) and ``outcome`` (passed, failed, error); ``metadata`` the
attempt's id, arm, seed, rounds, tool verdicts, cost. The log's results: per stage the ``mean`` of the samples that
have a value (their count is ``scored_samples``), and ``outcome``'s ``pass_rate``: passed attempts / all the log's
attempts. Needs the optional extra ``inspect`` (inspect-ai).

>>> for log in write_eval_logs(Path("runs/exp1"), Path("inspect-logs")):
...     print(log.path, log.samples)
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.contracts.events import LLMCallEvent
from sysmo.contracts.scorecard import ScoreCard
from sysmo.errors import ConfigError
from sysmo.store import Store

INSTALL_HINT = "install the extra: pip install -e '.[inspect]' (inspect-ai)"


class InspectUnavailable(ConfigError):
    """An inspect log was asked for but the ``inspect`` extra is not installed."""


@dataclass
class WrittenLog:
    """One eval log written: where, for which (agent, model, arm), with how many samples."""

    path: Path
    agent: str
    model: str
    arm: str
    samples: int


def _inspect() -> Any:
    try:
        import inspect_ai.log as inspect_log
    except ImportError as exc:
        raise InspectUnavailable(f"inspect logs need inspect-ai, which is not installed ({exc.name}); "
                                 f"{INSTALL_HINT}") from exc
    return inspect_log


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, default=str)


def chat_message(message: dict[str, Any]) -> Any:
    """An OpenAI-format message (as sysmo records them) as inspect's ``ChatMessage``."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    role, content = message.get("role"), _text(message.get("content"))
    if role == "system":
        return ChatMessageSystem(content=content)
    if role == "assistant":
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or call
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments or "{}")
                except json.JSONDecodeError:
                    arguments = {"arguments": arguments}
            calls.append(ToolCall(id=str(call.get("id") or ""), function=str(function.get("name") or ""),
                                  arguments=arguments if isinstance(arguments, dict) else {"arguments": arguments}))
        return ChatMessageAssistant(content=content, tool_calls=calls or None)
    if role == "tool":
        return ChatMessageTool(content=content, tool_call_id=message.get("tool_call_id"),
                               function=message.get("name"))
    return ChatMessageUser(content=content)


def conversation(attempt: Attempt) -> list[dict[str, Any]]:
    """Every model call's request and reply in order, as OpenAI-format messages: a request that continues the
    conversation so far adds only its new messages. From the attempt's model-call events, else (a store written
    before events) from its rounds."""
    exchanges: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    for event in attempt.events:
        if isinstance(event, LLMCallEvent) and event.stage != "score":
            response = event.response or {}
            reply: dict[str, Any] = {"role": "assistant", "content": response.get("text") or ""}
            if event.error:
                reply["content"] = f"(the call failed: {event.error})"
            if response.get("tool_calls"):
                reply["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("name"),
                                                                       "arguments": c.get("arguments_json")}}
                                       for c in response["tool_calls"]]
            exchanges.append((list(event.messages), reply))
    if not exchanges:
        exchanges = [(list(r.messages), {"role": "assistant", "content": r.response}) for r in attempt.rounds]
    messages: list[dict[str, Any]] = []
    for request, reply in exchanges:
        continues = len(request) >= len(messages) and request[:len(messages)] == messages
        messages.extend(request[len(messages):] if continues else request)
        messages.append(reply)
    return messages


def sample_scores(attempt: Attempt, card: ScoreCard | None) -> dict[str, Any]:
    """inspect ``Score``s: one per scored stage of the card, and the attempt's ``outcome``."""
    from inspect_ai.scorer import Score

    scores = {"outcome": Score(value=attempt.status.value, explanation=attempt.failure_reason())}
    for stage in card.stages if card is not None else []:
        if not stage.scored:
            continue
        scores[stage.stage] = Score(value=stage.value, explanation=stage.skipped_because or stage.outcome,
                                    metadata={"passed": stage.passed, "outcome": stage.outcome,
                                              "metrics": dict(stage.metrics), "duration_s": stage.duration_s})
    return scores


def eval_sample(attempt: Attempt, card: ScoreCard | None, sample_id: str) -> Any:
    """The attempt as an inspect ``EvalSample``."""
    from datetime import UTC, datetime, timedelta

    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage

    messages = [chat_message(m) for m in conversation(attempt)]
    first = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    request = [m for m in messages[:first] if m.role != "system"]  # the system prompt stays in ``messages``
    last_reply = next((m.text for m in reversed(messages) if m.role == "assistant"), "")
    started = datetime.fromisoformat(attempt.started_at)
    usage: dict[str, ModelUsage] = {}
    for call in attempt.all_llm_calls():
        model = call.model or attempt.model
        seen = usage.setdefault(model, ModelUsage(total_cost=0.0))
        seen.input_tokens += call.prompt_tokens
        seen.output_tokens += call.completion_tokens
        seen.total_tokens += call.prompt_tokens + call.completion_tokens
        seen.total_cost = (seen.total_cost or 0.0) + call.cost_usd
    checks = [r.check for r in attempt.rounds if r.check is not None]
    metadata = {"attempt_id": attempt.id, "task": attempt.task_id, "agent": attempt.agent, "model": attempt.model,
                "arm": attempt.arm_label, **{f"arm.{k}": v for k, v in attempt.arm_values().items()},
                "sample": attempt.sample_index, "seed": attempt.seed, "status": attempt.status.value,
                "rounds": len(attempt.rounds), "repair_rounds": attempt.repair_rounds,
                "tool_verdicts": [f"{c.tool} {c.tool_version}: {c.outcome.value} ({len(c.diagnostics)} "
                                  "diagnostics)" for c in checks],
                "prompt_tokens": attempt.prompt_tokens, "completion_tokens": attempt.completion_tokens,
                "cost_usd": attempt.cost_usd, "spend_usd": attempt.spend_usd, "error": attempt.error,
                "parent_attempt_id": attempt.parent_attempt_id,
                "final_artifact": attempt.final_artifact.files if attempt.final_artifact else None}
    return EvalSample(
        id=sample_id, epoch=attempt.sample_index + 1, input=request or "", target="",
        messages=messages, output=ModelOutput.from_content(attempt.model, last_reply),
        scores=sample_scores(attempt, card), metadata=metadata, model_usage=usage,
        started_at=started.isoformat(), completed_at=(started + timedelta(seconds=attempt.duration_s)).isoformat(),
        total_time=attempt.duration_s, working_time=attempt.duration_s,
        error=EvalError(message=attempt.error, traceback="", traceback_ansi="")
        if attempt.status == AttemptStatus.ERROR and attempt.error else None,
        uuid=attempt.id)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def eval_log(experiment: dict[str, Any], key: tuple[str, str, str], attempts: list[tuple[Attempt, ScoreCard | None]],
             ) -> Any:
    """The eval log of one (agent, model, arm): its samples, its spec and its results."""
    from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalScore, EvalSpec,
                                EvalStats)

    from sysmo import __version__

    experiment_id = experiment["id"]
    agent, model, arm = key
    samples, taken = [], set()
    for attempt, card in attempts:
        sample_id = attempt.task_id
        if (sample_id, attempt.sample_index) in taken:  # a fork shares its parent's sample
            sample_id = f"{attempt.task_id} (attempt {attempt.id})"
        taken.add((sample_id, attempt.sample_index))
        samples.append(eval_sample(attempt, card, sample_id))
    stages: dict[str, list[float]] = {}
    cascades = {card.cascade for _, card in attempts if card is not None}
    for _, card in attempts:
        for stage in card.stages if card is not None else []:
            if stage.scored:
                stages.setdefault(stage.stage, []).append(stage.value)
    passed = sum(a.status == AttemptStatus.PASSED for a, _ in attempts)
    scores = [EvalScore(name="outcome", scorer="sysmo", scored_samples=len(attempts),
                        metrics={"pass_rate": EvalMetric(name="pass_rate", value=passed / len(attempts))})]
    scores += [EvalScore(name=stage, scorer=",".join(sorted(cascades)) or "sysmo", scored_samples=len(values),
                         unscored_samples=len(attempts) - len(values),
                         metrics={"mean": EvalMetric(name="mean", value=sum(values) / len(values))})
               for stage, values in stages.items()]
    first = attempts[0][0]
    starts = sorted(a.started_at for a, _ in attempts)
    spec = EvalSpec(
        eval_id=f"{experiment_id}-{_slug(agent)}-{_slug(model)}-{_slug(arm)}", run_id=experiment_id,
        created=experiment.get("created_at") or starts[0], task=f"sysmo/{experiment_id}",
        task_display_name=f"{experiment_id}: {agent} ({arm})", solver=agent, task_args=first.arm_values(),
        dataset=EvalDataset(name=experiment_id, samples=len({a.task_id for a, _ in attempts}),
                            sample_ids=sorted({a.task_id for a, _ in attempts})),
        model=model, config=EvalConfig(epochs=max(a.sample_index for a, _ in attempts) + 1),
        packages={"sysmo": __version__},
        metadata={"experiment": experiment_id, "agent": agent, "arm": arm, "exported_by": "sysmo export inspect"})
    usage: dict[str, Any] = {}
    for sample in samples:
        for model_name, used in sample.model_usage.items():
            usage[model_name] = usage[model_name] + used if model_name in usage else used.model_copy()
    return EvalLog(status="success", eval=spec, samples=samples,
                   results=EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=scores),
                   stats=EvalStats(started_at=starts[0], model_usage=usage,
                                   completed_at=max(s.completed_at for s in samples if s.completed_at)))


def write_eval_logs(directory: Path, out: Path) -> list[WrittenLog]:
    """One ``.eval`` log per (agent, model, arm) of the experiment stored in ``directory``, written into ``out``."""
    inspect_log = _inspect()
    experiment_id = directory.name
    store = Store(directory / "results.sqlite")
    try:
        experiment = store.experiment(experiment_id)
        groups: dict[tuple[str, str, str], list[tuple[Attempt, ScoreCard | None]]] = {}
        for row in store.query("SELECT id FROM attempts WHERE experiment_id=? ORDER BY agent, model, arm, task_id, "
                               "sample_index, id", (experiment_id,)):
            attempt = store.attempt(row["id"])
            groups.setdefault((attempt.agent, attempt.model, attempt.arm_label), []).append(
                (attempt, store.scorecard(attempt.id)))
    finally:
        store.close()
    if not groups:
        raise ConfigError(f"experiment {experiment_id} has no stored attempt to export")
    out.mkdir(parents=True, exist_ok=True)
    created = re.sub(r"[:+]", "-", str(experiment.get("created_at") or "").split(".")[0])
    written = []
    for key, attempts in groups.items():
        agent, model, arm = key
        # inspect's file names: <time>_<task>_<id>.eval (its log list reads the task from the name)
        name = "-".join(_slug(part).replace("_", "-") for part in (experiment_id, agent, model, arm))
        path = out / f"{created}_{name}_{hashlib.sha256(repr(key).encode()).hexdigest()[:12]}.eval"
        inspect_log.write_eval_log(eval_log(experiment, key, attempts), str(path))
        written.append(WrittenLog(path=path, agent=agent, model=model, arm=arm, samples=len(attempts)))
    return written
