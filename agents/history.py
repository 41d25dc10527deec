"""The conversation a tool-calling agent sends back to its model, kept under a size: the longest old payloads
(file contents in tool-call arguments, tool answers) are elided, oldest first, until it fits.

Every request re-sends the whole conversation, and the store keeps each request: a model that wrote a 1 MB file
at step 1 would otherwise have it sent and stored again at every later step. What is elided stays reachable
(the file is in the workspace: ``read_file`` shows it; a tool can be called again).

>>> bounded = bounded_history(messages, MAX_HISTORY_CHARS)
>>> history_chars(bounded) <= MAX_HISTORY_CHARS   # unless the messages kept whole are longer by themselves
True
"""

from __future__ import annotations

import json
from typing import Any

MAX_HISTORY_CHARS = 400_000  # about 100k tokens: what one request of the conversation may carry
KEEP_WHOLE_CHARS = 2_000  # a payload this long or shorter is never elided
KEPT_HEAD_CHARS = 500  # what an elided tool answer keeps of its start
FIRST_KEPT = 2  # the system prompt and the task are never elided


def history_chars(messages: list[dict[str, Any]]) -> int:
    """The characters a conversation carries: every message's content, and every tool call's name and
    arguments."""
    return sum(_message_chars(m) for m in messages)


def _message_chars(message: dict[str, Any]) -> int:
    content = message.get("content")
    size = len(content) if isinstance(content, str) else len(json.dumps(content)) if content else 0
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        size += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    return size


def bounded_history(messages: list[dict[str, Any]], max_chars: int = MAX_HISTORY_CHARS) -> list[dict[str, Any]]:
    """``messages`` if they fit in ``max_chars``, else a copy with the payloads longer than ``KEEP_WHOLE_CHARS``
    elided, from the oldest message on (the system prompt and the task kept whole), until it fits."""
    total = history_chars(messages)
    if total <= max_chars:
        return messages
    out = list(messages)
    for index in range(FIRST_KEPT, len(out)):
        if total <= max_chars:
            break
        before = _message_chars(out[index])
        out[index] = _elided(out[index])
        total -= before - _message_chars(out[index])
    return out


def _elided(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its long payloads elided: a tool call's long string arguments, a long content."""
    changed = dict(message)
    content = message.get("content")
    if isinstance(content, str) and len(content) > KEEP_WHOLE_CHARS:
        where = ("call the tool again to see it" if message.get("role") == "tool"
                 else "it is no longer part of the conversation")
        changed["content"] = (f"{content[:KEPT_HEAD_CHARS]}\n... [{len(content) - KEPT_HEAD_CHARS:,} characters "
                              f"elided from the conversation; {where}]")
    calls = message.get("tool_calls")
    if calls:
        changed["tool_calls"] = [_call_elided(call) for call in calls]
    return changed


def _call_elided(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = str(function.get("arguments") or "")
    if len(arguments) <= KEEP_WHOLE_CHARS:
        return call
    try:
        values = json.loads(arguments)
    except json.JSONDecodeError:
        values = None
    if isinstance(values, dict):
        short = {k: (f"<{len(v):,} characters elided from the conversation; if this was a file's content, "
                     "read_file shows the file>" if isinstance(v, str) and len(v) > KEEP_WHOLE_CHARS else v)
                 for k, v in values.items()}
        text = json.dumps(short)
    else:
        text = json.dumps({"elided": f"<arguments of {len(arguments):,} characters elided from the conversation>"})
    return {**call, "function": {**function, "arguments": text}}
