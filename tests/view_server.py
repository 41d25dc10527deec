"""What the browser tests of ``sysmo view`` share: a sysmo home of the test's own while an experiment is built, a
``sysmo view`` server on a free port, and Debian's Chromium through Playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def own_home(root: Path) -> Iterator[None]:
    """``SYSMO_HOME`` under ``root`` while the block runs (the test's LLM cache and checkpoints stay its own)."""
    from sysmo.config import settings

    saved = os.environ.get("SYSMO_HOME")
    os.environ["SYSMO_HOME"] = str(root / "home")
    settings.cache_clear()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SYSMO_HOME", None)
        else:
            os.environ["SYSMO_HOME"] = saved
        settings.cache_clear()


@contextmanager
def view_server(runs: Path | str) -> Iterator[str]:
    """``sysmo view RUNS`` on a free port, answering; its URL. Fails the test when it does not start in 60 s."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sysmo.cli", "view", str(runs), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=30)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"sysmo view did not start: {proc.communicate()[0]}")
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def chromium(playwright_api, executable: Path) -> Iterator[object]:
    """Headless Chromium (the machine's, never a download) driven by Playwright."""
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(executable), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
