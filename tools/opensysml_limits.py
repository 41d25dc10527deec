"""The OpenSysML kernel's time limit per request when published predictions are scored in bulk (no imports: set
by ``sysmo reproduce`` as it starts, read by ``sysmo.tools.sysml.kernel`` when its shared kernel starts)."""

from __future__ import annotations

import os

TIMEOUT_ENV = "SYSMO_OPENSYSML_TIMEOUT_S"  # the shared kernel's time limit per request (batch scoring)
# Re-scoring published predictions in bulk (``sysmo reproduce``, speed/designbench_scoring_speed.py): seven of
# DesignBench's 10,872 predictions hang OpenSysML's parser (no answer in 150 s); the slowest one that answers took
# 11.8 s on a loaded 2-core machine (median 50-60 ms, p95 under 0.3 s). 20 s keeps every answer and costs each hang
# a third of the interactive limit; a prediction without a verdict is listed, never counted invalid.
BATCH_REQUEST_TIMEOUT_S = 20.0


def use_batch_timeout() -> float:
    """Give the shared kernel the batch limit unless ``$SYSMO_OPENSYSML_TIMEOUT_S`` already sets one; the limit."""
    os.environ.setdefault(TIMEOUT_ENV, str(BATCH_REQUEST_TIMEOUT_S))
    return float(os.environ[TIMEOUT_ENV])
