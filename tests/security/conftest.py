"""Every sandbox backend the attack tests run under: bubblewrap, the unshare jail and a real Docker engine.

A backend missing here is skipped, or fails where CI requires it (``SYSMO_TEST_REQUIRE_BWRAP=1``,
``SYSMO_TEST_REQUIRE_DOCKER=1``); the unshare jail needs nothing but util-linux and user namespaces. The
docker backend talks to the engine ``SYSMO_TEST_DOCKER_HOST`` names (CI's own dockerd on a private socket,
so that the rest of the suite keeps the local backend), else to ``DOCKER_HOST`` or the default socket.
"""

from __future__ import annotations

import os

import pytest

from sandbox_backends import make_backend

from sysmo.sandbox.base import Sandbox

BACKENDS = ["bwrap", "unshare", "docker"]


@pytest.fixture(params=BACKENDS)
def backend(request, skip_missing, monkeypatch) -> Sandbox:
    """Each sandbox backend in turn."""
    if request.param == "docker" and os.environ.get("SYSMO_TEST_DOCKER_HOST"):
        monkeypatch.setenv("DOCKER_HOST", os.environ["SYSMO_TEST_DOCKER_HOST"])
    return make_backend(request.param, skip_missing)
