"""Wall time of the same small control run with the local and the Ray executor (Ray start-up included).

Run: python speed/executor_parity.py [--kinds uml_class,sysml] [--samples 2] [--concurrency 2]

Each executor runs the offline control (``reference`` + ``mockllm/control``, all agents) on the starter tasks
of the given kinds, scored, into a fresh directory, as ``sysmo run`` in a fresh process (so both pay the
imports and the tool servers' start; Ray also its local cluster's start). The executors alternate for
``--repeat`` rounds. Prints the median wall times, the ratio (target: Ray within 1.5x of local) and checks that
both stored the same attempts with the same statuses.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sysmo.store import Store

TARGET_RATIO = 1.5


def outcome(directory: Path, experiment_id: str) -> list[tuple]:
    store = Store(directory / experiment_id / "results.sqlite")
    try:
        rows = store.query("SELECT task_id, agent, model, sample_index, status, n_rounds FROM attempts"
                           " ORDER BY task_id, agent, model, sample_index")
        return [tuple(r[k] for k in ("task_id", "agent", "model", "sample_index", "status", "n_rounds")) for r in rows]
    finally:
        store.close()


def run(executor: str, kinds: list[str], samples: int, concurrency: int, tmp: Path, round_: int,
        ray_workers: int | None) -> tuple[float, list]:
    experiment_id = f"parity-{executor}-{round_}"
    command = [str(Path(sys.executable).with_name("sysmo")), "run", "--id", experiment_id, "--output-dir", str(tmp),
               "--benchmark", "starter", "--samples", str(samples), "--concurrency", str(concurrency),
               "--executor", executor, *[arg for kind in kinds for arg in ("--kind", kind)]]
    if executor == "ray" and ray_workers:
        command += ["--ray-workers", str(ray_workers)]
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    rows = outcome(tmp, experiment_id)
    print(f"{executor:<6} {len(rows):>4} attempts, {sum(r[4] == 'passed' for r in rows):>4} passed, {seconds:7.1f} s")
    return seconds, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", default="uml_class,sysml")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ray-workers", type=int, default=None, help="Ray worker processes (sysmo run --ray-workers)")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    times: dict[str, list[float]] = {"local": [], "ray": []}
    rows: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat):
            for executor in ("local", "ray"):
                seconds, rows[executor] = run(executor, kinds, args.samples, args.concurrency, Path(tmp), round_,
                                              args.ray_workers)
                times[executor].append(seconds)
    local_s, ray_s = statistics.median(times["local"]), statistics.median(times["ray"])
    local_rows, ray_rows = rows["local"], rows["ray"]
    ratio = ray_s / local_s
    print(f"median of {args.repeat}: local {local_s:.1f} s, ray {ray_s:.1f} s")
    print(f"ray / local = {ratio:.2f} (target <= {TARGET_RATIO}: {'met' if ratio <= TARGET_RATIO else 'NOT met'}); "
          f"same attempts and outcomes: {local_rows == ray_rows}")


if __name__ == "__main__":
    main()
