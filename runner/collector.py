"""The interpreter's cyclic garbage collector while a run's attempts execute (``fewer_collections``).

An attempt allocates tens of thousands of container objects (LangGraph's machinery of every step, pydantic
models, events), nearly all of them freed at once by reference counting. With CPython's default threshold (a
collection after 700 net allocations) the collector still ran every few attempts, and a full collection every
few hundred, each one traversing every object the process holds (imported libraries, compiled graphs, the
run's tasks: about 130k objects): about 0.9 ms of a harness-only attempt's 9 ms of CPU (``speed/scale.py``,
timed with ``gc.callbacks``). ``fewer_collections`` moves what exists when the run starts into the permanent
generation (``gc.freeze``: never traversed again) and raises the youngest generation's threshold, so cyclic
garbage is still collected, just rarely (0.04 ms per attempt, the same peak memory).

A process that already holds frozen objects when the block starts (an enclosing ``fewer_collections``, or a host
that froze its own start-up, as the test suite's processes do: ``tests/conftest.py``) keeps them frozen: the block
then only raises the threshold, and neither collects everything first (a full collection of a test process's 600k
objects took 0.4-0.9 s per run) nor unfreezes, at its end, what it did not freeze.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # net allocations of container objects between two collections of the youngest generation


@contextmanager
def fewer_collections(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """In the block: the objects that exist at its start frozen (``gc.freeze``; left as they are where some already
    are), the youngest generation collected after ``young`` net allocations (or the current threshold, if higher);
    both restored at its end."""
    previous = gc.get_threshold()
    freezes = gc.get_freeze_count() == 0
    if freezes:
        gc.collect()  # what is garbage now is freed, not frozen
        gc.freeze()
    gc.set_threshold(max(previous[0], young), *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if freezes:
            gc.unfreeze()
