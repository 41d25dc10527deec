"""The reader of TLC's ``-tool`` output: every error-level message is a violation, wrappers and notes are not."""

from __future__ import annotations

from sysmo.tools.tla.tlc_output import parse_output


def message(code: int, level: int, text: str) -> str:
    return f"@!@!@STARTMSG {code}:{level} @!@!@\n{text}\n@!@!@ENDMSG {code} @!@!@\n"


def test_an_error_level_message_of_an_unlisted_code_is_an_evaluation_violation() -> None:
    output = (message(2262, 0, "TLC2 Version 2.15 of Day Month 20?? (rev: 1a2b3c4)")
              + message(2187, 0, "Running breadth-first search Model-Checking")
              + message(2999, 1, "Attempted to apply the operator overridden by the Java method\n"
                                 "line 12, col 5 to line 12, col 30 of module Spec")
              + message(2186, 0, "Finished in 01s at (2026-11-23 10:00:00)"))
    report = parse_output(output)
    assert [v.kind for v in report.violations] == ["evaluation"]
    assert report.violations[0].message.startswith("Attempted to apply the operator")
    assert report.violations[0].location is not None and report.violations[0].location.line == 12


def test_trace_headers_and_notes_are_not_violations() -> None:
    output = (message(2110, 1, "Invariant Safe is violated.")
              + message(2121, 1, "The behavior up to this point is:")
              + message(2217, 4, "1: <Initial predicate>\nx = 0")
              + message(2999, 0, "a note of a code this reader does not know")
              + message(2186, 0, "Finished in 01s at (2026-11-23 10:00:00)"))
    report = parse_output(output)
    assert [(v.kind, v.name) for v in report.violations] == [("invariant", "Safe")]
    assert len(report.trace) == 1
