"""The doctor's live self-checks (``SELF_CHECKS``), and those of the ground the tools stand on: Java and the sandbox.

``python -m sysmo.tools.doctor_checks [NAME ...]`` prints the named checks' statuses (all without a name) as JSON:
a process of its own, so the tool servers a check starts end with it (a Ray cluster's per-node check runs it).
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys

from sysmo.tools.install import java_binary
from sysmo.tools.status import ToolStatus, run_self_check

# (display name, module, function): each function returns a ToolStatus after a live check
SELF_CHECKS: list[tuple[str, str, str]] = [
    ("java", "sysmo.tools.doctor_checks", "java_status"),
    ("sandbox", "sysmo.tools.doctor_checks", "sandbox_status"),
    ("SANY", "sysmo.tools.tla.sany", "self_check"),
    ("TLC", "sysmo.tools.tla.tlc", "self_check"),
    ("PlantUML", "sysmo.tools.plantuml.check", "self_check"),
    ("OpenSysML", "sysmo.tools.sysml.validate", "self_check"),
]


def java_status() -> ToolStatus:
    java = java_binary()
    proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    match = re.search(r'version "([^"]+)"', proc.stderr)
    return ToolStatus(name="java", ok=proc.returncode == 0, version=match.group(1) if match else "unknown", path=java,
                      message="java -version answered" if proc.returncode == 0 else proc.stderr.strip()[-300:])


def sandbox_status() -> ToolStatus:
    from sysmo.sandbox import Limits, get_sandbox

    sandbox = get_sandbox()
    result = sandbox.run(["cat", "probe.txt"], files={"probe.txt": "ok"}, limits=Limits(timeout_s=10))
    ok = result.stdout == "ok"
    return ToolStatus(name="sandbox", ok=ok, version=sandbox.name, path=",".join(result.isolation),
                      message="ran a command in isolation" if ok else f"probe failed: {result.stderr[-300:]}")


def isolation_of(tool: str) -> list[str] | None:
    """The isolation record of the tool's last self-check (None for a tool that runs no untrusted input)."""
    tool = tool.lower()
    if tool in ("sandbox", "sany", "tlc"):
        from sysmo.sandbox import get_sandbox

        sandbox = get_sandbox()
        return [getattr(sandbox, "mode", sandbox.name)]
    if tool == "plantuml":
        from sysmo.tools.plantuml.server import plantuml_server

        return list(plantuml_server().isolation)
    if tool == "opensysml":
        from sysmo.tools.sysml.kernel import shared_kernel

        return list(shared_kernel().isolation)
    return None


def with_isolation(status: ToolStatus) -> ToolStatus:
    """Name the tool's isolation level; a tool that runs untrusted input unconfined is not green."""
    from sysmo.sandbox.confine import is_confined

    try:
        isolation = isolation_of(status.name)
    except Exception:  # noqa: BLE001 - the doctor reports, never crashes
        isolation = None
    if isolation is None:
        return status
    status.isolation = isolation[0] if isolation else "unknown"
    if status.ok and not is_confined(isolation):
        status.ok = False
        status.message = ("runs unconfined: install bubblewrap (apt-get install bubblewrap) or allow user "
                          "namespaces for `unshare`; " + status.message)
    status.message = f"isolation: {status.isolation}; {status.message}"  # shown by every doctor layout
    return status


def collect_statuses(names: list[str] | None = None) -> list[ToolStatus]:
    """The live self-check of every tool, or of those ``names`` (``SELF_CHECKS``' display names), in order."""
    unknown = sorted(set(names or []) - {name for name, _, _ in SELF_CHECKS})
    if unknown:
        raise ValueError(f"no self-check named {', '.join(unknown)}")
    statuses = []
    for name, module_name, attr in SELF_CHECKS:
        if names is not None and name not in names:
            continue

        def check(module_name: str = module_name, attr: str = attr) -> ToolStatus:
            return getattr(importlib.import_module(module_name), attr)()

        statuses.append(with_isolation(run_self_check(name, check)))
    return statuses


if __name__ == "__main__":
    print(json.dumps([status.model_dump() for status in collect_statuses(sys.argv[1:] or None)]))
