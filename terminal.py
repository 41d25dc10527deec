"""Records on a terminal of any width: a table when every cell fits whole, else one block per record.

Ids, task names and paths are never cut (a cut id cannot be pasted back): a table is only drawn when its
natural width fits the console; otherwise each record prints its key on a line of its own, in full, and its
other fields below it, wrapped at spaces by the terminal's width.

>>> from rich.console import Console
>>> console = Console(width=40, force_terminal=False)
>>> print_records(console, "tasks", ["id", "kind"], [{"id": "starter/uml_class/library_loans_long_name", "kind": "uml"}])
tasks
starter/uml_class/library_loans_long_name
  kind: uml
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

WRAP_MIN = 12  # the least width a wrapping column gets in a table
# what a terminal acts on instead of showing: C0 controls but newline and tab (ESC starts ANSI sequences, CR and
# BS overwrite), DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional overrides that reorder a line
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_terminal(text: str) -> str:
    r"""``text`` (model output, or a message quoting it) safe for a terminal: every control character but newline
    and tab is shown as an escape (``\x1b``, ``\u202e``) instead of acting on the screen.

    >>> escape_terminal("ok\x1b[2J\rdone")
    'ok\\x1b[2J\\rdone'
    """
    return _CONTROLS.sub(_shown, text)


def escape_terminal_data(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with every string passed through ``escape_terminal``."""
    if isinstance(value, str):
        return escape_terminal(value)
    if isinstance(value, dict):
        return {escape_terminal_data(k): escape_terminal_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_terminal_data(v) for v in value]
    return value


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {0x0D: "\\r", 0x08: "\\b"}.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def natural_width(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> int:
    """The width of a rich table (heavy head, one space of padding each side) with no cell wrapped."""
    widths = [max([len(c)] + [len(str(r.get(c, ""))) for r in rows]) for c in columns]
    return sum(widths) + 3 * len(columns) + 1


def fits(columns: Sequence[str], rows: Sequence[dict[str, Any]], width: int, wrap: Sequence[str] = ()) -> bool:
    """Whether the table fits ``width`` with its ``wrap`` columns folded to at most ``WRAP_MIN`` characters."""
    whole = [c for c in columns if c not in wrap]
    folded = [c for c in columns if c in wrap]
    return natural_width(whole, rows) + sum(min(WRAP_MIN, natural_width([c], rows) - 4) + 3 for c in folded) <= width


def print_records(console: Console, title: str, columns: Sequence[str], rows: Sequence[dict[str, Any]],
                  key: str | None = None, justify: dict[str, str] | None = None,
                  styles: dict[str, dict[str, str]] | None = None, wrap: Sequence[str] = ()) -> None:
    """``rows`` (dicts of plain strings/numbers, no markup) as a table that fits, or as blocks headed by ``key``
    (default: the first column). Columns in ``wrap`` (free text: titles, messages) may wrap inside the table;
    the others are shown whole or the layout turns vertical. ``styles`` maps a column's values to rich styles, e.g. ``{"status": {"FAIL": "red"}}``."""
    key = key or columns[0]
    justify = justify or {}
    styles = styles or {}
    rows = [{c: escape_terminal(v) if isinstance(v, str) else v for c, v in r.items()} for r in rows]
    if fits(columns, rows, console.width, wrap):
        table = Table(title=title)
        for col in columns:
            table.add_column(col, no_wrap=col not in wrap, overflow="fold",
                             justify=justify.get(col, "left"))  # type: ignore[arg-type]
        for r in rows:
            table.add_row(*(Text(str(r.get(c, "")), style=styles.get(c, {}).get(str(r.get(c, "")), "")) for c in columns))
        console.print(table)
        return
    console.print(f"[bold]{escape(title)}[/]" if console.is_terminal else title)
    for i, r in enumerate(rows):
        if i:
            console.print()  # a blank line between two blocks: no field can be read as the next record's
        console.print(Text(str(r.get(key, "")), style="bold"), soft_wrap=True)  # the key whole, even if longer
        short, long = [], []
        for c in columns:
            value = str(r.get(c, ""))
            if c != key and value:
                (long if c not in wrap and len(value) > console.width // 2 else short).append(f"{c}: {value}")
        for field in long:  # a long path or id on its own line under the key, unbroken (copy keeps it whole)
            console.print(Text("  " + field), soft_wrap=True)
        for line in _fill(short, max(20, console.width - 1)):
            console.print(Text(line), soft_wrap=True)


def _fill(fields: list[str], width: int) -> list[str]:
    """Fields joined by " · " into lines of ``width``, a field broken only when it is longer than a line."""
    lines: list[str] = []
    current = ""
    for field in fields:
        candidate = f"{current} · {field}" if current else field
        if len("    " + candidate) <= width or not current:
            current = candidate
        else:
            lines.append(current)
            current = field
    if current:
        lines.append(current)
    out: list[str] = []
    for i, line in enumerate(lines):
        out.extend(textwrap.wrap(line, width=width, initial_indent="  " if i == 0 else "    ",
                                 subsequent_indent="    ", break_on_hyphens=False, break_long_words=False))
    return out
