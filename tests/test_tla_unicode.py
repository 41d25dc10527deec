"""Unicode TLA+ operators are rewritten to ASCII outside strings and comments, lines and columns kept traceable."""

from __future__ import annotations

import pytest

from sysmo.tools.tla import sany
from sysmo.tools.tla.unicode import STANDARD, normalise, to_ascii


@pytest.mark.parametrize(("unicode", "ascii_text"), [
    ("Init ≜ x = 0", "Init == x = 0"),
    ("∀ i ∈ S : i ∉ T", "\\A i \\in S : i \\notin T"),
    ("∃x∈S: x ≠ 0", "\\E x \\in S: x # 0"),
    ("A ∪ B ∩ C ⊆ D", "A \\cup B \\cap C \\subseteq D"),
    ("p ∧ q ∨ ¬r ⇒ s ≡ t", "p /\\ q \\/ ~r => s <=> t"),
    ("x ≤ y ∧ y ≥ z", "x <= y /\\ y >= z"),
    ("[i ∈ S ↦ ⟨i, 1⟩]", "[i \\in S |-> <<i, 1>>]"),
    ("[S → T]", "[S -> T]"),
    ("□[Next]_v ∧ ◇P ∧ P ↝ Q", "[][Next]_v /\\ <>P /\\ P ~> Q"),
    ("S × T", "S \\X T"),
    ("s ∘ t", "s \\o t"),
    ("x′ = x + 1", "x' = x + 1"),
    ("A ⊂ B ∧ B ⊃ A ∧ B ⊇ A", "A \\subset B /\\ B \\supset A /\\ B \\supseteq A"),
    ("S = ∅", "S = {}"),
])
def test_operators_become_their_ascii_forms(unicode: str, ascii_text: str) -> None:
    assert to_ascii(unicode) == ascii_text


def test_every_symbol_of_the_standard_table_is_replaced_by_ascii() -> None:
    text = " ".join(STANDARD)
    assert to_ascii(text).isascii()


def test_strings_and_comments_are_left_untouched() -> None:
    text = 'Msg == "a → b" \\* ∀ in a line comment\n(* ∈ nested (* ∪ *) still ∩ *) x ∈ S'
    out = to_ascii(text)
    assert '"a → b"' in out
    assert "\\* ∀ in a line comment" in out
    assert "(* ∈ nested (* ∪ *) still ∩ *)" in out
    assert out.endswith("x \\in S")


def test_escaped_quote_does_not_end_a_string() -> None:
    assert to_ascii('"say \\"∀\\"" ∧ TRUE') == '"say \\"∀\\"" /\\ TRUE'


def test_newlines_are_never_added_or_removed() -> None:
    text = "A ≜\n  ∀ x ∈ S :\n    x ≠ ⟨⟩\n"
    assert to_ascii(text).count("\n") == text.count("\n")


def test_columns_map_back_to_the_original_text() -> None:
    result = normalise("Init ≜ ∀x∈S : y")  # y is at column 15 of the original
    normalised_column = result.text.index("y") + 1
    assert normalised_column != 15
    assert result.original_column(1, normalised_column) == 15
    assert result.original_column(2, 4) == 4  # lines without replacements are unchanged


UNICODE_SPEC = """---- MODULE Uni ----
EXTENDS Naturals, Sequences
CONSTANT S
VARIABLE x
Init ≜ x ∈ S
Next ≜ ∃ v ∈ S : x′ = v ∧ v ≠ x
Safe ≜ ∀ a, b ∈ S : a ≤ b ∨ b ≤ a
Pairs ≜ {⟨a, b⟩ : a ∈ S, b ∈ S \\ {x}} ∪ ∅
Spec ≜ Init ∧ □[Next]_x
====
"""


def test_unicode_spec_passes_sany_after_normalisation_and_fails_without() -> None:
    normalised = sany.check(UNICODE_SPEC)
    assert normalised.outcome == "ok", normalised.summary()
    assert normalised.details["unicode_replacements"] > 10

    raw = sany.check(UNICODE_SPEC, unicode_to_ascii=False)
    assert raw.outcome == "failed"
    assert raw.errors[0].line == 5 and raw.errors[0].code == "lexical"


def test_error_columns_refer_to_the_text_as_written() -> None:
    text = "---- MODULE Col ----\nVARIABLE x\nInit ≜ ∀ a ∈ {1} : a = zz\n====\n"
    result = sany.check(text)
    assert result.outcome == "failed"
    error = result.errors[0]
    assert (error.line, error.column) == (3, text.splitlines()[2].index("zz") + 1)
