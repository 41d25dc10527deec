"""The run cache serves a deterministic SANY/TLC run's stored result, and never a timeout or a multi-worker run."""

from __future__ import annotations

from pathlib import Path

from sysmo.tools.tla import run_cache, sany, tlc

SPEC = """---- MODULE Counter ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 5 /\\ x' = x + 1
Safe == x < 4
====
"""
CFG = "INIT Init\nNEXT Next\nINVARIANT Safe\n"


def entries(folder: Path) -> int:
    return len(list(folder.rglob("*.json")))


def test_deterministic_runs_are_stored_once_and_replayed(tmp_path: Path) -> None:
    with run_cache.enabled(tmp_path):
        first = tlc.model_check(SPEC, CFG, check_deadlock=False)
        stored = entries(tmp_path)
        again = tlc.model_check(SPEC, CFG, check_deadlock=False)
        assert entries(tmp_path) == stored == 1
        assert again.outcome == first.outcome == "failed"
        assert again.raw_output == first.raw_output and again.diagnostics == first.diagnostics
        # served, not run: marked so in the check's details, and timed as the wait for it (no JVM started)
        assert again.details.get("cached") is True and "cached" not in first.details
        assert again.duration_s < first.duration_s
        assert sany.check(SPEC).outcome == "ok" and entries(tmp_path) == 2
        tlc.model_check(SPEC, CFG, check_deadlock=False, workers=2)  # thread scheduling: not deterministic
        assert entries(tmp_path) == 2
        changed = tlc.model_check(SPEC.replace("x < 4", "x < 6"), CFG, check_deadlock=False)
        assert changed.outcome == "ok" and entries(tmp_path) == 3


def test_the_cache_is_off_unless_asked_for(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(run_cache.ENV, raising=False)
    assert run_cache.directory() is None
    # on for a `sysmo run` (under SYSMO_HOME), and only while it runs; the variable turns it off or moves it
    from sysmo.config import settings

    with run_cache.for_run() as folder:
        assert folder == run_cache.directory() == settings().home / "tla-run-cache"
    assert run_cache.directory() is None
    for off in ("0", "off", "No"):
        monkeypatch.setenv(run_cache.ENV, off)
        with run_cache.for_run() as folder:
            assert folder is None and run_cache.directory() is None
        assert run_cache.use_default() is None
    monkeypatch.setenv(run_cache.ENV, str(tmp_path / "mine"))
    with run_cache.for_run() as folder:
        assert folder == tmp_path / "mine"
    monkeypatch.delenv(run_cache.ENV)
    assert run_cache.deterministic("tlc2.TLC", ["-workers", "1", "-simulate", "num=5", "-seed", "3"])
    assert not run_cache.deterministic("tlc2.TLC", ["-workers", "1", "-simulate", "num=5"])
    assert not run_cache.deterministic("tlc2.TLC", ["-workers", "auto"])


def test_a_run_asked_for_while_it_runs_is_made_once_and_shared(tmp_path: Path) -> None:
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from sysmo.sandbox import RunResult

    started: list[int] = []
    gate = threading.Event()

    def slow_run(timed_out: bool = False) -> RunResult:
        started.append(1)
        gate.wait(10)
        return RunResult(argv=["java"], returncode=0 if not timed_out else None, stdout="done", stderr="", duration_s=0.5,
                         timed_out=timed_out)

    def ask(timed_out: bool = False) -> RunResult:
        return run_cache.cached(lambda: slow_run(timed_out), "tla2sany.SANY", ["M.tla"], {"M.tla": str(timed_out)},
                                [], None, [])

    with run_cache.enabled(tmp_path), ThreadPoolExecutor(3) as pool:
        asked = [pool.submit(ask) for _ in range(3)]
        time.sleep(0.3)  # all three are waiting on the one run
        gate.set()
        results = [f.result() for f in asked]
        assert len(started) == 1 and {r.stdout for r in results} == {"done"} and entries(tmp_path) == 1
        assert len({id(r) for r in results}) == 3  # each caller gets its own copy
        assert sorted(r.cached for r in results) == [False, True, True]  # the one that ran it, two served
        # a time-out is shared with the callers waiting on it, and not stored: asked again later, it runs again
        gate.clear()
        started.clear()
        timed = [pool.submit(ask, True) for _ in range(2)]
        time.sleep(0.3)
        gate.set()
        assert all(f.result().timed_out for f in timed) and len(started) == 1
        gate.set()
        ask(True)
        assert len(started) == 2


def test_a_run_that_raises_raises_in_every_caller_waiting_on_it(tmp_path: Path) -> None:
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import pytest

    gate = threading.Event()

    def broken():
        gate.wait(10)
        raise RuntimeError("the sandbox could not start")

    def ask():
        return run_cache.cached(broken, "tla2sany.SANY", ["M.tla"], {"M.tla": "y"}, [], None, [])

    with run_cache.enabled(tmp_path), ThreadPoolExecutor(2) as pool:
        asked = [pool.submit(ask) for _ in range(2)]
        time.sleep(0.3)
        gate.set()
        for future in asked:
            with pytest.raises(RuntimeError, match="could not start"):
                future.result()
    assert not run_cache._inflight


def test_the_repair_loops_check_of_a_spec_answers_the_same_every_time(tmp_path: Path) -> None:
    """The loop's TLC simulation takes a seed made from the spec's files: the same spec gets the same verdict
    (and the run is served from the cache), another spec another seed."""
    import re

    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.tools.checkers import artifact_seed, check_tla

    artifact = Artifact(language=Language.TLA, files={"Counter.tla": SPEC, "Counter.cfg": "INIT Init\nNEXT Next\n"})
    other = Artifact(language=Language.TLA, files={"Counter.tla": SPEC.replace("x < 5", "x < 3"),
                                                    "Counter.cfg": "INIT Init\nNEXT Next\n"})
    assert artifact_seed(artifact) == artifact_seed(artifact.model_copy(deep=True)) != artifact_seed(other)
    with run_cache.enabled(tmp_path):
        first, again = check_tla(artifact), check_tla(artifact)
    seeds = [re.findall(r"with seed (-?\d+)", result.raw_output) for result in (first, again)]
    assert seeds[0] == seeds[1] == [str(artifact_seed(artifact))]
    assert first.outcome == again.outcome and again.details.get("cached") is True


def test_the_default_folder_is_kept_under_its_size_least_recently_used_first(tmp_path: Path, monkeypatch) -> None:
    import os

    folder = tmp_path / "cache"
    for index in range(10):  # ten entries of 100 kB, the oldest first
        entry = folder / f"{index:02d}" / f"{index:02d}entry.json"
        entry.parent.mkdir(parents=True)
        entry.write_bytes(b"x" * 100_000)
        os.utime(entry, (1_000_000 + index, 1_000_000 + index))
    assert run_cache.prune(folder, limit_mb=2.0) == 0  # 1 MB under a 2 MB bound: nothing goes
    assert run_cache.prune(folder, limit_mb=0.5) == 7  # down to three quarters of the bound, oldest first
    assert sorted(p.name for p in folder.glob("*/*.json")) == ["07entry.json", "08entry.json", "09entry.json"]
    monkeypatch.setenv(run_cache.MAX_MB_ENV, "0.25")
    assert run_cache.max_mb() == 0.25
    monkeypatch.setenv(run_cache.MAX_MB_ENV, "lots")
    assert run_cache.max_mb() == run_cache.DEFAULT_MAX_MB


def test_a_cache_that_cannot_be_written_keeps_the_runs_result(tmp_path: Path) -> None:
    """A full or read-only cache folder: the run's own result is returned, nothing is kept, no error."""
    from sysmo.sandbox import RunResult

    blocked = tmp_path / "file-not-folder"
    blocked.write_text("a file where the cache's folder would be")
    made = RunResult(argv=["java"], returncode=0, stdout="ok", duration_s=0.1)
    with run_cache.enabled(blocked):
        got = run_cache.cached(lambda: made, "tla2sany.SANY", ["M.tla"], {"M.tla": "z"}, [], None, [])
    assert got.stdout == "ok" and not got.cached and blocked.is_file()
