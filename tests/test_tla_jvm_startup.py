"""Start-up flags change how fast SANY/TLC start, never what they report."""

from __future__ import annotations

import os
from pathlib import Path

from sysmo.tools.tla import jvm_startup, tlc

SPEC = """---- MODULE Walk ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Up == x < 6 /\\ x' = x + 1
Down == x > 0 /\\ x' = x - 1
Next == Up \\/ Down
====
"""
CFG = "INIT Init\nNEXT Next\n"


def record_commands(monkeypatch) -> list[list[str]]:
    """The argv of every SANY/TLC run from here on (each still runs in the real sandbox)."""
    from sysmo.tools.tla import jvm

    argvs: list[list[str]] = []
    real = jvm.get_sandbox

    class Recording:
        name = "local"

        def run(self, argv, **kwargs):
            argvs.append(list(argv))
            return real().run(argv, **kwargs)

    monkeypatch.setattr(jvm, "get_sandbox", lambda: Recording())
    return argvs


def reports_before_and_after(monkeypatch, switched_off: str, other) -> tuple[list[list[tuple]], list[str]]:
    """What a model check that violates ``Small`` and ``other()`` report (outcome, exit code, distinct states,
    trace, coverage, violations), first as things are, then with ``jvm_startup.<switched_off>`` making nothing;
    and the raw outputs of the runs."""
    reports, outputs = [], []
    for off in (False, True):
        if off:
            monkeypatch.setattr(jvm_startup, switched_off, lambda configured=None: None)
        runs = (tlc.model_check(SPEC.replace("====", "Small == x < 4\n===="), CFG + "INVARIANT Small\n",
                                check_deadlock=False), other())
        reports.append([(r.outcome, r.details.get("returncode"), tlc.report_of(r).distinct_states,
                         [s.model_dump() for s in tlc.report_of(r).trace],
                         [c.model_dump() for c in tlc.report_of(r).coverage],
                         [v.name for v in tlc.report_of(r).violations]) for r in runs])
        outputs += [r.raw_output for r in runs]
    return reports, outputs


def test_only_short_simulations_get_the_short_run_flags() -> None:
    assert jvm_startup.short_simulation("tlc2.TLC", ["-simulate", "num=50", "-depth", "50", "M"])
    assert not jvm_startup.short_simulation("tlc2.TLC", ["-simulate", "num=2147483647", "-depth", "100", "M"])
    assert not jvm_startup.short_simulation("tlc2.TLC", ["-workers", "1", "M"])
    assert not jvm_startup.short_simulation("tla2sany.SANY", ["M.tla"])


def test_a_model_check_bounded_to_few_states_runs_on_c1_and_reports_the_same_as_unbounded(monkeypatch) -> None:
    from sysmo.tools.tla import jvm

    assert jvm.tlc_flags(5_000) == jvm_startup.SHORT_RUN_FLAGS and jvm.tlc_flags(None) == jvm.TLC_JVM_FLAGS
    assert jvm.tlc_flags(jvm.SHORT_CHECK_STATES + 1) == jvm.TLC_JVM_FLAGS
    argvs = record_commands(monkeypatch)
    bounded = tlc.model_check(SPEC, CFG, check_deadlock=False, max_states=1_000)
    unbounded = tlc.model_check(SPEC, CFG, check_deadlock=False)
    assert "-XX:TieredStopAtLevel=1" in argvs[0] and "-XX:TieredStopAtLevel=1" not in argvs[1]
    assert bounded.outcome == unbounded.outcome == "ok"
    assert tlc.report_of(bounded).distinct_states == tlc.report_of(unbounded).distinct_states == 7


def test_a_seeded_simulation_reports_the_same_with_and_without_fast_start(monkeypatch) -> None:
    seen = []
    for mode in ("1", "0"):
        monkeypatch.setenv(jvm_startup.ENV, mode)
        result = tlc.simulate(SPEC, CFG, num=20, depth=20, seed=5, check_deadlock=False)
        report = tlc.report_of(result)
        assert result.outcome == "ok" and "warning" not in result.raw_output.lower()
        seen.append([c.model_dump() for c in report.coverage])
    assert seen[0] == seen[1] and seen[0]


def test_java_is_asked_its_version_once_and_a_vanished_archive_is_made_again(tmp_path, monkeypatch) -> None:
    from sysmo.config import settings
    from sysmo.tools.tla.jvm import LIBRARY_DIR

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SYSMO_TOOLS__JVM_DIR", raising=False)  # the tests' shared start-up files (conftest)
    monkeypatch.setenv("SYSMO_TLA_FAST_START", "1")
    settings.cache_clear()
    monkeypatch.setattr(jvm_startup, "_archive", {})
    monkeypatch.setattr(jvm_startup, "runtime_image", lambda configured=None: None)  # the archive alone here
    jvm_startup._java_version.cache_clear()
    calls: list[list[str]] = []
    real_run = jvm_startup.subprocess.run

    def counting_run(argv, *args, **kwargs):
        calls.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(jvm_startup.subprocess, "run", counting_run)
    import sysmo.sandbox

    box = sysmo.sandbox.get_sandbox()

    class CountingSandbox:  # the archive is dumped inside the sandbox the runs use
        name, mode = box.name, getattr(box, "mode", "")

        def run(self, argv, **kwargs):
            calls.append(list(argv))
            return box.run(argv, **kwargs)

    monkeypatch.setattr(sysmo.sandbox, "get_sandbox", lambda *_: CountingSandbox())
    try:
        first = jvm_startup.archive(LIBRARY_DIR)
        assert first is not None and first.is_file() and first.is_relative_to(tmp_path / "home" / "jvm")
        assert jvm_startup.archive(LIBRARY_DIR) == first and jvm_startup.archive(LIBRARY_DIR) == first
        assert sum("-version" in argv for argv in calls) == 1  # not one JVM start more before every run
        assert sum(any(a.startswith("-XX:ArchiveClassesAtExit") for a in argv) for argv in calls) == 1
        first.unlink()  # e.g. a temporary home removed while the process goes on
        again = jvm_startup.archive(LIBRARY_DIR)
        assert again is not None and again.is_file()
        assert sum(any(a.startswith("-XX:ArchiveClassesAtExit") for a in argv) for argv in calls) == 2
    finally:
        settings.cache_clear()


def test_the_runtime_without_jfr_reports_what_the_configured_java_reports(monkeypatch) -> None:
    import subprocess

    from sysmo.config import settings
    from sysmo.tools.install import java_binary

    image = jvm_startup.runtime_image()
    if image is None:  # a JRE: no jlink and no JDK modules beside the configured java
        assert not (Path(os.path.realpath(java_binary())).parent / "jlink").is_file()
        assert jvm_startup.java() == java_binary()
        return
    assert image.is_relative_to(settings().jvm_dir)
    listed = subprocess.run([str(image / "bin" / "java"), "--list-modules"], capture_output=True, text=True,
                            check=True).stdout
    assert "java.se@" in listed and "jdk.jfr" not in listed
    # a process learns the configured Java's version once (the image's name), not the image's too
    from sysmo.tools.tla.jvm import LIBRARY_DIR

    monkeypatch.setattr(jvm_startup, "_archive", {})
    monkeypatch.setattr(jvm_startup, "_image", {})
    jvm_startup._java_version.cache_clear()
    versions: list[list[str]] = []
    real_run = jvm_startup.subprocess.run
    monkeypatch.setattr(jvm_startup.subprocess, "run",
                        lambda argv, *a, **k: (versions.append(list(argv)) if "-version" in argv else None)
                        or real_run(argv, *a, **k))
    start = jvm_startup.start_up("tla2sany.SANY", ["M.tla"], [], LIBRARY_DIR)
    assert start.java == str(image / "bin" / "java") and start.readonly[0] == image
    assert [argv[0] for argv in versions] == [os.path.realpath(java_binary())]
    argvs = record_commands(monkeypatch)
    reports, outputs = reports_before_and_after(
        monkeypatch, "runtime_image", lambda: tlc.simulate(SPEC, CFG, num=20, depth=20, seed=5, check_deadlock=False))
    assert not any("warning" in output.lower() for output in outputs[1::2])  # the simulations
    assert [argv[0] for argv in argvs] == [str(image / "bin" / "java")] * 2 + [java_binary()] * 2
    assert reports[0] == reports[1] and reports[0][0][0] == "failed" and reports[0][0][5] == ["Small"]


def test_a_java_without_jlink_beside_it_is_used_as_it_is(tmp_path, monkeypatch) -> None:
    from sysmo.tools.install import java_binary

    wrapper = tmp_path / "bin" / "java"  # a JRE's layout: no jlink, no jmods
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nexec {java_binary()} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("SYSMO_TOOLS__JAVA", str(wrapper))
    monkeypatch.setattr(jvm_startup, "_image", {})
    monkeypatch.setattr(jvm_startup, "_launcher", {})
    from sysmo.config import settings

    settings.cache_clear()
    try:
        assert jvm_startup.runtime_image() is None and jvm_startup.java() == str(wrapper)
        assert jvm_startup.launcher() is None  # no javac beside it either: TLC starts from tlc2.TLC
        start = jvm_startup.start_up("tlc2.TLC", ["M"], [], Path("."))
        assert start.main_class == "tlc2.TLC" and len(start.classpath) == 1
    finally:
        settings.cache_clear()


def test_tlc_started_through_the_launcher_reports_what_tlc2_tlc_reports(monkeypatch) -> None:
    from sysmo.tools.install import java_binary

    launcher = jvm_startup.launcher()
    if launcher is None:  # a JRE: no javac beside the configured java, so TLC starts from tlc2.TLC
        assert not (Path(os.path.realpath(java_binary())).parent / "javac").is_file()
        return
    argvs = record_commands(monkeypatch)
    seen, _ = reports_before_and_after(monkeypatch, "launcher", lambda: tlc.model_check(SPEC, CFG, check_deadlock=False))
    mains = [argv[argv.index("-cp") + 2] for argv in argvs]
    assert mains == [jvm_startup.LAUNCHER_CLASS] * 2 + ["tlc2.TLC"] * 2
    assert argvs[0][argvs[0].index("-cp") + 1].endswith(f"{os.pathsep}{launcher}")
    assert seen[0] == seen[1] and seen[0][0][0] == "failed" and seen[0][0][5] == ["Small"]
    assert seen[0][1][:3] == ("ok", 0, 7)


def test_sany_and_tlc_runs_share_the_class_path_their_archive_was_made_with() -> None:
    from sysmo.tools.tla.jvm import LIBRARY_DIR

    sany_start = jvm_startup.start_up("tla2sany.SANY", ["M.tla"], [], LIBRARY_DIR)
    tlc_start = jvm_startup.start_up("tlc2.TLC", ["M"], [], LIBRARY_DIR)
    assert sany_start.classpath == tlc_start.classpath and sany_start.flags == tlc_start.flags
    if sany_start.archive is None:
        return  # no archive could be made here: nothing to share
    # -Xshare:on makes a class path that does not match the archive's an error instead of a silent cold start; the
    # runs see the class path as the sandbox shows it, so that is where the archive must match
    from sysmo.sandbox import Limits, get_sandbox

    strict = [f for f in sany_start.flags if f not in jvm_startup.QUIET] + ["-Xshare:on", "-Xmx512m"]
    ran = get_sandbox().run([sany_start.java, *strict, "-cp", os.pathsep.join(map(str, sany_start.classpath)),
                             "tla2sany.SANY", "Walk.tla"], files={"Walk.tla": SPEC},
                            readonly_paths=[*sany_start.classpath, *sany_start.readonly], limits=Limits(timeout_s=60))
    assert ran.returncode == 0 and "Semantic processing of module Walk" in ran.stdout, ran.stdout + ran.stderr


def test_a_container_gets_the_configured_java_not_the_host_built_runtime() -> None:
    from sysmo.tools.install import java_binary
    from sysmo.tools.tla.jvm import LIBRARY_DIR

    start = jvm_startup.start_up("tlc2.TLC", ["M"], [], LIBRARY_DIR, in_container=True)
    assert start.java == java_binary() and start.main_class == "tlc2.TLC" and len(start.classpath) == 1
    assert all(not p.is_dir() for p in start.readonly)  # at most the archive made for that Java, no runtime folder
