"""SANY, the TLA+ parser and semantic checker: check a module and read its messages as diagnostics.

SANY 2.15 exits 0 on semantic errors, so the outcome is judged from what it prints, never the exit code.

>>> result = check("---- MODULE M ----\\nVARIABLE x\\nInit == y = 0\\n====")
>>> result.outcome.value, result.diagnostics[0].line, result.diagnostics[0].message
('failed', 3, "Unknown operator: `y'.")
"""

from __future__ import annotations

import re

from sysmo.contracts.artifact import Artifact
from sysmo.log import get_logger
from sysmo.sandbox import Limits
from sysmo.tools.install import tla2tools_jar
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.status import ToolStatus
from sysmo.tools.tla.jvm import SANY_JVM_FLAGS, jar_revision, run_java
from sysmo.tools.tla.source import PreparedSpec, prepare

log = get_logger(__name__)

TOOL = "sany"
DEFAULT_TIMEOUT_S = 60.0
SANY_HEAP_MB = 1024

VERSION_LINE = re.compile(r"SANY2? Version (\S+)")
# "line 6, col 8 to line 6, col 8 of module M"
SPAN = re.compile(r"line (\d+), col (\d+) to line (\d+), col (\d+) of module (\w+)")
ENTRY_SPAN = re.compile(r"^" + SPAN.pattern + r"\s*$", re.MULTILINE)  # a location on its own line starts an entry
MISSING_MODULE = re.compile(r"Cannot find source file for module (\w+) imported in module (\w+)")
# "Encountered "====" at line 6, column 1 and token "+"" / "Lexical error at line 4, column 11.  ..."
AT_LINE_COLUMN = re.compile(r"at line (\d+), column (\d+)")
IN_MODULE = re.compile(r"^In module (\w+)\s*$", re.MULTILINE)
FAILURE_MARKERS = ("*** Errors:", "Could not parse", "Fatal errors", "Semantic errors", "***Parse Error***",
                   "Lexical error", "*** Abort messages")


def _section(text: str, start: str, stops: tuple[str, ...]) -> str | None:
    index = text.find(start)
    if index < 0:
        return None
    body = text[index + len(start):]
    ends = [body.find(stop) for stop in stops if body.find(stop) >= 0]
    return body[: min(ends)] if ends else body


def _span_entries(section: str) -> list[tuple[re.Match[str], str]]:
    """Split a SANY "*** Errors:"/"*** Warnings:" section into (location, message) pairs."""
    entries = []
    matches = list(ENTRY_SPAN.finditer(section))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(section)
        message = " ".join(section[match.end():end].split())
        entries.append((match, message))
    return entries


def parse_output(output: str, main_module: str | None = None) -> list[Diagnostic]:
    """Diagnostics (1-based line/column, file ``<module>.tla``) from SANY's printed output."""
    diagnostics: list[Diagnostic] = []

    def add(message: str, severity: Severity, line: int | None, col: int | None, module: str | None,
            end_line: int | None = None, end_col: int | None = None, code: str | None = None) -> None:
        diagnostics.append(Diagnostic(tool=TOOL, severity=severity, message=message.strip(), line=line, column=col,
                                      end_line=end_line, end_column=end_col, code=code,
                                      file=f"{module}.tla" if module else None))

    for header, severity, code in (("*** Errors:", Severity.ERROR, "semantic"),
                                   ("*** Warnings:", Severity.WARNING, "semantic-warning")):
        section = _section(output, header, ("*** Errors:", "*** Warnings:", "Fatal errors", "Parsing file",
                                            "Semantic processing of module"))
        if section is None:
            continue
        section = section.split("\n", 1)[1] if "\n" in section else ""  # drop the count
        for match, message in _span_entries(section):
            line, col, end_line, end_col = (int(g) for g in match.groups()[:4])
            add(message or "semantic error", severity, line, col, match.group(5), end_line, end_col, code)

    failing_module = None
    in_module = IN_MODULE.search(output)
    if in_module:
        failing_module = in_module.group(1)
    elif main_module:
        failing_module = main_module

    parse_error = _section(output, "***Parse Error***", ("Residual stack trace", "Fatal errors"))
    if parse_error is not None:
        text = " ".join(parse_error.split())
        at = AT_LINE_COLUMN.search(text)
        add(f"Parse error: {text}", Severity.ERROR, int(at.group(1)) if at else None,
            int(at.group(2)) if at else None, failing_module, code="parse")

    for match in re.finditer(r"Lexical error at line (\d+), column (\d+)\.\s*(.*)", output):
        add(f"Lexical error: {match.group(3).strip()}", Severity.ERROR, int(match.group(1)), int(match.group(2)),
            failing_module, code="lexical")

    abort = _section(output, "*** Abort messages:", ("\n\n\n",))
    if abort is not None:
        lines = [ln.strip() for ln in abort.split("\n")[1:] if ln.strip()]
        messages = [ln for ln in lines if not ln.startswith(("In module", "Unknown location"))
                    and not ln.startswith("Could not parse module")]
        if not diagnostics or messages:
            for message in messages or lines[-1:]:
                span = SPAN.search(message)
                if span:
                    add(message, Severity.ERROR, int(span.group(1)), int(span.group(2)), span.group(5), code="fatal")
                else:
                    add(message, Severity.ERROR, None, None, failing_module, code="fatal")
    if not diagnostics and any(marker in output for marker in FAILURE_MARKERS):
        tail = " ".join(output.strip().splitlines()[-6:])
        add(f"SANY reported a failure: {tail}", Severity.ERROR, None, None, main_module, code="unparsed")
    return diagnostics


def _locate_missing_modules(diagnostics: list[Diagnostic], spec: PreparedSpec) -> None:
    """SANY gives no line for an unknown EXTENDS/INSTANCE target: point at the line that names it."""
    for d in diagnostics:
        match = MISSING_MODULE.search(d.message)
        if not match or d.line is not None:
            continue
        missing, importer = match.groups()
        lines = [line.split("\\*", 1)[0] for line in spec.files.get(f"{importer}.tla", "").splitlines()]
        seen_import = False
        for number, code in enumerate(lines, start=1):
            seen_import = seen_import or bool(re.search(r"\b(EXTENDS|INSTANCE)\b", code))
            name = re.search(rf"\b{missing}\b", code)
            if seen_import and name:  # EXTENDS lists may continue on the following lines
                d.file, d.line, d.column = f"{importer}.tla", number, name.start() + 1
                break


def detect_version(output: str) -> str:
    match = VERSION_LINE.search(output)
    sany = match.group(1) if match else "unknown"
    try:
        revision = jar_revision(tla2tools_jar())
    except Exception:  # noqa: BLE001 - the version is a label, never a reason to fail a check
        revision = "unknown"
    return f"SANY {sany} (tla2tools rev {revision})"


def _map_columns(diagnostics: list[Diagnostic], spec: PreparedSpec) -> None:
    """Report columns of the text the author wrote, not of our ASCII rewrite (lines never move)."""
    for d in diagnostics:
        d.column = spec.original_column(d.file, d.line, d.column)
        d.end_column = spec.original_column(d.file, d.end_line, d.end_column)


def check(
    source: Artifact | str,
    module: str | None = None,
    *,
    limits: Limits | None = None,
    unicode_to_ascii: bool = True,
    with_library: bool = True,
) -> CheckResult:
    """Parse and semantically check ``module`` (default: the artifact's main module) with SANY.

    Unicode operators are rewritten to ASCII first and our library modules are on the search path.
    """
    spec = prepare(source, module, unicode_to_ascii=unicode_to_ascii)
    limits = limits or Limits(timeout_s=DEFAULT_TIMEOUT_S, memory_mb=SANY_HEAP_MB + 1024)
    run = run_java("tla2sany.SANY", [spec.main_file], files=spec.files, limits=limits, jvm_flags=SANY_JVM_FLAGS,
                   heap_mb=SANY_HEAP_MB, with_library=with_library)
    output = run.output
    raw, truncated = CheckResult.bound_output(output)
    version = detect_version(output)
    details = {"module": spec.main_module, "unicode_replacements": spec.unicode_replacements,
               "returncode": run.returncode, "isolation": run.isolation}
    if run.cached:
        details["cached"] = True
    if run.timed_out:
        return CheckResult(tool=TOOL, tool_version=version, outcome=Outcome.INCONCLUSIVE, duration_s=run.duration_s,
                           raw_output=raw, truncated=truncated, details=details,
                           diagnostics=[Diagnostic(tool=TOOL, severity=Severity.ERROR, code="timeout",
                                                   message=f"SANY did not finish within {limits.timeout_s:.0f} s")])
    diagnostics = parse_output(output, spec.main_module)
    _locate_missing_modules(diagnostics, spec)
    _map_columns(diagnostics, spec)
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    if errors:
        outcome = Outcome.FAILED
    elif f"Semantic processing of module {spec.main_module}" in output:
        outcome = Outcome.OK
    else:
        outcome = Outcome.ERROR
        diagnostics.append(Diagnostic(tool=TOOL, severity=Severity.ERROR, code="crash",
                                      message="SANY ended without checking the module (exit code "
                                              f"{run.returncode}): {' '.join(output.split()[-40:])}"))
    log.debug("sany.check", module=spec.main_module, outcome=outcome.value, seconds=round(run.duration_s, 3),
              diagnostics=len(diagnostics))
    return CheckResult(tool=TOOL, tool_version=version, outcome=outcome, diagnostics=diagnostics,
                       duration_s=run.duration_s, raw_output=raw, truncated=truncated, details=details)


SELF_CHECK_GOOD = "---- MODULE SelfCheck ----\nEXTENDS Naturals, SequencesExt\nVARIABLE x\nInit == x = Last(<<1, 2>>)\n===="
SELF_CHECK_BAD = "---- MODULE SelfCheck ----\nVARIABLE x\nInit == y = 0\n===="


def self_check() -> ToolStatus:
    """Live check: a valid module (using our SequencesExt) passes, a broken one fails on the right line."""
    jar = tla2tools_jar()
    good = check(SELF_CHECK_GOOD)
    bad = check(SELF_CHECK_BAD)
    bad_line = bad.errors[0].line if bad.errors else None
    ok = good.outcome == Outcome.OK and bad.outcome == Outcome.FAILED and bad_line == 3
    message = (f"valid module ok, broken module failed on line 3 ({good.duration_s:.2f} s per check)" if ok
               else f"unexpected: valid -> {good.outcome.value} {good.summary(3)}; broken -> {bad.outcome.value} "
                    f"line {bad_line}")
    return ToolStatus(name="SANY", ok=ok, version=good.tool_version, path=str(jar), message=message)
