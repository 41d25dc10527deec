"""Every speed script with small defaults: one JSON and one Markdown table of figure, target, met?, machine load.

Run: python speed/run_all.py [--only NAME ...] [--heavy] [--out DIR] [--docs]

Each script runs as a fresh process with the arguments in ``SCRIPTS`` (small, so the whole set takes minutes);
its figures are read from what it prints (the lines it documents) and compared with their targets. Every row
carries the 1-minute load average before and after its script, and the script's own baseline (measured in the
same run) where it has one: figures swing several times with the load of a shared machine, ratios much less.
Scripts marked heavy (a Ray cluster, the TLA+ cascade of a gold spec, sandbox start-ups per command) run only
with ``--heavy`` or ``--only``. Writes ``<out>/speed-<UTC date>.json`` and ``.md`` (default out: the current
folder); ``--docs`` also appends the rows to ``docs/measurements-history.csv`` and rewrites, from it, the latest
table (each figure's most recent row, so a run of some scripts updates theirs) and the history in
``docs/measurements.md`` (between its ``<!-- latest -->`` / ``<!-- history -->`` markers).
A figure its script did not print (it failed or changed its output) is a row with no value and the script's
exit code, never a guess.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
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
        Figure("worker processes / one process, rate", r"processes vs local: .*?rate ([\d.]+)x", "x"),
        Figure("worker processes store what one process stores", r"processes vs local: identical results: (True|False)",
               "bool"),
        Figure("driver CPU per attempt / LangGraph alone", r"= ([\d.]+)x LangGraph alone", "x"),
        Figure("worker processes' CPU per attempt / LangGraph alone", r"workers' CPU .*?= ([\d.]+)x LangGraph", "x"),
        Figure("store writes per attempt", r"writes ([\d.]+) ms/attempt \(rows", "ms", 0.5, "<"),
        Figure("store writes per attempt, worker processes", r"writes ([\d.]+) ms/attempt \(rows made on the workers",
               "ms", 0.5, "<"),
        Figure("checkpoint bytes per attempt", r"checkpoints\s+(\d+) B/attempt", "B", 62_800 / 3, "<="),
        Figure("driver peak memory, 2,000 attempts", PEAK, "MB"),
    ]),
    Script("scale-500", ["scale.py", "--attempts", "500", "--executors", "local", "--no-floor"], [
        Figure("driver peak memory, 500 attempts", PEAK, "MB"),
    ]),
    Script("cli_startup", ["cli_startup.py", "--repeat", "3"], [
        Figure("sysmo check: start-up to first tool call", r"sysmo check order.puml: ([\d.]+) s", "s", 1.0, "<",
               r"bare interpreter \(baseline\): ([\d.]+) s"),
        Figure("sysmo reproduce: start-up to first data read", r"sysmo reproduce \S+ --from-files: ([\d.]+) s", "s",
               1.0, "<", r"bare interpreter \(baseline\): ([\d.]+) s"),
        Figure("sysmo check: CPU to first tool call / bare interpreter", r"sysmo check order.puml: CPU [\d.]+ s = "
               r"([\d.]+)x", "x", None, "<=", r"bare interpreter \(baseline\): [\d.]+ s, CPU ([\d.]+) s"),
        Figure("sysmo reproduce: CPU to first data read / bare interpreter",
               r"sysmo reproduce \S+ --from-files: CPU [\d.]+ s = ([\d.]+)x", "x", None, "<=",
               r"bare interpreter \(baseline\): [\d.]+ s, CPU ([\d.]+) s"),
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
        Figure("PlantUML warm check, median", r"warm median ([\d.]+) ms", "ms", 80, "<=",
               r"cold: check_batch\(\[one\]\) sandboxed\s+n=\d+\s+median=\s*([\d.]+) ms"),
    ]),
    Script("sysml", ["sysml_speed.py", "--warm-rounds", "1", "--cold", "2", "--exports", "3"], [
        Figure("OpenSysML warm validation, median", r"warm median ([\d.]+) ms", "ms", 100, "<="),
    ]),
    Script("tla", ["tla_speed.py", "--runs", "2"], [
        Figure("SANY per module, median", r"SANY, all modules\s+([\d.]+)", "s", 1.0, "<="),
    ]),
    Script("checkpoint", ["checkpoint_speed.py", "--attempts", "100"], [
        Figure("checkpoint save per attempt (8 nodes x 4 KB)", r"CheckpointStore.save\s+([\d.]+) ms", "ms",
               baseline=r"graph run without checkpoints\s+([\d.]+) ms"),
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


def load1() -> float:
    return os.getloadavg()[0]


def run(script: Script, log_dir: Path) -> tuple[list[Row], str]:
    before = load1()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(HERE / script.argv[0]), *script.argv[1:]], capture_output=True,
                          text=True, check=False, env={**os.environ, "SYSMO_LOG_LEVEL": "ERROR"})
    seconds, after = time.monotonic() - started, load1()
    output = proc.stdout + proc.stderr
    (log_dir / f"{script.name}.log").write_text(output, encoding="utf-8")
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
                        before, after, base.group(0) if base else "", proc.returncode, seconds))
    return rows, output


def flatness(rows: list[Row]) -> Row | None:
    """Peak memory at 2,000 attempts over 500: flat when the ratio stays near 1 (at most 1.2)."""
    big = next((r for r in rows if r.figure.startswith("driver peak memory, 2,000")), None)
    small = next((r for r in rows if r.figure.startswith("driver peak memory, 500")), None)
    if not (big and small and isinstance(big.value, float) and isinstance(small.value, float)):
        return None
    ratio = big.value / small.value
    return Row("scale", "peak memory, 4x the attempts / 1x", round(ratio, 2), "x", "<= 1.2", ratio <= 1.2,
               small.load_before, big.load_after, f"{small.value:.0f} MB at 500 attempts")


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
    args = parser.parse_args()
    if args.render_docs:
        render_docs(DOCS / "measurements-history.csv")
        return
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
        found, _ = run(script, log_dir)
        rows.extend(found)
        for r in found:
            print(f"  {r.figure}: {r.value} {r.unit} (target {r.target or '-'}; met {r.met}); "
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


if __name__ == "__main__":
    main()
