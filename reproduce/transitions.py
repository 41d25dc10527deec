"""``sysmo reproduce transitions``: SysMoBench's tv-eval examples (spin, etcd ai_spec_1/ai_spec_2) through sysmo's
transition validation, per action, beside the pass rates the harness's reports publish.

The examples live under ``<data>/sysmobench/spec_additions/tla_eval/skills/{tv-eval,wv-eval}/examples/<system>/
<spec>/``: a model-written spec, ``windows_<Action>.ndjson`` files and the examiner's ``TV_<Action>.tla`` (or
``WV_``) modules with their cfg. The two skills hold parts of the same examples (the README of spec_additions
says which), so an example is the union of its two folders. Each action's windows are checked with the mapping
read from the harness's own module (its Init, Next and PostReached), in one TLC run per action. The published
numbers are the tables of ``<Action>_report.md`` (e.g. HandleVoteRequest: 21/21 and 14/21).
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.errors import DataMissingError, TaskError
from sysmo.reproduce.registry import Compared, Evidence, ReproduceOptions, Reproduction, ReproTable, \
    register_reproduction
from sysmo.log import get_logger
from sysmo.tools.tla import transition_validation as tv
from sysmo.tools.tla.jvm import default_parallel

log = get_logger(__name__)

SKILLS = Path("sysmobench") / "spec_additions" / "tla_eval" / "skills"
SKILL_FOLDERS = ("tv-eval", "wv-eval")  # the tv-eval copy wins where both hold a file
REPORT_ROW = re.compile(r"^\|\s*(?P<spec>[\w-]+)\s*\|\s*(?P<windows>\d+)\s*\|\s*(?P<passed>\d+)/(?P<total>\d+)", re.M)
TITLE = "SysMoBench tv-eval examples: per-action transition validation"


class HarnessAction(BaseModel):
    action: str  # the action as the windows file names it
    module: Path  # the harness's TV_/WV_ module for it
    windows: Path
    cfg: Path | None = None


class HarnessExample(BaseModel):
    """One spec under evaluation with the actions the harness recorded windows for."""

    system: str
    name: str  # ai_spec_1, ...
    spec: Path | None = None
    actions: list[HarnessAction] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class ActionRow(BaseModel):
    system: str
    spec: str
    result: tv.ActionResult
    published: tuple[int, int] | None = None  # passed, windows in the harness's report
    report: str | None = None
    windows_file: str = ""
    seconds: float = 0.0

    @property
    def agrees(self) -> bool | None:
        if self.published is None:
            return None
        return (self.result.passed, self.result.windows) == self.published


def skills_dir(data_dir: Path) -> Path:
    folder = data_dir / SKILLS
    if not folder.is_dir():
        raise DataMissingError(f"no tv-eval examples under {folder}: stage SysMoBench's tla_eval/skills "
                               "(see sysmobench/spec_additions/README.txt)")
    return folder


def _first(folders: list[Path], *names: str) -> Path | None:
    for name in names:
        for folder in folders:
            if (folder / name).is_file():
                return folder / name
    return None


def harness_examples(data_dir: Path) -> list[HarnessExample]:
    """Every example folder (system/spec) of the two skills that holds windows, its spec, modules and cfgs."""
    skills = skills_dir(data_dir)
    keys = sorted({(p.parent.parent.name, p.parent.name)
                   for skill in SKILL_FOLDERS for p in (skills / skill / "examples").glob("*/*/windows_*.ndjson")})
    examples = []
    for system, name in keys:
        folders = [skills / skill / "examples" / system / name for skill in SKILL_FOLDERS]
        folders = [f for f in folders if f.is_dir()]
        example = HarnessExample(system=system, name=name)
        windows = {p.name: p for f in reversed(folders) for p in f.glob("windows_*.ndjson")}
        for file in sorted(windows):
            action = tv.WINDOWS_FILE.match(file).group("action")  # type: ignore[union-attr]
            module = _first(folders, f"TV_{action}.tla", f"WV_{action}.tla")
            if module is None:
                example.notes.append(f"{action}: windows but no TV_/WV_ module")
                continue
            cfg = _first(folders, f"TV_{action}.cfg", f"WV_{action}.cfg") or next(
                (p for f in folders for p in sorted(f.glob("TV_*.cfg")) + sorted(f.glob("WV_*.cfg"))), None)
            example.actions.append(HarnessAction(action=action, module=module, windows=windows[file], cfg=cfg))
            instance = re.search(r"INSTANCE\s+(\w+)", module.read_text(encoding="utf-8"))
            if instance and example.spec is None:
                example.spec = _first(folders, f"{instance.group(1)}.tla")
        if example.spec is None:
            example.notes.append("no spec file beside the windows")
        examples.append(example)
    return examples


def published_rates(data_dir: Path) -> dict[tuple[str, str, str], tuple[int, tuple[int, int]]]:
    """(system, spec, action) -> (windows, (passed, total)) from the tables of the skills' ``<Action>_report.md``."""
    found: dict[tuple[str, str, str], tuple[int, tuple[int, int]]] = {}
    skills = skills_dir(data_dir)
    for skill in SKILL_FOLDERS:
        for report in sorted((skills / skill / "examples").glob("*/*_report.md")):
            action = report.name.removesuffix("_report.md")
            for row in REPORT_ROW.finditer(report.read_text(encoding="utf-8")):
                found.setdefault((report.parent.name, row.group("spec"), action),
                                 (int(row.group("windows")), (int(row.group("passed")), int(row.group("total")))))
    return found


def run_example(example: HarnessExample, *, max_states: int = tv.DEFAULT_MAX_STATES,
                timeout_s: float = tv.DEFAULT_TIMEOUT_S) -> list[tuple[HarnessAction, tv.ActionResult, float]]:
    """Each action's windows against the example's spec, with the mapping its harness module describes."""
    if example.spec is None:
        raise TaskError(f"{example.system}/{example.name}: no spec to check ({'; '.join(example.notes)})")
    spec = Artifact(language=Language.TLA, files={example.spec.name: example.spec.read_text(encoding="utf-8")})

    def check(action: HarnessAction) -> tuple[HarnessAction, tv.ActionResult, float]:
        cfg = action.cfg.read_text(encoding="utf-8") if action.cfg else None
        mapping, _, _ = tv.from_harness_module(action.module.read_text(encoding="utf-8"), cfg)
        started = time.monotonic()
        result = tv.validate_action(spec, mapping, tv.read_windows(action.windows), max_states=max_states,
                                    timeout_s=timeout_s)
        return action, result, time.monotonic() - started

    with ThreadPoolExecutor(max_workers=default_parallel()) as pool:  # TLC runs on the JVM slots, in order
        return list(pool.map(check, example.actions))


def reproduce(data_dir: Path, systems: tuple[str, ...] = (), progress: Any = None) -> list[ActionRow]:
    """Every example's actions, with the published rate beside those the harness reports."""
    published = published_rates(data_dir)
    rows: list[ActionRow] = []
    for example in harness_examples(data_dir):
        if systems and example.system not in systems:
            continue
        for action, result, seconds in run_example(example):
            known = published.get((example.system, example.name, action.action))
            row = ActionRow(system=example.system, spec=example.name, result=result, seconds=seconds,
                            windows_file=str(action.windows),
                            published=known[1] if known else None,
                            report=f"{action.action}_report.md" if known else None)
            rows.append(row)
            if progress:
                progress(row)
    return rows


def headline(results: list[tv.ActionResult]) -> dict[str, float | None]:
    """Per spec: the mean over actions of the pass rate, the harness's per-action binary mean (1 iff every window
    passed, before its audit), and transitions passed / transitions."""
    scored = [r for r in results if r.windows]
    if not scored:
        return {"mean_pass_rate": None, "all_pass_share": None, "transitions": None}
    return {
        "mean_pass_rate": sum(r.pass_rate for r in scored) / len(scored),
        "all_pass_share": sum(r.all_passed for r in scored) / len(scored),
        "transitions": sum(r.passed for r in scored) / sum(r.windows for r in scored),
    }


@register_reproduction("transitions", title=TITLE)
def transitions(options: ReproduceOptions) -> Reproduction:
    from sysmo.benchmarks.datadir import require_data_dir

    data = require_data_dir(options.data_dir)
    rows = reproduce(data)
    table = ReproTable(title="per action: windows passed (published where a report gives it)",
                       columns=["system", "spec", "action", "windows", "passed", "failed", "inconclusive",
                                "pass rate %", "first failing window"])
    for row in rows:
        r = row.result
        rate = 100 * r.pass_rate
        first = r.first_failure
        line: dict[str, Any] = {
            "system": row.system, "spec": row.spec, "action": r.action, "windows": str(r.windows),
            "passed": str(r.passed), "failed": str(r.failed), "inconclusive": str(r.inconclusive),
            "pass rate %": Compared(ours=rate, published=f"{100 * row.published[0] / row.published[1]:.1f}",
                                    agrees=row.agrees) if row.published else f"{rate:.1f}",
            "first failing window": "" if first is None else f"#{first['id']}: {first['explanation'][:160]}",
        }
        table.add(line, Evidence(file=row.windows_file, samples=[]))
    specs = ReproTable(title="per spec: headline scores over its actions",
                       columns=["system", "spec", "actions", "mean pass rate", "all-pass share (harness)",
                                "transitions passed / transitions"])
    for key in dict.fromkeys((row.system, row.spec) for row in rows):
        scores = headline([row.result for row in rows if (row.system, row.spec) == key])
        specs.add({"system": key[0], "spec": key[1],
                   "actions": str(sum((row.system, row.spec) == key for row in rows)),
                   **{column: "-" if value is None else f"{value:.3f}" for column, value in
                      zip(specs.columns[3:], scores.values())}})
    table.notes = ["published: the tables of the skills' <Action>_report.md (only HandleVoteRequest has one)"]
    return Reproduction(name="transitions", title=TITLE, source="github.com/specula-org/SysMoBench "
                        "tla_eval/skills/{tv-eval,wv-eval}/examples", tables=[table, specs])
