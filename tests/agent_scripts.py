"""Fake-server scripts for the agent tests: the replies each agent's calls expect, in call order."""

from __future__ import annotations

import json

from fake_openai import FakeReply, reply, tool_reply
from sysmo.agents.control_script import intermediate_model
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.llm import LLM, ModelRoles, RoleConfig
from sysmo.llm.reference import format_reference

ANALYSIS = json.dumps({"requirements": [
    {"id": "R1", "text": "every element the requirement names", "priority": "MUST"},
    {"id": "R2", "text": "the relations between them", "priority": "MUST"},
]})
DESIGN = json.dumps({"elements": [{"name": "the elements of the requirement", "kind": "part", "satisfies": ["R1"]}]})
REVIEW = json.dumps({"comments": [{"problem": "the tool names a line", "fix": "fix exactly that line; keep the rest"}]})


def stage_one(agent: str, task: Task) -> list[FakeReply]:
    """The replies an agent's pre-stages consume before its first model."""
    if agent == "code_translation":
        if task.kind == TaskKind.TLA:
            reference = task.references.model
            from sysmo.agents.code_translation import plan_of_spec

            plan = plan_of_spec(reference.main_text).model_dump_json()
            return [reply("Draft:\n```tla\n" + reference.main_text + "\n```"), reply(plan)]
        return [reply(json.dumps(intermediate_model(task)))]
    if agent == "metagpt":
        return [reply(ANALYSIS), reply(DESIGN)]
    return []


def model_reply(agent: str, artifact: Artifact) -> FakeReply:
    if agent == "openhands":
        writes = [
            ("write_file", {"path": name, "content": text}) for name, text in sorted(artifact.files.items())
        ]
        return tool_reply(*writes, ("run_check", {}))
    return reply("Here is the model.\n\n" + format_reference(artifact))


def replies_for(agent: str, task: Task, artifacts: list[Artifact]) -> list[FakeReply]:
    """The replies of an attempt whose models are ``artifacts`` in turn (metagpt: reviews before repairs)."""
    out = stage_one(agent, task)
    for index, artifact in enumerate(artifacts):
        if agent == "metagpt" and index > 0:
            out.append(reply(REVIEW))
        out.append(model_reply(agent, artifact))
    return out


def fake_llm(base_url: str, cache: object = False, **role: object) -> LLM:
    """An LLM whose generator is the fake server (fast retries so a 429 costs milliseconds)."""
    config = RoleConfig(
        model="openai/fake-model",
        api_base=base_url,
        retry_initial_s=0.01,
        retry_max_s=0.05,
        max_retries=2,
        timeout_s=30,
        **role,
    )
    return LLM(ModelRoles(generator=config), cache=cache)
