"""Agent paradigms: LangGraph state machines built from graphs/ parts, registered by name.

Importing the package registers ``mockllm/control`` (the offline control experiment's scripted model, built
from every agent's control answers) with the LLM layer, which cannot import the agents itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sysmo.llm.mockllm import MockAnswer, MockScript, register_script

if TYPE_CHECKING:
    from sysmo.contracts.task import Task


def _control_script() -> MockScript:
    # a task's answers for an agent are made at their first call (``MockScript.extend``), for the starter suite
    # and for any other task with a reference model (a control run on a published benchmark: its gold models,
    # broken once, then repaired): a run makes the answers of the pairs it runs only, importing only their agents
    return MockScript(mode="repeat_last", responses=[], extend=_control_answers)


def _control_answers(task: Task, agent: str | None = None) -> list[MockAnswer]:
    """The control script's answers for ``task``: ``agent``'s (only its module is imported), or every agent's."""
    from sysmo.agents.control_script import agent_answers, build_control_script

    return agent_answers(task, agent) if agent is not None else build_control_script([task]).responses


register_script("control", _control_script)
