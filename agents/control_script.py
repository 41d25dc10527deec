"""The ``mockllm/control`` script: per starter task and agent, a realistic wrong first answer, then the fix.

The offline control experiment must exercise the whole repair loop without a model: each first answer is the
task's reference with one realistic mistake (a dropped ``;`` or ``}`` in SysML v2, an unclosed class body or a
missing ``@enduml`` in PlantUML, a misspelt keyword or an undefined identifier in TLA+), chosen
deterministically from the task id; every later answer is the reference. An agent with other model calls
declares its own answers (``register_agent(control_answers=...)``, in its module), built from
``default_answers``, ``when`` and ``broken_artifact``.

>>> script = build_control_script()          # what ``mockllm/control`` resolves to
>>> broken_artifact(task).main_text != task.references.model.main_text
True
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskKind
from sysmo.llm.mockllm import MockAnswer, MockCondition, MockScript
from sysmo.llm.reference import format_reference
from sysmo.log import get_logger

log = get_logger(__name__)

MAX_ROUND = 10  # answers are scripted for this many repair rounds (the default budget is 3)


def _variant(task: Task, count: int) -> int:
    return int(hashlib.sha256(task.id.encode()).hexdigest(), 16) % count


# --- mistakes, one per language ------------------------------------------------------------------
def _drop_semicolon(text: str) -> str | None:
    """Drop the ``;`` ending the first declaration that is not an import."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if stripped.endswith(";") and "import" not in stripped and "doc" not in stripped:
            lines[i] = stripped[:-1] + line[len(stripped) :]
            return "".join(lines)
    return None


def _drop_last_brace(text: str) -> str | None:
    index = text.rfind("}")
    return text[:index] + text[index + 1 :] if index >= 0 else None


def _unclose_class_body(text: str) -> str | None:
    """Remove the ``}`` closing the first class/interface/enum body."""
    match = re.search(
        r"^([ \t]*(?:abstract\s+class|abstract|class|interface|enum)\b[^\n{]*\{[^{}]*?)\n[ \t]*\}[ \t]*$",
        text,
        re.M,
    )
    return text[: match.end(1)] + text[match.end() :] if match else None


def _drop_enduml(text: str) -> str | None:
    return re.sub(r"^[ \t]*@enduml[ \t]*\n?", "", text, count=1, flags=re.M) if "@enduml" in text else None


def _misspell_unchanged(text: str) -> str | None:
    return text.replace("UNCHANGED", "UNCHANGE", 1) if "UNCHANGED" in text else None


def _undefined_identifier(text: str) -> str | None:
    """Misspell the first use of a declared variable after ``Init ==`` (an undefined identifier)."""
    declared = re.search(r"^VARIABLES?\s+(.+?)(?:\n\s*\n|\n(?=[A-Z]))", text, re.M | re.S)
    init = text.find("Init ==")
    if not declared or init < 0:
        return None
    names = [n.strip() for n in re.split(r"[,\s]+", re.sub(r"\\\*.*", "", declared.group(1))) if n.strip()]
    for name in names:
        use = re.compile(rf"\b{re.escape(name)}\b").search(text, init)
        if use:
            return text[: use.start()] + name + "_" + text[use.end() :]
    return None


MISTAKES = {
    Language.SYSML: [_drop_semicolon, _drop_last_brace],
    Language.TLA: [_misspell_unchanged, _undefined_identifier],
}
PLANTUML_MISTAKES = {
    TaskKind.UML_CLASS: [_unclose_class_body, _drop_enduml],
    TaskKind.ARCHITECTURE: [_drop_enduml],
}


def broken_artifact(task: Task) -> Artifact:
    """The task's reference with one realistic mistake in its main file."""
    reference = task.references.model
    if reference is None:
        raise ValueError(f"task {task.id} has no reference model")
    mistakes = MISTAKES.get(reference.language) or PLANTUML_MISTAKES.get(task.kind, [_drop_enduml])
    main = reference.main_file or next(iter(reference.files))
    text = reference.files[main]
    start = _variant(task, len(mistakes))
    for offset in range(len(mistakes)):  # the chosen mistake, else the next one that applies to this text
        broken = mistakes[(start + offset) % len(mistakes)](text)
        if broken is not None and broken != text:
            return Artifact(language=reference.language, files={**reference.files, main: broken})
    return Artifact(language=reference.language, files={**reference.files, main: text + "\n}\n"})


def reply(artifact: Artifact, lead: str) -> str:
    return f"{lead}\n\n{format_reference(artifact)}"


# --- the script ----------------------------------------------------------------------------------
def when(task: Task, agent: str, purpose: str, round_: int) -> MockCondition:
    """The condition pinning an answer to one task, agent, model-call purpose and round."""
    return MockCondition(task=task.id, agent=agent, purpose=purpose, round=round_)


def default_answers(task: Task, agent: str) -> list[MockAnswer]:
    """The repair loop's answers: the broken model for "generate", then the reference for every "repair"."""
    reference = task.references.model
    assert reference is not None
    out = [MockAnswer(text=reply(broken_artifact(task), "Here is the model."), when=when(task, agent, "generate", 0))]
    out += [
        MockAnswer(text=reply(reference, "Here is the corrected model."), when=when(task, agent, "repair", r))
        for r in range(1, MAX_ROUND + 1)
    ]
    return out


def answers_for(task: Task, agent: str) -> list[MockAnswer]:
    """Every scripted answer one agent needs on one task, each pinned to its step and round: the agent's own
    (``control_answers`` of its registration) or the default."""
    from sysmo.agents.registry import get_agent

    spec = get_agent(agent)
    return spec.control_answers(task) if spec.control_answers is not None else default_answers(task, agent)


def agent_answers(task: Task, agent: str) -> list[MockAnswer]:
    """``agent``'s scripted answers on ``task``: none for a task without a reference model or of a kind the agent
    does not take."""
    from sysmo.agents.registry import UnsupportedTaskError, get_agent

    if task.references.model is None:
        return []
    try:
        get_agent(agent).check_supports(task)
    except UnsupportedTaskError:
        return []
    return answers_for(task, agent)


def build_control_script(tasks: Iterable[Task] | None = None) -> MockScript:
    """The script for ``mockllm/control`` over ``tasks`` (default: the starter suite), for every agent."""
    from sysmo.agents.registry import all_agents, registry_version

    if tasks is None:
        all_agents()  # the built-in agents are registered first, so the version below counts them
        return _starter_script(registry_version())
    responses: list[MockAnswer] = []
    count = 0
    for task in tasks:
        for spec in all_agents():
            answers = agent_answers(task, spec.name)
            if answers:
                responses += answers
                count += 1
    log.info("control_script.built", pairs=count, answers=len(responses))
    # every answer is pinned to one (task, agent, step, round): repeat_last only serves later samples the same
    return MockScript(mode="repeat_last", responses=responses)


@functools.lru_cache(maxsize=1)
def _starter_script(agents_version: int) -> MockScript:
    """The starter suite's script for the agents registered at ``agents_version`` (registering or removing an
    agent changes the version, so the script is rebuilt with its answers)."""
    from sysmo.benchmarks.registry import load_tasks

    return build_control_script(load_tasks(families=["starter"]))
