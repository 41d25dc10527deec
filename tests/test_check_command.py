"""``sysmo check``: the in-loop check (or a task's cascade) on files, with exit codes 0 / 1 / 2 and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sysmo_cli import run_sysmo

from sysmo.benchmarks.starter import STARTER_DIR

SPINLOCK = (STARTER_DIR / "tla" / "spinlock" / "Spinlock.tla").read_text()
CFG = "CONSTANT N = 3\nSPECIFICATION Spec\nINVARIANT TypeOK\n"
SYSML = """package Kettle {
    private import ScalarValues::*;
    part def Heater {
        attribute power : Real;
    }
    part def Kettle {
        part heater : Heater;
    }
}
"""
PUML = """@startuml
class Order {
  +id : int
}
class Customer
Customer "1" -- "*" Order
@enduml
"""


def _sysmo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sysmo.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("check")
    (root / "Spinlock.tla").write_text(SPINLOCK)
    (root / "Spinlock.cfg").write_text(CFG)
    # broken TLA+: an unknown name on line 27; a TLA+ spec that parses but fails at run time (TLC)
    (root / "Broken.tla").write_text(SPINLOCK.replace("MODULE Spinlock", "MODULE Broken")
                                     .replace("    /\\ ~locked", "    /\\ ~lockd"))
    (root / "Broken.cfg").write_text(CFG)
    (root / "Crash.tla").write_text(SPINLOCK.replace("MODULE Spinlock", "MODULE Crash")
                                    .replace("    /\\ locked' = FALSE", "    /\\ locked' = 1 \\div 0"))
    (root / "Crash.cfg").write_text(CFG)
    # parses, but TLC cannot build its 20^20 initial states (its enumeration limit): no verdict either way
    (root / "Huge.tla").write_text(SPINLOCK.replace("MODULE Spinlock", "MODULE Huge")
                                   .replace("Init == locked = FALSE", "Init == locked \\in [1..20 -> 1..20]"))
    (root / "Huge.cfg").write_text(CFG)
    (root / "good.sysml").write_text(SYSML)
    (root / "broken.sysml").write_text(SYSML.replace("part heater : Heater", "part heater : Heatr"))
    (root / "good.puml").write_text(PUML)
    (root / "broken.puml").write_text(PUML.replace("class Customer\n", "class Customer {\n"))
    return root


@pytest.mark.slow
def test_good_files_of_every_language_pass_with_exit_code_0(files: Path) -> None:
    run = _sysmo("check", "Spinlock.tla", "good.sysml", "good.puml", cwd=files)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [line.split(":")[0] for line in run.stdout.splitlines() if not line.startswith(" ")] == [
        "Spinlock.tla", "good.sysml", "good.puml"]
    assert "FAILED" not in run.stdout


@pytest.mark.slow
def test_broken_files_fail_with_exit_code_1_and_every_diagnostic_has_its_line(files: Path) -> None:
    run = _sysmo("check", "--json", "Broken.tla", "Crash.tla", "broken.sysml", "broken.puml", "good.puml",
                 cwd=files)
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert report["passed"] is False
    by_path = {f["path"]: f for f in report["files"]}
    assert [p for p, f in by_path.items() if f["passed"]] == ["good.puml"]
    broken = by_path["Broken.tla"]
    assert broken["tool"] == "sany" and broken["language"] == "tla"
    assert [(d["line"], d["column"], d["severity"]) for d in broken["diagnostics"]] == [(27, 9, "error")]
    assert "lockd" in broken["diagnostics"][0]["message"]
    crash = by_path["Crash.tla"]  # parses; TLC's simulation meets the division by zero in Release
    assert crash["tool"] == "tlc" and crash["outcome"] == "failed"
    # TLC 2.15's simulation names no position for this error: its message and the error trace reach the model
    assert [d["code"] for d in crash["diagnostics"]] == ["evaluation", "trace"]
    assert "\\div is 0" in crash["diagnostics"][0]["message"]
    assert "<Acquire>" in crash["diagnostics"][1]["message"]
    sysml = by_path["broken.sysml"]["diagnostics"]
    assert [(d["tool"], d["line"], d["column"]) for d in sysml] == [("opensysml", 7, 23)]
    assert "Heatr" in sysml[0]["message"]
    puml = by_path["broken.puml"]["diagnostics"]
    assert puml and all(d["tool"].startswith("plantuml") and d["line"] == 5 for d in puml)
    assert set(d for d in puml[0]) >= {"tool", "severity", "line", "column", "message"}


@pytest.mark.slow
def test_with_a_task_the_cascade_scores_the_file_up_to_the_stage_asked(files: Path) -> None:
    run = _sysmo("check", "--task", "starter/tla/spinlock", "--stage", "syntax", "--json", "Broken.tla",
                 cwd=files)
    assert run.returncode == 1, run.stderr
    (verdict,) = json.loads(run.stdout)["files"]
    assert [s["stage"] for s in verdict["stages"]] == ["syntax"]
    assert verdict["stages"][0]["value"] == pytest.approx(0.375)  # 0.5 x 0 + 0.5 x 3 of 4 actions
    assert verdict["diagnostics"][0]["line"] == 27
    run = _sysmo("check", "--task", "starter/tla/spinlock", "--stage", "syntax", "Spinlock.tla", cwd=files)
    assert run.returncode == 0 and "syntax       1.000  ok" in run.stdout


@pytest.mark.slow
def test_a_check_that_cannot_finish_is_inconclusive_with_exit_code_3_and_a_failure_still_wins(files: Path) -> None:
    run = _sysmo("check", "Huge.tla", "Spinlock.tla", cwd=files)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "Huge.tla: INCONCLUSIVE" in run.stdout and "Spinlock.tla: ok" in run.stdout
    assert "resources" in run.stdout
    run = _sysmo("check", "--json", "Huge.tla", "Broken.tla", cwd=files)
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert (report["verdict"], report["exit_code"], report["passed"]) == ("failed", 1, False)
    assert {f["path"]: f["outcome"] for f in report["files"]} == {"Huge.tla": "inconclusive", "Broken.tla": "failed"}


def test_the_joint_verdict_and_exit_code_of_files() -> None:
    from sysmo.contracts.artifact import Language
    from sysmo.tools.check_files import FileVerdict, verdict_of

    def verdict(passed: bool, outcome: str) -> FileVerdict:
        return FileVerdict(path="M.tla", language=Language.TLA, passed=passed, outcome=outcome, tool="tlc")

    assert verdict_of([verdict(True, "ok")]) == ("passed", 0)
    assert verdict_of([verdict(True, "ok"), verdict(False, "inconclusive")]) == ("inconclusive", 3)
    assert verdict_of([verdict(False, "inconclusive"), verdict(False, "failed")]) == ("failed", 1)
    assert verdict_of([verdict(False, "error")]) == ("failed", 1)


def test_a_cascade_whose_only_failing_stages_are_inconclusive_is_inconclusive() -> None:
    from sysmo.contracts.scorecard import StageResult
    from sysmo.evals.score_files import _worst

    def stage(name: str, outcome: str, gated: bool = False) -> StageResult:
        return StageResult(stage=name, value=0.0, passed=False, outcome=outcome, detail={"gated": gated})

    assert _worst([]) == "ok"
    assert _worst([stage("runtime", "inconclusive"), stage("invariants", "inconclusive")]) == "inconclusive"
    assert _worst([stage("runtime", "inconclusive"), stage("invariants", "failed")]) == "failed"
    assert _worst([stage("syntax", "inconclusive"), stage("runtime", "skipped", gated=True)]) == "inconclusive"
    assert _worst([stage("runtime", "ok")]) == "failed"  # ran clean but did not pass (covered nothing)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "give at least one file"),
        (("notes.txt",), "unknown kind of file"),
        (("Missing.tla",), "no such file"),
        (("--stage", "syntax", "Spinlock.tla"), "--stage needs --task"),
        (("--task", "starter/tla/spinlock", "--stage", "bogus", "Spinlock.tla"), "unknown stage"),
        (("--task", "starter/tla/spinlock", "good.puml"), "wants tla"),
    ],
)
def test_usage_errors_exit_with_2_and_one_line(files: Path, args: tuple[str, ...], said: str, monkeypatch) -> None:
    """The command's entry point in this process (tests/sysmo_cli.py): no tool runs, so no interpreter start per
    case (the tests above run the real command in a process of its own)."""
    monkeypatch.chdir(files)
    (files / "notes.txt").write_text("x")
    run = run_sysmo("check", *args)
    assert run.code == 2, run.output
    assert said in " ".join(run.stderr.split()) and "Traceback" not in run.stderr
