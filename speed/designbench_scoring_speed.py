"""Scoring every published DesignBench prediction without a judge: validity, BLEU, ROUGE, element P/R.

Run: ``python speed/designbench_scoring_speed.py [--data-dir DIR] [--sample N | --files N --per-file N]
[--workers W]``. The predictions of all 72 files (10,872) are read first and each distinct text loaded once (its
OpenSysML verdict and element tree are the text's: 10,189 distinct). ``--sample N`` scores a seeded random sample of N distinct
predictions (every sample id equally likely); ``--files`` / ``--per-file`` the first N of each of the first files;
neither: every distinct prediction. The work is split evenly over ``--workers`` processes (default: the cores),
each with its own warm OpenSysML kernel; a text goes to the worker of its sample id, so each kernel first loads
the SysMBench references of its share (a fixed cost: 151 / workers references per kernel for the whole set,
whatever the number of predictions; a reference's load with its element-tree exports costs 10-20 plain
validations) and then scores its texts. Per prediction: one OpenSysML load gives the validity and the element tree
(``sysmo.evals.cascades.sysml``'s path); BLEU (paper: NLTK sentence, method3), character ROUGE-L (paper) and word
ROUGE-L against the reference; element precision/recall/F1 against the reference's tree (cached).

Projection for all 10,872: kernel start + 151 / workers reference loads (measured mean) + the distinct texts
at the measured time per text, divided over the workers. A text that hangs the kernel costs the whole OpenSysML limit
and a kernel restart (``HANGS`` of them in the whole set, printed beside the projection: none since the import
bound of ``tools/sysml/import_fanout.py``). Target on 2 cores: all 10,872 in at most 3 minutes (idle). The machine is
shared: the load average is printed at the start and the end, and the baseline measured in the same run is one
worker's warm OpenSysML load of the SysMBench references (``--baseline N`` of them). Prints the wall time,
predictions/s, ms per prediction (median and p95) per stage, and the predictions OpenSysML gave no verdict on
within its time limit; ``--list-slow S`` lists every prediction whose OpenSysML load took more than S seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypedDict

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
Job = tuple[str, list[tuple[str, int]]]  # a prediction text and where it occurs: (model/strategy, sample id)
FULL_SET = 10_872
# distinct texts with no OpenSysML answer within the 20 s batch limit in the whole set: 8 (scored at load 4-5)
# before the import bound (tools/sysml/import_fanout.py), which answers them at once; none since
HANGS = 0


class ChunkTimes(TypedDict):
    start: float  # kernel start (a trivial model)
    references: list[float]  # seconds per reference load
    stages: dict[str, list[float]]  # per distinct text (its OpenSysML load, the metrics of all its occurrences)
    slow: list[SlowLoad]


def score_chunk(args: tuple[list[Job], str, float]) -> ChunkTimes:
    """Score one worker's share: its kernel started, the references it needs loaded, then each distinct text
    (one OpenSysML load) against the reference of each sample it answers."""
    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.evals.cascades.sysml import _tree
    from sysmo.evals.metrics import elements, text

    jobs, data_dir, slow_s = args
    lines = (Path(data_dir) / "sysmbench" / "sysmbench.jsonl").read_text(encoding="utf-8").splitlines()
    refs = {row["id"]: row["reference_model"] for row in map(json.loads, lines)}
    t0 = time.perf_counter()
    _tree(Artifact(language=Language.SYSML, files={"model.sysml": "package Start;"}))
    out = ChunkTimes(start=time.perf_counter() - t0, references=[], slow=[],
                     stages={"text": [], "opensysml": [], "elements": [], "total": [], "undecided": []})
    ref_trees = {}
    for sample_id in sorted({i for _, where in jobs for _, i in where}):
        t0 = time.perf_counter()
        ref_trees[sample_id] = _tree(Artifact(language=Language.SYSML, files={"model.sysml": refs[sample_id]}),
                                     reference=True)
        out["references"].append(time.perf_counter() - t0)
    times = out["stages"]
    for cand, where in jobs:
        t0 = time.perf_counter()
        for _, sample_id in where:
            text.bleu_paper(refs[sample_id], cand)
            text.rouge_l_paper(refs[sample_id], cand)
            text.rouge_l_word(refs[sample_id], cand)
        t1 = time.perf_counter()
        cand_tree = _tree(Artifact(language=Language.SYSML, files={"model.sysml": cand or " "}))
        t2 = time.perf_counter()
        for _, sample_id in where:
            if ref_trees[sample_id].complete:
                elements.compare(ref_trees[sample_id], cand_tree)
        t3 = time.perf_counter()
        outcome = cand_tree.check.outcome.value if cand_tree.check is not None else "none"
        if outcome not in ("ok", "failed"):
            times["undecided"].append(t2 - t1)  # a timeout (the kernel is restarted): no verdict
        if t2 - t1 > slow_s:
            out["slow"].append((where[0][0], where[0][1], t2 - t1, outcome))
        times["text"].append(t1 - t0)
        times["opensysml"].append(t2 - t1)
        times["elements"].append(t3 - t2)
        times["total"].append(t3 - t0)
    return out


def distinct_predictions(files: list[Path], per_file: int) -> tuple[list[Job], int, int]:
    """The distinct texts among the first ``per_file`` predictions of each file (0: all), each with where it
    occurs; and the numbers of predictions and of distinct texts in all of ``files``."""
    where: dict[str, list[tuple[str, int]]] = {}
    chosen: dict[str, list[tuple[str, int]]] = {}
    total = 0
    for path in files:
        name = path.parent.name + "/" + path.stem
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for i, row in enumerate(rows):
            total += 1
            where.setdefault(row["prediction"], []).append((name, int(row["id"])))
            if not per_file or i < per_file:
                chosen[row["prediction"]] = where[row["prediction"]]
    return list(chosen.items()), total, len(where)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=0,
                        help="a seeded random sample of N distinct predictions of all files (0: see --files)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", type=int, default=0, help="only the first N prediction files (0: all 72)")
    parser.add_argument("--per-file", type=int, default=0, help="only the first N predictions of each file (0: all)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
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
    all_files = sorted((args.data_dir / "published" / "designbench").glob("*/*.jsonl"))
    if args.sample:
        every, total, distinct = distinct_predictions(all_files, 0)
        jobs = random.Random(args.seed).sample(every, min(args.sample, len(every)))
    else:
        jobs, total, distinct = distinct_predictions(all_files[: args.files or None], args.per_file)
    print(f"{total} predictions in {len(all_files[: args.files or None] if not args.sample else all_files)} files, "
          f"{distinct} distinct texts (each loaded once); scoring {len(jobs)} texts "
          f"({sum(len(w) for _, w in jobs)} predictions) on {args.workers} workers")
    # by sample id: each kernel loads (and exports) only the references of its share, half of them on 2 workers
    chunks: list[list[Job]] = [[] for _ in range(args.workers)]
    for job in jobs:
        chunks[job[1][0][1] % args.workers].append(job)
    started = time.perf_counter()
    merged: dict[str, list[float]] = {}
    slow: list[SlowLoad] = []
    starts: list[float] = []
    references: list[float] = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for chunk in pool.map(score_chunk, [(c, str(args.data_dir), args.list_slow) for c in chunks if c]):
            slow.extend(chunk["slow"])
            starts.append(chunk["start"])
            references.extend(chunk["references"])
            for stage, values in chunk["stages"].items():
                merged.setdefault(stage, []).extend(values)
    wall = time.perf_counter() - started
    # after the workers: a kernel of this process must not be inherited by forked workers
    baseline = warm_reference_load(args.data_dir, args.baseline) if args.baseline else 0.0
    n = len(merged.get("total", []))
    print(f"{n} texts, {args.workers} workers: {wall:.1f} s wall, {n / wall:.1f} texts/s; kernel start "
          f"{statistics.mean(starts):.1f} s, {len(references)} reference loads {sum(references):.1f} s, predictions "
          f"{sum(merged.get('total', [])):.1f} s (sums over the workers)")
    undecided = merged.pop("undecided", [])
    print(f"  no verdict (OpenSysML limit {limit:g} s): {len(undecided)} predictions, {sum(undecided):.0f} s")
    for stage, values in merged.items():
        if values:
            print(f"  {stage:<10} median {1000 * statistics.median(values):7.1f} ms   p95 "
                  f"{1000 * _percentile(values, 0.95):7.1f} ms   mean {1000 * statistics.mean(values):7.1f} ms")
    if n:
        # the texts with a verdict at their measured mean; the texts that hang the parser at the limit each
        decided = n - len(undecided)
        per_prediction = (sum(merged["total"]) - sum(undecided)) / max(decided, 1)
        fixed = statistics.mean(starts) + 151 / args.workers * statistics.mean(references)  # its share each
        full_distinct = distinct if not (args.files or args.per_file) or args.sample else round(
            distinct / total * FULL_SET)
        texts_s = (full_distinct - HANGS) * per_prediction / args.workers
        hangs = HANGS * (limit + statistics.mean(starts)) / args.workers
        projected = fixed + texts_s + hangs
        met = "met" if projected <= TARGET_S else "NOT met"
        print(f"projected for all 10,872 predictions: {projected / 60:.1f} min (target <= "
              f"{TARGET_S / 60:.0f} min on 2 cores: {met}): per kernel start and 151 / {args.workers} references "
              f"{fixed:.0f} s, {full_distinct - HANGS} distinct texts with a verdict x {1000 * per_prediction:.1f} ms "
              f"/ {args.workers} workers {texts_s:.0f} s, {HANGS} hangs x ({limit:g} s limit + restart) / "
              f"{args.workers} {hangs:.0f} s; {load_average()}")
        if baseline:
            print(f"baseline: warm OpenSysML load of a reference {1000 * baseline:.1f} ms (median); the projection is "
                  f"{projected / baseline:.0f} such loads")
    if slow:
        print(f"OpenSysML loads over {args.list_slow:g} s:")
        for name, pred_id, seconds, outcome in sorted(slow, key=lambda s: -s[2]):
            print(f"  {name:<48} id {pred_id:<5} {seconds:6.1f} s  {outcome}")


if __name__ == "__main__":
    main()
