"""Experiments: work units, executors (local asyncio, Ray), budget caps and stop handling, summary, store writes.

Modules, lowest first (none imports one below it in this list):

- ``config``: ``ExperimentConfig``, ``Budget``
- ``units``: ``WorkUnit`` (its attempt id), the expansion of a config into units, task selection
- ``progress``: the progress bar or progress lines
- ``summary``: ``RunSummary``
- ``unit_runner``: ``UnitRunner``, one unit end to end (attempt, score) with shared clients and tool slots
- ``budget``: ``Spending`` (caps) and ``StopControl`` (Ctrl-C)
- ``results``: ``ResultWriter``, the run's one writer thread (finished attempts' steps, files, records
  and scores, batched)
- ``executor``: the ``Executor`` protocol and ``RunState``, what every executor shares
- ``local_executor``, ``ray_executor``: the two executors
- ``experiment``: ``run_experiment``
- ``replay``: ``sysmo replay ATTEMPT`` (the commands ``sysmo run/trace/replay/report`` are ``cli/runner.py``)
"""

from sysmo.runner.config import CONTROL_MODELS, Budget, ExperimentConfig
from sysmo.runner.experiment import run_experiment
from sysmo.runner.summary import RunSummary, SkippedPair
from sysmo.runner.unit_runner import UnitRunner
from sysmo.runner.units import WorkUnit, expand, load_selected_tasks, missing_inputs, task_meta

__all__ = ["CONTROL_MODELS", "Budget", "ExperimentConfig", "RunSummary", "SkippedPair", "UnitRunner", "WorkUnit", "expand",
           "load_selected_tasks", "missing_inputs", "run_experiment", "task_meta"]
