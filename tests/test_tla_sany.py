"""SANY's output (which exits 0 on semantic errors) becomes diagnostics on the right line, for real specs and breakages."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.errors import TaskError
from sysmo.tools.tla import sany

MUTEX = Path("sysmobench/bug_repro_specs/mutex/1_mutex.tla")


@pytest.fixture(scope="module")
def mutex_lines(shared_benchmarks: Path) -> list[str]:
    return (shared_benchmarks / MUTEX).read_text().split("\n")


def _variant(lines: list[str], line: int, old: str, new: str) -> str:
    changed = list(lines)
    assert old in changed[line - 1], "the corpus file changed: pick another edit"
    changed[line - 1] = changed[line - 1].replace(old, new, 1)
    return "\n".join(changed)


def test_the_unbroken_spec_passes(mutex_lines: list[str]) -> None:
    result = sany.check("\n".join(mutex_lines))
    assert result.outcome == "ok", result.summary()
    assert result.diagnostics == []
    assert result.tool_version.startswith("SANY 2.1")


@pytest.mark.parametrize(("what", "line", "old", "new", "code"), [
    ("deleted token", 37, "locked' = TRUE", "locked' TRUE", "parse"),
    ("renamed operator", 56, "Append(", "Appendd(", "semantic"),
    ("bad operator", 24, "\\in", "\\inn", "parse"),
    ("bad arrow", 24, "|->", "|=>", "parse"),
])
def test_broken_variant_is_reported_on_the_edited_line(mutex_lines: list[str], what: str, line: int, old: str,
                                                         new: str, code: str) -> None:
    result = sany.check(_variant(mutex_lines, line, old, new))
    assert result.outcome == "failed", what
    first = result.errors[0]
    assert (first.line, first.code, first.file) == (line, code, "1_mutex.tla"), first.render()
    assert first.column is not None


def test_removed_extends_reports_the_first_use_of_each_lost_operator(mutex_lines: list[str]) -> None:
    result = sany.check(_variant(mutex_lines, 3, "Sequences, ", ""))
    assert result.outcome == "failed"
    lost = {d.message for d in result.errors}
    assert "Unknown operator: `Append'." in lost and "Unknown operator: `Head'." in lost
    assert result.errors[0].line == 56  # the first line that calls Append


def test_missing_module_points_at_the_extends_line() -> None:
    result = sany.check("---- MODULE Imp ----\nEXTENDS Naturals,\n   Sequences, NoSuchModule\n====\n")
    assert result.outcome == "failed"
    assert (result.errors[0].line, result.errors[0].column) == (3, 15)
    assert "NoSuchModule" in result.errors[0].message


def test_several_semantic_errors_and_warnings_are_all_reported() -> None:
    text = ("---- MODULE Many ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nInit == x = 1\n"
            "Foo(a) == a\nBar == Foo(1, 2)\nQ == LET y == 1 IN z\n====\n")
    result = sany.check(text)
    assert [(d.line, d.severity.value) for d in result.diagnostics] == [
        (5, "error"), (7, "error"), (8, "error"), (5, "warning")]
    assert "requires 1 arguments" in result.diagnostics[1].message


def test_unterminated_string_is_a_lexical_error_on_its_line() -> None:
    result = sany.check('---- MODULE Str ----\nVARIABLE x\nInit == x = "abc\n====\n')
    assert result.outcome == "failed"
    assert (result.errors[0].line, result.errors[0].code) == (3, "lexical")


def test_text_is_checked_under_the_name_its_module_header_gives() -> None:
    result = sany.check("---- MODULE NamedInHeader ----\nVARIABLE x\n====\n")
    assert result.outcome == "ok" and result.details["module"] == "NamedInHeader"


def test_artifact_with_two_modules_checks_the_main_one_against_the_other() -> None:
    artifact = Artifact(language="tla", files={
        "Base.tla": "---- MODULE Base ----\nEXTENDS Naturals\nDouble(n) == 2 * n\n====\n",
        "Main.tla": "---- MODULE Main ----\nEXTENDS Base\nFour == Double(2)\nBad == Triple(2)\n====\n",
        "Main.cfg": "INIT Init\n",
    })
    result = sany.check(artifact, "Main")
    assert result.outcome == "failed"
    assert (result.errors[0].file, result.errors[0].line) == ("Main.tla", 4)


def test_file_names_with_directories_are_refused() -> None:
    with pytest.raises(TaskError, match="not allowed"):
        sany.check(Artifact(language="tla", files={"../Evil.tla": "---- MODULE Evil ----\n====\n"}))


def test_self_check_is_green() -> None:
    status = sany.self_check()
    assert status.ok, status.message
    assert "2.1" in status.version
