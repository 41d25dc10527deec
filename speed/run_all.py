"""Every speed script with small defaults: one JSON and one Markdown table of figure, target, met?, machine load.

Run: python speed/run_all.py [--only NAME ...] [--heavy] [--out DIR] [--docs] [--repeat N] [--compare BASELINE.json]

Each script runs as a fresh process with the arguments in ``SCRIPTS`` (small, so the whole set takes minutes);
its figures are read from what it prints (the lines it documents) and compared with their targets. Every row
carries the 1-minute load average before and after its script, and the script's own baseline (measured in the
same run) where it has one: figures swing several times with the load of a shared machine, ratios much less.
Scripts marked heavy (a Ray cluster, the TLA+ cascade of a gold spec, sandbox start-ups per command, the
README main job) run only with ``--heavy`` or ``--only``. Writes ``<out>/speed-<UTC date>.json`` and ``.md`` (default out: the current
folder); ``--docs`` also appends the rows to ``docs/measurements-history.csv`` and rewrites, from it, the latest
table (each figure's most recent row, so a run of some scripts updates theirs) and the history in
``docs/measurements.md`` (between its ``<!-- latest -->`` / ``<!-- history -->`` markers).
A figure its script did not print (it failed or changed its output) is a row with no value and the script's
exit code, never a guess.

The regression gate: ``--repeat 2`` runs each script twice; a row then holds the median of its runs and its
noise band, the spread of the runs over their median (``(max - min) / median``), so a baseline made that way
carries the noise measured on it. ``--compare BASELINE.json`` prints each figure beside the baseline's (the JSON
of an earlier run), their ratio, both loads, and marks a figure WORSE when it moved the wrong way by more than its
band (the larger of the baseline's and this run's measured bands, at least ``--min-band``, 10% by default); the
command then exits 1. Figures taken at very different loads are named as such: only the ratio figures (``x``) and
same-run baselines compare across loads.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
HISTORY_FIELDS = ["date", "figure", "value", "unit", "target", "met", "load_before", "load_after", "baseline"]


@dataclass
class Figure:
    """One number a script prints: ``pattern``'s first group, compared with ``target`` (``op``: <=, <, >=)."""

    name: str
    pattern: str
    unit: str
    target: float | None = None
    op: str = "<="
    baseline: str | None = None  # a pattern for the script's same-run baseline (printed beside the figure)
    better: str | None = None  # "lower" or "higher"; by default from ``op`` when there is a target

    @property
    def direction(self) -> str | None:
        """Which way is better: "lower", "higher", or None (no direction: a bool is compared as True > False)."""
        if self.better is not None:
            return self.better
        if self.unit == "bool":
            return "higher"
        if self.target is None:
            return None
        return "higher" if self.op == ">=" else "lower"

    def met(self, value: float) -> bool | None:
        if self.target is None:
            return None
        return {"<=": value <= self.target, "<": value < self.target, ">=": value >= self.target}[self.op]


@dataclass
class Script:
    name: str
    argv: list[str]
    figures: list[Figure]
    heavy: bool = False


PEAK = r"peak memory\s+driver (\d+) MB"
SCRIPTS: list[Script] = [
    Script("scale", ["scale.py", "--attempts", "2000", "--executors", "local,processes"], [
        Figure("harness-only throughput, local", r"local: \d+ attempts .*?= (\d+) attempts/s", "attempts/s", 1000, ">=",
               r"LangGraph alone \(baseline\): ([\d.]+) ms"),
        Figure("harness-only throughput, local in worker processes",
               r"processes \(\d+ worker processes\): \d+ attempts .*?= (\d+) attempts/s", "attempts/s", 1000, ">=",
               r"LangGraph alone \(baseline\): ([\d.]+) ms"),
        Figure("worker processes, after their start-up", r"(\d+) attempts/s from then on", "attempts/s", 1000, ">="),
        Figure("worker processes / one process, rate", r"processes vs local: .*?rate ([\d.]+)x", "x",
               better="higher"),
        Figure("worker processes store what one process stores", r"processes vs local: identical results: (True|False)",
               "bool"),
        Figure("driver CPU per attempt / LangGraph alone", r"= ([\d.]+)x LangGraph alone", "x", better="lower"),
        Figure("worker processes' CPU per attempt / LangGraph alone", r"workers' CPU .*?= ([\d.]+)x LangGraph", "x",
               better="lower"),
        Figure("store writes per attempt", r"writes ([\d.]+) ms/attempt \(rows", "ms", 0.5, "<"),
        Figure("store writes per attempt, worker processes", r"writes ([\d.]+) ms/attempt \(rows made on the workers",
               "ms", 0.5, "<"),
        Figure("checkpoint bytes per attempt", r"checkpoints\s+(\d+) B/attempt", "B", 62_800 / 3, "<="),
        Figure("driver peak memory, 2,000 attempts", PEAK, "MB", better="lower"),
    ]),
    Script("scale-500", ["scale.py", "--attempts", "500", "--executors", "local", "--no-floor"], [
        Figure("driver peak memory, 500 attempts", PEAK, "MB", better="lower"),
    ]),
    Script("cli_startup", ["cli_startup.py", "--repeat", "3"], [
        Figure("sysmo check: start-up to first tool call", r"sysmo check order.puml: ([\d.]+) s", "s", 1.0, "<",
               r"bare interpreter \(baseline\): ([\d.]+) s"),
        Figure("sysmo reproduce: start-up to first data read", r"sysmo reproduce \S+ --from-files: ([\d.]+) s", "s",
               1.0, "<", r"bare interpreter \(baseline\): ([\d.]+) s"),
        Figure("sysmo check: CPU to first tool call / bare interpreter", r"sysmo check order.puml: CPU [\d.]+ s = "
               r"([\d.]+)x", "x", None, "<=", r"bare interpreter \(baseline\): [\d.]+ s, CPU ([\d.]+) s",
               better="lower"),
        Figure("sysmo reproduce: CPU to first data read / bare interpreter",
               r"sysmo reproduce \S+ --from-files: CPU [\d.]+ s = ([\d.]+)x", "x", None, "<=",
               r"bare interpreter \(baseline\): [\d.]+ s, CPU ([\d.]+) s", better="lower"),
    ]),
    Script("designbench_scoring", ["designbench_scoring_speed.py", "--sample", "200",
                                   "--baseline", "10"], [
        Figure("DesignBench 10,872 predictions, projected", r"projected for all 10,872 predictions: ([\d.]+) min",
               "min", 3.0, "<=", r"warm OpenSysML load of a reference ([\d.]+) ms"),
    ]),
    Script("replay", ["replay_speed.py"], [
        Figure("replay / files, sysmbench-table2 (one model)", r"replay / files = ([\d.]+)x", "x", 3.0, "<=",
               r"from the files \(baseline\): ([\d.]+) s"),
        Figure("same table on both paths", r"same table on both paths: (True|False)", "bool"),
    ]),
    Script("plantuml", ["plantuml_speed.py", "--warm", "30", "--cold", "3"], [
        Figure("PlantUML warm check, median", r"warm median ([\d.]+) ms", "ms", 5, "<=",
               r"cold: check_batch\(\[one\]\) sandboxed\s+n=\d+\s+median=\s*([\d.]+) ms"),
    ]),
    Script("sysml", ["sysml_speed.py", "--warm-rounds", "1", "--cold", "2", "--exports", "3"], [
        Figure("OpenSysML warm validation, median", r"warm median ([\d.]+) ms", "ms", 10, "<="),
    ]),
    Script("tla", ["tla_speed.py", "--runs", "2"], [
        Figure("SANY per module, median", r"SANY, all modules\s+([\d.]+)", "s", 1.0, "<="),
    ]),
    Script("checkpoint", ["checkpoint_speed.py", "--attempts", "100"], [
        Figure("checkpoint save per attempt (8 nodes x 4 KB)", r"CheckpointStore.save\s+([\d.]+) ms", "ms",
               baseline=r"graph run without checkpoints\s+([\d.]+) ms", better="lower"),
    ]),
    Script("harness_overhead", ["harness_overhead.py", "--kinds", "uml_class", "--checkpoints", "steps"], [
        Figure("harness share of attempt time (uml_class)", r"harness ([\d.]+)% of the attempts' time", "%", 5, "<"),
    ], heavy=True),
    Script("executor_parity", ["executor_parity.py", "--kinds", "uml_class", "--samples", "1"], [
        Figure("Ray / local wall time", r"ray / local = ([\d.]+)", "x", 1.5, "<="),
    ], heavy=True),
    Script("view", ["view_speed.py", "--repeat", "3"], [
        Figure("sysmo view report page, 504 attempts", r"\n  report\s+([\d.]+) ms", "ms", 1000, "<",
               baseline=r"baseline \(attempt list query\)\s+([\d.]+) ms"),
        Figure("sysmo view report page, first request", r"\n  report \(first request\)\s+([\d.]+) ms", "ms", 1000, "<"),
        Figure("sysmo view attempt page, 504 attempts", r"\n  attempt\s+([\d.]+) ms", "ms", 1000, "<"),
    ], heavy=True),
    Script("tla_cascade", ["tla_cascade_speed.py", "--system", "locksvc", "--kind", "gold"], [
        Figure("TLA+ cascade, max per spec", r"max / mean per spec\s+([\d.]+)", "s", 60, "<="),
    ], heavy=True),
    Script("sandbox_overhead", ["sandbox_overhead.py", "-n", "5"], [], heavy=True),
    Script("main_job", ["main_job_speed.py"], [
        Figure("README main job, seconds of attempts", r"main job, median: ([\d.]+) s of attempts", "s", 60, "<=",
               r"TLA\+ run cache off \(baseline\), median: ([\d.]+) s"),
        Figure("README main job, same scores with the TLA+ run cache off",
               r"same scores with the run cache on and off: (True|False)", "bool"),
    ], heavy=True),
]


@dataclass
class Row:
    script: str
    figure: str
    value: float | str | None
    unit: str
    target: str
    met: bool | None
    load_before: float
    load_after: float
    baseline: str = ""
    exit_code: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    direction: str | None = None  # which way is better: "lower", "higher", None
    runs: list[float | str | None] = field(default_factory=list)  # each run's value, with --repeat
    noise: float | None = None  # (max - min) / median of the runs, with --repeat


def load1() -> float:
    return os.getloadavg()[0]


def run_once(script: Script, log_dir: Path, tag: str = "") -> tuple[list[Row], str]:
    before = load1()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(HERE / script.argv[0]), *script.argv[1:]], capture_output=True,
                          text=True, check=False, env={**os.environ, "SYSMO_LOG_LEVEL": "ERROR"})
    seconds, after = time.monotonic() - started, load1()
    output = proc.stdout + proc.stderr
    (log_dir / f"{script.name}{tag}.log").write_text(output, encoding="utf-8")
    rows = []
    for fig in script.figures:
        found = re.search(fig.pattern, proc.stdout)
        value: float | str | None = None
        if found:
            value = found.group(1) if fig.unit == "bool" else float(found.group(1))
        base = re.search(fig.baseline, proc.stdout) if fig.baseline else None
        rows.append(Row(script.name, fig.name, value, fig.unit,
                        f"{fig.op} {fig.target:g}" if fig.target is not None else "",
                        fig.met(value) if isinstance(value, float) else (value == "True" if fig.unit == "bool"
                                                                          and value else None),
                        before, after, base.group(0) if base else "", proc.returncode, seconds,
                        direction=fig.direction))
    return rows, output


def run(script: Script, log_dir: Path, repeat: int = 1) -> tuple[list[Row], str]:
    """The script ``repeat`` times: each figure's median, and its noise band (spread / median) when repeated."""
    runs = [run_once(script, log_dir, f".{i + 1}" if repeat > 1 else "") for i in range(repeat)]
    if repeat == 1:
        return runs[0]
    merged = []
    for fig, rows in zip(script.figures, zip(*(r for r, _ in runs)), strict=True):
        first = rows[0]
        numbers = [r.value for r in rows if isinstance(r.value, float)]
        values = [r.value for r in rows]
        row = Row(first.script, first.figure, None, first.unit, first.target, None,
                  min(r.load_before for r in rows), max(r.load_after for r in rows), first.baseline,
                  max((r.exit_code for r in rows), key=abs), sum(r.seconds for r in rows), direction=first.direction,
                  runs=values)
        if len(numbers) == len(rows):
            median = statistics.median(numbers)
            row.value, row.met = median, fig.met(median)
            row.noise = (max(numbers) - min(numbers)) / median if median else 0.0
        elif fig.unit == "bool" and all(v in ("True", "False") for v in values):
            row.value = "True" if all(v == "True" for v in values) else "False"
            row.met = row.value == "True"
        merged.append(row)
    return merged, "\n".join(out for _, out in runs)


def flatness(rows: list[Row]) -> Row | None:
    """Peak memory at 2,000 attempts over 500: flat when the ratio stays near 1 (at most 1.2)."""
    big = next((r for r in rows if r.figure.startswith("driver peak memory, 2,000")), None)
    small = next((r for r in rows if r.figure.startswith("driver peak memory, 500")), None)
    if not (big and small and isinstance(big.value, float) and isinstance(small.value, float)):
        return None
    ratio = big.value / small.value
    return Row("scale", "peak memory, 4x the attempts / 1x", round(ratio, 2), "x", "<= 1.2", ratio <= 1.2,
               small.load_before, big.load_after, f"{small.value:.0f} MB at 500 attempts", direction="lower")


def markdown(rows: list[Row], date: str) -> str:
    lines = [f"Measured {date} on {os.cpu_count()} cores (load: 1-minute average before / after each script).", "",
             "| figure | value | target | met? | load | baseline (same run) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        value = "not printed (exit %d)" % r.exit_code if r.value is None else (
            r.value if isinstance(r.value, str) else f"{r.value:g} {r.unit}")
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        lines.append(f"| {r.figure} | {value} | {r.target} | {met} | {r.load_before:.1f} / {r.load_after:.1f} "
                     f"| {r.baseline} |")
    return "\n".join(lines) + "\n"


def latest_table(path: Path) -> str:
    """Each figure's most recent measurement in the history (a run of some scripts updates only theirs)."""
    with path.open(encoding="utf-8") as f:
        latest = {r["figure"]: r for r in csv.DictReader(f)}  # in file order: the last row of a figure wins
    lines = ["| measured | figure | value | target | met? | load before / after | baseline (same run) |",
             "|---|---|---|---|---|---|---|"]
    for r in latest.values():
        value = f"{r['value']} {r['unit']}" if r["value"] else "not printed"
        met = {"yes": "yes", "no": "**no**"}.get(r["met"], "")
        lines.append(f"| {r['date']} | {r['figure']} | {value} | {r['target']} | {met} | {r['load_before']} / "
                     f"{r['load_after']} | {r['baseline']} |")
    return "\n".join(lines) + "\n"


def history_table(path: Path) -> str:
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lines = ["| date | figure | value | target | met? | load | baseline (same run) |", "|---|---|---|---|---|---|---|"]
    for r in reversed(rows):
        value = f"{r['value']} {r['unit']}" if r["value"] else "not printed"
        lines.append(f"| {r['date']} | {r['figure']} | {value} | {r['target']} | {r['met']} "
                     f"| {r['load_before']} / {r['load_after']} | {r['baseline']} |")
    return "\n".join(lines) + "\n"


def figure_directions() -> dict[str, str | None]:
    directions = {f.name: f.direction for script in SCRIPTS for f in script.figures}
    directions["peak memory, 4x the attempts / 1x"] = "lower"
    return directions


def best_table(path: Path) -> str:
    """Each figure's best value ever measured (by its direction), with its date and load; bools and figures
    with no direction are left out."""
    directions = figure_directions()
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    best: dict[str, dict[str, str]] = {}
    for r in rows:
        direction = directions.get(r["figure"]) or {">": "higher", "<": "lower"}.get(r["target"][:1])
        try:
            value = float(r["value"])
        except ValueError:
            continue
        if direction is None or r["unit"] == "bool":
            continue
        held = best.get(r["figure"])
        if held is None or (value < float(held["value"]) if direction == "lower" else value > float(held["value"])):
            best[r["figure"]] = r
    lines = ["| figure | best value | better | measured | load before / after | baseline (same run) |",
             "|---|---|---|---|---|---|"]
    for name, r in best.items():
        better = directions.get(name) or {">": "higher", "<": "lower"}.get(r["target"][:1])
        lines.append(f"| {name} | {r['value']} {r['unit']} | {better} | {r['date']} | {r['load_before']} / "
                     f"{r['load_after']} | {r['baseline']} |")
    return "\n".join(lines) + "\n"


@dataclass
class Comparison:
    """One figure of this run beside the same figure of a baseline run."""

    figure: str
    unit: str
    value: float | str | None
    base: float | str | None
    change: float | None  # (value - base) / base
    band: float  # the noise band the change is judged against
    verdict: str  # "worse", "better", "within noise", "not comparable", "missing", "no direction"
    load: float
    base_load: float
    note: str = ""


ABSOLUTE_UNITS = {"s", "ms", "min", "attempts/s"}  # figures that swing with the load; ratios and sizes do not


def similar_load(a: float, b: float) -> bool:
    """Loads compare when they differ by at most one core's worth (or 50% of the smaller, when that is more)."""
    return abs(a - b) <= max(1.0, 0.5 * min(a, b))


def compare(rows: list[Row], baseline: dict, min_band: float = 0.10) -> list[Comparison]:
    """Each row beside the baseline JSON's row of the same figure. A figure is "worse" when it moved the wrong
    way by more than its band: the larger of the two runs' measured noise, at least ``min_band``. Figures in
    seconds or per second measured at dissimilar loads are "not comparable" (they never fail the gate)."""
    base_rows = {r["figure"]: r for r in baseline.get("rows", [])}
    out = []
    for r in rows:
        load = (r.load_before + r.load_after) / 2
        b = base_rows.get(r.figure)
        if b is None:
            out.append(Comparison(r.figure, r.unit, r.value, None, None, min_band, "missing", load, float("nan"),
                                  "not in the baseline"))
            continue
        base_load = (b["load_before"] + b["load_after"]) / 2
        band = max([min_band] + [n for n in (r.noise, b.get("noise")) if n is not None])
        value, base = r.value, b["value"]
        c = Comparison(r.figure, r.unit, value, base, None, band, "within noise", load, base_load)
        if value is None or base is None:
            c.verdict, c.note = "missing", "not printed " + ("now" if value is None else "in the baseline")
        elif r.unit == "bool":
            c.verdict = "worse" if (base == "True" and value != "True") else (
                "better" if value == "True" and base != "True" else "within noise")
        else:
            value, base = float(value), float(base)
            c.change = (value - base) / base if base else None
            direction = r.direction
            if direction is None:
                c.verdict = "no direction"
            elif r.unit in ABSOLUTE_UNITS and not similar_load(load, base_load):
                c.verdict, c.note = "not comparable", f"load {load:.1f} vs {base_load:.1f}"
            elif c.change is not None:
                signed = c.change if direction == "lower" else -c.change  # > 0: moved the wrong way
                c.verdict = "worse" if signed > band else "better" if signed < -band else "within noise"
        out.append(c)
    return out


def comparison_table(found: list[Comparison], baseline: dict) -> str:
    lines = [f"Against the baseline of {baseline.get('date', '?')} (load: mean of before / after; band: the larger "
             "of the two runs' measured noise, at least the floor).", "",
             "| figure | now | baseline | change | band | verdict | load now / baseline | note |",
             "|---|---|---|---|---|---|---|---|"]

    def shown(v: float | str | None, unit: str) -> str:
        return "-" if v is None else (v if isinstance(v, str) else f"{v:g} {unit}")

    for c in found:
        change = "" if c.change is None else f"{c.change:+.1%}"
        verdict = "**WORSE**" if c.verdict == "worse" else c.verdict
        lines.append(f"| {c.figure} | {shown(c.value, c.unit)} | {shown(c.base, c.unit)} | {change} | "
                     f"{c.band:.0%} | {verdict} | {c.load:.1f} / {c.base_load:.1f} | {c.note} |")
    return "\n".join(lines) + "\n"


def replace_between(text: str, marker: str, body: str) -> str:
    start, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    if start not in text or end not in text:
        raise SystemExit(f"docs/measurements.md lacks the {start} ... {end} markers")
    head, rest = text.split(start, 1)
    return head + start + "\n" + body + end + rest.split(end, 1)[1]


def update_docs(rows: list[Row], date: str) -> None:
    history = DOCS / "measurements-history.csv"
    new = not history.exists()
    with history.open("a", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, HISTORY_FIELDS)
        if new:
            writer.writeheader()
        for r in rows:
            writer.writerow({"date": date, "figure": r.figure, "value": "" if r.value is None else r.value,
                             "unit": r.unit, "target": r.target, "met": {True: "yes", False: "no", None: ""}[r.met],
                             "load_before": f"{r.load_before:.1f}", "load_after": f"{r.load_after:.1f}",
                             "baseline": r.baseline})
    render_docs(history)


def render_docs(history: Path) -> None:
    page = DOCS / "measurements.md"
    text = replace_between(page.read_text(encoding="utf-8"), "latest", latest_table(history))
    text = replace_between(text, "best", best_table(history))
    page.write_text(replace_between(text, "history", history_table(history)), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], help="only this script (repeatable): "
                        + ", ".join(s.name for s in SCRIPTS))
    parser.add_argument("--heavy", action="store_true", help="also the heavy scripts")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the JSON, the table and the logs")
    parser.add_argument("--docs", action="store_true", help="update docs/measurements.md and its history CSV")
    parser.add_argument("--render-docs", action="store_true",
                        help="only rewrite docs/measurements.md's tables from its history CSV (no script runs)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each script N times: each figure's median and its noise band (2 for a baseline)")
    parser.add_argument("--compare", type=Path, metavar="BASELINE.json",
                        help="print each figure beside this earlier run's; exit 1 when one is worse by more than "
                             "its noise band")
    parser.add_argument("--current", type=Path, metavar="RUN.json",
                        help="with --compare: compare this stored run instead of running the scripts")
    parser.add_argument("--min-band", type=float, default=0.10,
                        help="the smallest noise band, as a fraction (default 0.10: 10%%)")
    args = parser.parse_args()
    if args.render_docs:
        render_docs(DOCS / "measurements-history.csv")
        return
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    baseline = None
    if args.compare:
        try:
            baseline = json.loads(args.compare.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            parser.error(f"--compare {args.compare}: cannot read it as a run's JSON ({exc})")
    if args.current:
        if baseline is None:
            parser.error("--current needs --compare BASELINE.json")
        try:
            stored = json.loads(args.current.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            parser.error(f"--current {args.current}: cannot read it as a run's JSON ({exc})")
        raise SystemExit(report_comparison(rows_from_json(stored), baseline, args.min_band))
    unknown = set(args.only) - {s.name for s in SCRIPTS}
    if unknown:
        parser.error(f"unknown script(s): {', '.join(sorted(unknown))}")
    if args.only:
        chosen = [s for s in SCRIPTS if s.name in args.only]
    else:
        chosen = [s for s in SCRIPTS if args.heavy or not s.heavy]
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M")
    args.out.mkdir(parents=True, exist_ok=True)
    log_dir = args.out / f"speed-{stamp}-logs"
    log_dir.mkdir(exist_ok=True)
    rows: list[Row] = []
    for script in chosen:
        print(f"{script.name}: {' '.join(script.argv)} (load {load1():.1f})", flush=True)
        found, _ = run(script, log_dir, args.repeat)
        rows.extend(found)
        for r in found:
            noise = "" if r.noise is None else f", noise {r.noise:.0%} over {len(r.runs)} runs"
            print(f"  {r.figure}: {r.value} {r.unit} (target {r.target or '-'}; met {r.met}{noise}); "
                  f"{r.seconds:.0f} s, exit {r.exit_code}", flush=True)
    flat = flatness(rows)
    if flat:
        rows.append(flat)
    table = markdown(rows, date)
    (args.out / f"speed-{stamp}.json").write_text(json.dumps({"date": date, "cores": os.cpu_count(),
                                                              "rows": [asdict(r) for r in rows]}, indent=2))
    (args.out / f"speed-{stamp}.md").write_text(table, encoding="utf-8")
    print("\n" + table)
    if args.docs:
        update_docs(rows, date)
        print(f"updated {DOCS / 'measurements.md'} and {DOCS / 'measurements-history.csv'}")
    if baseline is not None:
        raise SystemExit(report_comparison(rows, baseline, args.min_band))


def rows_from_json(stored: dict) -> list[Row]:
    """A run's rows as its JSON holds them (a JSON written before the gate lacks direction, runs and noise)."""
    directions = figure_directions()
    known = set(Row.__dataclass_fields__)
    rows = [Row(**{k: v for k, v in d.items() if k in known}) for d in stored.get("rows", [])]
    for r in rows:
        r.direction = r.direction or directions.get(r.figure)
    return rows


def report_comparison(rows: list[Row], baseline: dict, min_band: float = 0.10) -> int:
    """Print the comparison; 1 when a figure is worse by more than its band, else 0."""
    found = compare(rows, baseline, min_band)
    print(comparison_table(found, baseline))
    worse = [c.figure for c in found if c.verdict == "worse"]
    if worse:
        print(f"worse than the baseline beyond the noise band: {'; '.join(worse)}")
    return 1 if worse else 0


if __name__ == "__main__":
    main()
