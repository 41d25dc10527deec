"""Prompting strategies (``sysmo run --strategy``): zero-shot, few-shot, chain-of-thought, grammar-guided.

A strategy changes how the task is stated in the first request, nothing else (system prompts, repair
requests and the agents' own stages stay as they are). Without ``--strategy`` the task prompt is sysmo's own
(``agents/prompts/common/task_<kind>.md`` or the SysMoBench harness's prompt).

SysML tasks use SysMBench's published templates, read at run time from
``<data>/published/designbench/inputs`` (never copied into sysmo): ``direct.txt`` (zero-shot), ``few-shot.txt``
filled with the one published example (``example.json``: a flashlight model, not a benchmark sample),
``cot.txt`` and ``grammar.txt``. The published grammar template has an empty section under its
"SysML v2 BNF (subset)" heading (the authors' scripts never filled it); sysmo inserts the grammar the
authors staged beside it, ``sysml_bnf.txt``, there. Placeholders are filled in one pass over the template
(``{requirement}``, ``{req}``, ``{design}``), so braces inside the example model or the grammar stay as written.

TLA+, class-diagram and architecture tasks keep sysmo's task prompt and get the project's own addition
(``agents/prompts/strategies/``): zero-shot adds nothing; few-shot a small worked example of the language
(a different system); cot a plan-then-write instruction; grammar a grammar of the subset the checker reads.

>>> text, prompts = apply_strategy(task, "Write ...", "few-shot")        # a uml_class task
>>> "Here is an example" in text and prompts[0].key
'strategies/few_shot_uml_class'
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path

from sysmo.agents.prompts import Prompt, load_prompt
from sysmo.agents.task_prompt import fill_harness
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import ConfigError, DataMissingError

INPUTS = Path("published") / "designbench" / "inputs"
PUBLISHED_FILES = {"zero-shot": "direct.txt", "few-shot": "few-shot.txt", "cot": "cot.txt", "grammar": "grammar.txt"}
GRAMMAR_FILE = "sysml_bnf.txt"
EXAMPLE_FILE = "example.json"
# the heading under which the grammar belongs (the template writes "SysML\u202fv2": a narrow no-break space)
GRAMMAR_HEADING = re.compile(r"SysML\s*v2 BNF \(subset\)[^\n]*\n")
LANGUAGES = {TaskKind.TLA: "TLA+", TaskKind.SYSML: "SysML v2", TaskKind.UML_CLASS: "PlantUML class diagram",
             TaskKind.ARCHITECTURE: "PlantUML component diagram"}


class Strategy(StrEnum):
    ZERO_SHOT = "zero-shot"
    FEW_SHOT = "few-shot"
    COT = "cot"
    GRAMMAR = "grammar"


def parse_strategy(value: str | None) -> Strategy | None:
    if value is None:
        return None
    try:
        return Strategy(value)
    except ValueError:
        raise ConfigError(f"unknown --strategy {value!r}: use one of {', '.join(s.value for s in Strategy)}") from None


def published_inputs(data_dir: Path | str | None) -> Path:
    """``<data>/published/designbench/inputs`` with the four templates, else one clear error."""
    from sysmo.benchmarks.datadir import require_data_dir

    folder = require_data_dir(data_dir) / INPUTS
    missing = [f for f in (*PUBLISHED_FILES.values(), GRAMMAR_FILE, EXAMPLE_FILE) if not (folder / f).is_file()]
    if missing:
        raise DataMissingError(f"--strategy on SysML tasks uses SysMBench's published templates, not found in "
                               f"{folder} (missing {', '.join(missing)}): "
                               "pass --data-dir holding published/designbench")
    return folder


def sysml_prompt(requirement: str, strategy: Strategy, data_dir: Path | str | None) -> tuple[str, Prompt]:
    """The published SysMBench prompt for ``strategy`` (the grammar really inserted), and its template."""
    folder = published_inputs(data_dir)
    name = PUBLISHED_FILES[strategy.value]
    template = (folder / name).read_text(encoding="utf-8")
    values = {"requirement": requirement}
    hashed = template
    if strategy == Strategy.FEW_SHOT:
        example = json.loads((folder / EXAMPLE_FILE).read_text(encoding="utf-8"))
        values |= {"req": example["req"], "design": example["design"]}
        hashed += json.dumps(example, sort_keys=True)
    text = fill_harness(template, values)
    if strategy == Strategy.GRAMMAR:
        grammar = (folder / GRAMMAR_FILE).read_text(encoding="utf-8").strip()
        heading = GRAMMAR_HEADING.search(text)
        if heading is None:
            raise DataMissingError(f"{folder / name} has no 'SysML v2 BNF (subset)' heading to put the grammar under")
        text = text[: heading.end()] + grammar + "\n" + text[heading.end():]
        hashed += grammar
    return text, Prompt(agent="designbench", name=f"inputs/{name}", text=hashed)


def own_addition(task: Task, strategy: Strategy) -> Prompt | None:
    """The project's addition to the task prompt of a TLA+/class/architecture task (None: zero-shot)."""
    kind = task.kind.value
    if strategy == Strategy.ZERO_SHOT:
        return None
    if strategy == Strategy.COT:
        return load_prompt("strategies", "cot")
    return load_prompt("strategies", f"{strategy.value.replace('-', '_')}_{kind}")


def apply_strategy(task: Task, text: str, strategy: Strategy | str, data_dir: Path | str | None = None,
                   ) -> tuple[str, list[Prompt]]:
    """The task prompt ``text`` (sysmo's own) as ``strategy`` states it, and the templates used (to hash)."""
    strategy = Strategy(strategy)
    if task.kind == TaskKind.SYSML:
        requirement = task.inputs.requirement or task.inputs.description or ""
        prompt, template = sysml_prompt(requirement, strategy, data_dir)
        return prompt, [template]
    addition = own_addition(task, strategy)
    if addition is None:
        return text, []
    return text.rstrip("\n") + "\n" + addition.fill(language=LANGUAGES[task.kind]), [addition]
