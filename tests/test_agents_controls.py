"""The offline controls on the whole starter suite: `reference` passes in round 1 for every agent supporting a
task; `mockllm/control` makes one realistic mistake that the real tool rejects, then fixes it in round 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_tasks import starter_tasks
from sysmo.agents.control_script import broken_artifact, build_control_script
from sysmo.agents.registry import UnsupportedTaskError, all_agents
from sysmo.agents.run import run_attempt
from sysmo.contracts.task import Task, TaskKind
from sysmo.contracts.attempt import AttemptStatus
from sysmo.graphs.context import AgentContext
from sysmo.llm import LLM, ModelRoles
from sysmo.llm.mockllm import find_script
from sysmo.tools.checkers import check_artifact
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import CheckResult, Outcome

TASKS = [t for t in starter_tasks() if t.references.model is not None]
# the TLA+ references' SANY checks are the very runs other files make (the cascade controls, the syntax tests):
# made once in the session (the run cache)
pytestmark = pytest.mark.usefixtures("tla_run_cache")


def _pairs(tasks: list[Task]) -> list[tuple[str, Task]]:
    pairs = []
    for spec in all_agents():
        for task in tasks:
            try:
                spec.check_supports(task)
            except UnsupportedTaskError:
                continue
            pairs.append((spec.name, task))
    return pairs


class OncePerArtifact:
    """``check_artifact``, run by the real tool once per distinct (task, files): the agents that end on the same
    reference files share the tool's verdict on them instead of starting SANY/TLC, PlantUML or OpenSysML again.

    ``shared`` holds the verdicts of the module (``known_verdicts``): the control's scripted mistakes and the
    references are checked by the real tools once for the file; ``verdicts`` are the ones this checker was asked
    for (made here or by an earlier test of the module)."""

    def __init__(self, shared: dict[tuple, CheckResult] | None = None) -> None:
        self.shared = {} if shared is None else shared
        self.verdicts: dict[tuple, CheckResult] = {}
        self.calls = 0

    def __call__(self, artifact: Artifact, task: Task | None = None) -> CheckResult:
        self.calls += 1
        key = (task.id if task else None, artifact.language, tuple(sorted(artifact.files.items())))
        if key not in self.shared:
            self.shared[key] = check_artifact(artifact, task)
        self.verdicts[key] = self.shared[key]
        return self.verdicts[key].model_copy(deep=True)


@pytest.fixture(scope="module")
def known_verdicts() -> dict[tuple, CheckResult]:
    """The real tools' verdicts on the (task, files) checked so far in this file."""
    return {}


def _run(model: str, pairs: list[tuple[str, Task]], llm: LLM,
         checker=check_artifact) -> list[tuple[str, str, object]]:
    out = []
    for agent, task in pairs:
        ctx = AgentContext(
            task=task, llm=llm, checker=checker, agent=agent, attempt_id=f"{agent}:{task.id}"
        )
        out.append((agent, task.id, run_attempt(agent, ctx, model_name=model)))
    return out


def test_starter_suite_has_references_for_the_controls() -> None:
    assert len(TASKS) >= 20
    tla = sum(task.kind == TaskKind.TLA for task in TASKS)  # trace_learning and code_translation: TLA+ only
    assert len(_pairs(TASKS)) == 3 * len(TASKS) + 2 * tla


@pytest.mark.slow
def test_reference_passes_in_round_one_for_every_agent_on_every_starter_task(known_verdicts) -> None:
    checker = OncePerArtifact(known_verdicts)
    results = _run("reference", _pairs(TASKS), LLM(ModelRoles(generator="reference"), cache=False), checker)

    failed = [
        (agent, task, a.status.value, a.error)
        for agent, task, a in results
        if a.status != AttemptStatus.PASSED or len(a.rounds) != 1 or not a.rounds[0].passed
    ]
    assert not failed
    assert all(a.is_control for _, _, a in results)
    # every task's reference was checked by its real tool; the other agents wrote the same files
    assert {task_id for task_id, *_ in checker.verdicts} == {task.id for task in TASKS}
    assert checker.calls >= len(results) > len(checker.verdicts)


@pytest.mark.slow
def test_control_script_mistakes_are_rejected_by_the_real_tools(known_verdicts) -> None:
    checker = OncePerArtifact(known_verdicts)
    rejected = {task.id: checker(broken_artifact(task), task) for task in TASKS}

    assert not [tid for tid, result in rejected.items() if result.outcome != Outcome.FAILED]
    assert all(result.diagnostics for result in rejected.values())


def test_control_script_repairs_in_round_two_for_every_agent(tmp_path: Path, known_verdicts) -> None:
    # one task per kind keeps this fast; the script itself covers every starter task. Run after the two tests
    # above, the real tools' verdicts on the scripted mistakes and on the references come from them
    one_per_kind = list({task.kind: task for task in TASKS}.values())
    llm = LLM(
        ModelRoles(generator="mockllm/control"),
        cache=False,
        scripts={"control": build_control_script(one_per_kind)},
    )

    checker = OncePerArtifact(known_verdicts)
    results = _run("mockllm/control", _pairs(one_per_kind), llm, checker)

    for agent, task_id, attempt in results:
        assert attempt.status == AttemptStatus.PASSED, (agent, task_id, attempt.error)
        assert [r.passed for r in attempt.rounds] == [False, True], (agent, task_id)
        assert attempt.is_control
    # the real tools rejected each kind's scripted mistake and accepted its fix
    checked = {}
    for (task_id, *_), verdict in checker.verdicts.items():
        checked.setdefault(task_id, set()).add(verdict.outcome)
    assert all({Outcome.FAILED, Outcome.OK} <= outcomes for outcomes in checked.values()), checked
    assert set(checked) == {task.id for task in one_per_kind}


def test_mockllm_control_resolves_without_a_file() -> None:
    """The script makes each task's answers at the task's first call: every agent's, pinned to it, the same
    answers the whole starter suite's script holds."""
    script = find_script("control")

    assert script.mode == "repeat_last" and script.responses == [] and script.extend is not None
    made = [answer for task in TASKS for answer in script.extend(task, None)]
    answered = {(a.when.task, a.when.agent) for a in made if a.when}
    assert {(task.id, agent) for agent, task in _pairs(TASKS)} <= answered
    assert [a.model_dump() for a in made] == [a.model_dump() for a in build_control_script(TASKS).responses]
    # one agent's: only its answers, and none for a kind it does not take
    task = next(t for t in TASKS if t.kind == TaskKind.UML_CLASS)
    assert {a.when.agent for a in script.extend(task, "metagpt")} == {"metagpt"}
    assert script.extend(task, "code_translation") == []  # TLA+ only


def test_mockllm_control_answers_a_task_outside_the_starter_suite_from_its_reference() -> None:
    """A control run on another benchmark: the script makes the task's answers at its first call (the broken
    reference, then the reference), in the provider's own list (the shared script is unchanged); a task
    without a reference model gets an error saying so."""
    from sysmo.errors import LLMError
    from sysmo.llm import CallContext
    from sysmo.llm.mockllm import MockLLMProvider
    from sysmo.llm.request import LLMRequest

    starter = next(task for task in TASKS if task.kind == TaskKind.SYSML)
    outside = starter.model_copy(update={"id": "published/sysml/copy"}, deep=True)
    provider = MockLLMProvider("mockllm/control", find_script("control"))

    def answer(task: Task, round_: int) -> str:
        context = CallContext(task=task, round=round_, agent="base_modeling",
                              purpose="generate" if round_ == 0 else "repair")
        request = LLMRequest(model="mockllm/control", messages=[{"role": "user", "content": "model it"}],
                             role="generator", context=context)
        return provider.complete(request).text

    assert broken_artifact(outside).main_text.strip() in answer(outside, 0)  # the mistake (chosen by the task's id)
    assert answer(outside, 1) == answer(starter, 1) != answer(outside, 0)  # the reference
    assert not any(a.when and a.when.task == outside.id for a in find_script("control").responses)
    bare = outside.model_copy(update={"id": "published/sysml/no_reference",
                                      "references": outside.references.model_copy(update={"model": None})})
    with pytest.raises(LLMError, match="only for tasks with a reference model"):
        answer(bare, 0)
