"""CLI start-up: seconds from launching ``sysmo check`` / ``sysmo reproduce`` to its first tool call or data read.

Run: python speed/cli_startup.py [--repeat 3] [--importtime]

Each command runs in a fresh interpreter whose ``subprocess.Popen`` and ``open`` report the moment the command
starts its first process (a tool: SANY, PlantUML, the OpenSysML kernel, ``java -version``) or opens its first
file of benchmark data (a reproduction scores files), and then end the process, so the figure is the start-up
alone (interpreter, imports, wiring the commands, reading the command line and the
task), not the tool's work. The baseline, measured in the same run: a bare interpreter that imports nothing
(``python -c pass``); the ratio says how much start-up sysmo adds at this machine load. Each command's CPU seconds
(user + system, of the process until it stopped) are printed too, with their ratio to the bare interpreter's:
on a shared machine CPU time swings far less with the load than wall time. With ``--importtime``
the ten slowest imports of each command are listed (``python -X importtime``, cumulative).
Target: under 1 s before the first tool call.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 1.0

# a tiny PlantUML class diagram: the command reaches the tool at once
PUML = "@startuml\nclass Order {\n  +id: int\n}\n@enduml\n"

# runs in the measured interpreter: the first process started is the first tool call; report it and stop
PROBE = r"""
import builtins, io, os, subprocess, sys
def _stop(what):
    sys.stderr.write("\nSYSMO-FIRST-TOOL-CALL " + what + "\n")
    sys.stderr.flush()
    os._exit(0)
def _first_tool_call(self, args, *rest, **kw):
    _stop(repr(args if isinstance(args, str) else list(args)[:2]))
_open = io.open
def _first_data_read(file, *args, **kw):
    if isinstance(file, (str, os.PathLike)) and os.fspath(file).startswith(DATA):
        _stop(os.fspath(file))
    return _open(file, *args, **kw)
subprocess.Popen._execute_child = _first_tool_call
builtins.open = io.open = _first_data_read
sys.argv = ["sysmo", *ARGS]
from sysmo.cli import main
main()
"""


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def launch(code: str, importtime: bool = False) -> tuple[float, str, float]:
    """Wall seconds of one fresh interpreter running ``code``, its standard error and its CPU seconds."""
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    return time.perf_counter() - started, proc.stderr, _children_cpu() - cpu


def commands(tmp: Path, data_dir: Path) -> dict[str, list[str]]:
    puml = tmp / "order.puml"
    puml.write_text(PUML)
    return {"sysmo check order.puml": ["check", str(puml)],
            "sysmo reproduce sysmbench-table2 --from-files": ["reproduce", "sysmbench-table2", "--from-files",
                                                              "--data-dir", str(data_dir)]}


def probe(args: list[str], data_dir: Path) -> str:
    return PROBE.replace("ARGS", json.dumps(args)).replace("DATA", repr(str(data_dir.resolve())))


def slowest_imports(stderr: str, n: int = 10) -> list[tuple[float, str]]:
    rows = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|", 2)
            if cumulative.strip().isdigit():
                rows.append((int(cumulative) / 1e6, name.rstrip()))
    return sorted(rows, reverse=True)[:n]


def measure(repeat: int, importtime: bool, data_dir: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="sysmo-cli-startup-") as tmp:
        bare = [launch("pass") for _ in range(repeat)]
        baseline = statistics.median(run[0] for run in bare)
        baseline_cpu = statistics.median(run[2] for run in bare)
        print(f"bare interpreter (baseline): {baseline:.3f} s, CPU {baseline_cpu:.3f} s")
        figures: dict[str, float] = {}
        cpu_figures: dict[str, float] = {}
        for name, args in commands(Path(tmp), data_dir).items():
            runs, cpus = [], []
            for _ in range(repeat):
                seconds, stderr, cpu = launch(probe(args, data_dir))
                if "SYSMO-FIRST-TOOL-CALL" not in stderr:
                    tail = stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
                    print(f"{name}: ended without a tool call or data read ({tail[0]}); timed to its end")
                runs.append(seconds)
                cpus.append(cpu)
            figures[name] = statistics.median(runs)
            cpu_figures[name] = statistics.median(cpus)
            met = "met" if figures[name] < TARGET_S else "NOT met"
            print(f"{name}: {figures[name]:.3f} s to the first tool call = {figures[name] / baseline:.1f}x the bare "
                  f"interpreter (target < {TARGET_S:.0f} s: {met}); {load_average()}")
            print(f"{name}: CPU {cpu_figures[name]:.3f} s = {cpu_figures[name] / baseline_cpu:.1f}x the bare "
                  f"interpreter's CPU")
            if importtime:
                _, stderr, _ = launch(probe(args, data_dir), importtime=True)
                for seconds, module in slowest_imports(stderr):
                    print(f"    {seconds:6.3f} s  {module}")
    return {"baseline_s": baseline, "baseline_cpu_s": baseline_cpu, "commands": figures, "cpu_s": cpu_figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (the median is printed)")
    parser.add_argument("--importtime", action="store_true", help="list each command's slowest imports")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="benchmark data (default $SYSMO_DATA_DIR, else $SYSMO_TEST_DATA_DIR)")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(os.environ.get("SYSMO_DATA_DIR") or os.environ.get("SYSMO_TEST_DATA_DIR") or ".")
    print(f"{os.cpu_count()} cores; {load_average()}")
    measure(args.repeat, args.importtime, data_dir)


if __name__ == "__main__":
    main()
