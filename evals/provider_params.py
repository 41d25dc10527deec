"""Arm factors a provider never received differently: a paired comparison of identical conditions is left out.

litellm drops what a provider does not take (``drop_params``; ``llm.sent``), so a temperature ablation on
``openai/gpt-5`` (which takes only temperature 1) sends the same request in every arm. Each model call records what
its provider received (``LLMCallSummary.sent_params``); when every arm of a factor sent the same value to a model
(or none), the factor had no effect on that model: the report says so, naming litellm's reason, and its paired
table leaves out the comparisons that would test identical conditions (the other rows' p-values are adjusted
without them). ``sysmo compare`` does the same across experiments (``unreceived_across``).

>>> notes = unreceived_factors(store, experiment_id)
>>> notes[0].note()
'temperature had no effect on openai/gpt-5: its provider received no temperature in any arm (0.2, 0.7); ...'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel

from sysmo.evals.paired import Correction, PairedRow, adjusted
from sysmo.store import Store

# an arm factor that sets a request parameter -> that parameter (the others act in the harness: feedback, rounds)
PROVIDER_FACTORS: dict[str, str] = {"temperature": "temperature"}
NOT_SENT = "none"  # what a provider received of a dropped parameter


class UnreceivedFactor(BaseModel):
    """One factor whose levels one model's provider received as one value."""

    factor: str
    model: str
    levels: list[str]  # the levels the arms asked for
    received: str  # the one value the provider received in every arm ("none": dropped)
    reason: str  # litellm's reason for dropping it ("" when it was sent, the same in every arm)

    def note(self) -> str:
        """``temperature had no effect on openai/gpt-5: its provider received no temperature in any arm (0.2, 0.7);
        litellm: ...``"""
        parameter = PROVIDER_FACTORS[self.factor]
        received = (f"no {parameter} in any arm" if self.received == NOT_SENT
                    else f"{parameter} {self.received} in every arm")
        why = f"; litellm: {self.reason.rstrip('.')}" if self.reason else ""
        return (f"{self.factor} had no effect on {self.model}: its provider received {received} "
                f"({', '.join(self.levels)}){why}. The paired rows of {self.factor} on {self.model} are left out "
                f"(they would compare identical requests).")


def _received(sent_params: dict | None, parameter: str) -> tuple[str, str] | None:
    """(value received, litellm's reason when dropped) of ``parameter`` in one call's record; None: not known."""
    if not sent_params:
        return None
    if parameter in (sent_params.get("sent") or {}):
        return str(sent_params["sent"][parameter]), ""
    dropped = sent_params.get("dropped") or {}
    return (NOT_SENT, str(dropped[parameter])) if parameter in dropped else None


def unreceived_factors(store: Store, experiment_id: str) -> list[UnreceivedFactor]:
    """The (factor, model) pairs of the experiment whose arms differ in the factor while the model's provider
    received one value in all of them (the generator's calls of the experiment's own attempts, forks left out)."""
    found: list[UnreceivedFactor] = []
    for factor in PROVIDER_FACTORS:
        varied = store.query(f"SELECT COUNT(DISTINCT {factor}) AS n FROM attempts WHERE experiment_id = ? "
                             "AND parent_attempt_id IS NULL", (experiment_id,))
        if not varied or varied[0]["n"] < 2:
            continue  # one level: nothing to compare (and no attempt's JSON to read)
        found += unreceived_in(factor, received_calls(store, experiment_id, factor))
    return found


def unreceived_across(experiments: Sequence[tuple[Store, str, Mapping[str, Any]]],
                      factors: Sequence[str]) -> list[UnreceivedFactor]:
    """As ``unreceived_factors``, across experiments (``sysmo compare``): the (factor, model) pairs whose levels
    differ across ``experiments`` (each a store, its experiment id and its recorded settings, whose value of the
    factor is the level of an attempt that records none) while the model's provider received one value in all."""
    return [u for factor in factors if factor in PROVIDER_FACTORS
            for u in unreceived_in(factor, [call for store, experiment_id, settings in experiments
                                            for call in received_calls(store, experiment_id, factor,
                                                                       settings.get(factor))])]


def received_calls(store: Store, experiment_id: str, factor: str,
                   default: object = None) -> list[tuple[str, str, tuple[str, str]]]:
    """(model, level of ``factor``, (value received, litellm's reason)) of every generator call of the experiment's
    own attempts whose record says what its provider received (``default``: the level of an attempt that records
    none)."""
    rows = store.query(
        f"SELECT a.model AS model, a.{factor} AS level, json_extract(c.value, '$.sent_params') AS sent "
        "FROM attempts a, json_each(a.attempt_json, '$.rounds') r, json_each(r.value, '$.llm_calls') c "
        "WHERE a.experiment_id = ? AND a.parent_attempt_id IS NULL "
        "AND json_extract(c.value, '$.role') = 'generator'", (experiment_id,))
    calls = []
    for row in rows:
        got = _received(json.loads(row["sent"]) if row["sent"] else None, PROVIDER_FACTORS[factor])
        if got is None:  # a call without a record (an offline provider, a call that failed): it says nothing
            continue
        level = row["level"] if row["level"] is not None else default
        if isinstance(level, (list, tuple)) and len(level) == 1:  # a setting of one arm: [0.2]
            level = level[0]
        calls.append((str(row["model"]), f"{level:g}" if isinstance(level, float) else str(level), got))
    return calls


def unreceived_in(factor: str, calls: Sequence[tuple[str, str, tuple[str, str]]]) -> list[UnreceivedFactor]:
    """The models of ``calls`` (``received_calls``) asked for more than one level of ``factor`` whose provider
    received one value."""
    levels: dict[str, set[str]] = {}
    received: dict[str, dict[str, str]] = {}  # model -> value received -> a reason
    for model, level, (value, why) in calls:
        levels.setdefault(model, set()).add(level)
        received.setdefault(model, {}).setdefault(value, why)
    found = []
    for model, asked in sorted(levels.items()):
        values = received[model]
        if len(asked) > 1 and len(values) == 1:
            value, why = next(iter(values.items()))
            found.append(UnreceivedFactor(factor=factor, model=model, levels=sorted(asked, key=_order),
                                          received=value, reason=why))
    return found


def _order(level: str) -> tuple[float, str]:
    try:
        return float(level), level
    except ValueError:
        return float("inf"), level


def without_unreceived(rows: Sequence[PairedRow], unreceived: Sequence[UnreceivedFactor], frame: pd.DataFrame,
                       correction: Correction = "holm") -> list[PairedRow]:
    """``rows`` without the comparisons of a factor on a model whose provider received it as one value, the other
    rows' p-values adjusted again among themselves. A row's model is the one it holds fixed, else the family's
    only model (``frame``: the attempts the rows were computed from)."""
    if not unreceived:
        return list(rows)
    moot = {(u.factor, u.model) for u in unreceived}

    def models_of(row: PairedRow) -> set[str]:
        held = dict(part.split("=", 1) for part in row.held_fixed.split(", ") if "=" in part)
        if "model" in held:
            return {held["model"]}
        return set(frame.loc[frame["kind"] == row.family, "model"].astype(str)) if not frame.empty else set()

    kept = [r for r in rows if not (models := models_of(r)) or not all((r.factor, m) in moot for m in models)]
    return adjusted(kept, correction) if len(kept) != len(rows) else list(rows)
