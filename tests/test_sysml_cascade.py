"""The SysML v2 cascade: gold controls on the starter references, sensitivity to mutations, SysMEval parsing and roles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.benchmarks.registry import load_tasks
from sysmo.contracts.task import Task, TaskKind, TaskReferences
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.cascades.sysml import NO_JUDGE, sysmeval_stage
from sysmo.evals.metrics import sysmeval, text
from sysmo.llm import LLM, MockScript

STARTER_SYSML = Path(__file__).resolve().parents[1] / "benchmarks" / "starter" / "sysml"


def starter_sysml_tasks() -> list[Task]:
    """The starter SysML tasks from the registry; built from the reference files while the starter loader is absent."""
    tasks = [t for t in load_tasks(families=["starter"]) if t.kind == TaskKind.SYSML and t.references.model]
    if tasks:
        return tasks
    return [
        Task(
            id=f"starter/sysml/{d.name}",
            benchmark="starter",
            kind=TaskKind.SYSML,
            references=TaskReferences(
                model=Artifact(
                    language="sysml",
                    files={"reference.sysml": (d / "reference.sysml").read_text(encoding="utf-8")},
                )
            ),
        )
        for d in sorted(STARTER_SYSML.iterdir())
        if (d / "reference.sysml").is_file()
    ]


TASKS = starter_sysml_tasks()


def full_score_judge() -> LLM:
    script = MockScript(responses=["Every claim matches.\n\nScore: 17/17"])
    return LLM({"generator": "mockllm/full", "judge": "mockllm/full"}, cache=False, scripts={"full": script})


def candidate(text_: str) -> Artifact:
    return Artifact(language="sysml", files={"model.sysml": text_})


def test_starter_suite_has_sysml_references():
    assert len(TASKS) >= 10


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_reference_scored_against_itself_gets_the_maximum_everywhere(task):
    # BERTScore (a transformer over whole models) costs seconds per pair on CPU: one task is enough for it
    with_bertscore = task is TASKS[0]
    card = cascade_for("sysml").score(
        task.references.model, task,
        ScoringContext(judge=full_score_judge(), options={"text.bertscore": with_bertscore}),
    )
    assert [s.stage for s in card.stages] == ["validity", "text", "sysmeval", "elements"]
    assert card.metric("validity") == 1.0, card.stage("validity").detail
    for key in ("bleu_paper", "bleu_sacrebleu", "rougeL_paper", "rougeL_word"):
        assert card.metric(f"text.{key}") == 1.0, key
    bert = card.metric("text.bertscore")
    if not with_bertscore:
        assert bert is None and "disabled" in card.stage("text").detail["bertscore"]
    elif bert is None:  # the optional [bertscore] extra is not installed: None with the reason, never 0
        assert "pip install" in card.stage("text").detail["bertscore"]
    else:
        assert bert == pytest.approx(1.0, abs=1e-5)
    for key in ("precision", "recall", "f1"):
        assert card.metric(f"sysmeval.{key}") == 1.0
    assert card.stage("sysmeval").provenance["judge_model"] == "mockllm/full"
    for key in ("precision", "recall", "f1", "structure_precision", "structure_recall", "structure_f1"):
        assert card.metric(f"elements.{key}") == 1.0, key
    assert card.metric("elements.n_reference") > 5
    assert all(s.passed for s in card.stages)


def _rename_first_definition(model: str) -> tuple[str, str]:
    name = re.search(r"\b(?:part|item|action|state|port|attribute) def (\w+)", model).group(1)
    return re.sub(rf"\b{name}\b", f"{name}Renamed", model), name


@pytest.mark.parametrize("task", TASKS[:4], ids=[t.id for t in TASKS[:4]])
def test_renamed_identifier_lowers_exact_metrics_but_not_structure(task):
    mutated, name = _rename_first_definition(task.references.model.main_text)
    card = cascade_for("sysml").score(
        candidate(mutated), task, ScoringContext(options={"text.bertscore": False})
    )
    assert card.metric("validity") == 1.0, f"renaming {name} consistently must keep the model valid"
    for key in ("bleu_paper", "bleu_sacrebleu", "rougeL_word"):
        assert card.metric(f"text.{key}") < 1.0, key
    assert card.metric("elements.f1") < 1.0
    assert card.metric("elements.structure_f1") == 1.0
    assert card.stage("sysmeval").skipped_because == NO_JUDGE


def test_dropped_part_lowers_element_recall_only():
    task = next(t for t in TASKS if t.id.endswith("coffee_machine"))
    reference = task.references.model.main_text
    mutated = reference.replace("        part grinder : Grinder;\n", "", 1)
    assert mutated != reference
    card = cascade_for("sysml").score(
        candidate(mutated), task, ScoringContext(options={"text.bertscore": False})
    )
    assert card.metric("elements.recall") < 1.0
    assert card.metric("elements.structure_recall") < 1.0
    assert card.metric("elements.precision") == 1.0
    assert card.metric("elements.n_candidate") == card.metric("elements.n_reference") - 1
    assert card.stage("elements").detail["missing"] == ["part machine::grinder"]  # normalised key


def test_invalid_candidate_still_gets_text_and_semantic_scores():
    task = TASKS[0]
    broken = task.references.model.main_text + "\npart def Oops {"  # unbalanced brace: a syntax error
    card = cascade_for("sysml").score(
        candidate(broken), task, ScoringContext(judge=full_score_judge(), options={"text.bertscore": False})
    )
    assert card.metric("validity") == 0.0 and card.stage("validity").outcome == "failed"
    assert card.stage("validity").detail["diagnostics"]
    assert card.metric("text.rougeL_paper") > 0.9  # validity is not a gate
    assert card.metric("sysmeval.f1") == 1.0
    elements = card.stage("elements")
    assert (
        elements.outcome == "failed"
        and elements.value == 0.0
        and "does not parse" in elements.detail["reason"]
    )


# -- SysMEval


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("Score: 6/25", (6, 25)),
        ("**Score:** 6/25", (6, 25)),
        ("### Score: **13.5 / 27**", (13.5, 27)),
        ("Score:`7`/`8`", (7, 8)),
        ("Claims...\nScore: 3/4\nIf partial matches count: Score: 4/4", (3, 4)),
        (
            "a partial score: 6.5/17\n\nScore: 6/17",
            (6, 17),
        ),  # "Score" is case-sensitive, like the paper's regex
    ],
)
def test_score_parser_takes_the_first_score_line_through_markdown_and_decimals(answer, expected):
    parsed = sysmeval.parse_score(answer)
    assert (parsed.supported, parsed.total) == expected


def test_score_parser_paper_mode_is_the_authors_regex_and_zero_total_scores_zero():
    assert sysmeval.parse_score("**Score:** 6/25", "paper") is None
    assert sysmeval.parse_score("Score: 36.5 / 38 ... Score: 36/38", "paper").total == 38
    assert sysmeval.parse_score("Score: 0/0").value == 0.0
    assert sysmeval.parse_score("I cannot score this model.") is None


class RecordingJudge:
    """Answers by direction and keeps every prompt it was sent."""

    def __init__(self, answers: dict[str, str]):
        self.answers, self.prompts = answers, []

    def complete(self, messages, *, role, temperature=None, context=None, **_):
        from sysmo.llm import LLMResponse

        assert role == "judge"
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        direction = "precision" if "PRECISION" in prompt else "recall"
        return LLMResponse(text=self.answers[direction], model="recording", provider="test")


def test_templates_are_filled_the_right_way_round():
    judge = RecordingJudge({"precision": "Score: 1/4", "recall": "Score: 1/2"})
    result = sysmeval.evaluate("REFERENCE-TEXT {generated_model}", "CANDIDATE-TEXT", judge)
    p_prompt, r_prompt = judge.prompts
    for prompt in (p_prompt, r_prompt):
        ref_at, gen_at = prompt.index("Reference model:"), prompt.index("Generated model:")
        assert ref_at < prompt.index("REFERENCE-TEXT") < gen_at < prompt.index("CANDIDATE-TEXT")
        assert prompt.count("CANDIDATE-TEXT") == 1  # a placeholder inside model text is not substituted
    assert "claims in the generated model" in p_prompt and "claims in the reference model" in r_prompt
    assert (result.precision.value, result.recall.value) == (0.25, 0.5)
    assert result.f1 == pytest.approx(2 * 0.25 * 0.5 / 0.75)


def test_paper_templates_load_from_the_staged_data(shared_benchmarks):
    templates = sysmeval.SysMEvalTemplates.from_dir(
        shared_benchmarks / "published" / "designbench" / "inputs"
    )
    prompt = templates.prompt("precision", "REF", "GEN")
    assert "evaluate the precision" in prompt and prompt.index("REF") < prompt.index("GEN")
    assert templates.sha256 != sysmeval.SysMEvalTemplates.packaged().sha256


def test_unparseable_judge_answer_is_none_with_the_raw_text_kept():
    task = TASKS[0]
    judge = RecordingJudge({"precision": "Score: 2/3", "recall": "I could not decide."})
    result = sysmeval_stage(task.references.model, task, ScoringContext(judge=judge))
    assert result.outcome == "inconclusive" and not result.passed
    assert result.metrics["precision"] == pytest.approx(2 / 3)
    assert result.metrics["recall"] is None and result.metrics["f1"] is None
    assert result.detail["responses"]["recall"] == "I could not decide."
    assert result.detail["unparseable"] == ["recall"]


def test_sysmeval_is_skipped_without_a_judge_and_does_not_block_later_stages():
    task = TASKS[0]
    card = cascade_for("sysml").score(
        task.references.model, task, ScoringContext(options={"text.bertscore": False})
    )
    stage = card.stage("sysmeval")
    assert stage.outcome == "skipped" and stage.skipped_because == "no judge model configured"
    assert card.metric("elements.f1") == 1.0


# -- text metrics


def test_paper_rouge_is_character_level_and_word_rouge_is_rouge_score():
    from rouge_score import rouge_scorer

    ref = "part def Vehicle { attribute mass : Real; part engine : Engine; }"
    cand = "part def Car { attribute weight : Real; part motor : Engine; }"
    paper = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(",".join(ref), ",".join(cand))
    word = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(ref, cand)
    assert text.rouge_l_paper(ref, cand) == paper["rougeL"].fmeasure
    assert text.rouge_l_word(ref, cand) == word["rougeL"].fmeasure
    assert text.rouge_l_paper(ref, cand) > text.rouge_l_word(ref, cand)


def test_bit_parallel_lcs_equals_the_dynamic_programme():
    import random

    rng = random.Random(7)

    def dp(a, b):
        row = [0] * (len(b) + 1)
        for x in a:
            prev = 0
            for j, y in enumerate(b, 1):
                prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
        return row[-1]

    for _ in range(200):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 40))]
        assert text.lcs_length(a, b) == dp(a, b)


def test_bertscore_without_the_extra_is_none_with_a_reason_or_a_real_score():
    result = text.bertscore("part def A { part b : B; }", "part def A { part c : C; }")
    if result.f1 is None:
        assert "pip install" in result.reason
    else:
        assert 0.0 < result.f1 < 1.0 and result.model == text.DEFAULT_BERTSCORE_MODEL
        from transformers.utils import logging as hf_logging

        # loading the model drew no "Loading weights" bar on the user's terminal (transformers' tqdm is off)
        assert not hf_logging.is_progress_bar_enabled()
