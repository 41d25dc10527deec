"""Confinement without bubblewrap: a new root of read-only binds, no capabilities, only a private loopback.

Run as the first process of fresh mount/pid/net/ipc/uts namespaces (and a user namespace unless sysmo is
root) made by util-linux ``unshare`` (see ``confine.jail_launch``), this script (standard library only: it is
started with ``python -I -S /proc/self/fd/N M``, read from an in-memory file, its spec from descriptor M, so
that no host path shows in pid 1's command line)
- brings up the namespace's own loopback (the only network there is);
- mounts a tmpfs on an empty host folder and builds the new root in it: read-only binds of what the
  command needs (``/usr``, the loader's links, a few ``/etc`` entries, a jar, a binary), the work dir
  read-write, a private ``/tmp``, a small ``/dev`` and a fresh ``/proc`` (``/proc/sys`` and friends
  read-only); nothing else of the host, not its home nor the work area, exists in it;
- ``pivot_root``s into it, detaches the old root and makes the new root read-only;
- drops every capability (bounding, ambient, inheritable, permitted, effective), sets no-new-privs and,
  given ``uid``, becomes that user and group (the host's nobody) with no supplementary groups;
- forks the command (cwd and environment from the spec) under the seccomp filter of the spec (``seccomp``: the
  program of ``sandbox.seccomp``, no new namespaces among much else; a filter that cannot be loaded stops the
  command from running) and stays as its pid 1: reaps orphans, relays
  Unix sockets of the work dir to TCP ports of the private loopback (so a server with no network is
  still reachable by sysmo), and exits with the command's status. When pid 1 dies the kernel kills
  every process of the namespace; ``unshare --kill-child`` and the parent-death signal sysmo sets on
  ``unshare`` make that happen when sysmo dies, even of SIGKILL.

The spec is JSON: ``root`` (empty host folder; empty: the namespaces and root are made already, as under
bubblewrap, and only the relays and pid 1's duties remain), ``ro``/``rw`` ([host path, inner path]),
``symlinks`` ([target, inner path]), ``files`` ({inner path: text}), ``cwd``, ``env``, ``argv``, ``relay``
([inner socket path, port]), ``own_network`` (false: keep the host's network), ``uid``, ``seccomp`` (the
filter's BPF program in hex; empty: none, as under bubblewrap, which loads it itself).
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import socket
import struct
import sys
import threading
import warnings  # noqa: F401 - os.execvpe imports it lazily, and no module can be read after pivot_root
import fcntl

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
DEVICES = ("null", "zero", "full", "random", "urandom")
PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus", "kcore", "timer_list")

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                      data and data.encode()), f"mount {source} on {target}")


def _mountpoint(path: str, like: str | None) -> None:
    """An empty dir (or empty file when ``like`` is a file) at ``path`` to bind onto."""
    if like is not None and not os.path.isdir(like):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            open(path, "wb").close()
    else:
        os.makedirs(path, exist_ok=True)


def bind(source: str, target: str, *, readonly: bool) -> None:
    _mountpoint(target, source)
    mount(source, target, None, MS_BIND | MS_REC)
    if readonly:
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def build_root(spec: dict) -> None:
    root = spec["root"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("sysmo-root", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    inner = lambda p: os.path.join(root, p.lstrip("/"))  # noqa: E731
    os.makedirs(inner("/tmp"))
    mount("sysmo-tmp", inner("/tmp"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1g")
    # /dev before the binds, so that a bind below it (a tool folder in /dev/shm, sandbox.scratch) is not hidden
    os.makedirs(inner("/dev"))
    mount("sysmo-dev", inner("/dev"), "tmpfs", MS_NOSUID, "mode=0755,size=64k")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            bind(f"/dev/{name}", inner(f"/dev/{name}"), readonly=False)
    os.makedirs(inner("/dev/shm"))
    mount("sysmo-shm", inner("/dev/shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m")
    binds = [(s, d, True) for s, d in spec.get("ro", [])] + [(s, d, False) for s, d in spec.get("rw", [])]
    for source, dest, readonly in sorted(binds, key=lambda b: b[1].count("/")):
        if os.path.lexists(source):
            bind(source, inner(dest), readonly=readonly)
    for path, text in (spec.get("files") or {}).items():
        os.makedirs(os.path.dirname(inner(path)), exist_ok=True)
        with open(inner(path), "w") as handle:
            handle.write(text)
        os.chmod(inner(path), 0o644)
    for target, path in spec.get("symlinks", []):
        if not os.path.lexists(inner(path)):
            os.makedirs(os.path.dirname(inner(path)), exist_ok=True)
            os.symlink(target, inner(path))
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, inner(f"/dev/{name}"))
    os.makedirs(inner("/proc"))
    mount("proc", inner("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in PROC_COVERED:  # host-wide knobs: root without capabilities could still write some of them
        path = inner(f"/proc/{name}")
        if os.path.exists(path):
            try:
                bind(path, path, readonly=True)
            except OSError:
                pass


def enter_root(root: str) -> None:
    os.chdir(root)
    number = PIVOT_ROOT.get(platform.machine())
    if number is not None:
        _check(libc.syscall(number, b".", b"."), "pivot_root")
        _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    else:  # no known pivot_root number: move the new root over / and chroot into it
        mount(".", "/", None, 8192)  # MS_MOVE
        os.chroot(".")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def drop_capabilities(uid: int | None) -> None:
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if uid is not None:  # still allowed: dropping the bounding set leaves the effective capabilities
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        # a change of user clears the parent-death signal `unshare --kill-child` set: ask again
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent death signal")
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # effective, permitted, inheritable (x2 words): all zero
    _check(libc.capset(ctypes.c_char_p(header), data), "capset")


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(program_hex: str) -> None:
    """Load the BPF program (``struct sock_filter`` array, in hex) as this process's seccomp filter; what it
    execs keeps it."""
    data = bytes.fromhex(program_hex)
    buffer = ctypes.create_string_buffer(data, len(data))
    fprog = SockFprog(len(data) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp filter")


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


def _serve_relay(listener: socket.socket, port: int) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:  # a numeric address: no name lookup (its codecs cannot be imported after pivot_root)
            upstream.connect(("127.0.0.1", port))
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def start_relays(relays: list[list]) -> None:
    for path, port in relays:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # only sysmo's user may talk to the server
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        listener.listen(64)
        threading.Thread(target=_serve_relay, args=(listener, int(port)), daemon=True).start()


def main() -> int:
    # a descriptor from confine.jail_launch, or a file under bubblewrap, which built the namespaces already
    with (os.fdopen(int(sys.argv[1]), "rb") if sys.argv[1].isdigit() else open(sys.argv[1], "rb")) as handle:
        spec = json.loads(handle.read())
    try:
        if spec.get("root"):
            if spec.get("own_network", True):
                loopback_up()
            build_root(spec)
            enter_root(spec["root"])
            drop_capabilities(spec.get("uid"))
    except OSError as exc:
        print(f"sysmo-jail: cannot confine the command: {exc}", file=sys.stderr, flush=True)
        return 125
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            os.closerange(3, 1 << 16)  # the script's descriptor, relays: nothing of pid 1 reaches the command
            os.chdir(spec.get("cwd", "/"))
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            if spec.get("seccomp"):
                try:
                    load_seccomp(spec["seccomp"])
                except OSError as exc:
                    print(f"sysmo-jail: cannot confine the command: {exc}", file=sys.stderr, flush=True)
                    os._exit(125)
            os.execvpe(spec["argv"][0], spec["argv"], spec.get("env", {}))
        except Exception as exc:  # noqa: BLE001 - the child must never return into pid 1's code
            print(f"sysmo-jail: cannot run {spec['argv'][0]!r}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)
    os.close(0)  # stdin belongs to the command; pid 1 keeps stdout/stderr only for its own errors
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    start_relays(spec.get("relay", []))
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main())
