"""What one model call returns (``LLMResponse``) and the full record of a call (``LLMCallRecord``, given to the
client's ``on_call``); the store persists each call of an attempt as a ``contracts.events.LLMCallEvent``."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError
from sysmo.contracts.task import Task
from sysmo.contracts.events import LLMCallEvent
from sysmo.errors import LLMError
from sysmo.llm.sent import SentParams

T = TypeVar("T", bound=BaseModel)
# a fenced code block (``` or ~~~, any info string); an unclosed one runs to the end (a truncated reply)
FENCE = re.compile(r"(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)(?:\n[ \t]*(?P=fence)[ \t]*(?=\n|$)|\Z)",
                   re.S)
_FENCE_OPEN = re.compile(r"(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n")  # FENCE up to its body
_FENCE_CLOSE: dict[str, re.Pattern[str]] = {}  # fence -> its closing line (FENCE's end but \Z)
JSON_START = re.compile(r"[\[{]")


@dataclass(frozen=True, slots=True)
class Fenced:
    """One fenced block of a reply: where it starts and ends (``text[start:end]``, the fences included), its
    fence, info string and body, and whether it was closed."""

    start: int
    end: int
    fence: str
    info: str
    body: str

    def closed(self, text: str) -> bool:
        """Whether the block ends with its fence (an unclosed one runs to the end of the reply: truncated)."""
        return text[self.start:self.end].rstrip().endswith(self.fence)


def fenced_blocks(text: str) -> list[Fenced]:
    """Every fenced block of ``text``, as ``FENCE.finditer`` finds them, in a few times less time: an opening fence
    is searched, then the line that closes it (a literal newline is found fast) instead of trying the closing at
    every character of the body (about 0.1 ms per 2 kB reply)."""
    found: list[Fenced] = []
    pos = 0
    while (opening := _FENCE_OPEN.search(text, pos)) is not None:
        fence = opening.group("fence")
        closing = _FENCE_CLOSE.get(fence)
        if closing is None:
            closing = _FENCE_CLOSE[fence] = re.compile(r"\n[ \t]*" + re.escape(fence) + r"[ \t]*(?=\n|$)")
        body_start = opening.end()
        close = closing.search(text, body_start)
        body_end, pos = (close.start(), close.end()) if close is not None else (len(text), len(text))
        found.append(Fenced(opening.start(), pos, fence, opening.group("info"), text[body_start:body_end]))
        if pos == len(text):
            break
    return found


def json_payload(text: str | None, *, within_prose: bool = True, blocks: list[Fenced] | None = None) -> Any:
    """The first JSON value in a model's reply, or None: from a ```json (or untagged) block first, else the text.

    With ``within_prose`` the value may start after prose (the first ``{`` or ``[`` that decodes as JSON);
    without it the block, or the whole reply, must begin with the value. Text after the value is ignored.
    The one JSON reader for replies: ``LLMResponse.parse`` and the artifact extractor use it.

    ``blocks``: the text's ``fenced_blocks``, when the caller has them already.

    >>> json_payload('Sure:\\n```json\\n{"a": 1}\\n```')
    {'a': 1}
    """
    text = text or ""
    blocks = fenced_blocks(text) if blocks is None else blocks
    chunks = [b.body for b in blocks if b.info.strip().lower() in ("json", "")]
    decoder = json.JSONDecoder()
    for chunk in [*chunks, text]:
        chunk = chunk.strip()
        starts = [m.start() for m in JSON_START.finditer(chunk)] if within_prose else [0] * bool(JSON_START.match(chunk))
        for start in starts:
            try:
                return decoder.raw_decode(chunk, start)[0]
            except json.JSONDecodeError:
                continue
    return None


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # the server reported no usage: the counts are litellm's tokenizer's estimate (so token caps still see them)
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ToolCall(BaseModel):
    """A function call the model asked for, in the OpenAI tools format.

    ``arguments`` is the parsed JSON object; when the model sent malformed JSON it is ``{}`` and
    ``error`` says why (``arguments_json`` keeps what was sent, to feed back to the model).
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_json: str = "{}"
    error: str | None = None

    @classmethod
    def parse(cls, id: str, name: str, arguments: str | dict[str, Any] | None) -> ToolCall:
        if isinstance(arguments, dict):
            return cls(id=id, name=name, arguments=arguments, arguments_json=json.dumps(arguments))
        text = arguments or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return cls(
                id=id, name=name, arguments_json=text, error=f"tool arguments are not valid JSON: {exc}"
            )
        if not isinstance(value, dict):
            return cls(id=id, name=name, arguments_json=text, error="tool arguments must be a JSON object")
        return cls(id=id, name=name, arguments=value, arguments_json=text)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json},
        }


class CallContext(BaseModel):
    """Who is calling, for the offline providers (the reference needs the task) and for the record.

    >>> llm.complete(messages, context=CallContext(task=task, round=2, agent="base_modeling"))
    """

    task: Task | None = Field(default=None, exclude=True)  # not persisted: the record keeps task_id
    task_id: str | None = None
    round: int | None = None
    agent: str | None = None
    attempt_id: str | None = None
    purpose: str | None = None  # the agent's step, e.g. "generate", "translate", "review" (mock scripts match it)
    # the call's number among its attempt's calls of the same round and role (0, 1, ...): with ``round`` and the
    # role, the call's place in the attempt, part of the cache key (``LLMRequest.position``)
    call_index: int | None = None

    def model_post_init(self, __context: Any) -> None:
        if self.task is not None and self.task_id is None:
            self.task_id = self.task.id


class LLMResponse(BaseModel):
    """One answer. ``cost_usd`` is what the call cost when it was made; ``spend_usd`` is new money spent
    by this call (0 for a cache hit or an offline provider). ``is_control`` marks ``mockllm``/``reference``.
    """

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    model: str  # as configured, e.g. "openai/gpt-4o-mini", "mockllm/demo", "reference"
    served_model: str | None = None  # what the server said it ran
    provider: str  # "openai", "anthropic", "ollama", ..., "mockllm", "reference"
    is_control: bool = False
    role: str = "generator"
    sample_index: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    spend_usd: float = 0.0
    cost_note: str | None = None  # why the cost is 0 (no price known, offline provider)
    latency_s: float = 0.0  # wall time of this call, retries included
    original_latency_s: float | None = None  # for a cache hit: the latency of the call that filled the cache
    attempts: int = 1  # HTTP attempts, retries included
    cached: bool = False
    request_hash: str = ""
    raw: dict[str, Any] = Field(default_factory=dict)
    # what the provider received of the request's parameters (litellm's mapping); None: not known (an offline
    # provider, or a reply cached before it was recorded)
    sent_params: SentParams | None = None

    def parse(self, schema: type[T]) -> T:
        """The text as ``schema`` (structured output): the reply's JSON (``json_payload``: fenced or bare, prose
        around it tolerated)."""
        value = json_payload(self.text)
        if value is None:
            raise LLMError(f"{self.model} did not answer with a valid {schema.__name__}: no JSON in the reply")
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            raise LLMError(f"{self.model} did not answer with a valid {schema.__name__}: {exc}") from exc

    def assistant_message(self) -> dict[str, Any]:
        """This answer as an OpenAI-format assistant message, to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


class LLMCallRecord(BaseModel):
    """Everything about one call, successful or not, for an ``on_call`` callback (the store keeps the same
    content as the attempt's ``LLMCallEvent``, which ``sysmo trace`` shows)."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    role: str
    model: str
    provider: str
    is_control: bool = False
    request_hash: str
    sample_index: int = 0
    messages: list[dict[str, Any]]
    params: dict[str, Any] = Field(
        default_factory=dict
    )  # temperature, max_tokens, tools, response_format, extra
    sent_params: SentParams | None = None  # what the provider received of them (``llm.sent``); None: not known
    context: CallContext | None = None
    response: LLMResponse | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    spend_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    error_type: str | None = None

    def event(self, error_class: str | None = None) -> LLMCallEvent:
        """This call as the attempt's ``LLMCallEvent`` (``error_class``: the failure's class as the LLM layer
        names it, e.g. ``ReplyTooLarge``, over the exception's type name)."""
        return call_event(
            role=self.role, model=self.model, provider=self.provider, is_control=self.is_control,
            request_hash=self.request_hash, sample_index=self.sample_index, messages=self.messages, params=self.params,
            sent_params=self.sent_params.model_dump() if self.sent_params else None, context=self.context,
            response=self.response, prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, cost_usd=self.cost_usd, spend_usd=self.spend_usd,
            latency_s=self.latency_s, cached=self.cached, error=self.error, error_type=self.error_type,
            error_class=error_class)


def call_event(*, context: CallContext | None, response: LLMResponse | None, error: str | None,
               error_type: str | None, error_class: str | None = None, **fields: Any) -> LLMCallEvent:
    """A call as the attempt's ``LLMCallEvent`` (what ``LLMCallRecord.event`` makes, without the record: the
    client makes only the event unless someone asked for records); ``fields`` are the fields both share."""
    return LLMCallEvent(
        purpose=context.purpose if context else None, round=context.round if context else None,
        agent=context.agent if context else None, attempt_id=context.attempt_id if context else None,
        response=response.model_dump(mode="json", exclude={"raw", "sent_params"}) if response else None, error=error,
        error_type=(error_class or error_type) if error else None, **fields)
