"""Validate SysML v2 text with the OpenSysML kernel: one fresh folder per check, diagnostics with code and place.

Outcome rule (it reproduces ``sysmbench/reference_validation_opensysml.jsonl`` and the OMG corpus counts):
``failed`` when the kernel reports any ``error``, including the strict typing codes, which are reported
with ``Severity.TYPING`` (``details["typing_only"]`` says when they are all that failed; pass
``typing_fails=False`` to accept such a model); warnings never fail a model. A model with no declarations
fails with code ``empty-model``. A kernel that does not answer in time is restarted and the check is
``inconclusive``. A model with more imports of a name that resolves nowhere than OpenSysML's resolver
answers in reasonable time (``import_fanout``: a property of the text, never of the load) is loaded beside a
stub declaring that name: failed for the syntax errors of its own files, else inconclusive. A kernel that
crashes twice, or cannot start, gives ``error``. Never ``ok`` for either.

>>> validate("package P { part def A; part a : A; }").outcome
<Outcome.OK: 'ok'>
>>> validate("package P { part a : Missing; }").diagnostics[0].render()
'model.sysml:1:22: error[unresolved]: unresolved reference: Missing'
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from sysmo.contracts.artifact import Artifact, Language
from sysmo.errors import SysmoError
from sysmo.log import get_logger
from sysmo.tools.sysml.kernel import KernelRun, OpenSysMLKernel, leased_kernel, safe_relative_path, shared_kernel
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.status import ToolStatus
from sysmo.tools.sysml.diagnostics import TOOL, parse_load_output
from sysmo.tools.sysml.import_fanout import fanout_candidate, fanout_message, probe_model, stub_model

log = get_logger(__name__)

MODEL_SUFFIXES = (".sysml", ".kerml")
DEFAULT_FILE = "model.sysml"
MAX_MODEL_CHARS = 5_000_000  # far beyond any real model; bounds what we hand the kernel
FOLDER_TIMEOUT_S = 120.0  # a whole corpus folder (the OMG examples load in ~10 s)

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


@lru_cache(maxsize=8)
def _version(binary: str) -> str:
    return OpenSysMLKernel.version_of(Path(binary))


def model_files(model: str | Artifact | dict[str, str]) -> dict[str, str]:
    """The ``.sysml``/``.kerml`` files of a model given as text, an ``Artifact`` or a name -> text map."""
    if isinstance(model, str):
        return {DEFAULT_FILE: model}
    if isinstance(model, Artifact):
        if model.language != Language.SYSML:
            raise SysmoError(f"OpenSysML validates SysML v2 artifacts, not {model.language.value!r} ones")
        files = model.files
    else:
        files = model
    for name in files:
        safe_relative_path(name)  # raises for absolute names and `..`: the caller's mistake, said as such
    return {name: text for name, text in files.items() if name.endswith(MODEL_SUFFIXES)}


def _is_empty(files: dict[str, str]) -> bool:
    return all(not _COMMENTS.sub("", text).strip() for text in files.values())


def _result(outcome: Outcome, diagnostics: list[Diagnostic], start: float, version: str, raw: str = "",
            **details: object) -> CheckResult:
    raw_output, truncated = CheckResult.bound_output(raw)
    return CheckResult(tool=TOOL, tool_version=version, outcome=outcome, diagnostics=diagnostics,
                       duration_s=time.monotonic() - start, raw_output=raw_output, truncated=truncated,
                       details=dict(details))


def _diagnostics(run: KernelRun) -> list[Diagnostic]:
    """The load's diagnostics, parsed once per run (``more_exports`` and the check result both read them)."""
    if run.diagnostics is None:
        run.diagnostics = parse_load_output(run.reply.stdout, folder=run.folder)
    return run.diagnostics


def _unresolvable_fanout(files: dict[str, str], kernel: OpenSysMLKernel,
                         timeout_s: float | None) -> tuple[str, int] | None:
    """(name, imports) when the model has more re-walking imports of one name than OpenSysML's resolver
    answers in reasonable time and that name resolves nowhere (``import_fanout``); else None. The probe is a
    one-line load, asked only for the rare model over the bound."""
    candidate = fanout_candidate(files)
    if candidate is None:
        return None
    try:
        probe = kernel.load(probe_model(candidate[0]), timeout_s=timeout_s)
    except SysmoError:
        return None  # the kernel could not start: the load below reports it
    unresolved = probe.reply.status == "ok" and any(
        d.code == "unresolved" for d in parse_load_output(probe.reply.stdout, folder=probe.folder))
    log.info("opensysml.import_fanout", name=candidate[0], imports=candidate[1], unresolved=unresolved)
    return candidate if unresolved else None


STUB_FILE = "sysmo-import-stub.sysml"  # declares the name the imports start with, beside the model's files


def _fanout_result(files: dict[str, str], name: str, count: int, *, kernel: OpenSysMLKernel,
                   timeout_s: float | None, start: float, version: str) -> CheckResult:
    """The verdict on a model over the import bound: its files loaded beside a stub that declares ``name`` and
    the namespaces its imports name in it, so the resolver finds them at once. Each file parses alone, so a syntax error the kernel reports in the model's
    own files is one the model has: ``failed``, with those errors. Without one, the stub may have changed what
    resolves, so there is no verdict: ``inconclusive``."""
    note = Diagnostic(tool=TOOL, severity=Severity.INFO, code="import-fanout", message=fanout_message(name, count))
    stub = STUB_FILE if STUB_FILE not in files else f"sysmo-import-stub-{len(files)}.sysml"
    try:
        run = kernel.load({**files, stub: stub_model(name, files)}, timeout_s=timeout_s)
    except SysmoError as exc:
        return _result(Outcome.ERROR, [Diagnostic(tool=TOOL, code="tool-error", message=str(exc))], start, version)
    details: dict[str, object] = {"reason": "import-fanout", "import_name": name, "imports": count,
                                  "files": len(files), "kernel_restarts": run.restarts,
                                  "isolation": list(kernel.isolation), "kernel_s": round(run.reply.duration_s, 4)}
    syntax = [] if run.reply.status != "ok" else [
        d for d in parse_load_output(run.reply.stdout, folder=run.folder) if d.code == "syntax" and d.file != stub]
    if not syntax:
        return _result(Outcome.INCONCLUSIVE, [note], start, version, **details)
    if len(files) == 1:
        only = next(iter(files))
        for d in syntax:
            d.file = only
    details.update(errors=len(syntax), typing=0, warnings=0, typing_only=False)
    raw = "\n".join(d.render() for d in syntax)
    return _result(Outcome.FAILED, [*syntax, note], start, version, raw, **details)


def run_files(files: dict[str, str], *, exports: tuple[str, ...] = (), timeout_s: float | None = None,
              typing_fails: bool = True, kernel: OpenSysMLKernel | None = None,
              more_exports: Callable[[KernelRun, list[Diagnostic]], tuple[str, ...]] | None = None,
              ) -> tuple[CheckResult, KernelRun | None]:
    """Load ``files`` together in one fresh folder; the check result and the kernel's raw run (with exports;
    ``more_exports`` as in ``OpenSysMLKernel.load``, also given the load's diagnostics, parsed once for both)."""
    start = time.monotonic()
    kernel = kernel or shared_kernel()
    version = _version(str(kernel.binary))
    if not files:
        return _result(Outcome.FAILED, [Diagnostic(tool=TOOL, code="no-model", message=(
            "no .sysml or .kerml file in the model: write the SysML v2 text into a .sysml file"))], start, version), None
    if sum(len(t) for t in files.values()) > MAX_MODEL_CHARS:
        return _result(Outcome.FAILED, [Diagnostic(tool=TOOL, code="too-large", message=(
            f"the model is larger than {MAX_MODEL_CHARS} characters; nothing was checked"))], start, version), None
    if _is_empty(files):
        return _result(Outcome.FAILED, [Diagnostic(tool=TOOL, code="empty-model", message=(
            "the model declares nothing (only whitespace or comments): write at least one package or definition"))],
            start, version), None
    if (fanout := _unresolvable_fanout(files, kernel, timeout_s)) is not None:
        return _fanout_result(files, *fanout, kernel=kernel, timeout_s=timeout_s, start=start, version=version), None
    try:
        run = kernel.load(files, exports=exports, timeout_s=timeout_s,
                          more_exports=None if more_exports is None else (lambda r: more_exports(r, _diagnostics(r))))
    except SysmoError as exc:  # the kernel could not start: a tool problem, not the model's
        log.error("opensysml.unavailable", error=str(exc))
        return _result(Outcome.ERROR, [Diagnostic(tool=TOOL, code="tool-error", message=str(exc))], start, version), None
    reply = run.reply
    details: dict[str, object] = {"files": len(files), "kernel_restarts": run.restarts,
                                  "isolation": list(kernel.isolation), "kernel_s": round(reply.duration_s, 4)}
    if reply.status == "timeout":
        message = (f"OpenSysML did not answer within {timeout_s or kernel.request_timeout_s:g} s and was restarted; "
                   "the model may be too large or send the validator into a loop")
        return _result(Outcome.INCONCLUSIVE, [Diagnostic(tool=TOOL, severity=Severity.INFO, code="timeout", message=message)],
                       start, version, reply.stdout, reason="timeout", **details), run
    if reply.status == "crashed":
        message = f"the OpenSysML kernel crashed while loading the model ({reply.error}); it was restarted"
        return _result(Outcome.ERROR, [Diagnostic(tool=TOOL, code="crash", message=message)],
                       start, version, reply.stdout, reason="crash", **details), run
    if reply.status != "ok":
        message = f"OpenSysML refused the load: {reply.error}"
        return _result(Outcome.ERROR, [Diagnostic(tool=TOOL, code="tool-error", message=message)],
                       start, version, reply.stdout + reply.stderr, reason="command-error", **details), run
    diagnostics = _diagnostics(run)
    if len(files) == 1:  # one file: name it as the caller did
        only = next(iter(files))
        for d in diagnostics:
            if d.file is not None:
                d.file = only
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    typing = [d for d in diagnostics if d.severity == Severity.TYPING]
    failed = bool(errors) or (typing_fails and bool(typing))
    details.update(errors=len(errors), typing=len(typing),
                   warnings=sum(d.severity == Severity.WARNING for d in diagnostics),
                   typing_only=bool(typing) and not errors)
    raw = reply.stdout.replace(run.folder.rstrip("/") + "/", "")
    return _result(Outcome.FAILED if failed else Outcome.OK, diagnostics, start, version, raw, **details), run


def validate(model: str | Artifact | dict[str, str], *, timeout_s: float | None = None, typing_fails: bool = True,
             kernel: OpenSysMLKernel | None = None) -> CheckResult:
    """Check a SysML v2 model (text, ``Artifact`` or name -> text map) alone, in a fresh isolated folder."""
    if kernel is None:
        with leased_kernel() as leased:
            result, _ = run_files(model_files(model), timeout_s=timeout_s, typing_fails=typing_fails, kernel=leased)
    else:
        result, _ = run_files(model_files(model), timeout_s=timeout_s, typing_fails=typing_fails, kernel=kernel)
    log.info("opensysml.validate", outcome=result.outcome.value, diagnostics=len(result.diagnostics),
             seconds=round(result.duration_s, 3))
    return result


def validate_folder(folder: Path, *, timeout_s: float = FOLDER_TIMEOUT_S, typing_fails: bool = True,
                    kernel: OpenSysMLKernel | None = None) -> CheckResult:
    """Check every ``.sysml``/``.kerml`` file under ``folder`` loaded as a whole (files may import each other).

    Diagnostics name files relative to ``folder``; ``failing_files`` groups them per file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise SysmoError(f"{folder} is not a folder of SysML v2 files")
    files = {str(p.relative_to(folder)): p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in MODEL_SUFFIXES}
    result, _ = run_files(files, timeout_s=timeout_s, typing_fails=typing_fails, kernel=kernel)
    result.details["folder"] = str(folder)
    return result


def failing_files(result: CheckResult, typing_fails: bool = True) -> dict[str, list[Diagnostic]]:
    """File name -> the diagnostics that make it fail (errors, and typing errors unless ``typing_fails=False``)."""
    failing = {Severity.ERROR, Severity.TYPING} if typing_fails else {Severity.ERROR}
    found: dict[str, list[Diagnostic]] = {}
    for d in result.diagnostics:
        if d.severity in failing and d.file:
            found.setdefault(d.file, []).append(d)
    return found


def self_check() -> ToolStatus:
    """Live check for ``sysmo tools doctor``: start the kernel, accept a valid model, reject a broken one."""
    kernel = shared_kernel()
    version = _version(str(kernel.binary))
    start = time.monotonic()
    kernel.ensure()
    started_s = time.monotonic() - start
    good = validate("package Doctor { part def A; part a : A; }", timeout_s=30)
    bad = validate("package Doctor { part a : Missing; }", timeout_s=30)
    ok = good.outcome == Outcome.OK and bad.outcome == Outcome.FAILED and any(d.code == "unresolved" for d in bad.diagnostics)
    if ok:
        message = (f"kernel up in {started_s:.2f} s; validated a model in {good.duration_s * 1000:.0f} ms; "
                   "caught an unresolved type "
                   f"(isolation: {', '.join(kernel.isolation)})")
    else:
        message = f"unexpected answers: valid model -> {good.summary(3)}; broken model -> {bad.summary(3)}"
    return ToolStatus(name="OpenSysML", ok=ok, version=version, path=str(kernel.binary), message=message)
