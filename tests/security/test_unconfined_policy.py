"""Without any confinement, untrusted artifacts are refused unless --allow-unconfined; the doctor is never green then."""

from __future__ import annotations

import os

import pytest

from sysmo.config import settings
from sysmo.errors import SandboxError
from sysmo.sandbox import confine
from sysmo.tools.doctor_checks import with_isolation
from sysmo.tools.status import ToolStatus


@pytest.fixture
def nothing_confines(monkeypatch):
    monkeypatch.setattr(confine, "confinement_level", lambda: "none")
    monkeypatch.delenv("SYSMO_SANDBOX__ALLOW_UNCONFINED", raising=False)
    settings.cache_clear()
    yield
    os.environ.pop("SYSMO_SANDBOX__ALLOW_UNCONFINED", None)  # enable_unconfined() sets it for the process
    settings.cache_clear()


def test_the_servers_refuse_to_start_unconfined_and_say_how_to_fix_it(nothing_confines, monkeypatch):
    from sysmo.tools.plantuml import server as plantuml_server
    from sysmo.tools.sysml import kernel as opensysml_kernel

    monkeypatch.setattr(plantuml_server, "confinement_level", lambda: "none")
    monkeypatch.setattr(opensysml_kernel, "confinement_level", lambda: "none")
    for server in (plantuml_server.PlantUMLServer(), opensysml_kernel.OpenSysMLKernel()):
        with pytest.raises(SandboxError, match=r"cannot confine .*apt-get install bubblewrap.*--allow-unconfined"):
            server._start()
        server.stop()


def test_allow_unconfined_lets_them_run_and_names_it(nothing_confines, monkeypatch):
    confine.enable_unconfined()
    confine.require_confinement("the PlantUML server")  # no error now
    assert confine.describe_isolation()["level"] == "none"
    assert "UNCONFINED" in confine.describe_isolation()["detail"]


@pytest.mark.parametrize(("isolation", "green"), [(["bwrap"], True), (["unshare", "netns"], True),
                                                  (["none", "cgroup-1"], False)])
def test_the_doctor_is_green_only_when_confined(monkeypatch, isolation, green):
    from sysmo.tools import doctor_checks

    monkeypatch.setattr(doctor_checks, "isolation_of", lambda tool: isolation)
    status = with_isolation(ToolStatus(name="PlantUML", ok=True, message="rendered"))
    assert status.ok is green and status.isolation == isolation[0]
    assert ("runs unconfined" in status.message) is not green and status.message.startswith(f"isolation: {isolation[0]}")
