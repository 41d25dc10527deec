"""Where the published benchmark data lives: the data directory, one folder per family, and where each comes from.

>>> root = resolve_data_dir(None)          # --data-dir, else SYSMO_DATA_DIR, else config ``data_dir``
>>> dataset_dir(root, "sysmbench")         # DataMissingError naming the path and the upstream if absent
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from sysmo.errors import DataMissingError

DATA_DIR_ENV = "SYSMO_DATA_DIR"
SOURCES_DIR_ENV = "SYSMO_SOURCES_DIR"


class Dataset(BaseModel):
    """One published benchmark family: the folder it occupies under the data directory and its origin."""

    family: str
    folder: str
    upstream: str
    marker: str  # a file or folder whose presence means the dataset is there
    env: str | None = None  # an environment variable naming the family's folder directly (wins over the data dir)

    def override(self) -> Path | None:
        value = os.environ.get(self.env) if self.env else None
        return Path(value).expanduser() if value else None

    def path(self, data_dir: Path | None) -> Path:
        override = self.override()
        if override is not None:
            return override
        if data_dir is None:
            raise DataMissingError(f"{self.family}: no benchmark data directory is set")
        return data_dir / self.folder


DATASETS: dict[str, Dataset] = {
    d.family: d
    for d in (
        Dataset(
            family="sysmobench",
            folder="sysmobench",
            upstream="https://github.com/specula-org/SysMoBench (snapshot 7bae250; tasks, invariant templates, pgo/)",
            marker="tasks",
        ),
        Dataset(
            family="sysmbench",
            folder="sysmbench",
            upstream="https://github.com/jdm4pku/DesignBench (dataset/sysml; staged as sysmbench.jsonl + samples/)",
            marker="sysmbench.jsonl",
        ),
        Dataset(
            family="oodeval",
            folder="oodeval",
            upstream=(
                "the OODEval paper's authors (the 50 tasks are not public); put tasks in the format documented "
                "in sysmo.benchmarks.oodeval"
            ),
            marker=".",
        ),
        Dataset(
            family="r2abench",
            folder="r2abench",
            upstream=(
                "a checkout of github.com/luuquangkhai9/R2ABench (Dataset/E-R2A/<JAVA|Python>/<project>/ with AD/ad.puml; "
                "Output/ holds the published predictions), or flattened <project>/<project>_E.md + ad.puml"
            ),
            marker=".",
            env="SYSMO_R2ABENCH_DIR",
        ),
        Dataset(
            family="ardoco",
            folder="ardoco",
            upstream="https://github.com/ArDoCo/Benchmark (commit 9444c81; one folder per project)",
            marker=".",
        ),
    )
}


def _from_settings(field: str) -> Path | None:
    from sysmo.config import settings

    value = getattr(settings(), field, None)
    return Path(value) if value else None


def resolve_data_dir(explicit: Path | str | None = None) -> Path | None:
    """The data directory: ``explicit`` (``--data-dir``), else ``$SYSMO_DATA_DIR``, else config ``data_dir``; None if unset.

    The path is not checked here; :func:`require_data_dir` and :func:`dataset_dir` do that.
    """
    if explicit:
        return Path(explicit).expanduser()
    # the environment is read directly because settings() is cached for the process
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return _from_settings("data_dir")


def require_data_dir(explicit: Path | str | None = None) -> Path:
    """The data directory, which must exist; otherwise a DataMissingError saying how to set it."""
    data_dir = resolve_data_dir(explicit)
    if data_dir is None:
        raise DataMissingError(
            "no benchmark data directory is set: pass --data-dir DIR, set SYSMO_DATA_DIR, or set data_dir "
            f"in the config file (expected sub-folders: {', '.join(d.folder for d in DATASETS.values())})"
        )
    if not data_dir.is_dir():
        raise DataMissingError(
            f"benchmark data directory {data_dir} does not exist: pass --data-dir, set SYSMO_DATA_DIR or "
            "data_dir in the config to the folder holding sysmobench/, sysmbench/, ardoco/, oodeval/, r2abench/"
        )
    return data_dir


def dataset_present(data_dir: Path | None, family: str) -> bool:
    if family not in DATASETS:
        return False
    dataset = DATASETS[family]
    if data_dir is None and dataset.override() is None:
        return False
    return (dataset.path(data_dir) / dataset.marker).exists()


def dataset_dir(data_dir: Path | None, family: str) -> Path:
    """The folder of one family under ``data_dir``; a DataMissingError naming the expected path and origin if absent."""
    dataset = DATASETS[family]
    override = dataset.override()
    if override is not None:
        if not (override / dataset.marker).exists():
            raise DataMissingError(f"{family}: ${dataset.env} names {override}, which does not exist")
        return override
    if data_dir is None:
        raise DataMissingError(
            f"{family}: no benchmark data directory is set (pass --data-dir, set SYSMO_DATA_DIR or data_dir in the "
            f"config); the data comes from {dataset.upstream}"
        )
    if not dataset_present(data_dir, family):
        raise DataMissingError(
            f"{family}: dataset not found at {dataset.path(data_dir)} (expected {dataset.marker!r} there); "
            f"the data comes from {dataset.upstream}"
        )
    return dataset.path(data_dir)


def resolve_sources_dir(explicit: Path | str | None = None) -> Path | None:
    """Where users keep checkouts of the modelled systems (``<dir>/<task>``): option, ``$SYSMO_SOURCES_DIR``, config."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(SOURCES_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return _from_settings("sources_dir")


def configured_checkouts() -> dict[str, Path]:
    """Per-task checkout paths from the config (``source_checkouts: {etcd: /src/raft}``); empty if none."""
    from sysmo.config import settings

    mapping = getattr(settings(), "source_checkouts", None) or {}
    return {name: Path(path).expanduser() for name, path in mapping.items()}
