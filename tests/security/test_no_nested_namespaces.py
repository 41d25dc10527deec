"""No tool process can make a namespace of its own, and every one runs under a seccomp filter, in every backend.

A nested user namespace (``unshare -Urm``) would make a command uid 0 with every capability inside it (mount,
the kernel's namespaced interfaces); the filter of ``sandbox.seccomp`` (bubblewrap, the unshare jail) and docker's
default profile refuse it, and the rest of the filter's list. The probe is the host's own ``unshare`` (it needs
only the C library, which every backend shows), and for the local backends raw ``clone``/``clone3`` calls.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sysmo.sandbox.base import Limits
from sysmo.sandbox.seccomp import program

FAST = Limits(timeout_s=30, cpu_s=20, memory_mb=256, pids=64)
# clone(CLONE_NEWUSER | SIGCHLD) and clone3 straight through syscall(2): the errno each one met (0: it worked)
CLONE_PROBE = """
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
numbers = {"x86_64": (56, 435), "aarch64": (220, 435)}[platform.machine()]
for name, number, args in (("clone", numbers[0], (0x10000000 | 17, 0, 0, 0, 0)), ("clone3", numbers[1], (0, 0))):
    pid = libc.syscall(number, *args)
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
    print(name, 0 if pid > 0 else ctypes.get_errno())
"""


def test_a_tool_can_make_no_namespace_and_runs_under_seccomp(backend):
    if backend.name != "docker" and program() is None:
        pytest.skip("no seccomp table for this machine's architecture")
    unshare = Path(shutil.which("unshare") or "/usr/bin/unshare")
    # started through the loader: a file handed in is not executable (and the image has no chmod)
    script = ("grep '^Seccomp:' /proc/self/status; loader=$(ls /lib64/ld-linux*.so.* /lib/ld-linux*.so.* "
              "2>/dev/null | head -n 1); "
              "for flags in -Urm -U -m -n -p; do $loader ./unshare $flags --fork true 2>&1 && echo MADE $flags; "
              "done; id -u")
    result = backend.run(["sh", "-c", script], files={"unshare": unshare.read_bytes()}, limits=FAST)
    assert "Seccomp:\t2" in result.stdout, result.output  # a filter is on
    assert "MADE" not in result.stdout, result.output
    assert "Operation not permitted" in result.output, result.output
    assert result.stdout.split()[-1] == "65534"


def test_raw_clone_calls_cannot_make_a_user_namespace(backend):
    if backend.name == "docker":
        pytest.skip("the tools image has no Python; docker's default profile is pinned by the test above")
    if program() is None:
        pytest.skip("no seccomp table for this machine's architecture")
    result = backend.run(["/usr/bin/python3", "-I", "-S", "-c", CLONE_PROBE], limits=FAST)
    found = dict(line.split() for line in result.stdout.splitlines())
    assert found == {"clone": "1", "clone3": "38"}, result.output  # EPERM; ENOSYS (the C library falls back)


def test_the_tools_still_run_under_the_filter(backend):
    """Java (the JVM's threads come from clone, or clone3 with the fallback) and a Go binary start and work."""
    java = backend.run(["java", "-Xmx64m", "-Xshare:off", "-version"], limits=Limits(timeout_s=60, memory_mb=512,
                                                                                     pids=128))
    assert java.returncode == 0 and "version" in java.output, java.output
