"""``reference``: answers with the task's reference model, the gold control of SysMoBench (always labelled).

The task comes from the call's ``CallContext(task=...)`` or, for one fixed task, from the provider's
construction (``ReferenceProvider(reference=artifact)``). A text call gets every file as a fenced block
under a ``File: <name>`` line (``tla`` and ``cfg`` for TLA+). A call that offers a ``write_file`` tool gets
``write_file`` calls, one per file, and once they are in the conversation a ``finish`` call if offered.
"""

from __future__ import annotations

import json
from typing import Any

from sysmo.contracts.artifact import Artifact, Language
from sysmo.errors import LLMError
from sysmo.llm.mockllm import control_response
from sysmo.llm.request import LLMRequest
from sysmo.llm.response import LLMResponse, ToolCall

FENCE_TAGS = {".tla": "tla", ".cfg": "cfg", ".sysml": "sysml", ".puml": "plantuml", ".plantuml": "plantuml"}
MAIN_TAG = {Language.TLA: "tla", Language.SYSML: "sysml", Language.PLANTUML: "plantuml"}


def format_reference(artifact: Artifact) -> str:
    """Every file as ``File: <name>`` and a fenced block tagged with its language; the main file first."""
    names = sorted(artifact.files, key=lambda n: (n != artifact.main_file, n))
    blocks = []
    for name in names:
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        tag = FENCE_TAGS.get(suffix, MAIN_TAG[artifact.language])
        blocks.append(f"File: {name}\n```{tag}\n{artifact.files[name].rstrip()}\n```")
    return "\n\n".join(blocks) + "\n"


def _tool(tools: list[dict[str, Any]] | None, name: str) -> dict[str, Any] | None:
    for tool in tools or []:
        function = tool.get("function", tool)
        if function.get("name") == name:
            return function
    return None


def _argument_names(function: dict[str, Any]) -> tuple[str, str]:
    """The write_file tool's path and content parameter names, whatever the agent called them."""
    props = list((function.get("parameters") or {}).get("properties", {}))
    path = next((p for p in props if p in ("path", "file", "filename", "file_path", "name")), "path")
    content = next((p for p in props if p in ("content", "contents", "text", "file_text", "body")), "content")
    return path, content


class ReferenceProvider:
    name = "reference"
    is_control = True

    def __init__(self, reference: Artifact | None = None) -> None:
        self.reference = reference

    def _artifact(self, request: LLMRequest) -> Artifact:
        task = request.context.task if request.context else None
        if task is not None:
            if task.references.model is None:
                raise LLMError(
                    f"task {task.id} has no reference model: the reference control cannot answer it"
                )
            return task.references.model
        if self.reference is not None:
            return self.reference
        raise LLMError(
            "the reference provider needs the task: call with context=CallContext(task=task) "
            "(or build ReferenceProvider(reference=artifact))"
        )

    def _tool_calls(self, request: LLMRequest, artifact: Artifact) -> list[ToolCall]:
        write = _tool(request.tools, "write_file")
        written = any(
            c.get("function", {}).get("name") == "write_file"
            for m in request.messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
        )
        if write is not None and not written:
            path, content = _argument_names(write)
            return [
                ToolCall.parse(f"call_ref_{i}", "write_file", json.dumps({path: name, content: text}))
                for i, (name, text) in enumerate(sorted(artifact.files.items()))
            ]
        if _tool(request.tools, "finish") is not None:
            return [ToolCall.parse("call_ref_finish", "finish", "{}")]
        return []

    def complete(self, request: LLMRequest) -> LLMResponse:
        artifact = self._artifact(request)
        calls = self._tool_calls(request, artifact) if request.tools else []
        return control_response(request, model="reference", provider=self.name,
                                text="" if calls else format_reference(artifact), tool_calls=calls)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return self.complete(request)
