"""NLTK's own BLEU and Porter stemmer modules, loaded without running ``nltk/__init__.py``.

``import nltk`` imports nearly all of NLTK, SciPy's statistics among it: about 3 s of CPU in every process that
scores a text metric (each ``sysmo run`` scoring SysML, each process of ``sysmo reproduce``'s pool), for two small
modules. ``light_imports()`` puts bare package objects for ``nltk``, ``nltk.translate`` and ``nltk.stem`` in
``sys.modules`` while the block imports what it needs (``nltk.translate.bleu_score``, rouge-score's tokenizers
and their ``nltk.stem.porter``), so only those files and the few NLTK modules they import run (about 0.1 s).
The code is NLTK's, unchanged: the same files, the same functions, the same numbers.

Afterwards every ``nltk`` entry the block added leaves ``sys.modules`` again: the caller keeps the modules it
holds, and a later ``import nltk`` anywhere in the process loads the whole package as usual. If NLTK is already
imported, the block changes nothing.

>>> with light_imports():
...     from nltk.translate import bleu_score
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from collections.abc import Iterator

BARE_PACKAGES = ("nltk", "nltk.translate", "nltk.stem")
_lock = threading.Lock()


def _nltk_modules() -> set[str]:
    # a snapshot first (one C call, atomic under the GIL): other threads import while a scoring thread reads
    return {name for name in list(sys.modules) if name == "nltk" or name.startswith("nltk.")}


@contextlib.contextmanager
def light_imports() -> Iterator[None]:
    """Imports in the block find NLTK's packages bare (their ``__init__`` not run); see the module doc."""
    with _lock:
        if "nltk" in sys.modules:
            yield
            return
        before = _nltk_modules()
        for name in BARE_PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is None:
                raise ModuleNotFoundError(f"No module named {name!r}: pip install nltk", name=name)
            sys.modules[name] = importlib.util.module_from_spec(spec)
        try:
            yield
        finally:
            for name in _nltk_modules() - before:
                del sys.modules[name]
