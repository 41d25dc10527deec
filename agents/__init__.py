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
    from sysmo.agents.control_script import build_control_script

    # the starter suite's answers, and on demand those of any other task with a reference model (a control
    # run on a published benchmark: its gold models, broken once, then repaired)
    script = build_control_script()
    return script.model_copy(update={"extend": _control_answers})


def _control_answers(task: Task) -> list[MockAnswer]:
    from sysmo.agents.control_script import build_control_script

    return build_control_script([task]).responses


register_script("control", _control_script)
