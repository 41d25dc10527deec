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


def test_coverage_lines_of_tlc_2_15_with_the_body_span_and_older_lines_without_it_are_both_read() -> None:
    output = (message(2773, 0, "<Init line 73, col 1 to line 73, col 4 of module 1_rwmutex>: 1:1")
              + message(2772, 0, "<RequestRead line 257, col 1 to line 257, col 14 of module 1_rwmutex "
                                 "(259 5 265 110)>: 0:12")
              + message(2772, 0, "<DeliverWake line 574, col 1 to line 574, col 14 of module 1_rwmutex "
                                 "(576 5 583 77)>: 0:0")
              + message(2772, 0, "<Inc line 9, col 1 to line 9, col 3 of module Counter>: 5:7"))
    report = parse_output(output)
    assert [(c.name, c.distinct, c.generated) for c in report.coverage] == [
        ("RequestRead", 0, 12), ("DeliverWake", 0, 0), ("Inc", 5, 7)]
    assert report.covered_actions == ["RequestRead", "Inc"]
    assert report.coverage[0].location is not None and report.coverage[0].location.line == 257
    assert [(c.name, c.generated) for c in report.init_coverage] == [("Init", 1)]


def test_a_later_coverage_report_of_an_action_replaces_the_earlier_one() -> None:
    line = "<A line 3, col 1 to line 3, col 1 of module M (4 5 6 7)>: {}"
    report = parse_output(message(2772, 0, line.format("0:0")) + message(2772, 0, line.format("2:9")))
    assert [(c.name, c.distinct, c.generated) for c in report.coverage] == [("A", 2, 9)]


def test_resource_exhaustion_and_tlc_limits_are_resources_not_spec_errors() -> None:
    too_large = message(1000, 1, "TLC threw an unexpected exception.\nThe exception was a "
                                 "java.lang.RuntimeException\n: java.io.IOException: File too large")
    heap = message(1000, 1, "Java heap space") + message(2147, 1, "TLC was unable to fingerprint.\n\n"
                                                                  "Reason:\nJava heap space")
    overflow = ("Attempted to apply the operator overridden by the Java method\n"
                "but it produced the following error:\n"
                "Overflow when computing the number of elements in:\n[1..40 -> 1..40]")
    wrapped = "@!@!@STARTMSG 1000:1 @!@!@\n" + message(2154, 0, overflow) + "@!@!@ENDMSG 1000 @!@!@\n"
    jvm = 'Exception in thread "main" java.lang.OutOfMemoryError: GC overhead limit exceeded\n'
    for output, reason in [(too_large, "file-size limit"), (heap, "out of memory (Java heap space)"),
                           (wrapped, "enumeration limit"), (jvm, "out of memory")]:
        report = parse_output(output)
        assert [v.kind for v in report.violations] == ["resources"], output
        assert reason in report.violations[0].message


def test_an_evaluation_error_is_still_the_spec_s() -> None:
    wrapped = ("@!@!@STARTMSG 1000:1 @!@!@\n" + message(2179, 0, "The second argument of \\div is 0.")
               + "@!@!@ENDMSG 1000 @!@!@\n")
    report = parse_output(wrapped + wrapped)  # met twice by a simulation: reported once
    assert [(v.kind, v.message) for v in report.violations] == [
        ("evaluation", "The second argument of \\div is 0.")]


def test_an_unexpected_exception_keeps_its_cause_without_tlc_s_advice() -> None:
    text = ("TLC threw an unexpected exception.\nThis was probably caused by an error in the spec or model.\n"
            "See the User Output or TLC Console for clues to what happened.\nThe exception was a "
            "java.lang.RuntimeException\n: Attempted to apply tuple <<>> to integer 1 which is out of domain.")
    report = parse_output(message(1000, 1, text))
    assert [(v.kind, v.message) for v in report.violations] == [
        ("evaluation", "TLC threw an unexpected exception: Attempted to apply tuple <<>> to integer 1 which is out "
                       "of domain.")]
    bare = parse_output(message(1000, 1, "TLC threw an unexpected exception.\nThe exception was a "
                                          "java.lang.NullPointerException"))
    assert bare.violations[0].message == ("TLC threw an unexpected exception. The exception was a "
                                          "java.lang.NullPointerException")
