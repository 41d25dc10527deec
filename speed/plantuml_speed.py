"""PlantUML check speed: median and p95 per check, cold (one sandboxed JVM per check) and warm (the server).

Run: ``python speed/plantuml_speed.py [--warm N] [--cold N]``.
Targets on a 2-core machine: warm <= 80 ms per check, warm at least 10x faster than cold.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from sysmo.tools.plantuml.server import plantuml_server
from sysmo.tools.install import java_binary, plantuml_jar
from sysmo.tools.plantuml.check import check, check_batch

DIAGRAMS = [
    '@startuml\nclass Order {\n  +id : int\n  +total() : float\n}\nOrder "1" *-- "many" LineItem\n'
    "Customer --> Order : places\n@enduml\n",
    "@startuml\npackage Shop {\n  [Catalog] as C\n  [Cart]\n}\ndatabase DB\nC --> DB\n[Cart] ..> C : reads\n@enduml\n",
    "@startuml\ninterface Repo<T>\nclass OrderRepo\nOrderRepo ..|> Repo\nabstract class Base\nBase <|-- OrderRepo\n@enduml\n",
    "@startuml\nclass A\nthis is not plantuml\n@enduml\n",
    "@startuml\nactor User\nnode Server {\n  component API\n  component Worker\n}\nqueue Jobs\n"
    "User --> API\nAPI --> Jobs\nJobs --> Worker\n@enduml\n",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def timed(fn, runs: int) -> list[float]:
    out = []
    for i in range(runs):
        start = time.perf_counter()
        fn(DIAGRAMS[i % len(DIAGRAMS)])
        out.append(time.perf_counter() - start)
    return out


def raw_jvm(text: str) -> None:
    """One unconfined JVM rendering from stdin: the floor under any cold path."""
    subprocess.run(
        [java_binary(), "-Djava.awt.headless=true", "-jar", str(plantuml_jar()), "-tsvg", "-pipe"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PLANTUML_SECURITY_PROFILE": "SANDBOX", "PATH": "/usr/bin:/bin"},
    )


def report(name: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    print(
        f"{name:<34} n={len(seconds):<4} median={median * 1000:8.1f} ms   p95={percentile(seconds, 0.95) * 1000:8.1f} ms"
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warm", type=int, default=100, help="warm checks to time")
    parser.add_argument("--cold", type=int, default=10, help="cold checks to time")
    args = parser.parse_args()

    start = time.perf_counter()
    plantuml_server().ensure()
    print(
        f"server start: {(time.perf_counter() - start) * 1000:.0f} ms ({', '.join(plantuml_server().isolation)})"
    )
    for text in DIAGRAMS * 4:  # let the JIT see every diagram kind before timing
        check(text)

    warm = report("warm: check() via server", timed(check, args.warm))
    server_only = report("warm: server render only", timed(lambda t: plantuml_server().render(t), args.warm))
    cold = report("cold: check_batch([one]) sandboxed", timed(lambda t: check_batch([t]), args.cold))
    report("cold: raw JVM -pipe, unconfined", timed(raw_jvm, args.cold))
    batch_start = time.perf_counter()
    check_batch(DIAGRAMS * 10)
    batch = (time.perf_counter() - batch_start) / (len(DIAGRAMS) * 10)
    print(f"{'batch: 50 diagrams in one JVM':<34} {batch * 1000:8.1f} ms per diagram")
    print(f"warm/cold ratio: {warm / cold:.4f}  (cold is {cold / warm:.0f}x slower; target >= 10x)")
    print(
        f"warm median {warm * 1000:.1f} ms (target <= 80 ms): {'OK' if warm <= 0.080 else 'MISSED'}; "
        f"server render only {server_only * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
