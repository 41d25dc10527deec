"""TLA+ conformance score: the task's recorded traces replayed through TLC against the model.

NDJSON traces go straight to ``sysmo.tools.tla.trace_validation``; PGo (TraceLink) runs are merged into one
trace per run folder by ``sysmo.tools.tla.pgo_trace`` (the program counter and every process-local
variable the logs write, checked at the logged points) and replayed with the task's ``<t>Validate.cfg``
constants. Trace names map to the model's names deterministically when they match; otherwise, when a
helper model is configured, it proposes the rest of the mapping (prompt
``evals/prompts/tla_trace_mapping.md``), which is checked against the model's names before use. The mapping
used is returned with the verdicts. Score = accepted traces / traces.

With ``refinement=True`` every replayed step must also be a step of the model's own next-state relation (found
by ``tla_next_relation``; a visible note when it cannot be found), and ``coverage()`` says how much of what
the traces log the mapping places (``trace_validation.mapping_coverage``). docs/conformance.md.
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TraceSet
from sysmo.errors import LLMError, TaskError
from sysmo.evals.metrics import tla_next_relation
from sysmo.evals.metrics.tla_runtime import ModelConfig
from sysmo.log import get_logger
from sysmo.tools.tla import pgo_trace
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla import trace_validation as tv

log = get_logger(__name__)

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_WALKS_PER_TRACE = tv.DEFAULT_WALKS_PER_TRACE
PROMPT_FILE = "tla_trace_mapping.md"


def task_traces(task: Task) -> TraceSet | None:
    """The traces the model is graded against: the references' traces, else the inputs' traces."""
    for traces in (task.references.traces, task.inputs.traces):
        if traces is not None and traces.files:
            return traces
    return None


def load_traces(traces: TraceSet, validate_cfg: str | None = None) -> list[tv.Trace]:
    """NDJSON: one trace per file. PGo: one trace per run folder (its per-process logs merged), with the
    constants the task's Validate.cfg sets to ``__all_strings`` given the run's logged strings."""
    if traces.format == "pgo":
        folders = sorted({Path(f).parent for f in traces.files})
        strings_for = pgo_trace.all_strings_constants(validate_cfg)
        values = pgo_trace.validate_values(validate_cfg)
        return [pgo_trace.read_pgo_run(folder, strings_for, values) for folder in folders]
    return [tv.read_trace(Path(f)) for f in traces.files]


def replay_cfg(task: Task, traces: TraceSet, config: ModelConfig, declared: set[str] | None = None) -> str:
    """The cfg whose constants the replay uses; for PGo traces, the task's Validate.cfg values win (for the
    ``declared`` constants; the traces' Init lines carry them too, for specs that name them otherwise)."""
    if traces.format == "pgo":
        validate = task.references.extra.get("pgo_validate_cfg")
        text = Path(validate).read_text(encoding="utf-8") if validate else None
        return pgo_trace.validation_cfg(config.text, text, declared)
    return config.text


class HelperMapping:
    """A ``MappingProposer`` backed by the helper role; remembers which model answered."""

    def __init__(self, helper: Any, task_id: str) -> None:
        self.helper = helper
        self.task_id = task_id
        self.model: str | None = None
        self.error: str | None = None

    def prompt(self, request: tv.MappingRequest) -> str:
        template = (
            importlib.resources.files("sysmo.evals.prompts").joinpath(PROMPT_FILE).read_text(encoding="utf-8")
        )
        spec, summary = request.spec, request.traces
        events = "\n".join(
            f"- {name}: {shape.count}x, actor {'yes' if shape.has_actor else 'no'}, args "
            f"{shape.args or '[]'}, e.g. {json.dumps(shape.example, default=str)[:400]}"
            for name, shape in summary.events.items()
        )
        operators = "\n".join(
            f"- {name}: {', '.join(params) or '(none)'}" for name, params in spec.operators.items()
        )
        return template.format(
            module=spec.module,
            variables=", ".join(spec.variables) or "(none)",
            constants=", ".join(spec.constants) or "(none)",
            operators=operators or "(none)",
            events=events or "(none)",
            state_fields=", ".join(summary.state_fields) or "(none)",
            config_keys=", ".join(summary.config_keys) or "(none)",
            draft=request.draft.model_dump_json(indent=2),
            unmatched_events=request.unmatched_events,
            unmatched_fields=request.unmatched_fields,
            unmatched_constants=request.unmatched_constants,
        )

    def __call__(self, request: tv.MappingRequest) -> tv.TraceMapping:
        from sysmo.llm import CallContext

        try:
            response = self.helper.complete(
                [{"role": "user", "content": self.prompt(request)}],
                role="helper",
                temperature=0.0,
                context=CallContext(task_id=self.task_id, purpose="trace_mapping"),
            )
            self.model = response.model
            proposal = response.parse(tv.TraceMapping)
        except LLMError as exc:  # a helper that fails leaves the name-based mapping in place
            self.error = str(exc)
            log.warning("tla_conformance.helper_failed", task=self.task_id, error=str(exc)[:300])
            draft = request.draft.model_copy(deep=True)
            draft.notes.append(f"the helper model gave no usable mapping: {str(exc)[:300]}")
            return draft
        return proposal.model_copy(update={"source": "llm"})


class ConformanceScore(BaseModel):
    result: tv.ConformanceResult
    trace_format: str
    helper_model: str | None = None
    helper_error: str | None = None
    cfg: str = ""
    traces: list[tv.Trace] = []  # the traces replayed (as loaded)
    next_relation: tv.NextRelation | None = None  # what was looked for (found or not), None: not asked for

    def coverage(self) -> tv.MappingCoverage:
        """What the mapping used places of the traces' event names and state fields."""
        return tv.mapping_coverage(self.result.mapping, self.traces)

    @property
    def value(self) -> float:
        return self.result.score

    def first_failure(self) -> dict[str, Any] | None:
        for verdict in self.result.traces:
            if not verdict.accepted:
                return {
                    "trace": verdict.trace,
                    "line": None if verdict.first_failing_event is None else verdict.first_failing_event + 1,
                    "event": verdict.failing_event,
                    "reason": verdict.reason,
                }
        return None


def score(
    artifact: Artifact,
    task: Task,
    config: ModelConfig,
    *,
    helper: Any = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    mapping: tv.TraceMapping | None = None,
    parallel: int | None = None,
    walks_per_trace: int = DEFAULT_WALKS_PER_TRACE,
    refinement: bool = False,
) -> ConformanceScore:
    """Replay every trace of the task; raises ``TaskError`` when the task has none (callers skip first).
    ``refinement``: every step must also be a step of the model's next-state relation (when it is found)."""
    traces = task_traces(task)
    if traces is None:
        raise TaskError(f"{task.id} has no traces to check conformance on")
    validate = task.references.extra.get("pgo_validate_cfg")
    loaded = load_traces(traces, Path(validate).read_text(encoding="utf-8") if validate else None)
    cfg = replay_cfg(task, traces, config, set(tv.signature(artifact).constants))
    proposer = HelperMapping(helper, task.id) if helper is not None and mapping is None else None
    relation = None
    if refinement:
        prepared = prepare(artifact)  # ASCII, as the replay sees it
        relation = tla_next_relation.find(prepared.files[f"{prepared.main_module}.tla"], config.config,
                                          tv.signature(artifact).variables)
        if not relation.found:
            log.warning("tla_conformance.no_next_relation", task=task.id, note=relation.note)
    result = tv.validate_traces(
        artifact, loaded, mapping=mapping, proposer=proposer, cfg=cfg, timeout_s=timeout_s, parallel=parallel,
        walks_per_trace=walks_per_trace, refinement=relation if relation is not None and relation.found else None,
    )
    return ConformanceScore(
        result=result,
        trace_format=traces.format,
        cfg=cfg,
        helper_model=proposer.model if proposer else None,
        helper_error=proposer.error if proposer else None,
        traces=loaded,
        next_relation=relation,
    )
