"""Regenerate every starter TLA+ trace from the seeds committed in each task.yaml, bit for bit.

    python -m sysmo.benchmarks.starter.tla.record            # rewrite traces/seed-<n>.ndjson of every task
    python -m sysmo.benchmarks.starter.tla.record --check    # exit 1 if any committed trace would change

A trace is a pure function of (implementation, seed, options): the scheduler draws every interleaving
choice from ``random.Random(seed)``, and the JSON is written with a fixed key order and separators.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import yaml

from sysmo.benchmarks.starter import TASK_FILE, Recording
from sysmo.log import get_logger

TLA_DIR = Path(__file__).resolve().parent
PACKAGE = "sysmo.benchmarks.starter.tla"  # not __name__: that is "__main__" under python -m
log = get_logger(__name__)


def trace_name(seed: int) -> str:
    return f"traces/seed-{seed}.ndjson"


def recordings() -> dict[Path, Recording]:
    """Task folder -> how its traces are recorded, for every TLA+ task that records traces."""
    found = {}
    for path in sorted(TLA_DIR.glob(f"*/{TASK_FILE}")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if data.get("recording"):
            found[path.parent] = Recording.model_validate(data["recording"])
    return found


def render(folder: Path, recording: Recording) -> dict[str, str]:
    """Trace file (relative to the task folder) -> NDJSON text, produced by running the implementation."""
    stem, function = recording.entry.split(":")
    record = getattr(importlib.import_module(f"{PACKAGE}.{folder.name}.{stem}"), function)
    return {trace_name(seed): record(seed, **recording.options) for seed in recording.seeds}


def regenerate(check: bool = False) -> list[Path]:
    """Write (or, with ``check``, only compare) every trace; returns the files that differ(ed)."""
    changed = []
    for folder, recording in recordings().items():
        for name, text in render(folder, recording).items():
            path = folder / name
            if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
                changed.append(path)
                if not check:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(text.encode("utf-8"))
    log.info("starter.traces", checked=check, changed=[str(p.relative_to(TLA_DIR)) for p in changed])
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed traces, write nothing")
    args = parser.parse_args(argv)
    changed = regenerate(check=args.check)
    for path in changed:
        print(f"{'differs' if args.check else 'wrote'}: {path.relative_to(TLA_DIR)}")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
