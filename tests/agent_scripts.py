"""Fake-server scripts for the agent tests: the replies each agent's calls expect, in call order."""

from __future__ import annotations

import json

from fake_openai import FakeReply, reply, tool_reply
from sysmo.agents.registry import get_agent
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.llm import LLM, ModelRoles, RoleConfig
from sysmo.llm.mockllm import MockAnswer
from sysmo.llm.reference import format_reference

ANALYSIS = json.dumps({"requirements": [
    {"id": "R1", "text": "every element the requirement names", "priority": "MUST"},
    {"id": "R2", "text": "the relations between them", "priority": "MUST"},
]})
DESIGN = json.dumps({"elements": [{"name": "the elements of the requirement", "kind": "part", "satisfies": ["R1"]}]})


LOOP_PURPOSES = {"generate", "repair", "step", "review"}  # the repair loop's calls, scripted per artifact


def _control(agent: str, task: Task) -> list[MockAnswer]:
    """The agent's own control answers (``register_agent(control_answers=...)``), or none."""
    spec = get_agent(agent)
    return spec.control_answers(task) if spec.control_answers is not None else []


def stage_one(agent: str, task: Task) -> list[FakeReply]:
    """The replies an agent's pre-stages consume before its first model: its control answers for them."""
    return [reply(a.text or "") for a in _control(agent, task)
            if a.when is not None and a.when.purpose not in LOOP_PURPOSES]


def _review(agent: str, task: Task) -> FakeReply | None:
    """The reply a repair round consumes before the repair itself (metagpt's Reviewer), if the agent has one."""
    reviews = [a for a in _control(agent, task) if a.when is not None and a.when.purpose == "review"]
    return reply(reviews[0].text or "") if reviews else None


def model_reply(agent: str, artifact: Artifact, task: Task | None = None) -> FakeReply:
    """A reply carrying ``artifact``: tool calls writing it and checking it for a tool-calling agent."""
    if get_agent(agent).control_answers is not None and any(
        a.tool_calls for a in _control(agent, task or _task_of(artifact))
    ):
        writes = [
            ("write_file", {"path": name, "content": text}) for name, text in sorted(artifact.files.items())
        ]
        return tool_reply(*writes, ("run_check", {}))
    return reply("Here is the model.\n\n" + format_reference(artifact))


def _task_of(artifact: Artifact) -> Task:
    """A task whose reference is ``artifact`` (to ask an agent how it answers)."""
    from sysmo.contracts.task import TaskInputs, TaskReferences

    kind = next(k for k in TaskKind if k.language == artifact.language)
    return Task(id="probe", benchmark="probe", kind=kind, title="probe",
                inputs=TaskInputs(requirement="probe"), references=TaskReferences(model=artifact))


def replies_for(agent: str, task: Task, artifacts: list[Artifact]) -> list[FakeReply]:
    """The replies of an attempt whose models are ``artifacts`` in turn (a review before each repair, if the
    agent reviews)."""
    out = stage_one(agent, task)
    review = _review(agent, task)
    for index, artifact in enumerate(artifacts):
        if review is not None and index > 0:
            out.append(review)
        out.append(model_reply(agent, artifact, task))
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
