"""In every backend: a read-only system, no network but loopback, and memory and process limits that hold."""

from __future__ import annotations

import pytest

from sysmo.sandbox.base import Limits


def test_the_system_is_read_only_and_there_is_no_network(backend):
    script = ("for f in /etc/x /usr/x /opt/sysmo-tools/x /x; do (echo x > $f) 2>/dev/null && echo WROTE $f; done; "
              "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo x > /tmp/t && echo TMP_OK")
    result = backend.run(["sh", "-c", script], limits=Limits(timeout_s=30))
    assert "WROTE" not in result.stdout, result.output
    assert set(result.stdout.split()) - {"TMP_OK"} <= {"lo"}, result.output  # no interface but loopback
    assert "TMP_OK" in result.stdout


def test_memory_and_process_limits_hold(backend):
    if backend.name == "local" and getattr(backend, "cgroups", None) is None:
        pytest.skip("no writable cgroup hierarchy: memory and pids limits are not enforced here")
    hog = backend.run(["sh", "-c", "head -c 400000000 /dev/zero | tail -n 1 > /dev/null; echo SURVIVED"],
                      limits=Limits(timeout_s=60, memory_mb=64))
    assert "SURVIVED" not in hog.stdout or hog.oom_killed, hog.output  # tail holds a line of 400 MB
    assert hog.oom_killed
    numbers = " ".join(str(i) for i in range(60))
    forks = backend.run(["sh", "-c", f"for i in {numbers}; do sleep 2 & done 2>&1; wait; echo DONE"],
                        limits=Limits(timeout_s=60, pids=20))
    assert "fork" in forks.output.lower() or "resource" in forks.output.lower(), forks.output
