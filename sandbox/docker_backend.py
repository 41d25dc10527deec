"""Docker backend: each command runs in a fresh container with no network, bounded memory/pids/CPU and a wall clock.

The work dir is bind-mounted at ``/box`` (so the engine must see this machine's file system: a local
engine), ``readonly_paths`` read-only under ``/opt/sysmo-tools`` as the local backends show them (argv and
env rewritten), the root file system is read-only with a private ``/tmp``, the command runs as nobody
(uid 65534, the work dir handed to it) with all capabilities dropped, and the container is killed and
removed at the end. The image is the tools image built from this machine (``sandbox.docker_image``,
``sysmo tools image build``).

The wall clock is kept twice: here (the container is killed at ``Limits.timeout_s``) and inside the container,
where coreutils ``timeout`` (the child of docker's init) kills the command's whole process group ``KILL_GRACE_S``
later. The second holds when sysmo itself is gone (SIGKILL): no container outlives its bound, and the stopped
container is removed by the next ``DockerSandbox`` (``_sweep_orphans``).

>>> box = DockerSandbox()                     # needs an engine: see DockerSandbox.engine_available()
>>> box.run(["java", "-Xmx256m", "-version"]).returncode
0
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sysmo.config import settings
from sysmo.errors import SandboxError
from sysmo.log import get_logger
from sysmo.sandbox.base import (
    BOX,
    NOBODY,
    TOOLS_INSIDE,
    Limits,
    RunResult,
    ToolView,
    collect_files,
    hand_to_nobody,
    write_files,
)
from sysmo.sandbox.docker_image import IMAGE_MARK
from sysmo.sandbox.reaper import mark_owner, start_time

log = get_logger(__name__)

STDIN_FILE = ".sysmo-stdin"  # stdin is handed over as a file: attaching a socket is engine-specific
LABEL = "sysmo.sandbox"
OWNER_LABEL = "sysmo.owner"  # "<pid> <start time>" of the sysmo process that made the container
KILL_GRACE_S = 2  # the container's own clock fires this long after ours: while sysmo lives, sysmo's comes first
_engine_lock = threading.Lock()
_engine_cache: dict[str, bool] = {}


def _engine_key() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


class DockerSandbox:
    """Runs each command in its own throw-away container of ``settings().sandbox.docker_image``."""

    name = "docker"

    def __init__(self, client: Any | None = None, image: str | None = None, cpus: float = 1.0,
                 user: str | None = f"{NOBODY}:{NOBODY}") -> None:
        if client is None:
            try:
                import docker

                client = docker.from_env(timeout=30)
            except Exception as exc:  # noqa: BLE001 - the SDK raises DockerException or requests errors
                raise SandboxError(f"no Docker engine answers ({exc}); start dockerd or set "
                                   "sandbox.backend: local") from exc
        self.client = client
        self.image = image or settings().sandbox.docker_image
        self.cpus = cpus
        self.user = user
        self._check_image()
        self._sweep_orphans()

    def _check_image(self) -> None:
        """Refuse an image built by an older sysmo: it has no ``timeout``, so its containers would outlive a killed
        sysmo (an absent image is reported by ``run``, with how to build it)."""
        try:
            image = self.client.images.get(self.image)
            environment = (image.attrs.get("Config") or {}).get("Env") or []
        except Exception:  # noqa: BLE001 - not found, or an engine that cannot say: ``run`` reports it
            return
        if IMAGE_MARK not in environment:
            raise SandboxError(f"the tools image {self.image!r} was built by an older sysmo (its containers have no "
                               "wall clock of their own): rebuild it with `sysmo tools image build`")

    def _sweep_orphans(self) -> None:
        """Remove the containers of sysmo processes that died mid-run (a container outlives a SIGKILLed sysmo)."""
        try:
            containers = self.client.containers.list(all=True, filters={"label": LABEL})
        except Exception:  # noqa: BLE001 - a fake or failing engine: nothing to sweep
            return
        for container in containers:
            owner = (getattr(container, "labels", None) or {}).get(OWNER_LABEL, "")
            pid, _, started = owner.partition(" ")
            if pid.isdigit() and start_time(int(pid)) == started:
                continue  # its sysmo still runs
            log.warning("docker.orphan_removed", container=getattr(container, "id", "?"))
            self._remove(container)

    # ------------------------------------------------------------------ engine detection
    @classmethod
    def engine_available(cls) -> bool:
        """True if a Docker engine answers a ping (checked once per ``DOCKER_HOST``, then cached)."""
        key = _engine_key()
        with _engine_lock:
            if key not in _engine_cache:
                _engine_cache[key] = cls._ping()
                log.info("docker.engine", host=key, available=_engine_cache[key])
            return _engine_cache[key]

    @staticmethod
    def _ping() -> bool:
        try:
            import docker

            client = docker.from_env(timeout=3)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:  # noqa: BLE001 - any failure means: no usable engine
            return False

    @classmethod
    def image_available(cls, image: str | None = None) -> bool:
        """True if the engine answers and holds ``image`` (default: the configured tools image)."""
        if not cls.engine_available():
            return False
        try:
            import docker

            client = docker.from_env(timeout=10)
            try:
                client.images.get(image or settings().sandbox.docker_image)
                return True
            finally:
                client.close()
        except Exception:  # noqa: BLE001 - ImageNotFound or any engine failure: not usable
            return False

    @staticmethod
    def forget_engine() -> None:
        """Drop the cached engine answer (after starting or stopping dockerd, or in tests)."""
        with _engine_lock:
            _engine_cache.clear()

    # ------------------------------------------------------------------ run
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
        if not argv:
            raise SandboxError("nothing to run: argv is empty")
        limits = limits or Limits()
        outer = Path(tempfile.mkdtemp(prefix="sysmo-box-")) if workdir is None else None
        if outer is not None:
            mark_owner(outer)  # beside the work dir: the reaper removes the folder if this process is killed
        work = outer / "box" if outer is not None else Path(workdir)
        work.mkdir(parents=True, exist_ok=True)
        work = work.resolve()
        try:
            write_files(work, files)
            view = ToolView(list(readonly_paths or []), work, system=())  # the host's /usr is not the image's
            command = self._command(argv, view)
            if stdin is not None:
                (work / STDIN_FILE).write_text(stdin)
                command = ["sh", "-c", f'exec "$@" < {BOX}/{STDIN_FILE}', "sh", *command]
            if self.user:
                hand_to_nobody(work)
            environment = {"LANG": "C.UTF-8", "HOME": BOX, "TMPDIR": "/tmp"}
            environment.update(view.env(env or {}))
            result = self._run_container(self.wall_clock(command, limits), argv, work, view.binds, limits,
                                         environment)
            result.files_out, result.files_truncated = collect_files(work, collect, limits.output_limit_bytes)
            return result
        finally:
            if outer is not None:
                shutil.rmtree(outer, ignore_errors=True)

    @staticmethod
    def wall_clock(command: list[str], limits: Limits) -> list[str]:
        """``command`` under the container's own wall clock: ``timeout`` kills its process group (SIGKILL) at
        ``limits.timeout_s`` + ``KILL_GRACE_S``, whether or not a sysmo is still there to do it."""
        bound = math.ceil(limits.timeout_s) + KILL_GRACE_S
        return ["timeout", "-s", "KILL", str(bound), *command]

    @staticmethod
    def _command(argv: list[str], view: ToolView) -> list[str]:
        """Rewrite work-dir and tool paths to where the container shows them; a host binary path
        (``/usr/lib/jvm/.../java``) becomes its name, found on the image's PATH."""
        command = view.argv(argv)
        head = command[0]
        if head.startswith("/") and not head.startswith((BOX + "/", TOOLS_INSIDE + "/")):
            command[0] = Path(head).name
        return command

    def create_kwargs(self, command: list[str], work: Path, binds: list[tuple[str, str]], limits: Limits,
                      environment: dict[str, str]) -> dict[str, Any]:
        """The ``containers.create`` arguments: every limit and isolation setting in one place."""
        volumes = {str(work): {"bind": BOX, "mode": "rw"}}
        for host, inner in binds:
            volumes[host] = {"bind": inner, "mode": "ro"}
        kwargs: dict[str, Any] = {
            "command": command,
            "detach": True,
            "working_dir": BOX,
            "environment": environment,
            "volumes": volumes,
            "read_only": True,
            "tmpfs": {"/tmp": "rw,nosuid,nodev,size=512m,mode=1777"},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "init": True,  # a real pid 1 reaps orphans and lets rlimit signals reach the command
            "nano_cpus": int(self.cpus * 1e9),
            "labels": {LABEL: "1", OWNER_LABEL: f"{os.getpid()} {start_time(os.getpid())}"},
            "log_config": {"type": "json-file",
                           "config": {"max-size": str(2 * limits.output_limit_bytes + 1_000_000), "max-file": "1"}},
            "ulimits": self._ulimits(limits),
        }
        if not limits.network:
            kwargs["network_disabled"] = True
            kwargs["network_mode"] = "none"
        if limits.memory_mb:
            kwargs["mem_limit"] = f"{limits.memory_mb}m"
            kwargs["memswap_limit"] = f"{limits.memory_mb}m"  # equal: no swap on top of the limit
        if limits.pids:
            kwargs["pids_limit"] = limits.pids
        if self.user:
            kwargs["user"] = self.user
        return kwargs

    @staticmethod
    def _ulimits(limits: Limits) -> list[Any]:
        from docker.types import Ulimit

        ulimits = [Ulimit(name="core", soft=0, hard=0)]
        if limits.cpu_s:
            ulimits.append(Ulimit(name="cpu", soft=limits.cpu_s, hard=limits.cpu_s + 5))
        if limits.file_size_mb:
            size = limits.file_size_mb * 1024 * 1024
            ulimits.append(Ulimit(name="fsize", soft=size, hard=size))
        return ulimits

    def _run_container(self, command: list[str], argv: list[str], work: Path, binds: list[tuple[str, str]],
                       limits: Limits, environment: dict[str, str]) -> RunResult:
        import docker.errors
        import requests.exceptions

        kwargs = self.create_kwargs(command, work, binds, limits, environment)
        start = time.monotonic()
        try:
            container = self.client.containers.create(self.image, **kwargs)
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(f"docker image {self.image!r} is not available: build it with "
                               "`sysmo tools image build` (or set sandbox.docker_image)") from exc
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"the Docker engine refused to create the container: {exc}") from exc
        timed_out = False
        returncode: int | None = None
        try:
            container.start()
            remaining = max(0.1, limits.timeout_s - (time.monotonic() - start))
            try:
                status = container.wait(timeout=remaining)
                returncode = int(status.get("StatusCode", -1))
            except (requests.exceptions.RequestException, TimeoutError):
                timed_out = True
                log.info("sandbox.timeout", backend=self.name, argv0=argv[0], timeout_s=limits.timeout_s)
                self._kill(container)
            stdout, out_cut = self._logs(container, limits.output_limit_bytes, stdout=True)
            stderr, err_cut = self._logs(container, limits.output_limit_bytes, stdout=False)
            oom = False
            try:
                container.reload()
                oom = bool(container.attrs.get("State", {}).get("OOMKilled", False))
            except (docker.errors.APIError, requests.exceptions.RequestException):
                pass
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"the Docker engine failed while running the container: {exc}") from exc
        finally:
            self._remove(container)
        return RunResult(
            argv=argv,
            returncode=None if timed_out else returncode,
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
            stdout_truncated=out_cut,
            stderr_truncated=err_cut,
            backend=self.name,
            isolation=["docker"] + ([] if limits.network else ["netns"])
            + (["cgroup-memory"] if limits.memory_mb else []) + (["cgroup-pids"] if limits.pids else []),
            oom_killed=oom,
        )

    @staticmethod
    def _logs(container: Any, limit: int, stdout: bool) -> tuple[bytes, bool]:
        """At most ``limit`` bytes of one stream, read as a stream so a huge log never sits in memory."""
        kept: list[bytes] = []
        size = 0
        truncated = False
        stream = container.logs(stdout=stdout, stderr=not stdout, stream=True, follow=False)
        try:
            for chunk in stream:
                if size >= limit:
                    truncated = True
                    break
                take = chunk[: limit - size]
                kept.append(take)
                size += len(take)
                if len(take) < len(chunk):
                    truncated = True
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return b"".join(kept), truncated

    @staticmethod
    def _kill(container: Any) -> None:
        import docker.errors
        import requests.exceptions

        try:
            container.kill()
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            log.warning("docker.kill_failed", container=getattr(container, "id", "?"), error=str(exc))

    @staticmethod
    def _remove(container: Any) -> None:
        import docker.errors
        import requests.exceptions

        try:
            container.remove(force=True)
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            log.warning("docker.remove_failed", container=getattr(container, "id", "?"), error=str(exc))
