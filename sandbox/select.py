"""Choose the sandbox backend from the settings: docker when configured and an engine answers, else local."""

from __future__ import annotations

from functools import lru_cache

from sysmo.config import settings
from sysmo.errors import SandboxError
from sysmo.sandbox.base import Sandbox


@lru_cache(maxsize=4)
def get_sandbox(backend: str | None = None) -> Sandbox:
    choice = backend or settings().sandbox.backend
    if choice in ("docker", "auto"):
        try:
            from sysmo.sandbox.docker_backend import DockerSandbox

            if DockerSandbox.engine_available():
                return DockerSandbox()
        except ImportError:
            pass
        if choice == "docker":
            raise SandboxError("sandbox backend 'docker' is configured but no Docker engine answers; "
                               "start dockerd or set sandbox.backend: local")
    from sysmo.sandbox.local import LocalSandbox

    return LocalSandbox()
