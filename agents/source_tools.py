"""Read-only tools over a task's source files: list them, view a line range, search them.

The openhands agent reads the system's code through these instead of receiving it pasted into its first
prompt, so a system larger than one prompt (Etcd Raft's 2000+ lines) can still be read piece by piece.

>>> view_source({"a.py": "x = 1\\ny = 2\\n"}, "a.py", 2, 2)
'a.py lines 2-2 of 2:\\n   2  y = 2'
"""

from __future__ import annotations

import re

MAX_VIEW_LINES = 200  # one view shows at most this many lines
MAX_HITS = 50


def list_sources(files: dict[str, str]) -> str:
    if not files:
        return "The task has no source files."
    return "\n".join(f"{name} ({len(text.splitlines())} lines)" for name, text in sorted(files.items()))


def view_source(files: dict[str, str], path: str, start: int = 1, end: int | None = None) -> str:
    """Lines ``start..end`` (1-based, inclusive, at most ``MAX_VIEW_LINES``) of one source file, numbered."""
    if path not in files:
        raise KeyError(f"no source file {path!r}; the sources are: {', '.join(sorted(files)) or '(none)'}")
    lines = files[path].splitlines()
    start = max(1, start)
    end = min(len(lines), end if end is not None else start + MAX_VIEW_LINES - 1, start + MAX_VIEW_LINES - 1)
    body = "\n".join(f"{i:4d}  {lines[i - 1]}" for i in range(start, end + 1))
    return f"{path} lines {start}-{end} of {len(lines)}:\n{body}"


def search_sources(files: dict[str, str], pattern: str) -> str:
    """The lines of every source file matching ``pattern`` (a regular expression, else plain text)."""
    try:
        regex = re.compile(pattern)
    except re.error:
        regex = re.compile(re.escape(pattern))
    hits = [f"{name}:{n}: {line.strip()}" for name, text in sorted(files.items())
            for n, line in enumerate(text.splitlines(), 1) if regex.search(line)]
    if not hits:
        return f"No line matches {pattern!r}."
    more = f"\n({len(hits) - MAX_HITS} more matches not shown)" if len(hits) > MAX_HITS else ""
    return "\n".join(hits[:MAX_HITS]) + more
