"""Ablation arms: the settings one experiment may vary (``ARM_FACTORS``), one combination of them (``Arm``),
and the per-sample seed that every arm of a (task, sample) shares.

An experiment runs agents x models x tasks x samples x arms; an arm is one value of every factor. A factor
is declared here once: its type and default, its ``sysmo run`` flag, and whether it acts only after the
first reply (``after_first_reply``: arms that differ only in such factors send the same first request, so
the LLM cache serves them one first reply). ``ExperimentConfig``, ``sysmo run``, the work units, the attempt
records and the store's columns all read this table, so a new knob is one entry here (and the code that
reads it from ``AgentContext``).

>>> arm = Arm.of({"feedback": "full", "strategy": None, "temperature": 0.2, "max_rounds": 3})
>>> arm.label
'feedback=full,strategy=default,temperature=0.2,max_rounds=3'
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

FeedbackLevel = Literal["none", "bare", "diagnostics", "full"]
StrategyName = Literal["zero-shot", "few-shot", "cot", "grammar"]
DEFAULT_WORD = "default"  # how a None value (sysmo's own choice) is written in a label or on the command line


@dataclass(frozen=True)
class ArmFactor:
    """One setting an experiment may give several values (each value makes arms)."""

    name: str
    value_type: Any  # the type of one value (pydantic validates it)
    default: Any
    after_first_reply: bool  # True: the setting changes nothing before the first reply
    flag: str  # its `sysmo run` option
    sql_type: str  # the attempts table's column type
    help: str
    _adapter: TypeAdapter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_adapter", TypeAdapter(self.value_type))

    def parse(self, value: Any) -> Any:
        """One value, validated (the words ``default`` and ``null`` stand for None where None is allowed: the
        agent's own prompt, the model's own temperature)."""
        if isinstance(value, str):
            value = value.strip()
            if value.lower() in (DEFAULT_WORD, "null") and self._accepts_none():
                value = None
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise ValueError(f"{self.flag} {value!r} is not allowed: {exc.errors()[0]['msg']}") from exc

    def _accepts_none(self) -> bool:
        try:
            self._adapter.validate_python(None)
        except ValidationError:
            return False
        return True

    def text(self, value: Any) -> str:
        return DEFAULT_WORD if value is None else str(value)


ARM_FACTORS: dict[str, ArmFactor] = {f.name: f for f in (
    ArmFactor("feedback", FeedbackLevel, "diagnostics", after_first_reply=True, flag="--feedback", sql_type="TEXT",
              help="Repair feedback: none (one shot), bare (\"check failed\" only), diagnostics (default: "
                   "line-anchored messages), full (plus TLC output/trace diffs)."),
    ArmFactor("strategy", StrategyName | None, None, after_first_reply=False, flag="--strategy", sql_type="TEXT",
              help="Prompting strategy of the first request: zero-shot, few-shot, cot or grammar (SysML: "
                   "SysMBench's published templates, the grammar inserted); default: sysmo's own task prompt."),
    ArmFactor("temperature", Annotated[float, Field(ge=0)] | None, 0.2, after_first_reply=False,
              flag="--temperature", sql_type="REAL", help="Generator temperature; default 0.2."),
    ArmFactor("max_rounds", Annotated[int, Field(ge=0)], 3, after_first_reply=True, flag="--max-rounds",
              sql_type="INTEGER", help="Repair rounds after the first answer; default 3."),
)}


def split_values(raw: Any) -> list[Any]:
    """A factor's values from YAML or flags: a scalar, a comma-separated string, or a list of either."""
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    values: list[Any] = []
    for item in items:
        if isinstance(item, str):
            values.extend(part for part in item.split(",") if part.strip())
        else:
            values.append(item)
    return values


def factor_values(name: str, raw: Any) -> list[Any]:
    """The validated values of factor ``name``, in the order given, without repeats (at least one)."""
    factor = ARM_FACTORS[name]
    values: list[Any] = []
    for value in (factor.parse(v) for v in split_values(raw)):
        if value not in values:
            values.append(value)
    return values or [factor.default]


@dataclass(frozen=True)
class Arm:
    """One value of every factor (``values`` in ``ARM_FACTORS``'s order)."""

    values: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, values: dict[str, Any]) -> Arm:
        return cls(tuple((name, values.get(name, factor.default)) for name, factor in ARM_FACTORS.items()))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    def __getitem__(self, name: str) -> Any:
        return dict(self.values)[name]

    @property
    def label(self) -> str:
        """Every factor's value, e.g. ``feedback=full,strategy=cot,temperature=0.2,max_rounds=3``: the arm's
        stable name in the attempts table, the reports and ``sysmo trace``."""
        return ",".join(f"{name}={ARM_FACTORS[name].text(value)}" for name, value in self.values)

    def key(self, base: Arm) -> str:
        """The factors where this arm differs from the experiment's first arm (``base``): "" for the first arm,
        so an experiment of one arm keeps the attempt ids it had before arms existed, and an arm added later
        (by a resume) never changes the ids of the arms already run."""
        ours, theirs = self.as_dict(), base.as_dict()
        return ",".join(f"{name}={ARM_FACTORS[name].text(ours[name])}" for name in ARM_FACTORS
                        if ours.get(name) != theirs.get(name))

    def shared_first_request(self, other: Arm) -> bool:
        """Whether the two arms send the same first request (they differ only after the first reply)."""
        ours, theirs = self.as_dict(), other.as_dict()
        return all(ARM_FACTORS[name].after_first_reply or ours[name] == theirs[name] for name in ARM_FACTORS)


def short_label(label: str, varied: list[str]) -> str:
    """The part of an arm's ``label`` that names the ``varied`` factors (the rest is the same in every arm)."""
    return ",".join(part for part in label.split(",") if part.split("=", 1)[0] in varied) or label


def expand_arms(lists: dict[str, list[Any]]) -> list[Arm]:
    """Every combination of the factors' values; the first values of every factor make the first arm."""
    names = list(ARM_FACTORS)
    return [Arm(tuple(zip(names, combo))) for combo in itertools.product(*(lists[n] for n in names))]


def sample_seed(experiment_seed: int, task_id: str, sample_index: int) -> int:
    """The seed of one (task, sample): the same for every agent, model and arm, so the arms of a sample are
    asked with the same seed (a 31-bit integer, which every provider that takes a seed accepts)."""
    digest = hashlib.sha256(f"{experiment_seed}|{task_id}|{sample_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
