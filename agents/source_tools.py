"""Read-only tools over a task's source files: list them, view a line range, search them.

The openhands agent reads the system's code through these instead of receiving it pasted into its first
prompt, so a system larger than one prompt (Etcd Raft's 2000+ lines) can still be read piece by piece.

Each is bounded whatever the model asks: the search runs the model's pattern on RE2 (``google-re2``), whose time
is linear in the text (no backtracking: ``(.|.)*!!!`` froze Python's ``re`` at 100% of a core), within
``SEARCH_TIME_S`` of wall clock, and every answer is cut at ``MAX_ANSWER_CHARS``.

>>> view_source({"a.py": "x = 1\\ny = 2\\n"}, "a.py", 2, 2)
'a.py lines 2-2 of 2:\\n   2  y = 2'
"""

from __future__ import annotations

import time

import re2

MAX_VIEW_LINES = 200  # one view shows at most this many lines
MAX_HITS = 50
MAX_PATTERN_CHARS = 1_000
MAX_LINE_CHARS = 300  # a hit or a viewed line longer than this is cut (a minified file is one line)
MAX_ANSWER_CHARS = 40_000
SEARCH_TIME_S = 2.0
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern RE2 refuses is searched as plain text, not logged to stderr
_RE2_OPTIONS.never_capture = True


def list_sources(files: dict[str, str]) -> str:
    if not files:
        return "The task has no source files."
    return _bounded("\n".join(f"{name} ({len(text.splitlines())} lines)" for name, text in sorted(files.items())))


def view_source(files: dict[str, str], path: str, start: int = 1, end: int | None = None) -> str:
    """Lines ``start..end`` (1-based, inclusive, at most ``MAX_VIEW_LINES``) of one source file, numbered."""
    if path not in files:
        raise KeyError(f"no source file {path!r}; the sources are: {', '.join(sorted(files)) or '(none)'}")
    lines = files[path].splitlines()
    start = max(1, start)
    end = min(len(lines), end if end is not None else start + MAX_VIEW_LINES - 1, start + MAX_VIEW_LINES - 1)
    body = "\n".join(f"{i:4d}  {_cut(lines[i - 1])}" for i in range(start, end + 1))
    return _bounded(f"{path} lines {start}-{end} of {len(lines)}:\n{body}")


def search_sources(files: dict[str, str], pattern: str, time_s: float = SEARCH_TIME_S) -> str:
    """The lines of every source file matching ``pattern`` (an RE2 regular expression, else plain text), found
    in time linear in the sources; a search still going after ``time_s`` seconds stops and says so."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"Error: the pattern is {len(pattern):,} characters long; give one of at most {MAX_PATTERN_CHARS:,}."
    try:
        matches = re2.compile(pattern, _RE2_OPTIONS).search
        note = ""
    except re2.error:  # backreferences, lookaround: not in RE2's linear-time language
        matches = re2.compile(re2.escape(pattern), _RE2_OPTIONS).search
        note = "(not a regular expression RE2 accepts: searched as plain text)\n"
    deadline = time.monotonic() + time_s
    hits: list[str] = []
    stopped = False
    for name, text in sorted(files.items()):
        for n, line in enumerate(text.splitlines(), 1):
            if n % 256 == 0 and time.monotonic() > deadline:
                stopped = True
                break
            if matches(line):
                hits.append(f"{name}:{n}: {_cut(line.strip())}")
        if stopped:
            break
    cut = (f"\n(the search stopped after {time_s:g} s; the matches found so far are shown: narrow the pattern)"
           if stopped else "")
    if not hits:
        return f"{note}No line matches {pattern!r}.{cut}"
    more = f"\n({len(hits) - MAX_HITS} more matches not shown)" if len(hits) > MAX_HITS else ""
    return _bounded(note + "\n".join(hits[:MAX_HITS]) + more + cut)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]} ... [{len(line):,} characters]"


def _bounded(answer: str) -> str:
    if len(answer) <= MAX_ANSWER_CHARS:
        return answer
    return answer[:MAX_ANSWER_CHARS] + f"\n... [answer cut at {MAX_ANSWER_CHARS:,} of {len(answer):,} characters]"
