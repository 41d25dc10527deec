"""Replay-through-the-pipeline of a published table against scoring the same files directly.

Run: python speed/replay_speed.py [--model Baichuan2-13B-Chat ...] [--data-dir DIR]

Runs ``sysmo reproduce sysmbench-table2 --from-files`` (the baseline: the published predictions scored
directly) and then ``sysmo reproduce sysmbench-table2`` (every prediction replayed as an attempt of
``sysmo run``, stored, scored, and the table computed from the store) for the same DesignBench model folders,
each as a fresh ``sysmo`` process into a fresh directory, and prints both wall times, their ratio (target:
replay within 3x of the files) and whether both printed the same table (the scores must not depend on the
path). The machine is shared: the ratio, measured in the same run, is the figure to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 3.0


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def reproduce(models: list[str], data_dir: Path, extra: list[str]) -> tuple[float, object]:
    """Wall seconds of one ``sysmo reproduce sysmbench-table2`` and the table it printed (JSON)."""
    argv = [sys.executable, "-m", "sysmo.cli", "reproduce", "sysmbench-table2", "--data-dir", str(data_dir),
            "--format", "json", *[a for m in models for a in ("--model", m)], *extra]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return seconds, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", default=[], help="DesignBench model folder (repeatable; "
                        "default Baichuan2-13B-Chat)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="benchmark data (default $SYSMO_DATA_DIR, else $SYSMO_TEST_DATA_DIR)")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(os.environ.get("SYSMO_DATA_DIR") or os.environ["SYSMO_TEST_DATA_DIR"])
    models = args.model or ["Baichuan2-13B-Chat"]
    print(f"{os.cpu_count()} cores; models {', '.join(models)}; {load_average()}")
    files_s, files_table = reproduce(models, data_dir, ["--from-files"])
    print(f"from the files (baseline): {files_s:.1f} s; {load_average()}")
    with tempfile.TemporaryDirectory(prefix="sysmo-replay-speed-") as tmp:
        replay_s, replay_table = reproduce(models, data_dir, ["--output-dir", tmp])
    ratio = replay_s / files_s
    print(f"through the replay pipeline: {replay_s:.1f} s; {load_average()}")
    met = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(f"replay / files = {ratio:.1f}x (target <= {TARGET_RATIO:.0f}x: {met})")
    print(f"same table on both paths: {files_table == replay_table}")


if __name__ == "__main__":
    main()
