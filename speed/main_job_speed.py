"""The README's main job end to end: `sysmo run --samples 2` (the offline control experiment, 392 attempts, every
attempt scored) in a fresh runs folder, timed; the baseline is the same job in the same invocation with the TLA+
run cache off (``SYSMO_TLA_RUN_CACHE=off``), alternated with it, and both runs' scores are compared.

Run: ``python speed/main_job_speed.py [--samples 2] [--repeat 1] [--no-baseline] [--keep DIR]``.

Prints the machine's load before and after each run, the seconds of attempts the run's summary reports (the
target: <= 60 s on 2 idle cores), the wall time of the whole command (the report included), the ratio to the
baseline, and whether every attempt got the same status and scorecard (stage values, outcomes, metrics) in both.
Each run gets a fresh TLA+ run cache (an empty folder), so a run never reuses an earlier run's tool runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 60.0


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_main_job(folder: Path, samples: int, cache: bool) -> dict:
    """One `sysmo run --samples N` in ``folder`` (its own runs folder and run cache); its figures."""
    folder.mkdir(parents=True)
    env = {**os.environ, "SYSMO_TLA_RUN_CACHE": str(folder / "tla-run-cache") if cache else "off"}
    before = load()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sysmo.cli", "run", "--samples", str(samples), "--no-progress",
                           "-o", str(folder / "runs")], cwd=folder, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise SystemExit(f"the main job failed (exit code {done.returncode}):\n{output[-3000:]}")
    seconds = re.search(r"seconds: ([\d.]+)", output)
    passed = re.search(r"passed: (\d+)", output)
    planned = re.search(r"planned: (\d+)", output)
    store = next((folder / "runs").glob("*/results.sqlite"))
    return {"seconds": float(seconds.group(1)) if seconds else float("nan"), "wall": wall,
            "passed": int(passed.group(1)) if passed else 0, "planned": int(planned.group(1)) if planned else 0,
            "scores": scores_digest(store), "load_before": before, "load_after": load()}


def scores_digest(store: Path) -> str:
    """A digest of every attempt's outcome and scorecard (stage, value, passed, outcome, metrics): equal digests,
    equal scores."""
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT a.task_id, a.agent, a.model, a.sample_index, a.status, a.n_rounds, a.passed_round,"
                            " s.scorecard_json FROM attempts a LEFT JOIN scores s ON s.attempt_id = a.id"
                            " ORDER BY 1, 2, 3, 4").fetchall()
    digest = hashlib.sha256()
    for *head, card in rows:
        stages = [(s.get("stage"), s.get("value"), s.get("passed"), s.get("outcome"), s.get("metrics"))
                  for s in (json.loads(card)["stages"] if card else [])]
        digest.update(json.dumps([head, stages], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def line(name: str, figures: dict) -> str:
    return (f"{name}: {figures['passed']} of {figures['planned']} passed, {figures['seconds']:.1f} s of attempts, "
            f"{figures['wall']:.1f} s wall (report included); load {figures['load_before']} -> "
            f"{figures['load_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=2, help="samples per task (the README's job: 2)")
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs (medians printed)")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false",
                        help="skip the same-run baseline (the job with the TLA+ run cache off)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs folders here (default: removed)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; load average {load()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="sysmo-main-job-"))
    runs: dict[str, list[dict]] = {"on": [], "off": []}
    for index in range(args.repeat):
        order = ["on", "off"] if index % 2 == 0 else ["off", "on"]  # alternated: neither side always goes first
        for side in order if args.baseline else ["on"]:
            figures = run_main_job(work / f"{side}-{index}", args.samples, cache=side == "on")
            runs[side].append(figures)
            print(line("main job" if side == "on" else "TLA+ run cache off (baseline)", figures), flush=True)
    on = statistics.median(r["seconds"] for r in runs["on"])
    verdict = "met" if on <= TARGET_S else "NOT met"
    print(f"main job, median: {on:.1f} s of attempts (target <= {TARGET_S:.0f} s: {verdict})")
    if runs["off"]:
        off = statistics.median(r["seconds"] for r in runs["off"])
        print(f"TLA+ run cache off (baseline), median: {off:.1f} s of attempts; main job / baseline = {on / off:.2f}x")
        same = len({r["scores"] for r in runs["on"] + runs["off"]}) == 1
        print(f"same scores with the run cache on and off: {same}")
    if args.keep is None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
