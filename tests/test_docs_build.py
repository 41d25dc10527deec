"""The site build that CI runs (.ci/build-docs, called by .ci/run) fails on any mkdocs warning: a copy of the docs
with one broken link does not build, and the docs as they are do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".ci" / "build-docs"

pytestmark = pytest.mark.skipif(shutil.which("mkdocs") is None, reason="mkdocs (the docs extra) is not installed")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUILD), "-f", str(config), "-d", str(site)], capture_output=True, text=True, timeout=600, check=False
    )


def test_ci_runs_the_strict_build_script():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\n.ci/build-docs\n" in ci
    assert "--quiet" not in BUILD.read_text().split("set -euo pipefail", 1)[1]


@pytest.mark.slow
def test_a_broken_link_fails_the_build(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    for name in ("mkdocs.yml", "README.md"):  # the site's hooks read the README too
        shutil.copy(ROOT / name, copy / name)
    page = copy / "docs" / "security.md"
    page.write_text(page.read_text() + "\nSee [a page that is gone](no-such-page.md).\n")
    result = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0, result.stdout + result.stderr
    assert "no-such-page.md" in result.stdout + result.stderr


@pytest.mark.slow
def test_the_docs_build_without_a_warning(tmp_path):
    result = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
