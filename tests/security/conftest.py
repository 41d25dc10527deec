"""Every sandbox backend the attack tests run under: bubblewrap, the unshare jail and a real Docker engine.

A backend missing here is skipped, or fails where CI requires it (``SYSMO_TEST_REQUIRE_BWRAP=1``,
``SYSMO_TEST_REQUIRE_DOCKER=1``); the unshare jail needs nothing but util-linux and user namespaces. The
docker backend talks to the engine ``SYSMO_TEST_DOCKER_HOST`` names (CI's own dockerd on a private socket,
so that the rest of the suite keeps the local backend), else to ``DOCKER_HOST`` or the default socket.
"""

from __future__ import annotations

import os

import pytest

from sysmo.sandbox.base import Sandbox

BACKENDS = ["bwrap", "unshare", "docker"]


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


@pytest.fixture(params=BACKENDS)
def backend(request, skip_missing, monkeypatch) -> Sandbox:
    """Each sandbox backend in turn."""
    if request.param == "docker" and os.environ.get("SYSMO_TEST_DOCKER_HOST"):
        monkeypatch.setenv("DOCKER_HOST", os.environ["SYSMO_TEST_DOCKER_HOST"])
    return make_backend(request.param, skip_missing)
