"""The cfg layer: parse TLC configurations, rewrite what TLC 2.15 rejects, and build one-check-at-a-time variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.errors import ConfigError
from sysmo.tools.tla import cfg, tlc

MUTEX_CFG = """SPECIFICATION Spec

CONSTANTS
    NumProcs = 2
    NONE = 0

INVARIANTS
    MutualExclusion

PROPERTY DeadAndLivelockFree
PROPERTY StarvationFree
CHECK_DEADLOCK TRUE
"""


def test_parse_reads_every_section() -> None:
    config = cfg.parse(MUTEX_CFG + "CONSTRAINT Bound\n\\* a comment\n(* block\n comment *)\nSYMMETRY Perms\n")
    assert config.specification == "Spec"
    assert config.constants == ["NumProcs = 2", "NONE = 0"]
    assert config.invariants == ["MutualExclusion"]
    assert config.properties == ["DeadAndLivelockFree", "StarvationFree"]
    assert config.constraints == ["Bound"] and config.symmetry == "Perms"
    assert config.check_deadlock is True


def test_constant_values_that_span_tokens_stay_whole() -> None:
    config = cfg.parse('CONSTANTS\n Servers = {s1, s2,\n s3} Nil <- NilValue\n F(a, b) <- G\n Msg = [type |-> "x"]\n'
                       "CONSTANT Single = s\nINIT I NEXT N\n")
    assert config.constants == ["Servers = {s1, s2, s3}", "Nil <- NilValue", "F(a, b) <- G",
                                'Msg = [type |-> "x"]', "Single = s"]
    assert (config.init, config.next) == ("I", "N")


def test_check_deadlock_false_becomes_the_deadlock_flag() -> None:
    compat = cfg.make_compatible("INIT Init\nNEXT Next\nCHECK_DEADLOCK FALSE\n")
    assert compat.deadlock_flag is True
    assert "CHECK_DEADLOCK" not in compat.text
    assert compat.notes == ["CHECK_DEADLOCK FALSE replaced by the -deadlock flag"]


def test_check_deadlock_true_keeps_the_default_check() -> None:
    compat = cfg.make_compatible(MUTEX_CFG)
    assert compat.deadlock_flag is False and "CHECK_DEADLOCK" not in compat.text


def test_postcondition_and_alias_are_dropped_with_a_note() -> None:
    compat = cfg.make_compatible("SPECIFICATION Spec\nPOSTCONDITION Done\nALIAS Pretty\n")
    assert "POSTCONDITION" not in compat.text and "ALIAS" not in compat.text
    assert any("POSTCONDITION Done dropped" in n for n in compat.notes)
    assert any("ALIAS Pretty dropped" in n for n in compat.notes)


def test_only_keeps_exactly_one_check() -> None:
    config = cfg.parse(MUTEX_CFG)
    single = config.only(prop="StarvationFree")
    assert single.invariants == [] and single.properties == ["StarvationFree"]
    assert single.constants == config.constants
    with pytest.raises(ConfigError):
        config.only()


def test_make_config_builds_from_parts_and_from_a_base() -> None:
    built = cfg.make_config(init="Init", next="Next", constants={"N": "3"}, invariants=["TypeOK"])
    assert built.render() == "INIT Init\nNEXT Next\nCONSTANTS\n    N = 3\nINVARIANT TypeOK\n"
    on_base = cfg.make_config(base=MUTEX_CFG, invariants=["Other"], properties=[])
    assert on_base.specification == "Spec" and on_base.checks == [("invariant", "Other")]
    with pytest.raises(ConfigError):
        cfg.make_config(invariants=["X"])


def test_malformed_cfg_raises_a_config_error_naming_the_problem() -> None:
    with pytest.raises(ConfigError, match="CHECK_DEADLOCK takes TRUE or FALSE"):
        cfg.parse("CHECK_DEADLOCK maybe\n")
    with pytest.raises(ConfigError, match="expected a keyword"):
        cfg.parse("Spec\n")


def test_every_sysmobench_cfg_parses_and_renders_for_tlc_215(shared_benchmarks: Path) -> None:
    paths = [p for p in (shared_benchmarks / "sysmobench").rglob("*.cfg") if "traces_found" not in p.parts]
    assert len(paths) >= 20
    for path in paths:
        compat = cfg.make_compatible(path.read_text())
        for keyword in ("CHECK_DEADLOCK", "POSTCONDITION", "ALIAS"):
            assert keyword not in compat.text, path
        reparsed = cfg.parse(compat.text)
        assert reparsed.model_dump(exclude={"check_deadlock", "postcondition", "alias"}) == \
            compat.config.model_dump(exclude={"check_deadlock", "postcondition", "alias"}), path


def test_tlc_215_runs_a_cfg_it_would_otherwise_reject() -> None:
    spec = "---- MODULE Halt ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x < 2 /\\ x' = x + 1\n====\n"
    result = tlc.model_check(spec, "INIT Init\nNEXT Next\nCHECK_DEADLOCK FALSE\nALIAS Nothing\n", timeout_s=60)
    assert result.outcome == "ok", result.summary()
    assert {d.code for d in result.diagnostics} == {"cfg-compat"}
