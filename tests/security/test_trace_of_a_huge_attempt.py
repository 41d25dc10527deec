"""``sysmo trace`` of an attempt whose reply and artifacts are 150k lines (under the reply cap) prints a page, not
the attempt: every long block (reply, prompt, numbered artifact, diff, diagnostics, tool answers) is folded, and
``--full`` unfolds them. Before, the reply was folded but the numbered artifact and the diff were not: 25.5 MB in
45 s for one attempt."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.attempt import Attempt, AttemptStatus, LLMCallSummary, Round
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
from sysmo.evals.trace_view import render_attempt
from sysmo.store import Store

LINES = 150_000


def _spec(lines: int, tag: str) -> str:
    return "".join(f"Line{i} == {tag} + {i}\n" for i in range(lines))


def _attempt(lines: int) -> Attempt:
    """Two rounds of a ``lines``-line spec (every line changed between them), each with 2,000 diagnostics, a reply
    as long, and tool answers whose first line is a megabyte."""
    check = CheckResult(tool="sany", outcome=Outcome.FAILED,
                        diagnostics=[Diagnostic(tool="sany", message=f"problem {i} " + "why " * 500, line=i * 7 + 1)
                                     for i in range(min(2_000, lines // 7))])
    rounds = [Round(index=i, kind="generate" if i == 0 else "repair", response=_spec(lines, tag),
                    messages=[{"role": "user", "content": "fix it " * 50_000}],
                    llm_calls=[LLMCallSummary(role="generator", model="openai/x", purpose="generate")],
                    artifact=Artifact(language="tla", files={"Spec.tla": _spec(lines, tag)}), check=check)
              for i, tag in enumerate("ab")]
    events = [{"type": "observation", "step": 1, "tool": "read_file", "content": "x" * 1_000_000 + "\nmore"}]
    return Attempt(id="huge01", task_id="starter/tla/spinlock", agent="openhands", model="openai/x",
                   status=AttemptStatus.FAILED, rounds=rounds, extras={"events": events})


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    store = Store(root / "exp" / "results.sqlite")
    store.save_experiment("exp", {"samples": 1}, {}, is_control=False)
    store.save_attempt("exp", _attempt(LINES), {"benchmark": "starter", "kind": "tla"})
    store.close()
    return root


def test_trace_of_a_150k_line_attempt_prints_a_page(runs):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sysmo.cli", "trace", "huge01", "-o", str(runs)],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "160"}, timeout=600)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    print(f"sysmo trace of a {LINES:,}-line attempt: {len(out.encode()):,} bytes in {took:.2f} s "
          f"(load {os.getloadavg()[0]:.1f})")
    assert len(out.encode()) < 1_000_000
    assert "Line0 == a + 0" in out and "Line75000 " not in out  # the start shown, the middle folded
    assert ("Spec.tla: changed (150,000 lines before, 150,000 after): too long to diff here; --full shows the "
            "diff") in out
    assert "(1,980 more diagnosed lines; --full shows them)" in out
    assert "[lines 137-150000 folded; --full shows all]" in out and "characters folded; --full shows all" in out
    assert out.count("x" * 100) <= 2  # a tool answer's megabyte-long first line, folded to its start


def test_full_unfolds_every_block():
    attempt = _attempt(700)
    folded, full = io.StringIO(), io.StringIO()
    render_attempt(attempt, None, Console(file=folded, width=160))
    render_attempt(attempt, None, Console(file=full, width=160), full=True)
    for text in ("Line350 == a + 350", "Line350 == b + 350", "+Line350 == b + 350", "problem 50 "):
        assert text in full.getvalue() and text not in folded.getvalue(), text
    assert "folded; --full" not in full.getvalue() and "folded; --full" in folded.getvalue()
