"""Links and stray entries planted in an openhands workspace while the agent runs (by something with write access
to the host, not by the model): a hard link is neither read back to the model nor written through, a refusal
names the file and never where it leads, and resetting the workspace never fails on what it finds."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import fake_llm
from agent_tasks import text_task
from fake_openai import FakeOpenAI, FakeReply, reply, tool_reply
from sysmo.agents.run import run_attempt
from sysmo.agents.workspace import Workspace, WorkspaceError
from sysmo.contracts.agent_events import AgentEventList, Observation
from sysmo.contracts.attempt import AttemptStatus
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact

SECRET = "SYSMO-HOST-SECRET-7b1f"


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    path = tmp_path / "host" / "credentials.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "attempt" / "workspace")
    ws.reset()
    return ws


def test_a_hard_link_is_neither_read_nor_written_and_the_refusal_names_only_the_file(workspace, host_file):
    os.link(host_file, workspace.root / "notes.tla")
    for operation in (lambda: workspace.read("notes.tla"), lambda: workspace.write("notes.tla", "overwritten"),
                      lambda: workspace.edit("notes.tla", "SYSMO", "x")):
        with pytest.raises(WorkspaceError) as caught:
            operation()
        message = str(caught.value)
        assert message.startswith("'notes.tla' is a hard link (the file has 2 names)")
        assert SECRET not in message and str(host_file.parent) not in message
    assert host_file.read_text() == SECRET
    assert workspace.files() == {}  # not a workspace file


def test_a_symbolic_link_refusal_does_not_say_where_it_leads(workspace, host_file):
    (workspace.root / "leak.tla").symlink_to(host_file)
    with pytest.raises(WorkspaceError) as caught:
        workspace.read("leak.tla")
    assert str(caught.value) == "'leak.tla' is a symbolic link leading out of the workspace; it is not followed"


def test_reset_never_fails_on_what_it_finds(workspace, host_file, tmp_path):
    """A hard link, a link to a folder outside, a folder of files with a link in it, a FIFO, and entries planted
    while the reset runs: the workspace ends empty, and nothing outside it is touched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    os.link(host_file, workspace.root / "hard.tla")
    (workspace.root / "dir-link").symlink_to(outside, target_is_directory=True)
    (workspace.root / "sub" / "deeper").mkdir(parents=True)
    (workspace.root / "sub" / "deeper" / "a.tla").write_text("x")
    (workspace.root / "sub" / "out").symlink_to(outside, target_is_directory=True)
    os.mkfifo(workspace.root / "pipe")
    stop = threading.Event()

    def plant() -> None:  # keeps adding entries: the directory is never quiet while it is removed
        n = 0
        while not stop.is_set():
            try:
                (workspace.root / "sub" / f"planted-{n}").write_text("x")
            except OSError:
                pass
            n += 1

    planter = threading.Thread(target=plant)
    planter.start()
    try:
        for _ in range(20):
            workspace.reset()
    finally:
        stop.set()
        planter.join()
    workspace.reset()
    assert list(workspace.root.iterdir()) == [] and workspace.root.is_dir()
    assert host_file.read_text() == SECRET and (outside / "keep.txt").read_text() == "keep"
    assert [p.name for p in workspace.root.parent.iterdir()] == ["workspace"]  # the old copies went


def test_reset_replaces_a_workspace_that_is_a_link(tmp_path, host_file):
    root = tmp_path / "workspace"
    root.symlink_to(host_file.parent, target_is_directory=True)
    Workspace(root).reset()
    assert root.is_dir() and not root.is_symlink() and list(root.iterdir()) == []
    assert host_file.read_text() == SECRET


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_an_agent_run_goes_on_past_links_planted_in_its_workspace(server, host_file, tmp_path):
    """While the agent runs, a hard link to a host file, a folder and a stray file appear in its workspace; the
    model asks to read the link. It is told the file is refused (never its content), the stray entries make the
    agent put its workspace back (a reset over them), and the attempt ends as usual with its own diagram."""
    task = text_task(TaskKind.ARCHITECTURE)
    diagram = task.references.model.main_text
    root = tmp_path / "attempt" / "workspace"

    def plant_then_read(_body: dict[str, Any]) -> FakeReply:
        os.link(host_file, root / "notes.puml")
        (root / "planted").mkdir()
        (root / "planted" / "x.puml").write_text("x")
        return tool_reply(("read_file", {"path": "notes.puml"}))

    def plant_a_file_then_check(_body: dict[str, Any]) -> FakeReply:
        (root / "stray.puml").write_text("@startuml\n@enduml\n")  # the workspace differs from what was written
        return tool_reply(("run_check", {}))

    server.push(tool_reply(("write_file", {"path": "diagram.puml", "content": diagram})), plant_then_read,
                plant_a_file_then_check, reply("never asked"))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="openhands",
                       attempt_id="planted", workspace_dir=root, max_steps=3)

    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED and attempt.error is None
    assert attempt.final_artifact.files == {"diagram.puml": diagram}
    refusals = [e.error for e in AgentEventList.validate_python(attempt.extras["events"])
                if isinstance(e, Observation) and e.tool == "read_file"]
    assert refusals == ["'notes.puml' is a hard link (the file has 2 names); the workspace holds files of its own "
                        "only, it is neither read nor written"]
    assert server.calls == 3 and all(SECRET not in str(body) for body in server.requests)
    assert SECRET not in attempt.model_dump_json() and host_file.read_text() == SECRET
    assert sorted(p.name for p in root.iterdir()) == ["diagram.puml"]  # put back as the agent wrote it
