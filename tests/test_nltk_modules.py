"""NLTK's BLEU and Porter stemmer load without ``import nltk`` (and its SciPy), and give NLTK's own numbers."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import json, sys
from sysmo.evals.metrics import text
ours = [text.bleu_paper("part def Car { part engine ; }", "part def Car { part wheel ; }"),
        text.corpus_bleu_paper(["a b c d e"], ["a b c d f"]), text.word_tokens("Running engines quickly")]
light = sorted(m for m in sys.modules if m == "nltk" or m.startswith(("nltk.", "scipy.stats")))
import nltk  # the whole package, as any other code of the process would import it
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from rouge_score import tokenizers
smooth = SmoothingFunction().method3
theirs = [sentence_bleu([["part", "def", "Car", "{", "part", "engine", ";", "}"]],
                        ["part", "def", "Car", "{", "part", "wheel", ";", "}"], smoothing_function=smooth),
          corpus_bleu([[["a", "b", "c", "d", "e"]]], [["a", "b", "c", "d", "f"]], smoothing_function=smooth),
          tokenizers.DefaultTokenizer(use_stemmer=True).tokenize("Running engines quickly")]
print(json.dumps({"ours": ours, "theirs": theirs, "light": light, "full": hasattr(nltk, "download")
                  and nltk.translate.bleu_score.sentence_bleu is sentence_bleu}))
"""


def test_scoring_text_loads_two_nltk_modules_and_a_later_import_nltk_is_whole() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["ours"] == found["theirs"] and found["ours"][2] == ["run", "engin", "quickli"]
    # while scoring: none of NLTK's package init (no nltk.corpus, no SciPy statistics), and nothing left behind
    assert found["light"] == [] and found["full"]


def test_listing_nltk_modules_is_safe_while_another_thread_imports() -> None:
    """Scoring runs in worker threads while other threads import modules: reading ``sys.modules`` must not
    fail with "dictionary changed size during iteration" (it did, once, in a replay run's scoring)."""
    import threading

    from sysmo.evals.metrics import nltk_modules

    stop = threading.Event()

    def churn() -> None:  # what concurrent imports do to sys.modules: entries come, and some go again
        added: list[str] = []
        while not stop.is_set():
            added.append(f"_sysmo_test_churn_{len(added)}")
            sys.modules[added[-1]] = sys
            if len(added) == 16:
                for name in added:
                    del sys.modules[name]
                added.clear()
        for name in added:
            del sys.modules[name]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can, so the two interleave
    # iterating sys.modules itself (the bug) failed within 12 to 93 listings in 40 tries of this loop (485 to 3571
    # modules loaded); 300 listings keep a wide margin, each one slow as the two threads hand the GIL to and fro
    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        for _ in range(300):
            nltk_modules._nltk_modules()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
