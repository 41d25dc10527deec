"""True/false scoring options arrive as bools (Python, YAML) or as text (``--option key=false`` on the command
line): text is read as the word it is, never by Python's truthiness (``bool("false")`` is True)."""

from __future__ import annotations

import pytest

from sysmo.errors import ConfigError
from sysmo.evals.cascade import ScoringContext


@pytest.mark.parametrize("text", ["false", "FALSE", " no ", "0", "off"])
def test_false_words_are_false(text: str) -> None:
    assert ScoringContext(options={"text.bertscore": text}).flag("text.bertscore", True) is False


@pytest.mark.parametrize("text", ["true", "Yes", "1", "on"])
def test_true_words_are_true(text: str) -> None:
    assert ScoringContext(options={"text.bertscore": text}).flag("text.bertscore", False) is True


def test_bools_and_the_default_pass_through() -> None:
    assert ScoringContext(options={"x": False}).flag("x", True) is False
    assert ScoringContext(options={}).flag("x", True) is True
    assert ScoringContext(options={}).flag("x", False) is False


def test_other_text_names_the_option() -> None:
    with pytest.raises(ConfigError, match="antipatterns.inherit_container_edges"):
        ScoringContext(options={"antipatterns.inherit_container_edges": "maybe"}).flag(
            "antipatterns.inherit_container_edges", True
        )
