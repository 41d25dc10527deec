"""Word-level ROUGE-L's tokens: the memo in front of the Porter stemmer gives rouge-score's tokens exactly."""

from __future__ import annotations

from rouge_score import rouge_scorer, tokenizers

from sysmo.evals.metrics import text

MODELS = [
    "package Vehicles { part def Engine { attribute cylinders : Integer; } part def Wheels; }",
    "part def Engine { attribute cylinders; attribute cylinder; } // engines running, generalization",
    "requirement def MassRequirement { doc /* The vehicle's mass shall be below 2000 kg. */ }",
]


def test_word_tokens_are_rouge_scores_own_also_when_words_repeat() -> None:
    plain = tokenizers.DefaultTokenizer(use_stemmer=True)
    for model in MODELS + MODELS:  # the second pass is answered from the memo
        assert text.word_tokens(model) == plain.tokenize(model)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    assert text.rouge_l_word(MODELS[0], MODELS[1]) == scorer.score(MODELS[0], MODELS[1])["rougeL"].fmeasure
