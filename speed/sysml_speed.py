"""OpenSysML validation speed: median and p95 per validation, cold (a fresh kernel per check) and warm.

Run: ``python speed/sysml_speed.py [--warm-rounds N] [--cold N] [--data-dir DIR]``.
Warm: every SysMBench reference model (151, valid and invalid) validated on one running kernel.
Cold: start a fresh confined kernel and validate one model, as a first check after start-up does.
Target on a 2-core machine: warm <= 100 ms per validation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from sysmo.tools.sysml.kernel import OpenSysMLKernel
from sysmo.tools.sysml.element_tree import element_tree
from sysmo.tools.sysml.validate import validate

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
SMALL = "package P {\n  private import ScalarValues::*;\n  part def Car { attribute mass : Real; part e : Engine; }\n  part def Engine;\n}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def report(name: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    print(f"{name:<44} n={len(seconds):<4} median={median * 1000:8.1f} ms   p95={percentile(seconds, 0.95) * 1000:8.1f} ms")
    return median


def references(data_dir: Path) -> list[str]:
    path = data_dir / "sysmbench" / "sysmbench.jsonl"
    return [json.loads(line)["reference_model"] for line in path.open()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warm-rounds", type=int, default=2, help="passes over the 151 references")
    parser.add_argument("--cold", type=int, default=8, help="fresh-kernel validations to time")
    parser.add_argument("--exports", type=int, default=20, help="element-tree exports to time")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(os.environ.get("SYSMO_TEST_DATA_DIR") or os.environ.get("SYSMO_DATA_DIR") or DEFAULT_DATA))
    args = parser.parse_args()
    models = references(args.data_dir)

    cold: list[float] = []
    for i in range(args.cold):
        kernel = OpenSysMLKernel()
        start = time.perf_counter()
        validate(models[i % len(models)], kernel=kernel)
        cold.append(time.perf_counter() - start)
        isolation = ", ".join(kernel.isolation)
        kernel.stop()
    print(f"kernel isolation: {isolation}")

    kernel = OpenSysMLKernel()
    validate(SMALL, kernel=kernel)
    warm_small = []
    for _ in range(50):
        start = time.perf_counter()
        validate(SMALL, kernel=kernel)
        warm_small.append(time.perf_counter() - start)
    warm: list[float] = []
    warm_valid: list[float] = []
    for _ in range(args.warm_rounds):
        for text in models:
            start = time.perf_counter()
            result = validate(text, kernel=kernel)
            elapsed = time.perf_counter() - start
            warm.append(elapsed)
            if result.ok:
                warm_valid.append(elapsed)
    exports = []
    for text in models[: args.exports]:
        start = time.perf_counter()
        element_tree(text, kernel=kernel)
        exports.append(time.perf_counter() - start)
    kernel.stop()

    cold_median = report("cold: fresh kernel + first validation", cold)
    report("warm: small model (5 lines)", warm_small)
    warm_median = report("warm: 151 SysMBench references", warm)
    report("warm: the valid references only", warm_valid)
    report("warm: element tree (validate + JSON/TTL export)", exports)
    print(f"cold is {cold_median / warm_median:.0f}x the warm median")
    print(f"warm median {warm_median * 1000:.1f} ms, p95 {percentile(warm, 0.95) * 1000:.1f} ms "
          f"(target <= 100 ms): {'OK' if warm_median <= 0.100 else 'MISSED'}")


if __name__ == "__main__":
    main()
