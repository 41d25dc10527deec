"""Every column and metric name sysmo prints, each with its one definition and its denominator.

One name per definition everywhere: report.md / report.html, the CSV and Parquet files, ``sysmo view``, the paired
tables and the docs print these names; ``Definition.columns`` names the CSV/Parquet columns a definition is stored
in (``summary.csv``, ``attempts.csv``, ``paired.csv``). A name with a placeholder stands for a family of columns
of one definition: ``K`` a number of samples, ``METRIC`` a selection metric, ``ATTRIBUTE=LEVEL`` a task attribute
and its value, ``CORRECTION`` the p-value adjustment, ``KIND`` an error kind.

>>> definition_of("pass@3 after repair").name
'pass@K after repair'
>>> definition_of("best-of-n clue.clue").denominator.startswith("every task of the group")
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property

from pydantic import BaseModel

from sysmo.evals.error_kinds import ERROR_KINDS

_PLACEHOLDERS = {
    "K": r"\d+",
    "METRIC": r"(?!tasks$)\S+",
    "ATTRIBUTE": r"(?:benchmark|domain|difficulty)",
    "LEVEL": r".+",
    "CORRECTION": r"(?:Holm|Benjamini-Hochberg)",
    "KIND": "(?:" + "|".join(ERROR_KINDS) + ")",
}
LABEL = "none: a label, not a number"
COUNT = "none: a count"
ALL_TASKS = ("every task of the group (column tasks), each weighted equally; a task with no passing sample counts 0, "
             "an errored attempt counts as not passed")
SCORED_ATTEMPTS = ("the group's attempts with a value: an invalid answer (nothing extracted, gated by an earlier "
                   "stage's failure) and an errored attempt count 0; an attempt the stage was not scored on for a "
                   "reason of its own (no judge, no traces) is left out (shown as —); 95% bootstrap CI over them")
PAIRS = "n pairs: the (task, sample) pairs both levels ran, every other factor held fixed"


class Definition(BaseModel, frozen=True):
    """One definition: the ``name`` the report, the viewer and the docs print, what it measures, over what."""

    name: str  # may hold a placeholder (K, METRIC, ATTRIBUTE=LEVEL, CORRECTION, KIND)
    meaning: str
    denominator: str
    columns: tuple[str, ...] = ()  # the CSV / Parquet columns it is stored in (each column in one definition)
    suffix: str = ""  # a regex the printed name may end with (" [95% CI]"), same definition

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"(\b(?:K|METRIC|ATTRIBUTE|LEVEL|CORRECTION|KIND)\b)", self.name)
        body = "".join(_PLACEHOLDERS[p] if p in _PLACEHOLDERS else re.escape(p) for p in parts)
        return re.compile(f"{body}(?:{self.suffix})?" if self.suffix else body)

    def matches(self, name: str) -> bool:
        return self.pattern.fullmatch(name) is not None

    def line(self) -> str:
        stored = f" CSV/Parquet: {', '.join(f'`{c}`' for c in self.columns)}." if self.columns else ""
        return f"{self.name}: {self.meaning}. Denominator: {self.denominator}.{stored}"


def _stage(name: str, meaning: str, denominator: str = SCORED_ATTEMPTS) -> Definition:
    column = name.split(" (")[0]
    return Definition(name=name, meaning=meaning, denominator=denominator,
                      columns=(column, f"{column} CI", f"score.{column}"))


GLOSSARY: tuple[Definition, ...] = (
    # who and what
    Definition(name="agent", meaning="the agent paradigm; when the experiment varies an arm factor, its level in "
               "brackets (`base_modeling [feedback=bare]`)", denominator=LABEL, columns=("agent",)),
    Definition(name="model", meaning="the generator model", denominator=LABEL, columns=("model",)),
    Definition(name="kind", meaning="the task kind (tla, sysml, uml_class, architecture)", denominator=LABEL,
               columns=("kind",)),
    Definition(name="arm", meaning="the levels of every arm factor (feedback, strategy, temperature, max rounds) an "
               "attempt ran with", denominator=LABEL, columns=("arm",)),
    Definition(name="tasks", meaning="the tasks the group ran (forks and tasks a replayed source does not cover left "
               "out)", denominator=COUNT, columns=("tasks",)),
    Definition(name="samples", meaning="the group's attempts, n samples per task (forks left out)", denominator=COUNT,
               columns=("samples",)),
    # the three pass@k
    Definition(name="pass@K after repair", suffix=r" \[95% CI\]",
               meaning="sysmo's pass@K: the chance that at least one of K samples of a task passes, a sample counting "
               "when its final artifact passed the agent's tool check, repair rounds included (unbiased estimator "
               "1 - C(n-c,K)/C(n,K) over the task's n samples); pass@1 carries a 95% bootstrap CI over tasks",
               denominator=ALL_TASKS, columns=("pass@K", "pass_rate_ci", "passed")),
    Definition(name="pass@K first answer parses (OODEval)",
               meaning="OODEval's single-shot pass@K: as pass@K after repair, a sample counting when its first answer "
               "(round 0, before any feedback) is accepted by the language's own parser: PlantUML's verdict alone "
               "for PlantUML (our lint findings do not count), the round-0 tool check for TLA+ and SysML v2",
               denominator=ALL_TASKS, columns=("first answer parses pass@K", "first_answer_parses")),
    Definition(name="pass@K first answer passes",
               meaning="as pass@K after repair, a sample counting when its first answer (round 0, before any "
               "feedback) passed every check of the agent's tool check, lint included (passed_round == 0)",
               denominator=ALL_TASKS, columns=("first answer passes pass@K", "first_answer_passes")),
    # the stages' headline values
    _stage("syntax", "TLA+: 0.5 x (SANY accepts the whole module) + 0.5 x share of units accepted; class diagrams: 1 "
           "when PlantUML and the lint rules accept the diagram"),
    _stage("runtime", "TLA+: share of actions covered without error over seeded TLC simulations"),
    _stage("conformance", "TLA+: share of the system's recorded traces the spec accepts (trace validation)"),
    _stage("invariants", "TLA+: share of the task's invariant templates that TLC finds holding"),
    _stage("transitions", "TLA+ (SysMoBench): mean over actions of the share of recorded pre/post windows the spec's "
           "action takes (transition validation)"),
    _stage("validity", "1 when the tool (OpenSysML for SysML v2, PlantUML for architecture) accepts the model"),
    _stage("text", "SysML v2: word-level ROUGE-L against the reference model"),
    _stage("sysmeval", "SysML v2: the judge's SysMEval F1 (semantic precision and recall against the reference)"),
    _stage("elements", "SysML v2: F1 over the named elements shared with the reference"),
    _stage("clue", "class diagrams: CLUE, the weighted match of classes, attributes, methods and relations with the "
           "reference (OODEval)"),
    _stage("structure", "architecture: node F1 of the component tree aligned with the reference (R2ABench)"),
    _stage("judge", "architecture: the judge's 1-5 rubric mapped to 0-1"),
    _stage("antipatterns", "architecture: 1 minus the excess of orphan and god components over the reference's"),
    _stage("structure.node_f1", "architecture: F1 of reference and predicted components after alignment (R2ABench)"),
    _stage("structure.edge_f1", "architecture: F1 of dependencies through the aligned components and their "
           "containers"),
    _stage("structure.ged_acc (0-100)", "architecture: 100 x (1 - graph edit distance / worst-case cost), R2ABench's "
           "GED accuracy"),
    _stage("judge.mean (1-5)", "architecture: the judge's mean rubric score on its 1-5 scale",
           denominator="the group's attempts the judge scored (a 1-5 rubric has no 0: an invalid answer is left out, "
           "not counted 0); 95% bootstrap CI over them"),
    Definition(name="best-of-n METRIC",
               meaning="each task's best sample by the kind's selection metric METRIC (tla invariants, sysml validity, "
               "uml_class clue.clue, architecture structure.node_f1, or the experiment's selection_metric), averaged "
               "over tasks",
               denominator="every task of the group (column tasks): an invalid sample (nothing extracted, gated by an "
               "earlier stage's failure, errored) counts 0, so a task with no valid sample counts 0; only a task none "
               "of whose samples the metric was scored on (a stage skipped for a reason of its own) is left out, the "
               "cell then saying 'k of N tasks' (column best-of-n tasks)",
               columns=("best-of-n METRIC", "best-of-n tasks")),
    # errors, rounds, cost
    Definition(name="errors", meaning="the group's attempts that could not run to their end (status error), with "
               "their causes (model, budget, infrastructure)", denominator=COUNT + " of the group's samples",
               columns=("status",)),
    Definition(name="KIND errors", meaning="errored attempts by cause: model (the model call failed for good), budget "
               "(a cost or token cap), infrastructure (a tool, the sandbox or the harness)",
               denominator=COUNT + " of the group's samples"),  # from attempts.csv's status and error
    Definition(name="error kind", meaning="the cause an error message is counted under (model, budget, "
               "infrastructure)", denominator=LABEL),
    Definition(name="message", meaning="an error message, its first 160 characters", denominator=LABEL,
               columns=("error",)),
    Definition(name="attempts ended", meaning="how many attempts this error message ended", denominator=COUNT),
    Definition(name="rounds", meaning="mean rounds to a pass (1 = the first answer passed)",
               denominator="the group's attempts that passed after repair (— when none did)",
               columns=("mean rounds to pass",)),
    Definition(name="spent $", meaning="new money the group's model calls spent (cached replies and offline providers "
               "cost nothing)", denominator="none: a sum over the group's model calls", columns=("spent $",)),
    Definition(name="incl. cached at list price $", meaning="what the group's replies cost at the models' list prices, "
               "cached replies included (what the run would cost without the cache)",
               denominator="none: a sum over the group's model calls", columns=("cost $",)),
    Definition(name="tokens", meaning="prompt and completion tokens of the group's model calls",
               denominator="none: a sum over the group's model calls", columns=("tokens",)),
    Definition(name="wall s", meaning="the group's attempts' wall-clock seconds, added up",
               denominator="none: a sum over the group's attempts", columns=("wall s",)),
    # breakdowns
    Definition(name="ATTRIBUTE=LEVEL", meaning="share of the group's attempts on tasks whose ATTRIBUTE (benchmark, "
               "domain, difficulty) is LEVEL that passed after repair (errored attempts count as not passed)",
               denominator="the group's attempts on those tasks"),
    Definition(name="tool_mode=LEVEL", meaning="share of the group's attempts whose tool calls travelled in mode LEVEL "
               "(openhands: native, the provider's tools=; text, the text protocol of fenced JSON blocks) that passed "
               "after repair (errored attempts count as not passed); shown only when attempts ran in more than one "
               "mode. The column tool_mode: an attempt's mode (empty for an agent without tools)",
               denominator="the group's attempts in that mode", columns=("tool_mode",)),
    # the paired tables
    Definition(name="factor", meaning="the factor whose levels are compared (agent, model, feedback, strategy, "
               "temperature, max_rounds)", denominator=LABEL, columns=("factor",)),
    Definition(name="level vs baseline", meaning="the level compared and the factor's baseline", denominator=LABEL,
               columns=("level", "baseline")),
    Definition(name="held fixed", meaning="the other factors' levels both sides share", denominator=LABEL,
               columns=("held_fixed",)),
    Definition(name="n pairs", meaning="the (task, sample index) pairs both levels ran, every other factor held fixed",
               denominator=COUNT, columns=("n_pairs",)),
    Definition(name="pass after repair (base → level)",
               meaning="share of the pairs whose attempt passed after repair "
               "(as pass@1 after repair), baseline then level", denominator=PAIRS,
               columns=("pass_baseline", "pass_level")),
    Definition(name="Δpass after repair [95% CI]",
               meaning="level minus baseline in pass after repair: the mean paired "
               "difference of 0/1, 95% bootstrap CI over the pairs", denominator=PAIRS,
               columns=("delta_pass", "delta_pass_ci_low", "delta_pass_ci_high")),
    Definition(name="p McNemar pass after repair (CORRECTION)", meaning="exact McNemar test on pass after repair: raw "
               "p-value, then adjusted across every comparison of the analysis (CORRECTION), each test apart",
               denominator="the discordant pairs among n pairs",
               columns=("p_mcnemar", "p_mcnemar_adjusted", "level_only", "baseline_only")),
    Definition(name="Δfirst answer parses", meaning="level minus baseline in the share of pairs whose first answer "
               "parses (the definition of pass@K first answer parses (OODEval))", denominator=PAIRS,
               columns=("first_answer_parses_baseline", "first_answer_parses_level")),
    Definition(name="p McNemar first answer parses (CORRECTION)", meaning="exact McNemar test on the first answer "
               "parsing: raw p-value, then adjusted (CORRECTION)", denominator="the discordant pairs among n pairs",
               columns=("p_mcnemar_first_answer_parses", "p_mcnemar_first_answer_parses_adjusted",
                        "first_answer_parses_level_only", "first_answer_parses_baseline_only")),
    Definition(name="Δfirst answer passes", meaning="level minus baseline in the share of pairs whose first answer "
               "passed every check (the definition of pass@K first answer passes)", denominator=PAIRS,
               columns=("first_answer_passes_baseline", "first_answer_passes_level")),
    Definition(name="p McNemar first answer passes (CORRECTION)", meaning="exact McNemar test on the first answer "
               "passing every check: raw p-value, then adjusted (CORRECTION)",
               denominator="the discordant pairs among n pairs",
               columns=("p_mcnemar_first_answer_passes", "p_mcnemar_first_answer_passes_adjusted",
                        "first_answer_passes_level_only", "first_answer_passes_baseline_only")),
    Definition(name="Δscore [95% CI]", meaning="level minus baseline in the kind's headline score (its selection "
               "metric, named in the cell): the mean paired difference, 95% bootstrap CI over the pairs",
               denominator="the pairs both of whose attempts have a score (n_score_pairs): a sub-metric gated by an "
               "earlier stage's failure counts 0, a stage not scored drops the pair",
               columns=("score_metric", "n_score_pairs", "delta_score", "delta_score_ci_low", "delta_score_ci_high")),
    Definition(name="p Wilcoxon score (CORRECTION)", meaning="Wilcoxon signed-rank test on the headline score: raw "
               "p-value, then adjusted (CORRECTION)", denominator="the score pairs whose difference is not 0",
               columns=("p_wilcoxon", "p_wilcoxon_adjusted")),
)


def definitions_of(name: str, stages: Iterable[str] = ()) -> list[Definition]:
    """Every definition a printed name matches: one for a name sysmo prints. ``stages``: the cascade stages of the
    table the name heads; a stage no entry names gets a definition of its own (its value, over the attempts scored)."""
    found = [d for d in GLOSSARY if d.matches(name)]
    if not found and name in set(stages):
        found = [_stage(name, f"the value of the {name} stage of the kind's scoring cascade (docs/benchmarks/)")]
    return found


def definition_of(name: str, stages: Iterable[str] = ()) -> Definition | None:
    """The definition of a printed name, or None for a name sysmo does not print."""
    found = definitions_of(name, stages)
    return found[0] if len(found) == 1 else None


def glossary_lines(names: Iterable[str], stages: Iterable[str] = ()) -> list[str]:
    """One line per definition behind ``names`` (in the order first named): name, meaning, denominator, CSV columns."""
    stages = set(stages)
    seen: list[Definition] = []
    for name in names:
        found = definition_of(str(name), stages)
        if found is not None and found not in seen:
            seen.append(found)
    return [d.line() for d in seen]
