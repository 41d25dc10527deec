"""``recorded``: a provider that answers each request from an attempt's stored events (``sysmo replay``).

Each ``LLMCallEvent`` with a reply is kept under its request hash; a request is answered by the next unused
reply recorded for the same hash (in the order they were made). A request that was never recorded is an error
naming it, never a silent guess, so a replay that drifts from the recording stops at the first difference.
This is not the ``replay`` provider for published outputs: it only plays back what this harness recorded.

>>> provider = RecordedProvider(store.events(attempt_id))
>>> llm = LLM(roles, cache=False, provider=provider)   # every role answered from the record
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from typing import Any

from sysmo.contracts.events import LLMCallEvent
from sysmo.errors import LLMError
from sysmo.llm.request import LLMRequest
from sysmo.llm.response import LLMResponse


class UnrecordedRequestError(LLMError):
    """The replayed attempt sent a request the recording does not hold."""


class RecordedProvider:
    name = "recorded"
    is_control = True  # offline: never cached nor retried

    def __init__(self, events: list[Any]) -> None:
        self._replies: dict[str, deque[LLMCallEvent]] = defaultdict(deque)
        for event in events:
            if isinstance(event, LLMCallEvent) and event.response is not None:
                self._replies[event.request_hash].append(event)
        self.recorded = sum(len(q) for q in self._replies.values())
        self.answered: list[LLMCallEvent] = []
        self._lock = threading.Lock()

    def complete(self, request: LLMRequest) -> LLMResponse:
        key = request.key()
        with self._lock:
            # an attempt recorded before the call's place was part of the key holds the key without it
            queue = self._replies.get(key) or self._replies.get(request.key(positioned=False))
            if not queue:
                purpose = request.context.purpose if request.context else None
                raise UnrecordedRequestError(
                    f"replay: the {request.role} request {key[:16]} (purpose {purpose or '-'}, "
                    f"{len(request.messages)} messages) was not recorded: the attempt no longer makes the same "
                    f"calls (prompt, model or parameters changed)")
            event = queue.popleft()
            self.answered.append(event)
        response = LLMResponse.model_validate(event.response)
        return response.model_copy(update={"spend_usd": 0.0, "cached": False})

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return self.complete(request)

    @property
    def unused(self) -> int:
        return sum(len(q) for q in self._replies.values())
