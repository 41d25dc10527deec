"""Scoring every published DesignBench prediction without a judge: validity, BLEU, ROUGE, element P/R.

Run: ``python speed/designbench_scoring_speed.py [--data-dir DIR] [--files N] [--per-file N]
[--workers W]``. Default: all 72 prediction files x 151 predictions (10,872), on ``--workers`` processes (default
2), each with its own OpenSysML kernel. Per prediction: one OpenSysML load gives the validity and the element
tree (``sysmo.evals.cascades.sysml``'s path); BLEU (paper: NLTK sentence, method3), character ROUGE-L (paper) and
word ROUGE-L against the reference; element precision/recall/F1 against the reference's tree (cached).
Target on 2 cores: all 10,872 in at most 3 minutes (idle). The machine is shared: the load average is printed at
the start and the end, and the baseline measured in the same run is one worker's warm OpenSysML load of the
SysMBench references (``--baseline N`` of them): the projected time is also given in units of it. Prints total wall time, predictions/s and ms per prediction
(median and p95 of the per-prediction times), per stage, and the predictions OpenSysML gave no verdict on
within its time limit (each costs the whole limit and a kernel restart); ``--list-slow S`` lists every
prediction whose OpenSysML load took more than S seconds (file, id, seconds, verdict or none).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

DEFAULT_DATA = Path(os.environ.get("SYSMO_DATA_DIR") or os.environ.get("SYSMO_TEST_DATA_DIR")
                    or Path(__file__).resolve().parents[2] / "shared" / "benchmarks")
TARGET_S = 180.0  # all 10,872 predictions, 2 cores, idle


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def warm_reference_load(data_dir: Path, n: int) -> float:
    """Median seconds of a warm OpenSysML check of the first ``n`` SysMBench reference models (one kernel)."""
    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.tools.sysml import validate

    lines = (data_dir / "sysmbench" / "sysmbench.jsonl").read_text(encoding="utf-8").splitlines()[:n + 1]
    refs = [json.loads(line)["reference_model"] for line in lines if line.strip()]
    validate(Artifact(language=Language.SYSML, files={"model.sysml": refs[0]}))  # the kernel starts
    seconds = []
    for ref in refs[1:]:
        started = time.perf_counter()
        validate(Artifact(language=Language.SYSML, files={"model.sysml": ref}))
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


SlowLoad = tuple[str, int, float, str]  # file, prediction id, seconds, OpenSysML outcome


def score_file(args: tuple[str, str, int, float]) -> tuple[dict[str, list[float]], list[SlowLoad]]:
    """Score one prediction file; per-prediction seconds per stage, and the loads slower than the threshold."""
    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.evals.cascades.sysml import _tree
    from sysmo.evals.metrics import elements, text

    path, data_dir, per_file, slow_s = args
    slow: list[SlowLoad] = []
    lines = (Path(data_dir) / "sysmbench" / "sysmbench.jsonl").read_text(encoding="utf-8").splitlines()
    refs = {row["id"]: row["reference_model"] for row in map(json.loads, lines)}
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: per_file or None]
    times: dict[str, list[float]] = {"text": [], "opensysml": [], "elements": [], "total": [], "undecided": []}
    for row in rows:
        ref, cand = refs[row["id"]], row["prediction"]
        t0 = time.perf_counter()
        text.bleu_paper(ref, cand)
        text.rouge_l_paper(ref, cand)
        text.rouge_l_word(ref, cand)
        t1 = time.perf_counter()
        ref_tree = _tree(Artifact(language=Language.SYSML, files={"model.sysml": ref}), reference=True)
        cand_tree = _tree(Artifact(language=Language.SYSML, files={"model.sysml": cand or " "}))
        t2 = time.perf_counter()
        if ref_tree.complete:
            elements.compare(ref_tree, cand_tree)
        t3 = time.perf_counter()
        outcome = cand_tree.check.outcome.value if cand_tree.check is not None else "none"
        if outcome not in ("ok", "failed"):
            times["undecided"].append(t2 - t1)  # a timeout (the kernel is restarted): no verdict
        if t2 - t1 > slow_s:
            slow.append((Path(path).parent.name + "/" + Path(path).stem, row["id"], t2 - t1, outcome))
        times["text"].append(t1 - t0)
        times["opensysml"].append(t2 - t1)
        times["elements"].append(t3 - t2)
        times["total"].append(t3 - t0)
    return times, slow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--files", type=int, default=0, help="only the first N prediction files (0: all 72)")
    parser.add_argument("--per-file", type=int, default=0, help="only the first N predictions of each file (0: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--opensysml-timeout", type=float, default=0.0,
                        help="OpenSysML time limit per load in s (0: the batch limit of sysmo reproduce, 20, or "
                             "$SYSMO_OPENSYSML_TIMEOUT_S); a prediction that hangs the parser costs the whole limit "
                             "and a kernel restart")
    parser.add_argument("--list-slow", type=float, default=5.0, metavar="S",
                        help="list the predictions whose OpenSysML load took more than S seconds (default 5)")
    parser.add_argument("--baseline", type=int, default=20, help="reference models in the baseline (0: none)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {load_average()}")
    from sysmo.tools.sysml.kernel import TIMEOUT_ENV, use_batch_timeout

    if args.opensysml_timeout:
        os.environ[TIMEOUT_ENV] = str(args.opensysml_timeout)  # read by each worker's kernel
    limit = use_batch_timeout()
    files = sorted((args.data_dir / "published" / "designbench").glob("*/*.jsonl"))[: args.files or None]
    started = time.perf_counter()
    merged: dict[str, list[float]] = {}
    slow: list[SlowLoad] = []
    jobs = [(str(f), str(args.data_dir), args.per_file, args.list_slow) for f in files]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for times, slow_loads in pool.map(score_file, jobs):
            slow.extend(slow_loads)
            for stage, values in times.items():
                merged.setdefault(stage, []).extend(values)
    wall = time.perf_counter() - started
    # after the workers: a kernel of this process must not be inherited by forked workers
    baseline = warm_reference_load(args.data_dir, args.baseline) if args.baseline else 0.0
    n = len(merged.get("total", []))
    print(f"{len(files)} prediction files, {n} predictions, {args.workers} workers: {wall:.1f} s wall, "
          f"{n / wall:.1f} predictions/s, {1000 * wall / max(n, 1) * args.workers:.1f} ms per prediction per worker")
    undecided = merged.pop("undecided", [])
    print(f"  no verdict (OpenSysML limit {limit:g} s): {len(undecided)} predictions, {sum(undecided):.0f} s")
    for stage, values in merged.items():
        print(f"  {stage:<10} median {1000 * statistics.median(values):7.1f} ms   p95 "
              f"{1000 * _percentile(values, 0.95):7.1f} ms")
    if n:
        projected = wall / n * 10872
        met = "met" if projected <= TARGET_S else "NOT met"
        print(f"projected for all 10,872 predictions: {projected / 60:.1f} min (target <= {TARGET_S / 60:.0f} min on "
              f"2 cores: {met}); {load_average()}")
        if baseline:
            print(f"baseline: warm OpenSysML load of a reference {1000 * baseline:.1f} ms (median); the projection is "
                  f"{projected / baseline:.0f} such loads ({10872 / args.workers:.0f} per worker if every prediction "
                  f"cost one)")
    if slow:
        print(f"OpenSysML loads over {args.list_slow:g} s:")
        for name, pred_id, seconds, outcome in sorted(slow, key=lambda s: -s[2]):
            print(f"  {name:<48} id {pred_id:<5} {seconds:6.1f} s  {outcome}")


if __name__ == "__main__":
    main()
