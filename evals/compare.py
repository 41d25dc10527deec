"""``sysmo compare EXP_A EXP_B [...]``: the paired analysis (``sysmo.evals.paired``) across experiments.

Attempts of the experiments are paired on (task, sample index) and every factor not compared, exactly as the
arms of one experiment are: two experiments that differ only in their strategy give the numbers one experiment
with both strategies gives. The experiments' recorded settings (``config.yaml``, as stored in results.sqlite)
must differ only in the factors compared; settings that only say how a run was carried out (concurrency,
executor, budget, output folder, the task selection and sample count: pairs are on the tasks and samples both
ran) are not compared. The seed is compared as ``sysmo run --resume`` does: experiments whose ``--seed`` differs
sent other seeds with every model call, so they are refused unless ``--factor seed`` names it (what the seed
changes is then the comparison). Every refusal names the ``sysmo run`` flag of the setting that differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from sysmo.contracts.arms import ARM_FACTORS
from sysmo.errors import AnalysisError
from sysmo.evals.paired import (
    COMPARE_ONLY,
    FACTORS,
    Correction,
    PairedRow,
    Pairing,
    baseline_lines,
    display_tables,
    paired_rows,
    rows_frame,
)
from sysmo.evals.provider_params import UnreceivedFactor, unreceived_across, without_unreceived
from sysmo.evals.tables import DEFAULT_SELECTION_METRIC, attempts_frame
from sysmo.log import get_logger
from sysmo.store import Store

log = get_logger(__name__)

# a recorded setting -> the factor it sets (``seed`` only when named with --factor: see factors_to_compare)
SETTING_FACTOR: dict[str, str] = {"agents": "agent", "models": "model", "feedback": "feedback",
                                  "strategy": "strategy", "temperature": "temperature", "max_rounds": "max_rounds",
                                  "seed": "seed"}
# how a run was carried out, not what it measured; tasks and samples: the pairs are what both ran
NOT_COMPARED = {"id", "output_dir", "concurrency", "tool_concurrency", "executor", "ray_address", "ray_workers",
                "checkpoints", "budget", "data_dir", "sources_dir", "tasks", "samples", "processes"}
# a recorded setting -> the `sysmo run` flag that sets it (a refusal names the flag)
SETTING_FLAG: dict[str, str] = {
    "agents": "--agent", "models": "--model", "helper": "--helper", "judge": "--judge", "seed": "--seed",
    "tool_calling": "--tool-calling",
    "max_tokens": "--max-tokens", "attempt_timeout": "--attempt-timeout", "scoring_mode": "--scoring-mode",
    "score": "--no-score", "scoring": "--similarity or the experiment file's scoring",
    "selection_metric": "the experiment file's selection_metric",
    **{name: factor.flag for name, factor in ARM_FACTORS.items()}}
# factors an attempt record may not carry yet: their level is the experiment's setting
FROM_SETTINGS = {"feedback": "feedback", "strategy": "strategy", "temperature": "temperature",
                 "max_rounds": "max_rounds"}


NO_PAIRS = ("no pairs: no two arms differ in exactly one of the factors compared on a (task, sample) both ran; "
            "compare experiments that differ in one factor at a time")


class Experiment(BaseModel):
    """One compared experiment: its id, folder and recorded settings."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    directory: Path
    config: dict[str, Any]


class Comparison(BaseModel):
    """What ``sysmo compare`` found: the factors compared, the tasks the experiments share, the paired rows."""

    experiments: list[str]
    factors: list[str]
    shared_tasks: int
    rows: list[PairedRow]
    correction: str
    baselines: list[str] = []  # what each factor's levels are compared with (``paired.baseline_lines``)
    unreceived: list[UnreceivedFactor] = []  # factors a model's provider received as one value in every experiment


def _model_name(model: Any) -> str:
    return model if isinstance(model, str) else str((model or {}).get("model", ""))


def setting_value(key: str, value: Any) -> Any:
    """A setting as compared: models by name (the endpoint serving them is not a setting of the experiment),
    lists as tuples."""
    if key == "models":
        return tuple(_model_name(m) for m in value or [])
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), str(v)) for k, v in value.items()))
    return value


# a setting an older record may lack, and the value it ran with
RECORDED_DEFAULT: dict[str, Any] = {"seed": 0}


def tool_calling_of(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Each generator model's role option ``tool_calling`` (``auto`` where unset): how the openhands agent's tool
    calls travel (native or the text protocol, ``llm/tool_calling.py``). Models are compared by name, so this
    option of theirs is a setting of its own: the same model asked another way is not the same condition."""
    return tuple((_model_name(m), str((m.get("tool_calling") if isinstance(m, dict) else None) or "auto"))
                 for m in config.get("models") or [])


def differing_settings(configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The recorded settings whose values are not the same in every experiment (in a stable order); the models'
    ``tool_calling`` options count as the setting ``tool_calling`` (``--tool-calling``)."""
    configs = {name: {**c, "tool_calling": tool_calling_of(c)} for name, c in configs.items()}
    keys = sorted({k for c in configs.values() for k in c} - NOT_COMPARED)
    return [k for k in keys
            if len({repr(setting_value(k, c.get(k, RECORDED_DEFAULT.get(k)))) for c in configs.values()}) > 1]


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _flagged(setting: str) -> str:
    """A setting with the `sysmo run` flag that sets it: ``strategy (--strategy)``."""
    flag = SETTING_FLAG.get(setting)
    return f"{setting} ({flag})" if flag else setting


def factors_to_compare(names: Sequence[str], differing: Sequence[str], named: Sequence[str],
                       seeds: Sequence[Any] = ()) -> list[str]:
    """The factors to compare: those named, else the one setting the experiments differ in. Refuses (one line
    naming the flag) when they differ in a setting that is no factor, in factors not named, or in their seed
    (``seeds``: each experiment's) unless ``seed`` is named."""
    who = _and(list(names))
    known = (*FACTORS, *COMPARE_ONLY)
    unknown = [f for f in named if f not in known]
    if unknown:
        raise AnalysisError(f"unknown factor {_and(unknown)}: name one of {', '.join(known)}")
    other = [k for k in differing if k not in SETTING_FACTOR]
    if other:
        raise AnalysisError(f"{who} differ in {_and([_flagged(k) for k in other])}, which no factor covers "
                            f"({', '.join(known)}): their attempts are not comparable pair by pair")
    if "seed" in differing and "seed" not in named:
        raise AnalysisError(
            f"{who} were run with another --seed ({', '.join(str(s) for s in seeds)}): every model call was sent "
            "another seed, so their attempts are not the same samples (as `sysmo run --resume` refuses a --seed "
            "change); compare experiments run with one --seed, or add --factor seed to compare the seeds")
    varied = [SETTING_FACTOR[k] for k in differing]
    if named:
        extra = [f for f in varied if f not in named]
        if extra:
            raise AnalysisError(f"{who} differ in {_and([_flagged(k) for k in differing])}; name the factor(s) to "
                                f"compare with --factor (not named: {_and(extra)})")
        return list(dict.fromkeys(named))
    if len(varied) > 1:
        raise AnalysisError(f"{who} differ in {_and([_flagged(k) for k in differing])}; name the factor(s) to "
                            "compare with --factor")
    if not varied:
        raise AnalysisError(f"{who} have the same settings; name the factor(s) to compare with --factor")
    return varied


def load_experiment(directory: Path) -> tuple[Experiment, pd.DataFrame]:
    """An experiment's recorded settings and its attempts (not-covered ones left out), each attempt's level of a
    factor its record does not carry taken from the settings."""
    store = Store(directory / "results.sqlite")
    try:
        name = directory.name
        config = store.experiment(name)["config"]
        frame = attempts_frame(store, name)
    finally:
        store.close()
    if not frame.empty:
        frame = frame[frame["status"] != "not_covered"].reset_index(drop=True)
        for factor, key in FROM_SETTINGS.items():
            value = config.get(key)
            if isinstance(value, (str, int, float)) and (factor not in frame.columns or frame[factor].isna().all()):
                frame[factor] = value
        frame["experiment"] = name
        frame["seed"] = config.get("seed", 0)  # the experiment's seed (the factor ``seed``), not the per-sample one
    return Experiment(name=name, directory=directory, config=config), frame


def compare(directories: Sequence[Path], factors: Sequence[str] = (), correction: Correction = "holm",
            pairing: Pairing | None = None) -> Comparison:
    """The paired analysis of the experiments in ``directories`` over ``factors`` (default: the one they differ
    in), each level against its factor's baseline or every pair of levels (``pairing``)."""
    if len(directories) < 2:
        raise AnalysisError("compare needs at least two experiments")
    loaded = [load_experiment(Path(d)) for d in directories]
    experiments = [e for e, _ in loaded]
    names = [e.name for e in experiments]
    if len(set(names)) < len(names):
        raise AnalysisError(f"an experiment is named twice: {', '.join(names)}")
    chosen = factors_to_compare(names, differing_settings({e.name: e.config for e in experiments}), factors,
                                [e.config.get("seed", 0) for e in experiments])
    tasks = [set(frame["task_id"]) if not frame.empty else set() for _, frame in loaded]
    shared = set.intersection(*tasks)
    if not shared:
        raise AnalysisError(f"{_and(names)} share no tasks: nothing to pair")
    frame = pd.concat([f for _, f in loaded], ignore_index=True)
    listed = {"agent": list(dict.fromkeys(str(a) for e in experiments for a in e.config.get("agents") or [])),
              "model": list(dict.fromkeys(_model_name(m) for e in experiments for m in e.config.get("models") or []))}
    headline = {**DEFAULT_SELECTION_METRIC, **(experiments[0].config.get("selection_metric") or {})}
    rows = paired_rows(frame, headline=headline, factors=chosen, listed=listed, correction=correction,
                       pairing=pairing)
    unreceived = unreceived_factors_of(experiments, chosen)
    rows = without_unreceived(rows, unreceived, frame, correction)
    log.info("compare.done", experiments=names, factors=chosen, shared_tasks=len(shared), rows=len(rows),
             unreceived=[u.note() for u in unreceived])
    return Comparison(experiments=names, factors=chosen, shared_tasks=len(shared), rows=rows, correction=correction,
                      baselines=baseline_lines(frame, pairing, chosen, listed), unreceived=unreceived)


def unreceived_factors_of(experiments: Sequence[Experiment], factors: Sequence[str]) -> list[UnreceivedFactor]:
    """The compared factors whose levels a model's provider received as one value in every experiment (what its
    generator calls recorded as sent, ``provider_params``), as the report finds them among one experiment's arms."""
    stores = [Store(e.directory / "results.sqlite") for e in experiments]
    try:
        return unreceived_across([(store, e.name, e.config) for store, e in zip(stores, experiments)], factors)
    finally:
        for store in stores:
            store.close()


def markdown(result: Comparison) -> str:
    """The comparison as Markdown: what was compared, one table per task kind, the method."""
    from sysmo.evals.report import markdown_table

    lines = [f"# sysmo compare: {' vs '.join(result.experiments)}\n",
             f"Factor(s) compared: {', '.join(result.factors)}; tasks shared: {result.shared_tasks}; pairs are "
             "(task, sample index) with every other factor held fixed. Δ is level minus baseline.\n"]
    if result.baselines:
        lines.append(f"baseline: {'; '.join(result.baselines)}\n")
    lines += [f"- {u.note()}\n" for u in result.unreceived]
    if not result.rows and not result.unreceived:  # else the notes above say why rows were left out
        lines.append(f"_({NO_PAIRS})_\n")
    for family, table in display_tables(result.rows, result.correction).items():  # type: ignore[arg-type]
        lines += [f"## {family}\n", markdown_table(table)]
    if result.rows:
        lines.append(f"Method: {result.rows[0].method}. Every number: `paired.csv`; definitions: "
                     "docs/paired-analysis.md.\n")
        from sysmo.evals.glossary import glossary_lines
        from sysmo.evals.report import table_headers

        lines += ["## Glossary\n", *(f"- {line}" for line in glossary_lines(table_headers("\n".join(lines)))), ""]
    return "\n".join(lines)


def write_comparison(result: Comparison, out: Path) -> dict[str, Path]:
    """``paired.csv`` and ``compare.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "paired.csv", "markdown": out / "compare.md"}
    rows_frame(result.rows).to_csv(paths["csv"], index=False)
    paths["markdown"].write_text(markdown(result))
    return paths
