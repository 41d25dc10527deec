"""SANY, TLC and one-shot PlantUML run in every sandbox backend, and a diagram still reads no host file there."""

from __future__ import annotations

import importlib
import uuid
from pathlib import Path

import pytest

import sysmo.sandbox
from sysmo.contracts.check import Outcome

SPEC = """---- MODULE Counter ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 3 /\\ x' = x + 1
Safe == x <= 3
====
"""
CFG = "INIT Init\nNEXT Next\nINVARIANT Safe\nCHECK_DEADLOCK FALSE\n"


@pytest.fixture
def tools_in(backend, monkeypatch):
    """Every tool check of this test runs in ``backend`` (as ``sandbox.backend`` would choose it)."""
    from sysmo.tools.tla import jvm

    plantuml_check = importlib.import_module("sysmo.tools.plantuml.check")  # the package exports a function `check`
    for module in (sysmo.sandbox, jvm, plantuml_check):
        monkeypatch.setattr(module, "get_sandbox", lambda *_: backend)
    return backend


@pytest.mark.slow
def test_sany_and_tlc_check_a_spec(tools_in):
    from sysmo.tools.tla import sany, tlc

    parsed = sany.check(SPEC)
    assert parsed.outcome == Outcome.OK, parsed.diagnostics
    checked = tlc.model_check(SPEC, CFG, timeout_s=120)
    assert checked.outcome == Outcome.OK, checked.diagnostics  # TLC wrote its states/ folder as nobody
    assert checked.details.get("isolation", [tools_in.name])[0] in ("bwrap", "unshare", "docker")


@pytest.mark.slow
def test_a_diagram_renders_but_reads_no_host_file(tools_in, monkeypatch):
    from sysmo.tools.plantuml.check import check_batch

    secret = f"SYSMO-SECRET-{uuid.uuid4().hex}"
    planted = Path.home() / f".sysmo-marker-{uuid.uuid4().hex}"
    planted.write_text(secret)
    monkeypatch.setenv("SYSMO_TEST_SECRET", secret)
    try:
        fine, hostile = check_batch([
            "@startuml\nclass A\nA --> B\n@enduml",
            f'@startuml\n!include {planted}\nclass A {{\n  s : %getenv("SYSMO_TEST_SECRET")\n}}\n@enduml',
        ], keep_svg=True)
    finally:
        planted.unlink()
    assert fine.outcome == Outcome.OK and "<svg" in fine.details["svg"], fine.diagnostics
    assert hostile.outcome == Outcome.FAILED
    assert secret not in hostile.details.get("svg", "") + str(hostile.diagnostics)
