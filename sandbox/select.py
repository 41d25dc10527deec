"""Choose the sandbox backend from the settings: docker when configured and an engine answers, else local."""

from __future__ import annotations

from functools import lru_cache

from sysmo.config import settings
from sysmo.errors import SandboxError
from sysmo.log import get_logger
from sysmo.sandbox.base import Sandbox

log = get_logger(__name__)


@lru_cache(maxsize=4)
def get_sandbox(backend: str | None = None) -> Sandbox:
    """The process-wide sandbox for ``backend`` (default: ``settings().sandbox.backend``).

    ``auto`` takes docker if an engine answers and holds the tools image, and falls back to local; ``docker``
    without an engine is an error rather than a silent downgrade.
    """
    choice = backend or settings().sandbox.backend
    if choice not in ("auto", "local", "docker"):
        raise SandboxError(f"unknown sandbox backend {choice!r}; use auto, local or docker")
    if choice in ("docker", "auto"):
        from sysmo.sandbox.docker_backend import DockerSandbox

        if DockerSandbox.engine_available() and (choice == "docker" or DockerSandbox.image_available()):
            try:
                sandbox = DockerSandbox()
                log.info("sandbox.selected", backend="docker", image=sandbox.image)
                return sandbox
            except SandboxError:
                if choice == "docker":
                    raise
        if choice == "docker":
            raise SandboxError("sandbox backend 'docker' is configured but no Docker engine answers; "
                               "start dockerd (or set DOCKER_HOST) or set sandbox.backend: local")
    from sysmo.sandbox.local import LocalSandbox

    sandbox = LocalSandbox()
    log.info("sandbox.selected", backend="local", mode=sandbox.mode)
    return sandbox
