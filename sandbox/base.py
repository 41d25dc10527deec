"""The sandbox contract: run a command on given files under limits, get a bounded ``RunResult``."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field


class Limits(BaseModel):
    """Resource bounds for one command. ``None`` means: the backend's configured default."""

    timeout_s: float = 120.0  # wall clock; the whole process tree is killed when it passes
    cpu_s: int | None = 600  # RLIMIT_CPU
    memory_mb: int | None = 4096  # cgroup memory limit (RLIMIT_AS breaks the JVM; bound Java with -Xmx too)
    file_size_mb: int | None = 256  # RLIMIT_FSIZE
    pids: int | None = 512  # cgroup pids limit
    output_limit_bytes: int = 2_000_000  # per stream; the rest is drained and dropped
    network: bool = False  # True only for trusted long-lived servers bound to 127.0.0.1


class RunResult(BaseModel):
    """What happened to one sandboxed command."""

    argv: list[str]
    returncode: int | None  # None when killed by the timeout before it exited
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    backend: str = "local"
    isolation: list[str] = Field(default_factory=list)  # e.g. ["bwrap", "netns", "cgroup-memory"]
    files_out: dict[str, str] = Field(default_factory=dict)  # files read back from the work dir on request

    @property
    def output(self) -> str:
        return self.stdout + ("\n" + self.stderr if self.stderr else "")


@runtime_checkable
class Sandbox(Protocol):
    """Anything that can run a command under limits on a private copy of some files."""

    name: str

    def run(
        self,
        argv: list[str],
        *,
        files: dict[str, str | bytes] | None = None,
        workdir: Path | None = None,
        readonly_paths: list[Path] | None = None,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        collect: list[str] | None = None,
    ) -> RunResult:
        """Run ``argv`` with ``files`` written into a fresh work dir (or ``workdir`` if given).

        ``readonly_paths`` (jars, library dirs) are visible read-only at the same path.
        ``collect`` names work-dir files to read back into ``RunResult.files_out``.
        """
        ...
