"""The text protocol of a tool-calling agent, for a model without native tool calling: a tool call is a fenced
block whose info string is ``tool``, holding one JSON object (or a list of them) with the tool's ``name`` and its
``arguments``; the agent parses the reply for such blocks and feeds the results back as one plain user message.

    ```tool
    {"name": "write_file", "arguments": {"path": "Spec.tla", "content": "---- MODULE Spec ----\\n..."}}
    ```

The JSON is read leniently where models are careless and strictly where it matters: raw newlines and tabs inside
strings are accepted (``strict=False``), a closing fence inside a string does not end the block (the object is
decoded first, the fence looked for after it); a block that is not a JSON object with a ``name`` is a call with an
``error`` (fed back to the model, as a native call with malformed arguments is).

>>> calls, prose = parse_tool_blocks('Writing it.\\n```tool\\n{"name": "run_check", "arguments": {}}\\n```\\n')
>>> [(c.name, c.arguments) for c in calls], prose
([('run_check', {})], 'Writing it.')
"""

from __future__ import annotations

import json
import re
from typing import Any

from sysmo.llm.response import ToolCall

BLOCK_TAGS = ("tool", "tool_call")  # the info strings that open a tool block
_OPENING = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?:" + "|".join(BLOCK_TAGS) + r")[ \t]*\r?$", re.M)
_DECODER = json.JSONDecoder(strict=False)  # raw newlines in a file's content are what models write


def _closing(fence: str) -> re.Pattern[str]:
    return re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*\r?$", re.M)


def parse_tool_blocks(text: str, id_prefix: str = "text") -> tuple[list[ToolCall], str]:
    """The tool calls of a reply's ``tool`` blocks, in order (ids ``<id_prefix>_<n>``), and the reply's prose
    with the blocks taken out."""
    calls: list[ToolCall] = []
    prose: list[str] = []
    position = 0
    for opening in _OPENING.finditer(text):
        if opening.start() < position:  # inside the previous block
            continue
        prose.append(text[position:opening.start()])
        body_start = opening.end()
        closing = _closing(opening.group("fence"))
        values, error, end = _decoded(text, body_start, closing)
        for value in values:
            calls.append(_call(f"{id_prefix}_{len(calls)}", value, error))
        position = end
    prose.append(text[position:])
    return calls, "".join(prose).strip()


def _decoded(text: str, start: int, closing: re.Pattern[str]) -> tuple[list[Any], str | None, int]:
    """The values of the block starting at ``start``, an error if it is not JSON, and where the block ends."""
    begin = start
    while begin < len(text) and text[begin] in " \t\r\n":
        begin += 1
    try:
        value, after = _DECODER.raw_decode(text, begin)
    except json.JSONDecodeError as exc:
        fence = closing.search(text, start)
        end = fence.end() if fence else len(text)
        return [None], f"the tool block is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})", end
    fence = closing.search(text, after)
    end = fence.end() if fence and not text[after:fence.start()].strip() else after
    values = value if isinstance(value, list) and value else [value]
    return values, None, end


def _call(call_id: str, value: Any, error: str | None) -> ToolCall:
    if error is not None:
        return ToolCall(id=call_id, name="(unreadable)", error=error)
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return ToolCall(id=call_id, name="(unreadable)", arguments_json=json.dumps(value)[:2000],
                        error='a tool block holds {"name": "<tool>", "arguments": {...}}')
    arguments = value.get("arguments", value.get("parameters", {}))
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, (dict, str)):
        return ToolCall(id=call_id, name=value["name"], arguments_json=json.dumps(arguments)[:2000],
                        error="tool arguments must be a JSON object")
    return ToolCall.parse(call_id, value["name"], arguments)


def tools_text(tools: list[dict[str, Any]]) -> str:
    """The tools (OpenAI tools format) as the text protocol's list: one line per tool, its parameters and what
    it does."""
    lines = []
    for tool in tools:
        function = tool["function"]
        parameters = (function.get("parameters") or {}).get("properties") or {}
        arguments = ", ".join(f'"{name}": <{spec.get("type", "value")}>' for name, spec in parameters.items())
        lines.append(f'- {{"name": "{function["name"]}", "arguments": {{{arguments}}}}}: {function["description"]}')
    return "\n".join(lines)


def results_message(results: list[tuple[str, str]]) -> str:
    """The results of one reply's tool calls, in order, as one plain-text user message."""
    return "\n\n".join(f"Result of tool call {n} ({name}):\n{content}" for n, (name, content) in
                       enumerate(results, 1))
