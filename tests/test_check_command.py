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
