"""A sandbox of a named backend for the attack tests, or a skip (a failure where CI requires the backend)."""

from __future__ import annotations

import pytest

from sysmo.sandbox.base import Sandbox


def make_backend(name: str, skip_missing) -> Sandbox:
    """A sandbox of backend ``name``, or a skip (a failure where CI requires it) when it cannot run here."""
    from sysmo.sandbox.confine import bwrap_usable, jail_usable
    from sysmo.sandbox.local import LocalSandbox

    if name == "bwrap":
        if not bwrap_usable():
            skip_missing("bwrap", "bubblewrap is not installed: apt-get install bubblewrap")
        return LocalSandbox(mode="bwrap")
    if name == "unshare":
        if not jail_usable():
            pytest.skip("unshare cannot build user/mount/pid/net namespaces here")
        return LocalSandbox(mode="unshare")
    from sysmo.sandbox.docker_backend import DockerSandbox

    if not DockerSandbox.engine_available():
        skip_missing("docker", "no Docker engine answers: apt-get install docker.io and start dockerd")
    if not DockerSandbox.image_available():
        skip_missing("docker", "the tools image is missing: sysmo tools image build")
    return DockerSandbox()
