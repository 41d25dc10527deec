"""``mockllm/<name>``: scripted answers from a YAML/JSON file, for tests and the offline demo (labelled).

Script format (YAML or JSON; a bare list is the ``responses``; a bare string item is a text)::

    mode: repeat_last            # when the matching answers run out: repeat_last | cycle | strict
    responses:
      - text: "```tla\\n---- MODULE Spin ----\\n...\\n====\\n```"
      - when: {task: starter/tla/spinlock, round: 2}   # also: role, agent, sample, purpose, last_user (a regex)
        text: "the repaired model ..."
      - tool_calls: [{name: write_file, arguments: {path: Spin.tla, content: "..."}}]
      - error: "simulated provider failure"        # raises LLMError

Each call takes the first unused answer whose ``when`` matches (no ``when`` matches every call).
``mockllm/<name>`` finds its script at ``RoleConfig.script``, else at the path ``<name>``, else at
``$SYSMO_MOCKLLM_DIR/<name>.yaml|.yml|.json`` (default ``<settings().home>/mockllm``), else a script built
in code and registered by name (``register_script``: the agents package registers ``control``, the offline
control experiment's script, so this layer never imports the agents).
``mockllm/default`` without a file answers "Default output from mockllm/default." to every call.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator
from sysmo.errors import ConfigError, LLMError, UnknownNameError
from sysmo.llm.request import LLMRequest
from sysmo.llm.response import LLMResponse, ToolCall

CONTROL_NOTE = "offline control provider: no model was called and nothing was spent"


def control_response(request: LLMRequest, *, model: str, provider: str, text: str,
                     tool_calls: list[ToolCall]) -> LLMResponse:
    """The answer of an offline control provider: free, labelled as a control."""
    return LLMResponse(text=text, tool_calls=tool_calls, finish_reason="tool_calls" if tool_calls else "stop",
                       model=model, served_model=model, provider=provider, is_control=True, role=request.role,
                       sample_index=request.sample_index, cost_note=CONTROL_NOTE)


class MockCondition(BaseModel):
    """When an answer applies; every given field must match."""

    task: str | None = None
    round: int | None = None
    role: str | None = None
    agent: str | None = None
    sample: int | None = None
    last_user: str | None = None  # regex searched in the last user message
    purpose: str | None = None  # the agent's step (CallContext.purpose), e.g. "translate", "review"

    def matches(self, request: LLMRequest) -> bool:
        ctx = request.context
        checks = [
            (self.task, ctx.task_id if ctx else None),
            (self.round, ctx.round if ctx else None),
            (self.agent, ctx.agent if ctx else None),
            (self.purpose, ctx.purpose if ctx else None),
            (self.role, request.role),
            (self.sample, request.sample_index),
        ]
        if any(want is not None and want != got for want, got in checks):
            return False
        return self.last_user is None or re.search(self.last_user, request.last_user_text(), re.S) is not None


class MockAnswer(BaseModel):
    text: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)  # {name, arguments, id?}
    error: str | None = None
    when: MockCondition | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return {"text": value} if isinstance(value, str) else value


class MockScript(BaseModel):
    mode: Literal["repeat_last", "cycle", "strict"] = "repeat_last"
    responses: list[MockAnswer] = Field(default_factory=list)
    # a script built in code may answer tasks it was not built with: the answers for one more task and agent
    # (given the call's ``CallContext.task`` and ``.agent``, None when the call names no agent), made at their
    # first call; the control script makes every task's answers this way. Not part of a script file.
    extend: Callable[[Any, str | None], list[MockAnswer]] | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        return {"responses": value} if isinstance(value, list) else value

    @classmethod
    def load(cls, path: Path) -> MockScript:
        try:
            text = path.read_text()
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
            return cls.model_validate(data)
        except (OSError, yaml.YAMLError, json.JSONDecodeError, ValidationError) as exc:
            raise ConfigError(
                f"mockllm script {path} is not a valid script ({exc}); see the format in sysmo/llm/mockllm.py"
            ) from exc


def mock_dir() -> Path:
    from sysmo.config import settings

    return Path(os.environ.get("SYSMO_MOCKLLM_DIR") or settings().home / "mockllm")


# scripts built in code when no file of that name exists: name -> a function returning the MockScript
BUILT_IN_SCRIPTS: dict[str, Callable[[], MockScript]] = {}


def register_script(name: str, build: Callable[[], MockScript]) -> None:
    """``mockllm/<name>`` answers from ``build()`` when no script file of that name exists (a script whose
    ``extend`` is set also answers the tasks it was not built with)."""
    BUILT_IN_SCRIPTS[name] = build


def find_script(name: str, explicit: Path | None = None) -> MockScript:
    if explicit is not None:
        return MockScript.load(Path(explicit))
    candidates = [Path(name)] + [mock_dir() / f"{name}{suffix}" for suffix in (".yaml", ".yml", ".json")]
    for path in candidates:
        if path.is_file():
            return MockScript.load(path)
    if name in BUILT_IN_SCRIPTS:
        return BUILT_IN_SCRIPTS[name]()
    if name == "default":
        return MockScript(responses=[MockAnswer(text="Default output from mockllm/default.")])
    raise UnknownNameError(
        f"no script for mockllm/{name}: looked at {', '.join(str(p) for p in candidates)}; set script: in "
        "the role config, or put <name>.yaml in $SYSMO_MOCKLLM_DIR"
    )


class MockLLMProvider:
    """Answers from a ``MockScript``; remembers which answers it has used (one instance per ``LLM``)."""

    name = "mockllm"
    is_control = True

    def __init__(self, model: str, script: MockScript) -> None:
        self.model = model
        self.script = script
        self._used: set[int] = set()
        self._lock = threading.Lock()
        # the script's answers, then those made for tasks it lacked (``MockScript.extend``): this provider's own
        # list, as a built-in script is shared by every provider of the process
        self._answers: list[MockAnswer] = list(script.responses)
        self._extended: set[tuple[str, str | None]] = set()  # (task id, agent) extended
        # answers by the task they are for (None: any task), so a call only tests its task's answers
        self._by_task: dict[str | None, list[int]] = {}
        self._index(0)

    def _index(self, start: int) -> None:
        for i in range(start, len(self._answers)):
            answer = self._answers[i]
            self._by_task.setdefault(answer.when.task if answer.when else None, []).append(i)

    def _extend(self, request: LLMRequest) -> bool:
        """Add the script's answers for the call's task if the script can make them and has not yet; whether
        it added any."""
        ctx = request.context
        if self.script.extend is None or ctx is None or ctx.task is None or (ctx.task.id, ctx.agent) in self._extended:
            return False
        self._extended.add((ctx.task.id, ctx.agent))
        start = len(self._answers)
        self._answers += self.script.extend(ctx.task, ctx.agent)
        self._index(start)
        return len(self._answers) > start

    def _candidates(self, request: LLMRequest) -> list[int]:
        task_id = request.context.task_id if request.context else None
        specific = self._by_task.get(task_id, []) if task_id is not None else []
        return list(heapq.merge(specific, self._by_task.get(None, [])))

    def _matching(self, request: LLMRequest) -> list[int]:
        items = self._answers
        return [i for i in self._candidates(request) if items[i].when is None or items[i].when.matches(request)]

    def _pick(self, request: LLMRequest) -> MockAnswer:
        items = self._answers
        with self._lock:
            matching = self._matching(request)
            if not matching and self._extend(request):
                matching = self._matching(request)
            if not matching:
                ctx = request.context
                lacking = (" (the script makes answers only for tasks with a reference model)"
                           if self.script.extend is not None else "")
                raise LLMError(
                    f"{self.model}: no scripted answer matches this call (role={request.role}, "
                    f"task={ctx.task_id if ctx else None}, round={ctx.round if ctx else None}){lacking}"
                )
            unused = [i for i in matching if i not in self._used]
            if not unused:
                if self.script.mode == "strict":
                    raise LLMError(
                        f"{self.model}: the script ran out after {len(matching)} matching answers "
                        "(mode: strict)"
                    )
                if self.script.mode == "cycle":
                    self._used -= set(matching)
                    unused = matching
                else:
                    return items[matching[-1]]
            self._used.add(unused[0])
            return items[unused[0]]

    def complete(self, request: LLMRequest) -> LLMResponse:
        answer = self._pick(request)
        if answer.error is not None:
            raise LLMError(f"{self.model}: scripted error: {answer.error}")
        calls = [
            ToolCall.parse(c.get("id") or f"call_mock_{i}", c["name"], c.get("arguments"))
            for i, c in enumerate(answer.tool_calls)
        ]
        return control_response(request, model=self.model, provider=self.name, text=answer.text or "", tool_calls=calls)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return self.complete(request)
