"""Doctor checks for the ground the tools stand on: Java and the sandbox."""

from __future__ import annotations

import re
import subprocess

from sysmo.tools.install import java_binary
from sysmo.tools.status import ToolStatus


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
