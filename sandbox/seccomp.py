"""The seccomp filter every confined tool process runs under: a classic BPF program built here, with no library.

bubblewrap loads it with ``--seccomp FD`` (``local.BwrapLine.launch``), the unshare jail's pid 1 just before it
executes the command (``jail.py``, handed the program in its spec); docker applies its own default profile. The
filter answers EPERM to
- every way to new namespaces: ``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag, and ``clone3``
  (ENOSYS, whose flags sit in memory a filter cannot read: the C library then falls back to ``clone``) — so no
  nested user namespace, where a tool would be uid 0 with every capability;
- mounting and changing root (``mount``, ``pivot_root``, ``chroot``, the new mount API);
- what only reaches the kernel's own surface or the host: modules, kexec, reboot, swap, clocks, accounting,
  the kernel log, quotas, keyrings, ``bpf``, ``perf_event_open``, ``userfaultfd``, file handles
  (``open_by_handle_at``), ``ptrace`` and ``process_vm_*``, ``iopl``/``ioperm``;
- a system call of another ABI (i386 through ``int 0x80``, x32 numbers), where the numbers above mean nothing.
SANY, TLC and PlantUML (Java) and the OpenSysML kernel (Go) use none of these. Where no table fits the machine
(``program()`` is None) the tools run without the filter and their isolation record says so (no ``seccomp``).

>>> data = program()          # bytes of struct sock_filter, for ``bwrap --seccomp FD`` or PR_SET_SECCOMP
"""

from __future__ import annotations

import errno
import platform
import struct
from functools import lru_cache

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (low word first)
NR, ARCH, ARG0_LOW = 0, 4, 16
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
X32_BIT = 0x40000000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (NEWTIME, 0x80, shares clone's exit-signal byte)
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

DENIED = ("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
          "fsconfig", "fsmount", "fspick", "mount_setattr", "kexec_load", "kexec_file_load", "init_module",
          "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "syslog", "settimeofday",
          "clock_settime", "clock_adjtime", "adjtimex", "quotactl", "quotactl_fd", "lookup_dcookie", "vhangup",
          "iopl", "ioperm", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
          "open_by_handle_at", "name_to_handle_at", "ptrace", "process_vm_readv", "process_vm_writev")

# per machine: its audit architecture and system call numbers (from the kernel's unistd headers)
X86_64 = (0xC000003E, {
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "syslog": 103, "settimeofday": 164,
    "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159, "quotactl": 179, "quotactl_fd": 443,
    "lookup_dcookie": 212, "vhangup": 153, "iopl": 172, "ioperm": 173, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "clone": 56, "clone3": 435})
AARCH64 = (0xC00000B7, {
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "syslog": 116, "settimeofday": 170,
    "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171, "quotactl": 60, "quotactl_fd": 443,
    "lookup_dcookie": 18, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219,
    "add_key": 217, "request_key": 218, "open_by_handle_at": 265, "name_to_handle_at": 264, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "vhangup": 58, "clone": 220, "clone3": 435})
MACHINES = {"x86_64": X86_64, "amd64": X86_64, "aarch64": AARCH64, "arm64": AARCH64}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@lru_cache(maxsize=2)
def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as the bytes of its ``struct sock_filter`` array, or None
    where there is no table for it."""
    found = MACHINES.get((machine or platform.machine()).lower())
    if found is None:
        return None
    arch, numbers = found
    deny = RET_ERRNO | errno.EPERM
    denied = sorted({numbers[name] for name in DENIED if name in numbers})
    ops = [
        _op(BPF_LD_W_ABS, ARCH),
        _op(BPF_JEQ_K, arch, jt=1),  # this machine's ABI: go on
        _op(BPF_RET_K, deny),  # another ABI
        _op(BPF_LD_W_ABS, NR),
    ]
    if arch == X86_64[0]:
        ops += [_op(BPF_JGE_K, X32_BIT, jf=1), _op(BPF_RET_K, deny)]  # x32 numbers
    ops += [_op(BPF_JEQ_K, numbers["clone3"], jf=1), _op(BPF_RET_K, RET_ERRNO | errno.ENOSYS)]
    # clone: its flags are the first argument (the low word holds every CLONE_NEW* flag)
    ops += [_op(BPF_JEQ_K, numbers["clone"], jf=4), _op(BPF_LD_W_ABS, ARG0_LOW),
            _op(BPF_JSET_K, CLONE_NEW_FLAGS, jf=1), _op(BPF_RET_K, deny), _op(BPF_RET_K, RET_ALLOW)]
    for index, number in enumerate(denied):
        ops.append(_op(BPF_JEQ_K, number, jt=len(denied) - index))  # to the deny at the end of the list
    ops += [_op(BPF_RET_K, RET_ALLOW), _op(BPF_RET_K, deny)]
    return b"".join(ops)


def isolation_tags() -> list[str]:
    """``["seccomp"]`` where the filter is applied (a table fits this machine), else nothing."""
    return ["seccomp"] if program() is not None else []
