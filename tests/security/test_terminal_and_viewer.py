"""Model text cannot drive the terminal (F2), and the viewer answers only the names it is served under (DNS
rebinding)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from starlette.testclient import TestClient
from sysmo_cli import run_sysmo

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.attempt import Attempt, AttemptStatus, LLMCallSummary, Round
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
from sysmo.runner.progress import RunProgress
from sysmo.store import Store
from sysmo.terminal import escape_terminal
from sysmo.view.app import create_app

CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
RED = "\x1b[31m"
HOSTILE = f"{CLEAR}{RED}all tests passed\x07\r\x9b1mDONE\u202e"


@pytest.fixture
def runs(tmp_path):
    """An experiment whose one attempt carries escape sequences in every place a model's text lands."""
    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {"samples": 1}, {}, is_control=False)
    check = CheckResult(tool="plantuml", outcome=Outcome.FAILED, diagnostics=[
        Diagnostic(tool="plantuml", message=f"syntax error near {HOSTILE}", line=1)])
    attempt = Attempt(
        id="ee01", task_id="starter/uml_class/t1", agent="base_modeling", model="openai/x",
        status=AttemptStatus.FAILED, error=f"model said {HOSTILE}",
        rounds=[Round(index=0, messages=[{"role": "user", "content": "Draw A."}], response=f"reply {HOSTILE}",
                      llm_calls=[LLMCallSummary(role="generator", model="openai/x", purpose="generate")],
                      artifact=Artifact(language="plantuml", files={"m.puml": f"@startuml\n{HOSTILE}\n@enduml\n"}),
                      check=check)])
    store.save_attempt("exp", attempt, {"benchmark": "starter", "kind": "uml_class"})
    store.close()
    return tmp_path


def _clean(output: str) -> None:
    for raw in ("\x1b", "\x07", "\r", "\x9b", "\u202e"):
        assert raw not in output, f"{raw!r} reached the terminal"


@pytest.mark.parametrize("args", [["ee01", "--full"], ["ee01"], ["exp", "--failed"]])
def test_sysmo_trace_shows_escape_sequences_instead_of_obeying_them(runs, args):
    result = run_sysmo("trace", *args, "-o", str(runs))
    assert result.code == 0, result.output
    _clean(result.output)
    assert "\\x1b[2J" in re.sub(r"[\s│]", "", result.output)  # the escape, however the console folded it


def test_an_error_message_quoting_model_text_is_escaped(runs):
    result = run_sysmo("trace", f"nope{CLEAR}", "-o", str(runs))
    assert result.code == 2
    _clean(result.output)
    assert "\\x1b[2J" in result.output


def test_a_progress_note_is_escaped():
    out = io.StringIO()
    with RunProgress(total=1, console=Console(file=out, force_terminal=False)) as progress:
        progress.note(f"error: {HOSTILE} [bold]not markup[/]")
    _clean(out.getvalue())
    assert "[bold]not markup[/]" in out.getvalue()


def test_escape_terminal_keeps_newlines_tabs_and_printable_text():
    assert escape_terminal("a\tb\nc é ✓") == "a\tb\nc é ✓"
    assert escape_terminal(HOSTILE) == "\\x1b[2J\\x1b[H\\x1b[31mall tests passed\\x07\\r\\x9b1mDONE\\u202e"


@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "127.0.0.1.evil.example", "", "testserver"])
def test_the_viewer_refuses_a_host_name_that_is_not_its_own(runs, host):
    """DNS rebinding: a page at evil.example points its name at 127.0.0.1 and reads the viewer's pages."""
    client = TestClient(create_app(runs))
    for path in ("/", "/e/exp", "/e/exp/a/ee01/json", "/static/style.css"):
        response = client.get(path, headers={"host": host})
        assert response.status_code == 400, (path, host)
        assert "ee01" not in response.text and str(runs) not in response.text


@pytest.mark.parametrize(("host", "status"), [
    ("127.0.0.1:8765", 200), ("localhost:8765", 200), ("[::1]:8765", 200), ("LOCALHOST:8765", 200),
    ("localhost", 200), ("box.lan:8765", 200), ("127.0.0.1:9999", 400), ("box.lan:9999", 400), ("other.lan", 400)])
def test_the_viewer_answers_its_loopback_names_and_allowed_hosts_on_its_port(runs, host, status):
    client = TestClient(create_app(runs, port=8765, allow_hosts=("box.lan",)))
    for path in ("/", "/e/exp", "/e/exp/a/ee01/json", "/static/style.css"):
        assert client.get(path, headers={"host": host}).status_code == status, (path, host)
