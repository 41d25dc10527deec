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
