"""The openhands agent's workspace is a directory on disk: confined paths, edit by replacing text, the check on
the files read back from it, the step budget, and the workspace kept as the attempt's artifact by the runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import fake_llm
from agent_tasks import LOCK_COUNTER_CFG, LOCK_COUNTER_TLA, lock_counter_task, text_task
from fake_openai import FakeOpenAI, FakeReply, reply, tool_reply
from sysmo.contracts.agent_events import Action, AgentEventList, Observation
from sysmo.agents.run import run_attempt
from sysmo.agents.workspace import Workspace, WorkspaceError
from sysmo.contracts.attempt import AttemptStatus
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact

BROKEN_TLA = LOCK_COUNTER_TLA.replace("UNCHANGED count", "UNCHANGE count")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.reset()
    return ws


# --- the workspace alone -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../escape.tla", "leads out of the workspace (..)"),
        ("a/../../escape.tla", "leads out of the workspace (..)"),
        ("/etc/passwd", "is an absolute path, outside the workspace"),
        ("specs/Spec.tla", "names a directory; the workspace is flat"),
        ("..\\escape.tla", "is not a plain file name"),
        ("", "give the file's name as `path`"),
    ],
)
def test_paths_out_of_the_workspace_are_refused(workspace: Workspace, tmp_path: Path, path: str, reason: str) -> None:
    for operation in (lambda: workspace.write(path, "x"), lambda: workspace.read(path),
                      lambda: workspace.edit(path, "x", "y")):
        with pytest.raises(WorkspaceError, match=reason.replace("(", r"\(").replace(")", r"\)")):
            operation()
    assert not (tmp_path / "escape.tla").exists() and workspace.files() == {}


def test_symbolic_links_are_never_followed(workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not leak")
    (workspace.root / "leak.tla").symlink_to(secret)
    workspace.write("Spec.tla", "x")
    (workspace.root / "alias.tla").symlink_to("Spec.tla")

    for operation in (lambda: workspace.read("leak.tla"), lambda: workspace.write("leak.tla", "overwritten"),
                      lambda: workspace.edit("leak.tla", "leak", "x")):
        with pytest.raises(WorkspaceError, match=r"'leak.tla' is a symbolic link leading out of the workspace"):
            operation()
    with pytest.raises(WorkspaceError, match="'alias.tla' is a symbolic link; the workspace holds regular files"):
        workspace.read("alias.tla")
    assert secret.read_text() == "do not leak"
    assert workspace.files() == {"Spec.tla": "x"}  # links are not workspace files


def test_edit_replaces_the_one_occurrence_and_refuses_an_absent_or_ambiguous_old_text(workspace: Workspace) -> None:
    workspace.write("Spec.tla", BROKEN_TLA)
    with pytest.raises(WorkspaceError, match="the old text does not occur in Spec.tla \\(nothing changed\\)"):
        workspace.edit("Spec.tla", "UNCHANGED count", "UNCHANGED count")
    lines = [n for n, line in enumerate(BROKEN_TLA.splitlines(), 1) if "pc[p] = " in line]
    with pytest.raises(WorkspaceError, match=f"occurs {len(lines)} times in Spec.tla, at lines "
                                             f"{', '.join(map(str, lines))} \\(nothing changed\\)"):
        workspace.edit("Spec.tla", "pc[p] = ", "pc[p] # ")
    with pytest.raises(WorkspaceError, match="not empty"):
        workspace.edit("Spec.tla", "", "x")
    assert workspace.read("Spec.tla") == BROKEN_TLA

    shown = workspace.edit("Spec.tla", "UNCHANGE count", "UNCHANGED count")

    assert workspace.read("Spec.tla") == LOCK_COUNTER_TLA
    line = next(n for n, text in enumerate(LOCK_COUNTER_TLA.splitlines(), 1) if "UNCHANGED count" in text)
    assert shown.startswith(f"Edited Spec.tla: lines {line}-{line} now read")
    assert f"{line:4d}                /\\ UNCHANGED count" in shown and f"{line + 2:4d}  Release(p)" in shown


def test_reset_empties_what_an_earlier_run_left(workspace: Workspace) -> None:
    workspace.write("Old.tla", "x")
    workspace.reset()
    assert workspace.files() == {} and workspace.root.is_dir()
    with pytest.raises(WorkspaceError, match="no file 'Old.tla' in the workspace; it has: \\(none\\)"):
        workspace.read("Old.tla")


# --- the agent on a real check -------------------------------------------------------------------
def _observations(attempt: Any) -> list[Observation]:
    return [e for e in AgentEventList.validate_python(attempt.extras["events"]) if isinstance(e, Observation)]


@pytest.mark.slow
def test_openhands_edits_its_workspace_on_disk_and_the_check_runs_on_those_files(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    """Write a broken spec, check it (SANY rejects it), edit it (a missing and an ambiguous old text are refused
    and change nothing), check again (SANY and TLC accept it): the workspace on disk is the final artifact."""
    task = lock_counter_task(tmp_path / "task")
    root = tmp_path / "attempt" / "workspace"
    secret = tmp_path / "secret.tla"
    secret.write_text("outside the workspace")

    def plant_link_then_reply(_body: dict[str, Any]) -> FakeReply:
        (root / "leak.tla").symlink_to(secret)  # something else left a link in the workspace
        return tool_reply(
            ("read_file", {"path": "leak.tla"}),
            ("edit_file", {"path": "LockCounter.tla", "old_text": "UNCHANGED count", "new_text": "UNCHANGED count"}),
            ("edit_file", {"path": "LockCounter.tla", "old_text": "pc[p] = ", "new_text": "pc[p] # "}),
            ("edit_file", {"path": "LockCounter.tla", "old_text": "UNCHANGE count", "new_text": "UNCHANGED count"}),
            ("run_check", {}),
        )

    server.push(
        tool_reply(
            ("write_file", {"path": "LockCounter.tla", "content": BROKEN_TLA}),
            ("write_file", {"path": "LockCounter.cfg", "content": LOCK_COUNTER_CFG}),
            ("write_file", {"path": "../escape.tla", "content": "x"}),
            ("read_file", {"path": "/etc/passwd"}),
            ("run_check", {}),
        ),
        plant_link_then_reply,
    )
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="openhands",
                       attempt_id="ws1", workspace_dir=root)

    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED and [r.passed for r in attempt.rounds] == [False, True]
    assert attempt.rounds[0].check.tool == "sany" and attempt.rounds[1].check.tool == "tlc"
    on_disk = {p.name: p.read_text() for p in root.iterdir() if not p.is_symlink()}
    assert attempt.final_artifact.files == on_disk == {"LockCounter.tla": LOCK_COUNTER_TLA,
                                                       "LockCounter.cfg": LOCK_COUNTER_CFG}
    assert not (tmp_path / "attempt" / "escape.tla").exists() and secret.read_text() == "outside the workspace"
    errors = [o.error for o in _observations(attempt) if o.error]
    assert errors == [
        "'../escape.tla' leads out of the workspace (..); give a file name such as Spec.tla",
        "'/etc/passwd' is an absolute path, outside the workspace; give a file name such as Spec.tla",
        "'leak.tla' is a symbolic link leading out of the workspace; it is not followed",
        "the old text does not occur in LockCounter.tla (nothing changed); read_file it and copy the text "
        "exactly, whitespace included",
        "the old text occurs 3 times in LockCounter.tla, at lines 15, 21, 29 (nothing changed); include more of "
        "the surrounding lines so that it occurs once",
    ]
    # every action and its observations are typed events; the model saw each refusal as the tool's answer
    events = AgentEventList.validate_python(attempt.extras["events"])
    assert [type(e) for e in events] == [Action, *[Observation] * 5, Action, *[Observation] * 5]
    assert events[6].tool_calls[3].arguments == {"path": "LockCounter.tla", "old_text": "UNCHANGE count",
                                                 "new_text": "UNCHANGED count"}
    assert events[-2].content.startswith("Edited LockCounter.tla: lines 19-19 now read")
    told = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert told[2].startswith("Error: '../escape.tla' leads out of the workspace")
    assert "Unknown operator" in told[-1] or "UNCHANGE" in told[-1]  # SANY's diagnostics of round 0


@pytest.mark.slow
def test_the_step_budget_hands_over_the_workspace_with_an_observation(
    server: FakeOpenAI, tmp_path: Path, monkeypatch
) -> None:
    """Two model calls allowed: the model writes a diagram without its @enduml, then adds it with an edit and
    never checks; the budget's observation says so and the hand-off checks the edited workspace."""
    private = tmp_path / "private-workspace"
    monkeypatch.setattr("sysmo.agents.run._private_workspace", lambda: private)
    task = text_task(TaskKind.ARCHITECTURE)
    reference = task.references.model.main_text
    last = "MobileApp --> DashboardApi : HTTPS\n"
    assert reference.endswith(last + "@enduml\n")
    server.push(
        tool_reply(("write_file", {"path": "diagram.puml", "content": reference.replace("@enduml\n", "")})),
        tool_reply(("edit_file", {"path": "diagram.puml", "old_text": last, "new_text": last + "@enduml\n"})),
        reply("never asked"),
    )
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="openhands",
                       attempt_id="budget", max_steps=2)

    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")

    assert server.calls == 2 and server.pending == 1
    budget = [o for o in _observations(attempt) if o.tool == "budget"]
    assert [o.content for o in budget] == [
        "step budget of 2 model calls used up: the workspace is handed over as it is"]
    assert attempt.status == AttemptStatus.PASSED and len(attempt.rounds) == 1  # the hand-off's check
    assert attempt.final_artifact.main_text == reference
    assert not private.exists()  # the attempt's private workspace is removed when it ends


def test_the_runner_keeps_the_workspace_beside_the_rounds_artifacts(tmp_path: Path, monkeypatch) -> None:
    """``sysmo run`` with ``mockllm/control``: the workspace stays at artifacts/<attempt>/workspace/, holding the
    final artifact; the control's repair is an edit of the broken line."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    config = ExperimentConfig(id="ws", output_dir=tmp_path / "runs", agents=["openhands"],
                              models=["mockllm/control"], samples=1, score=False, concurrency=1,
                              tasks=TaskSelection(benchmarks=["starter"], ids=["starter/uml_class/library_loans"]))
    run_experiment(config, progress=False)

    store = Store(tmp_path / "runs" / "ws" / "results.sqlite")
    try:
        [row] = store.query("SELECT id FROM attempts")
        attempt = store.attempt(row["id"])
    finally:
        store.close()
    folder = tmp_path / "runs" / "ws" / "artifacts" / attempt.id
    assert attempt.status == "passed" and sorted(p.name for p in folder.iterdir()) == ["round0", "round1",
                                                                                       "workspace"]
    workspace = {p.name: p.read_text() for p in (folder / "workspace").iterdir()}
    assert workspace == attempt.final_artifact.files == {p.name: p.read_text() for p in (folder / "round1").iterdir()}
    tools = [c["name"] for e in attempt.extras["events"] if e["type"] == "action" for c in e["tool_calls"]]
    assert tools == ["write_file", "run_check", "edit_file", "run_check"]
    # `sysmo trace` lists the actions and observations, one line each
    from rich.console import Console
    from sysmo.evals.trace_view import render_attempt

    console = Console(record=True, width=200)
    render_attempt(attempt, None, console)
    shown = console.export_text()
    assert "actions and observations" in shown
    name = attempt.final_artifact.main_file
    assert f'step 2 action: edit_file(path="{name}", old_text=<' in shown
    assert f"step 2 observation [edit_file]: Edited {name}: lines " in shown
    assert "step 2 observation [run_check]: The check passed." in shown


def test_the_control_fix_edits_every_starter_tasks_broken_model_into_its_reference(tmp_path: Path) -> None:
    """``mockllm/control``'s second step, replayed on a real workspace, gives the reference on every starter task;
    each fix is one edit of the broken lines (widened by neighbours until the old text occurs once)."""
    from agent_tasks import starter_tasks
    from sysmo.agents.control_script import broken_artifact
    from sysmo.agents.openhands import _fix_calls

    edits = 0
    tasks = [t for t in starter_tasks() if t.references.model is not None]
    for task in tasks:
        ws = Workspace(tmp_path / task.id.replace("/", "_"))
        ws.reset()
        for name, text in broken_artifact(task).files.items():
            ws.write(name, text)
        for call in _fix_calls(broken_artifact(task), task.references.model):
            args = call["arguments"]
            if call["name"] == "edit_file":
                ws.edit(args["path"], args["old_text"], args["new_text"])
                edits += 1
            elif call["name"] == "write_file":
                ws.write(args["path"], args["content"])
        assert ws.files() == task.references.model.files, task.id
    assert len(tasks) >= 8 and edits == len(tasks)  # one file of each differs


@pytest.mark.slow
def test_a_fork_from_a_checkpoint_puts_the_workspace_back_as_it_was_at_that_step(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    """The attempt's directory holds the fixed diagram at its end; forked from the step after the first check, the
    agent reads back the diagram as it was then (without its @enduml), not what the directory held."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from sysmo.agents.registry import get_agent
    from sysmo.agents.run import compiled_graph
    from sysmo.graphs.checkpoint import history
    from sysmo.graphs.checkpoint_texts import TextsSerializer

    task = text_task(TaskKind.ARCHITECTURE)
    reference = task.references.model.main_text
    broken = reference.replace("@enduml\n", "")
    root, db = tmp_path / "workspace", tmp_path / "checkpoints.sqlite"
    server.push(
        tool_reply(("write_file", {"path": "diagram.puml", "content": broken}), ("run_check", {})),
        tool_reply(("write_file", {"path": "diagram.puml", "content": reference}), ("run_check", {})),
    )
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="openhands",
                       attempt_id="fork1", workspace_dir=root)
    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model", checkpoint_db=db)
    assert attempt.status == AttemptStatus.PASSED and Workspace(root).files() == {"diagram.puml": reference}

    after_first_check = next(s for s in history(db, "fork1") if s.next == ["step"] and s.round_index == 1)
    server.push(tool_reply(("read_file", {"path": "diagram.puml"}),
                           ("write_file", {"path": "diagram.puml", "content": reference}), ("run_check", {})))

    async def fork() -> dict:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            saver.serde = TextsSerializer(path=db)  # the file stores each long text once
            graph = compiled_graph(get_agent("openhands"), ctx).copy({"checkpointer": saver})
            config = {"configurable": {"thread_id": "fork1", "checkpoint_id": after_first_check.checkpoint_id}}
            return await graph.ainvoke(None, config, context=ctx)

    final = asyncio.run(fork())
    read_back = [e["content"] for e in final["scratch"]["events"] if e.get("tool") == "read_file"]
    assert read_back == [broken] and final["status"] == "passed"
    assert Workspace(root).files() == {"diagram.puml": reference}
