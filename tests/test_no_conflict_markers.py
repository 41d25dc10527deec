"""No file git tracks holds a merge's conflict markers: a marker in a docs page renders as text (mkdocs does not
warn), in a template as a broken page, in code as a syntax error only where the file is imported."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)


def test_no_tracked_file_holds_conflict_markers() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:  # not a git checkout (an sdist): every text file below the root instead
        files = [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    else:
        files = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    found = []
    for path in files:
        if path.suffix in {".png", ".svg", ".jar", ".sqlite", ".parquet", ".gz"} or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{path.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}" for m in MARKER.finditer(text)]
    assert not found, f"conflict markers left by a merge: {found}"
