"""Rewrite Unicode TLA+ symbols (``≜ ∀ ∈ ⟨ ⟩ ...``) to the ASCII forms SANY/TLC 2.15 understand.

Strings and comments are left alone; lines are never added or removed, so a diagnostic's line number
is the same in the normalised and the original text, and ``Normalised.original_column`` maps a column
of the normalised text back to the original one.

>>> to_ascii("Init ≜ ∀ x ∈ S : x ≠ 0")
'Init == \\\\A x \\\\in S : x # 0'
"""

from __future__ import annotations

from bisect import bisect_right

from pydantic import BaseModel, Field

# The TLA+ Unicode standard (github.com/tlaplus/rfcs, "unicode" mapping), one symbol to one ASCII form.
STANDARD: dict[str, str] = {
    "≜": "==", "←": "<-", "↦": "|->", "→": "->", "⇒": "=>", "≡": "<=>", "⇔": "<=>",
    "∧": "/\\", "∨": "\\/", "¬": "~", "≠": "#", "≤": "<=", "≥": ">=",
    "∈": "\\in", "∉": "\\notin", "⊆": "\\subseteq", "⊂": "\\subset", "⊇": "\\supseteq", "⊃": "\\supset",
    "∪": "\\cup", "∩": "\\cap", "∀": "\\A", "∃": "\\E", "□": "[]", "◇": "<>", "↝": "~>",
    "⟨": "<<", "⟩": ">>", "×": "\\X", "∘": "\\o", "′": "'",
    "⊕": "(+)", "⊖": "(-)", "⊗": "(\\X)", "⊘": "(/)", "⊙": "(.)",
    "≺": "\\prec", "≻": "\\succ", "⪯": "\\preceq", "⪰": "\\succeq",
    "⊏": "\\sqsubset", "⊐": "\\sqsupset", "⊑": "\\sqsubseteq", "⊒": "\\sqsupseteq",
    "⊓": "\\sqcap", "⊔": "\\sqcup", "⊎": "\\uplus", "≪": "\\ll", "≫": "\\gg",
    "∼": "\\sim", "≃": "\\simeq", "≈": "\\approx", "≅": "\\cong", "≐": "\\doteq", "∝": "\\propto",
    "≍": "\\asymp", "⊢": "|-", "⊣": "-|", "⊨": "|=", "⫤": "=|", "∗": "\\ast", "⋆": "\\star",
    "○": "\\bigcirc", "•": "\\bullet", "÷": "\\div", "⋅": "\\cdot", "·": "\\cdot",
    "‥": "..", "…": "...", "‖": "||", "≔": ":=", "⩴": "::=", "∷": "::",
}

# Symbols outside the standard that language models write for TLA+ notions (sets of numbers, long arrows).
COMMON_EXTRAS: dict[str, str] = {
    "∅": "{}", "ℕ": "Nat", "ℤ": "Int", "ℝ": "Real", "⟹": "=>", "⟶": "->", "⟼": "|->", "↔": "<=>",
    "⟺": "<=>", "≝": "==", "≦": "<=", "≧": ">=", "⩽": "<=", "⩾": ">=", "≔": ":=", "⦇": "<<", "⦈": ">>",
    "〈": "<<", "〉": ">>", "⟪": "<<", "⟫": ">>", "\u2018": "'",
}

SYMBOLS: dict[str, str] = {**COMMON_EXTRAS, **STANDARD}


class Normalised(BaseModel):
    """ASCII text plus, per changed line, where columns moved (for mapping diagnostics back)."""

    text: str
    replacements: int = 0
    # line (1-based) -> replacements on it as (normalised start, normalised end, original column), 1-based
    column_anchors: dict[int, list[tuple[int, int, int]]] = Field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.replacements > 0

    def original_column(self, line: int, column: int) -> int:
        """The original text's column for a column of the normalised text (lines are unchanged)."""
        anchors = self.column_anchors.get(line)
        if not anchors:
            return column
        i = bisect_right([a[0] for a in anchors], column) - 1
        if i < 0:
            return column
        new_start, new_end, old_col = anchors[i]
        if column < new_end:  # inside the ASCII form of one symbol: the symbol's column
            return old_col
        return old_col + 1 + (column - new_end)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def normalise(text: str) -> Normalised:
    """Replace Unicode operators outside strings and comments; keep every newline where it was."""
    out: list[str] = []
    anchors: dict[int, list[tuple[int, int, int]]] = {}
    replacements = 0
    line, col_old, col_new = 1, 1, 1  # 1-based positions in the original / the normalised text
    comment_depth = 0  # nesting of (* ... *)
    in_line_comment = in_string = False
    i, n = 0, len(text)

    def emit(chunk: str, consumed: int) -> None:
        nonlocal col_old, col_new
        out.append(chunk)
        col_old += consumed
        col_new += len(chunk)

    while i < n:
        ch = text[i]
        two = text[i:i + 2]
        if ch == "\n":
            out.append(ch)
            line, col_old, col_new = line + 1, 1, 1
            in_line_comment = False
            in_string = False  # TLA+ strings do not span lines; never let a stray quote swallow the file
            i += 1
            continue
        if in_line_comment:
            emit(ch, 1)
            i += 1
            continue
        if comment_depth:
            if two == "(*":
                comment_depth += 1
                emit(two, 2)
                i += 2
            elif two == "*)":
                comment_depth -= 1
                emit(two, 2)
                i += 2
            else:
                emit(ch, 1)
                i += 1
            continue
        if in_string:
            if ch == "\\" and i + 1 < n and text[i + 1] != "\n":
                emit(two, 2)
                i += 2
                continue
            if ch == '"':
                in_string = False
            emit(ch, 1)
            i += 1
            continue
        if ch == '"':
            in_string = True
            emit(ch, 1)
            i += 1
            continue
        if two == "\\*":
            in_line_comment = True
            emit(two, 2)
            i += 2
            continue
        if two == "(*":
            comment_depth = 1
            emit(two, 2)
            i += 2
            continue
        ascii_form = SYMBOLS.get(ch)
        if ascii_form is None:
            emit(ch, 1)
            i += 1
            continue
        # "∀x" must become "\A x", not "\Ax": pad word-like operators on the side that touches a word
        # (on the left only for readability: "x\in" would lex as well)
        if ascii_form[-1].isalpha() and i + 1 < n and _is_word_char(text[i + 1]):
            ascii_form += " "
        if (ascii_form[0].isalpha() or ascii_form[0] == "\\") and out and out[-1] and _is_word_char(out[-1][-1]):
            ascii_form = " " + ascii_form
        anchors.setdefault(line, []).append((col_new, col_new + len(ascii_form), col_old))
        emit(ascii_form, 1)
        replacements += 1
        i += 1
    return Normalised(text="".join(out), replacements=replacements, column_anchors=anchors)


def to_ascii(text: str) -> str:
    """The normalised text only (see ``normalise``)."""
    return normalise(text).text
