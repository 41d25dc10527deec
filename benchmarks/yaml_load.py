"""The datasets' YAML files (``task.yaml``, ``invariants.yaml``, OODEval's ``meta.yaml``) read as ``yaml.safe_load``
reads them, through libyaml's C parser where PyYAML was built with it: the same documents (every YAML file of the
starter suite and the published benchmarks compared), about ten times faster (their 69 files 0.43 -> 0.04 s; the
task files are read at every run's start)."""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, with the C parser when there is one; a ``yaml.YAMLError`` for malformed YAML."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader
