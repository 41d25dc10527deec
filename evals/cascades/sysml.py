"""The SysML v2 scoring cascade: validity (OpenSysML), text overlap, SysMEval (judge) and element-level P/R/F1.

Stages and their metric keys (``card.flat()``):

- ``validity``: 1 when OpenSysML accepts the model alone (``sysmo.tools.sysml.validate`` rules), else 0.
  NOT a gate: the SysMBench paper scores every prediction with its text and judge metrics whether it
  parses or not, so blocking them on validity would make our numbers incomparable with the paper's and
  would zero the semantic scores of nearly-right models; validity is reported beside them instead.
- ``text``: ``bleu_paper`` and ``rougeL_paper`` (what the paper computed: NLTK method3 sentence BLEU,
  character-level ROUGE-L), ``bleu_sacrebleu`` and ``rougeL_word`` (standard), ``bertscore`` (F1 with the
  configured local model, ``None`` without the ``[bertscore]`` extra). Stage value: ``rougeL_word``.
- ``sysmeval``: ``precision`` / ``recall`` / ``f1`` from the judge role with the two SysMEval prompts,
  filled the right way round (see ``sysmo.evals.metrics.sysmeval``); skipped without a judge.
- ``elements``: ``precision`` / ``recall`` / ``f1`` over named element keys and ``structure_*`` over
  name-free ones (``sysmo.evals.metrics.elements``). Stage value: named F1.

Options (``ScoringContext.options``): ``text.bertscore`` (bool, default True), ``text.bertscore_model``,
``text.bertscore_layers``; ``sysmeval.templates`` ("sysmo" or a folder with the paper's files),
``sysmeval.temperature`` (default 0, as in the paper; None keeps the judge role's), ``sysmeval.parse``
("robust" or "paper").

Reference = the task's reference model (main file, verbatim); candidate = the artifact's main file, verbatim.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskKind
from sysmo.evals.cascade import Cascade, FunctionStage, ScoringContext, register_cascade, stage_from_check
from sysmo.evals.metrics import elements as element_metrics
from sysmo.evals.metrics import sysmeval as sysmeval_metrics
from sysmo.evals.metrics import text as text_metrics
from sysmo.contracts.scorecard import StageResult
from sysmo.log import get_logger
from sysmo.contracts.check import Outcome

log = get_logger(__name__)

MAX_DIAGNOSTICS = 20
NO_REFERENCE = "the task has no reference model"
NO_JUDGE = "no judge model configured"

class _TreeCache:
    """Element trees by content hash, least recently used out first (thread-safe)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._trees: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> object | None:
        with self._lock:
            tree = self._trees.get(key)
            if tree is not None:
                self._trees.move_to_end(key)
            return tree

    def put(self, key: str, tree: object) -> None:
        with self._lock:
            self._trees[key] = tree
            while len(self._trees) > self.size:
                self._trees.popitem(last=False)


# References apart: every attempt on a task needs its reference's tree again, and with candidates in the same
# 256 places a benchmark of 151 tasks scored file by file (151 references + 151 predictions per file) pushed
# each reference out before its next use: every prediction paid a second OpenSysML load (the reference's,
# valid and exported: about 100 ms of the kernel), three quarters of DesignBench's re-scoring time.
_REFERENCE_TREES = _TreeCache(4096)
_TREES = _TreeCache(256)


def _tree(model: Artifact, *, reference: bool = False):
    """The model's element tree and validation from one OpenSysML load, cached by content hash (a task's
    reference model, ``reference=True``, in a cache of its own)."""
    from sysmo.tools.sysml.element_tree import element_tree

    key = model.sha256
    for cache in (_REFERENCE_TREES, _TREES):
        tree = cache.get(key)
        if tree is not None:
            return tree
    tree = element_tree(model)
    # a timeout or a kernel crash says nothing about the model: do not keep it
    if tree.check is None or tree.check.outcome in (Outcome.OK, Outcome.FAILED):
        (_REFERENCE_TREES if reference else _TREES).put(key, tree)
    return tree


def _reference(task: Task) -> Artifact | None:
    model = task.references.model
    return model if model is not None and not model.is_empty() else None


def _as_sysml(artifact: Artifact) -> Artifact:
    # a reply saved under another name (e.g. model.txt) is still scored as the SysML text it is
    if artifact.language == Language.SYSML and any(n.endswith((".sysml", ".kerml")) for n in artifact.files):
        return artifact
    return Artifact(language=Language.SYSML, files={"model.sysml": artifact.main_text})


def _skipped(stage: str, because: str) -> StageResult:
    return StageResult(stage=stage, value=0.0, passed=False, outcome="skipped", skipped_because=because)


def validity_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    result = _tree(_as_sysml(artifact)).check
    return stage_from_check("validity", result, MAX_DIAGNOSTICS, typing_only=result.details.get("typing_only", False))


def text_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    reference = _reference(task)
    if reference is None:
        return _skipped("text", NO_REFERENCE)
    ref, cand = reference.main_text, artifact.main_text
    metrics: dict[str, float | None] = {
        "bleu_paper": text_metrics.bleu_paper(ref, cand),
        "bleu_sacrebleu": text_metrics.bleu_sacrebleu(ref, cand),
        "rougeL_paper": text_metrics.rouge_l_paper(ref, cand),
        "rougeL_word": text_metrics.rouge_l_word(ref, cand),
    }
    detail: dict[str, object] = {}
    provenance = {
        "bleu_paper": "nltk sentence_bleu, str.split() tokens, weights 0.25x4, method3",
        "rougeL_paper": "character-level LCS over lower-case ASCII alphanumerics (SysMBench)",
        "bleu_sacrebleu": "sacrebleu sentence_bleu (13a, exp smoothing) / 100",
        "rougeL_word": "rouge-score ROUGE-L F1, default tokenizer, stemmer on",
    }
    if ctx.flag("text.bertscore", True):
        model = ctx.option("text.bertscore_model", text_metrics.DEFAULT_BERTSCORE_MODEL)
        layers = int(ctx.option("text.bertscore_layers", text_metrics.DEFAULT_BERTSCORE_LAYERS))
        bert = text_metrics.bertscore(ref, cand, model=model, num_layers=layers)
        metrics["bertscore"] = bert.f1
        provenance["bertscore"] = f"{bert.model} layer {bert.layer} (paper: bert-base-uncased layer 9)"
        if bert.reason:
            detail["bertscore"] = bert.reason
    else:
        metrics["bertscore"] = None
        detail["bertscore"] = "disabled by option text.bertscore"
    return StageResult(
        stage="text",
        value=metrics["rougeL_word"] or 0.0,
        passed=True,
        metrics=metrics,
        detail=detail,
        provenance=provenance,
    )


def sysmeval_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    reference = _reference(task)
    if reference is None:
        return _skipped("sysmeval", NO_REFERENCE)
    if ctx.judge is None:
        return _skipped("sysmeval", NO_JUDGE)
    from sysmo.llm import CallContext

    templates = sysmeval_metrics.SysMEvalTemplates.resolve(ctx.option("sysmeval.templates", None))
    result = sysmeval_metrics.evaluate(
        reference.main_text,
        artifact.main_text,
        ctx.judge,
        templates=templates,
        temperature=ctx.option("sysmeval.temperature", 0.0),
        parse_mode=ctx.option("sysmeval.parse", "robust"),
        context=CallContext(task_id=task.id),
    )
    answers = (result.precision, result.recall)
    errors = [a for a in answers if a.error]
    unparsed = [a.direction for a in answers if a.error is None and a.score is None]
    outcome = "error" if errors else "inconclusive" if unparsed else "ok"
    f1 = result.f1
    return StageResult(
        stage="sysmeval",
        value=f1 or 0.0,
        passed=f1 is not None,
        outcome=outcome,
        metrics=result.metrics(),
        detail={
            "responses": {a.direction: a.text for a in answers},
            "parsed": {a.direction: a.score.match if a.score else None for a in answers},
            "unparseable": unparsed,
            "errors": {a.direction: a.error for a in errors},
        },
        provenance={
            "judge_model": result.judge_model() or "",
            "judge_served_model": result.precision.served_model or "",
            "templates": result.templates_source,
            "templates_sha256": result.templates_sha256,
            "parser": result.parse_mode,
        },
    )


def elements_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    reference = _reference(task)
    if reference is None:
        return _skipped("elements", NO_REFERENCE)
    ref_tree = _tree(_as_sysml(reference), reference=True)
    cand_tree = _tree(_as_sysml(artifact))
    provenance = {
        "tool": cand_tree.check.tool,
        "tool_version": cand_tree.check.tool_version,
        "definition": "sysmo.evals.metrics.elements (kind + normalised name + containment)",
    }
    if not ref_tree.complete:
        return StageResult(
            stage="elements",
            value=0.0,
            outcome="inconclusive",
            provenance=provenance,
            metrics={"precision": None, "recall": None, "f1": None},
            detail={
                "reason": f"the reference model has no element tree (OpenSysML: "
                f"{ref_tree.check.outcome.value})"
            },
        )
    if not cand_tree.complete and cand_tree.check.outcome not in (Outcome.OK, Outcome.FAILED):
        return StageResult(
            stage="elements",
            value=0.0,
            outcome=cand_tree.check.outcome.value,
            provenance=provenance,
            metrics={"precision": None, "recall": None, "f1": None},
            detail={"reason": "OpenSysML could not export the candidate's element tree"},
        )
    scores = element_metrics.compare(ref_tree, cand_tree)
    detail: dict[str, object] = {"missing": scores.missing, "extra": scores.extra}
    if not cand_tree.complete:
        detail["reason"] = "the candidate does not parse, so it has no elements"
    return StageResult(
        stage="elements",
        value=scores.f1,
        passed=cand_tree.complete,
        outcome="ok" if cand_tree.complete else "failed",
        metrics=scores.metrics(),
        detail=detail,
        provenance=provenance,
    )


@register_cascade(TaskKind.SYSML)
def sysml_cascade() -> Cascade:
    return Cascade(
        name="sysml",
        stages=[
            FunctionStage("validity", validity_stage, gate=False),
            FunctionStage("text", text_stage, gate=False),
            FunctionStage("sysmeval", sysmeval_stage, gate=False,
                          missing=lambda ctx: NO_JUDGE if ctx.judge is None else None),
            FunctionStage("elements", elements_stage, gate=False),
        ],
    )
