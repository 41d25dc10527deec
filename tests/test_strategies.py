"""``--strategy``: each prompting strategy changes exactly the first request's statement of the task.

SysML tasks get SysMBench's published templates (read from ../shared), the grammar really inserted; the other
kinds keep sysmo's task prompt plus the project's own addition. Runs are driven by the fake OpenAI server and
checked by the real tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import fake_llm, replies_for
from agent_tasks import task_of, text_task
from fake_openai import FakeOpenAI
from sysmo.agents.control_script import broken_artifact
from sysmo.agents.prompts import load_prompt
from sysmo.agents.run import run_attempt
from sysmo.agents.strategies import LANGUAGES
from sysmo.agents.task_prompt import task_prompt
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact

INPUTS = Path("published") / "designbench" / "inputs"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _published(data: Path, name: str) -> str:
    return (data / INPUTS / name).read_text(encoding="utf-8")


def test_sysml_strategies_are_the_published_templates(shared_benchmarks: Path) -> None:
    task = text_task(TaskKind.SYSML)
    requirement = task.inputs.requirement
    own, _ = task_prompt(task)
    assert own == task_prompt(task, strategy=None, data_dir=shared_benchmarks)[0]
    zero, template = task_prompt(task, strategy="zero-shot", data_dir=shared_benchmarks)
    assert zero == _published(shared_benchmarks, "direct.txt").replace("{requirement}", requirement) != own
    assert template.key == "designbench/inputs/direct.txt"
    cot, _ = task_prompt(task, strategy="cot", data_dir=shared_benchmarks)
    assert cot == _published(shared_benchmarks, "cot.txt").replace("{requirement}", requirement)
    example = json.loads(_published(shared_benchmarks, "example.json"))
    few, _ = task_prompt(task, strategy="few-shot", data_dir=shared_benchmarks)
    expected = _published(shared_benchmarks, "few-shot.txt")
    expected = expected.replace("{req}", example["req"]).replace("{design}", example["design"])
    assert few == expected.replace("{requirement}", requirement)
    assert few.index(example["design"]) < few.index(requirement)


def test_the_grammar_strategy_really_inserts_the_grammar(shared_benchmarks: Path) -> None:
    task = text_task(TaskKind.SYSML)
    published = _published(shared_benchmarks, "grammar.txt")
    heading = "––––– SysML\u202fv2 BNF (subset) –––––\n"  # a narrow no-break space, as written
    # the published template's grammar section is empty: the heading is followed by the closing rule at once
    after = published.split(heading, 1)[1]
    assert after.startswith("\n––––")
    grammar = _published(shared_benchmarks, "sysml_bnf.txt").strip()
    text, _ = task_prompt(task, strategy="grammar", data_dir=shared_benchmarks)
    section = text.split(heading, 1)[1].split("––––––––––", 1)[0]
    assert section.strip() == grammar and '<package>     ::= "package" <Identifier> "{" <element>* "}"' in section
    # nothing else changed: without the grammar the text is the published template, filled
    assert text.replace(grammar + "\n", "", 1) == published.replace("{requirement}", task.inputs.requirement)


@pytest.mark.parametrize("kind", [TaskKind.TLA, TaskKind.UML_CLASS, TaskKind.ARCHITECTURE])
def test_other_kinds_get_sysmos_prompt_plus_exactly_the_strategy(kind: TaskKind, tmp_path: Path) -> None:
    task = task_of(kind, tmp_path)
    own, own_template = task_prompt(task)
    assert task_prompt(task, strategy="zero-shot")[0] == own
    additions = {}
    names = (("few-shot", f"few_shot_{kind.value}"), ("cot", "cot"), ("grammar", f"grammar_{kind.value}"))
    for strategy, name in names:
        text, template = task_prompt(task, strategy=strategy)
        assert text.startswith(own.rstrip("\n") + "\n")
        additions[strategy] = text[len(own.rstrip("\n")) + 1:]
        assert additions[strategy] == load_prompt("strategies", name).fill(language=LANGUAGES[kind])
        assert template.key == f"{own_template.key}+{strategy}" and template.sha256 != own_template.sha256
    assert len(set(additions.values())) == 3


def _sysml_run(server: FakeOpenAI, strategy: str | None, data: Path) -> tuple[object, list[dict]]:
    task = text_task(TaskKind.SYSML)
    server.push(*replies_for("base_modeling", task, [broken_artifact(task), task.references.model]))
    start = len(server.requests)
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="base_modeling",
                       attempt_id=f"st-{strategy}", max_rounds=2, strategy=strategy, data_dir=data)
    attempt = run_attempt("base_modeling", ctx, model_name="openai/fake-model")
    return attempt, server.requests[start:]


@pytest.mark.slow
def test_a_strategy_changes_only_the_first_request(server: FakeOpenAI, shared_benchmarks: Path) -> None:
    default, plain = _sysml_run(server, None, shared_benchmarks)
    grammar, guided = _sysml_run(server, "grammar", shared_benchmarks)
    assert default.strategy is None and grammar.strategy == "grammar"
    assert len(plain) == len(guided) == 2 and grammar.rounds[-1].passed
    task = text_task(TaskKind.SYSML)
    first = [m for m in guided[0]["messages"] if m["role"] == "user"][0]["content"]
    assert first == task_prompt(task, strategy="grammar", data_dir=shared_benchmarks)[0]
    # the system prompt and the repair request are the same with and without the strategy
    assert plain[0]["messages"][0] == guided[0]["messages"][0]
    assert plain[1]["messages"][-1] == guided[1]["messages"][-1]
    assert plain[0]["messages"][1] != guided[0]["messages"][1]
    assert "designbench/inputs/grammar.txt" in grammar.prompt_hashes


# (code_translation is offered on TLA+ tasks only, so it is not in this class-diagram test)
@pytest.mark.parametrize("agent", ["metagpt", "openhands"])
def test_every_agent_states_the_task_with_the_strategy(agent: str, server: FakeOpenAI, tmp_path: Path) -> None:
    task = task_of(TaskKind.UML_CLASS, tmp_path)
    addition = load_prompt("strategies", "grammar_uml_class").text.strip().splitlines()[0]
    for strategy in (None, "grammar"):
        server.push(*replies_for(agent, task, [task.references.model]))
        start = len(server.requests)
        ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent=agent,
                           attempt_id=f"{agent}-{strategy}", max_rounds=0, strategy=strategy)
        attempt = run_attempt(agent, ctx, model_name="openai/fake-model")
        sent = "\n".join(m["content"] or "" for r in server.requests[start:] for m in r["messages"]
                         if m["role"] == "user")
        assert attempt.strategy == strategy
        assert (addition in sent) is (strategy == "grammar")


def test_an_unknown_strategy_is_one_line() -> None:
    from sysmo.agents.strategies import parse_strategy
    from sysmo.errors import ConfigError

    with pytest.raises(ConfigError, match="use one of zero-shot, few-shot, cot, grammar"):
        parse_strategy("tree-of-thought")


def test_report_splits_agents_by_strategy() -> None:
    import pandas as pd
    from sysmo.evals.paired import paired_rows
    from sysmo.evals.tables import split_by_strategy

    rows = [{"kind": "sysml", "agent": "base_modeling", "model": "m", "task_id": f"t{i}", "sample_index": 0,
             "strategy": s, "passed": int(s == "grammar" or i % 2)} for i in range(6) for s in ("default", "grammar")]
    frame = split_by_strategy(pd.DataFrame(rows))
    assert set(frame["agent"]) == {"base_modeling [strategy=default]", "base_modeling [strategy=grammar]"}
    (pair,) = paired_rows(frame, headline={})
    assert (pair.factor, pair.baseline, pair.level) == ("strategy", "default", "grammar")
