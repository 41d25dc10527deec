"""Check PlantUML diagrams with the real PlantUML (warm server, or one sandboxed JVM per batch) plus our lint rules.

>>> check("@startuml\\nclass A\\nA --> B\\n@enduml").outcome
<Outcome.OK: 'ok'>
>>> check("@startuml\\nclass A\\nfoo bar baz\\n@enduml").errors[0].line
3
"""

from __future__ import annotations

import re
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from sysmo.errors import ToolCrashError, ToolMissingError
from sysmo.log import get_logger
from sysmo.sandbox import Limits, get_sandbox
from sysmo.tools.plantuml.server import JVM_FLAGS, plantuml_server, security_profile
from sysmo.tools.install import jar_manifest_value, java_binary, plantuml_jar
from sysmo.tools.plantuml.lint import lint
from sysmo.tools.plantuml.source import DiagramBlock, diagram_source
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.status import ToolStatus

log = get_logger(__name__)

TOOL = "plantuml"
BATCH_HEAP_MB = 768
BATCH_REPORT_RE = re.compile(r"^(?P<file>d\d{5}\.puml):(?P<line>-?\d+):error:(?P<message>.*)$")
BATCH_NO_IMAGE_RE = re.compile(r"^Warning: no image in (?P<file>d\d{5}\.puml)")
SELF_CHECK_VALID = "@startuml\nclass Order {\n  +id : int\n}\nOrder --> Customer : placed by\n@enduml\n"
SELF_CHECK_INVALID = "@startuml\nclass Order\nthis is not plantuml\n@enduml\n"


@lru_cache(maxsize=4)
def jar_version(jar: Path) -> str:
    """PlantUML's own version string (``1.2026.8``): the jar manifest's ``Implementation-Version`` (the jar
    `sysmo tools install` installs has it), else what ``-version`` prints (a JVM start: about 0.4 s of CPU)."""
    recorded = jar_manifest_value(jar, "Implementation-Version")
    if recorded:
        return recorded
    proc = subprocess.run(
        [java_binary(), "-Djava.awt.headless=true", "-jar", str(jar), "-version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"PlantUML version (\S+)", proc.stdout + proc.stderr)
    if not match:
        raise ToolCrashError(
            f"{jar} -version printed no PlantUML version (exit {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[-300:]}; reinstall with `sysmo tools install --force`"
        )
    return match.group(1)


def _tool_version() -> str:
    try:
        return jar_version(plantuml_jar())
    except (ToolMissingError, ToolCrashError, OSError, subprocess.TimeoutExpired):
        return "unknown"


def _plantuml_diagnostic(block: DiagramBlock, message: str, line: int | None) -> Diagnostic:
    mapped = block.original_line(line) if line is not None and line > 0 else block.start_line
    return Diagnostic(tool=TOOL, severity=Severity.ERROR, message=message.strip(), line=mapped, code="syntax")


def _result(
    diagnostics: list[Diagnostic], duration_s: float, details: dict, raw: str, outcome: Outcome | None = None
) -> CheckResult:
    diagnostics = sorted(diagnostics, key=lambda d: (d.line or 0, d.tool, d.code or ""))
    if outcome is None:
        errors = [d for d in diagnostics if d.severity in (Severity.ERROR, Severity.TYPING)]
        outcome = Outcome.FAILED if errors else Outcome.OK
    raw_output, truncated = CheckResult.bound_output(raw)
    return CheckResult(
        tool=TOOL,
        tool_version=_tool_version(),
        outcome=outcome,
        diagnostics=diagnostics,
        duration_s=duration_s,
        raw_output=raw_output,
        truncated=truncated,
        details=details,
    )


def check(text: str, *, single: bool = True, timeout_s: float = 30.0) -> CheckResult:
    """Check one diagram through the warm server; lint findings count as errors (PlantUML accepts too much).
    PlantUML parses the diagram without drawing it (the pipe transport; picoweb draws every request).

    ``text`` may carry prose or fences around the diagram: the first ``@startuml .. @enduml`` block is
    checked, and every line number refers to ``text`` itself.
    """
    started = time.monotonic()
    findings = lint(text, single=single)
    block = diagram_source(text).first()
    server = plantuml_server()
    details: dict = {"mode": "server", "diagram_start_line": block.start_line}
    try:
        response = server.render(block.text(), timeout_s=timeout_s, draw=False)  # a verdict needs no picture
    except TimeoutError:
        timeout = Diagnostic(
            tool=TOOL,
            severity=Severity.ERROR,
            code="timeout",
            line=block.start_line,
            message=f"PlantUML did not finish within {timeout_s:.0f} s",
        )
        return _result(
            findings + [timeout], time.monotonic() - started, details, "", outcome=Outcome.INCONCLUSIVE
        )
    except (ToolMissingError, ToolCrashError) as exc:
        crash = Diagnostic(tool=TOOL, severity=Severity.ERROR, code="tool-error", message=str(exc))
        return _result(
            findings + [crash], time.monotonic() - started, details, str(exc), outcome=Outcome.ERROR
        )
    details.update(
        isolation=server.isolation,
        transport=server.transport,
        description=response.description,
        server_seconds=round(response.duration_s, 4),
    )
    found = list(findings)
    if response.error:
        found.append(_plantuml_diagnostic(block, response.error, response.error_line))
    elif response.status != 200:
        crash = Diagnostic(
            tool=TOOL,
            severity=Severity.ERROR,
            code="tool-error",
            message=f"PlantUML server answered HTTP {response.status}",
        )
        return _result(
            found + [crash], time.monotonic() - started, details, response.svg[:2000], outcome=Outcome.ERROR
        )
    raw = (
        f"{response.error or 'ok'} (line {response.error_line})"
        if response.error
        else (response.description or "ok")
    )
    return _result(found, time.monotonic() - started, details, raw)


def render_svg(text: str, *, timeout_s: float = 30.0) -> str:
    """The SVG of the first diagram in ``text`` (PlantUML's error image when the diagram has an error)."""
    return plantuml_server().render(diagram_source(text).first_text(), timeout_s=timeout_s).svg


def check_batch(
    texts: list[str], *, single: bool = True, timeout_s: float | None = None, keep_svg: bool = False
) -> list[CheckResult]:
    """Check many diagrams in one sandboxed JVM (``-tsvg -stdrpt:2``): one result per text, in order.

    ``keep_svg`` puts each rendered SVG into ``details["svg"]``.
    """
    if not texts:
        return []
    started = time.monotonic()
    jar = plantuml_jar().resolve()
    java = str(Path(java_binary()).resolve())
    blocks = [diagram_source(text).first() for text in texts]
    names = [f"d{i:05d}.puml" for i in range(len(texts))]
    files: dict[str, str | bytes] = {
        name: block.text() + "\n" for name, block in zip(names, blocks, strict=True)
    }
    argv = [
        java,
        f"-Xmx{BATCH_HEAP_MB}m",
        *JVM_FLAGS,
        "-jar",
        str(jar),
        "-tsvg",
        "-stdrpt:2",
        "-o",
        "out",
        *names,
    ]
    limits = Limits(timeout_s=timeout_s or 30.0 + 1.0 * len(texts), memory_mb=BATCH_HEAP_MB + 768, pids=256)
    svgs = [f"out/{name.removesuffix('.puml')}.svg" for name in names]
    run = get_sandbox().run(
        argv,
        files=files,
        readonly_paths=[jar],
        limits=limits,
        env={"PLANTUML_SECURITY_PROFILE": security_profile()},
        collect=svgs if keep_svg else None,
    )
    output = run.stdout + "\n" + run.stderr
    reported: dict[str, list[tuple[int | None, str]]] = {}
    for line in output.splitlines():
        if match := BATCH_REPORT_RE.match(line.strip()):
            reported.setdefault(match["file"], []).append((int(match["line"]), match["message"]))
        elif match := BATCH_NO_IMAGE_RE.match(line.strip()):
            reported.setdefault(match["file"], []).append((None, "no diagram found"))
    per_text = (time.monotonic() - started) / len(texts)
    details = {
        "mode": "batch",
        "batch_size": len(texts),
        "isolation": run.isolation,
        "batch_seconds": round(run.duration_s, 3),
        "returncode": run.returncode,
    }
    if run.returncode not in (0, 200) and not run.timed_out and not reported:
        log.warning("plantuml.batch_failed", returncode=run.returncode, stderr=run.stderr[-500:])
    results = []
    for text, name, block, svg in zip(texts, names, blocks, svgs, strict=True):
        found = lint(text, single=single)
        for line, message in reported.get(name, []):
            found.append(_plantuml_diagnostic(block, message, line))
        outcome = None
        if run.timed_out and name not in reported:
            # the JVM was killed before it reached or finished this file: neither pass nor fail
            found.append(
                Diagnostic(
                    tool=TOOL,
                    severity=Severity.ERROR,
                    code="timeout",
                    line=block.start_line,
                    message=f"the batch did not finish within {limits.timeout_s:.0f} s",
                )
            )
            outcome = Outcome.INCONCLUSIVE
        elif run.returncode not in (0, 200) and not reported:
            found.append(
                Diagnostic(
                    tool=TOOL,
                    severity=Severity.ERROR,
                    code="tool-error",
                    message=f"PlantUML exited with {run.returncode}: {run.stderr.strip()[-300:]}",
                )
            )
            outcome = Outcome.ERROR
        raw = "\n".join(f"{name}:{line}:error:{message}" for line, message in reported.get(name, []))
        extra = {"diagram_start_line": block.start_line}
        if keep_svg:
            extra["svg"] = run.files_out.get(svg, "")
        results.append(_result(found, per_text, {**details, **extra}, raw, outcome=outcome))
    return results


def self_check() -> ToolStatus:
    """Live check for ``sysmo tools doctor``: a valid diagram passes and a broken one fails on the right line."""
    jar = plantuml_jar()
    version = jar_version(jar.resolve())
    good = check(SELF_CHECK_VALID)
    bad = check(SELF_CHECK_INVALID)
    bad_line = bad.errors[0].line if bad.errors else None
    ok = good.outcome == Outcome.OK and bad.outcome == Outcome.FAILED and bad_line == 3
    server = plantuml_server()
    message = (
        f"warm server checked a valid diagram in {good.duration_s * 1000:.0f} ms and found the error on "
        f"line 3 ({', '.join(server.isolation)})"
        if ok
        else f"self-check failed: valid -> {good.outcome.value} {good.summary(3)}; "
        f"invalid -> {bad.outcome.value}, error line {bad_line} (expected 3)"
    )
    return ToolStatus(name="plantuml", ok=ok, version=version, path=str(jar), message=message)
