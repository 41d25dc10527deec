"""How confined a tool can be here, and the command line that confines it when bubblewrap is missing.

Levels, strongest first (``confinement_level()``):
- ``bwrap``: bubblewrap builds the namespaces (see ``local.bwrap_base``);
- ``unshare``: util-linux ``unshare`` makes user/mount/pid/net/ipc/uts namespaces and ``jail.py`` builds
  a minimal root there (read-only binds of what the tool needs, the work dir, nothing of the host's
  home or work area), brings up a private loopback and drops every capability;
- ``none``: no namespaces at all. Untrusted artifacts are then refused (``require_confinement``) unless
  ``--allow-unconfined`` (``sandbox.allow_unconfined``) says otherwise.

Every process started here gets the parent-death signal (``parent_death_preexec``): a tool dies with
sysmo, even when sysmo is killed with SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, Field

from sysmo.errors import SandboxError
from sysmo.log import get_logger
from sysmo.sandbox.base import NOBODY, SYNTHETIC_ETC, drops_to_nobody
from sysmo.sandbox.seccomp import isolation_tags, program

log = get_logger(__name__)

JAIL_SCRIPT = Path(__file__).with_name("jail.py")
# as root the jail needs no user namespace: it runs the command as the host's nobody
JAIL_ISOLATION = ["unshare", "nobody" if drops_to_nobody() else "userns", "pidns", "minimal-root", "netns", "no-caps",
                  *isolation_tags()]
NAMESPACES = ["--user", "--map-root-user", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child"]
# what programs read of the host's /etc (passwd, group, nsswitch.conf and hosts are synthesized: SYNTHETIC_ETC)
ETC_FOR_PROGRAMS = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
                    "fonts")
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


class JailSpec(BaseModel):
    """What ``jail.py`` builds: binds are (host path, path inside); the root is an empty host folder."""

    root: str
    ro: list[tuple[str, str]] = Field(default_factory=list)
    rw: list[tuple[str, str]] = Field(default_factory=list)
    symlinks: list[tuple[str, str]] = Field(default_factory=list)
    cwd: str = "/"
    env: dict[str, str] = Field(default_factory=dict)
    argv: list[str]
    relay: list[tuple[str, int]] = Field(default_factory=list)  # (socket path inside, loopback port)
    own_network: bool = True  # False only for trusted commands that must reach the host's loopback
    uid: int | None = None  # switch to this uid/gid (the host's nobody) after building the root; as root only
    seccomp: str = ""  # the command's seccomp filter (``sandbox.seccomp.program``, hex); ``jail_launch`` sets it
    files: dict[str, str] = Field(default_factory=lambda: dict(SYNTHETIC_ETC))  # written into the new root


class Launch(NamedTuple):
    """A confined command line and the descriptors it reads its setup from (its arguments, synthesized files)."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()

    def close(self) -> None:
        """Close our copies of the descriptors once the process has started (it keeps its own)."""
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass


def memfd(data: bytes) -> int:
    """An anonymous in-memory file holding ``data``, read from its start by the process it is handed to."""
    fd = os.memfd_create("sysmo-setup", 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def set_parent_death_signal() -> None:
    """Ask the kernel to SIGKILL this process when its parent thread ends (call between fork and exec)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def system_view(etc: Iterable[Path] = ()) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Read-only binds and symlinks of the system programs need: /usr, the loader links, a few /etc entries."""
    ro: list[tuple[str, str]] = [("/usr", "/usr")]
    links: list[tuple[str, str]] = []
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            links.append((os.readlink(path), f"/{name}"))
        elif path.exists():
            ro.append((str(path), f"/{name}"))
    wanted = {Path("/etc") / e for e in ETC_FOR_PROGRAMS} | set(etc)
    for entry in sorted(wanted):
        if entry.exists():
            ro.append((str(entry), str(entry)))
    return ro, links


@lru_cache(maxsize=4)
def etc_entries_for_java(java: Path) -> list[Path]:
    """The /etc entries the JVM's own symlinks point into (its conf dir), plus what fonts and the loader read."""
    java_home = java.resolve().parent.parent
    wanted: set[Path] = set()
    for root, _dirs, files in os.walk(java_home):
        for name in files:
            path = Path(root) / name
            if path.is_symlink():
                target = path.resolve()
                if target.parts[:2] == ("/", "etc") and len(target.parts) > 2:
                    wanted.add(Path("/etc") / target.parts[2])
    for extra in ("fonts", "ld.so.cache", "localtime", "timezone"):
        wanted.add(Path("/etc") / extra)
    # cacerts is a symlink into /etc/ssl: the tools need no TLS, so the host's certificates stay hidden
    wanted.discard(Path("/etc/ssl"))
    return sorted(p for p in wanted if p.exists())


def java_view() -> list[tuple[str, str]]:
    """Read-only binds a JVM found on PATH needs beyond ``system_view()`` (its /etc conf, a home outside /usr)."""
    found = shutil.which("java")
    if not found:
        return []
    java = Path(found).resolve()
    binds = [(str(p), str(p)) for p in etc_entries_for_java(java)]
    if not java.is_relative_to("/usr"):
        binds.append((str(java.parent.parent), str(java.parent.parent)))
    return binds


def jail_python() -> str:
    """The interpreter of the jail's pid 1: the system's (its path names no host folder), else ours."""
    system = Path("/usr/bin/python3")
    return str(system) if os.access(system, os.X_OK) else sys.executable


def jail_launch(spec: JailSpec) -> Launch:
    """The command that runs ``spec.argv`` confined (start it with ``pass_fds=launch.pass_fds`` and the
    parent-death signal in preexec). The script and the spec are handed over as in-memory files, so pid 1's
    command line inside (``/proc/1/cmdline``) names no host path. As root no user namespace is made: the jail
    builds its root with our privileges and then becomes the host's nobody (``spec.uid``)."""
    own_user = drops_to_nobody()
    namespaces = [n for n in NAMESPACES if (spec.own_network or n != "--net")
                  and not (own_user and n in ("--user", "--map-root-user"))]
    if own_user and spec.uid is None:
        spec = spec.model_copy(update={"uid": NOBODY})
    if not spec.seccomp and (filter_program := program()) is not None:
        spec = spec.model_copy(update={"seccomp": filter_program.hex()})
    script = memfd(JAIL_SCRIPT.read_bytes())
    data = memfd(spec.model_dump_json().encode())
    return Launch(["unshare", *namespaces, "--", jail_python(), "-I", "-S", f"/proc/self/fd/{script}", str(data)],
                  (script, data))


def new_root_dir() -> Path:
    """A host folder the jail mounts its new root on (the tmpfs hides what is in it: only the owner file,
    so that a later sysmo can delete the folder if this process dies before it does)."""
    from sysmo.sandbox.reaper import mark_owner

    root = Path(tempfile.mkdtemp(prefix="sysmo-root-"))
    mark_owner(root)
    return root


@lru_cache(maxsize=1)
def jail_usable() -> bool:
    """``unshare`` can build the namespaces and ``jail.py`` its root here (tried once per process)."""
    if not shutil.which("unshare"):
        return False
    root = new_root_dir()
    try:
        ro, links = system_view()
        spec = JailSpec(root=str(root), ro=ro, symlinks=links, argv=["true"], env={"PATH": "/usr/bin:/bin"})
        launch = jail_launch(spec)
        try:
            probe = subprocess.run(launch.argv, capture_output=True, timeout=20, pass_fds=launch.pass_fds)
        finally:
            launch.close()
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if probe.returncode != 0:
        log.info("confine.jail_unusable", stderr=probe.stderr.decode(errors="replace")[-300:])
    return probe.returncode == 0


@lru_cache(maxsize=1)
def bwrap_usable() -> bool:
    """bubblewrap present and allowed to build every namespace we ask for."""
    if not shutil.which("bwrap"):
        return False
    try:
        probe = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                               capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def confinement_level() -> str:
    """``bwrap``, ``unshare`` or ``none``: the strongest confinement this machine allows."""
    if shutil.which("bwrap") and bwrap_usable():
        return "bwrap"
    if shutil.which("unshare") and jail_usable():
        return "unshare"
    return "none"


def allow_unconfined() -> bool:
    from sysmo.config import settings

    return settings().sandbox.allow_unconfined


def require_confinement(what: str) -> None:
    """Refuse to run untrusted artifacts through ``what`` without any confinement, unless allowed."""
    if allow_unconfined():
        log.warning("confine.unconfined_allowed", tool=what)
        return
    raise SandboxError(
        f"cannot confine {what} here (no bubblewrap, and `unshare` cannot build user/mount/pid/net namespaces); "
        "install bubblewrap (apt-get install bubblewrap) or allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1), or pass --allow-unconfined to accept the risk"
    )


def is_confined(isolation: list[str]) -> bool:
    """True when an isolation record names namespaces (bwrap, the unshare jail or a container)."""
    return bool(isolation) and isolation[0] in ("bwrap", "unshare", "docker")


def enable_unconfined() -> None:
    """``--allow-unconfined``: let this process run tools without namespaces where none can be made."""
    from sysmo.config import settings

    os.environ["SYSMO_SANDBOX__ALLOW_UNCONFINED"] = "1"
    settings.cache_clear()


def describe_isolation() -> dict[str, str]:
    """How this process confines the tools: the level and what it means (for run summaries and records). With the
    docker backend the checks run in containers (the level is ``docker``); the long-lived servers (PlantUML,
    OpenSysML) stay on this machine's confinement, named in the detail."""
    level = confinement_level()
    detail = {"bwrap": ", ".join(["bubblewrap namespaces", "no capabilities", *isolation_tags()]),
              "unshare": ", ".join(JAIL_ISOLATION),
              "none": "UNCONFINED (--allow-unconfined): tools run with the host's files and network"}[level]
    from sysmo.sandbox.select import get_sandbox

    try:
        box = get_sandbox()
    except SandboxError:  # docker configured and gone: the run itself says so
        box = None
    if box is not None and box.name == "docker":
        image = getattr(box, "image", "?")
        return {"level": "docker",
                "detail": f"containers of {image}: no network, read-only root, no capabilities, nobody, a wall "
                          f"clock of their own; servers: {level} ({detail})"}
    return {"level": level, "detail": detail}
