"""Agent paradigms: LangGraph state machines built from graphs/ parts, registered by name.

Importing the package registers ``mockllm/control`` (the offline control experiment's scripted model, built
from every agent's control answers) with the LLM layer, which cannot import the agents itself.
"""

from sysmo.llm.mockllm import MockScript, register_script


def _control_script() -> MockScript:
    from sysmo.agents.control_script import build_control_script

    return build_control_script()


register_script("control", _control_script)
