"""The replay provider: published outputs from the shared data answer tasks through ``sysmo run``.

Reads ``../shared/benchmarks`` (DesignBench predictions, CIL transcripts, SysMoBench example specs); the
OpenSysML, SANY and TLC checks are real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sysmo.errors import ConfigError, DataMissingError, LLMError, NotCoveredError, ReplayEndedError
from sysmo.llm import LLM, CallContext
from sysmo.llm.replay import ReplayProvider, ReplaySpec
from sysmo.llm.roles import model_kind, run_kind

CIL_ID = 10  # the openai loop needed 3 iterations for this sample (SysIDE rejected the first two)


def _published_line(data: Path, model: str, strategy: str, sample_id: int) -> dict:
    with (data / "published" / "designbench" / model / f"{strategy}.jsonl").open() as f:
        return next(row for row in map(json.loads, f) if row["id"] == sample_id)


def _cil(data: Path, loop: str, sample_id: int) -> dict:
    return json.loads((data / "published" / "cil" / loop / f"{sample_id}.json").read_text())


@pytest.mark.parametrize("name, problem", [
    ("replay/designbench", "bad replay model name"),
    ("replay/nosuch:gpt_4.1", "unknown replay source 'nosuch'"),
])
def test_a_malformed_replay_name_is_one_clear_error(name: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        ReplaySpec.parse(name)


def test_unknown_models_and_strategies_list_what_the_data_has(shared_benchmarks: Path) -> None:
    with pytest.raises(ConfigError, match=r"no DesignBench model 'gpt-5'.*gpt_4\.1.*qwen3"):
        ReplayProvider.from_name("replay/designbench:gpt-5", shared_benchmarks)
    with pytest.raises(ConfigError, match=r"no DesignBench strategy 'zero-shot' for qwen3: use one of cot, direct"):
        ReplayProvider.from_name("replay/designbench:qwen3/zero-shot", shared_benchmarks)
    with pytest.raises(ConfigError, match=r"no CIL loop 'gemini'.*anthropic"):
        ReplayProvider.from_name("replay/cil:gemini", shared_benchmarks)


def test_a_data_dir_without_the_source_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(DataMissingError, match=r"replay source designbench not found at .*published/designbench"):
        ReplayProvider.from_name("replay/designbench:qwen3", tmp_path)


def test_replay_runs_are_labelled_apart_from_controls_and_live_runs() -> None:
    assert model_kind("replay/cil:anthropic") == "replay"
    assert model_kind("mockllm/control") == "control" and model_kind("openai/gpt-4.1") == "live"
    assert run_kind(["replay/cil:openai", "replay/designbench:qwen3"]) == "replay"
    assert run_kind(["replay/cil:openai", "openai/gpt-4.1"]) == "live"


def test_designbench_answers_with_the_stored_prediction_case_insensitively(shared_benchmarks: Path) -> None:
    llm = LLM("replay/designbench:GPT_4.1/cot", cache=False, data_dir=shared_benchmarks)
    answer = llm.complete([{"role": "user", "content": "model this"}], context=CallContext(task_id="sysmbench/7"))
    assert answer.text == _published_line(shared_benchmarks, "gpt_4.1", "cot", 7)["prediction"]
    assert answer.provider == "replay" and answer.cost_usd == 0 and not answer.is_control
    with pytest.raises(ReplayEndedError, match="ended after 1 round"):
        llm.complete([{"role": "user", "content": "repair"}], context=CallContext(task_id="sysmbench/7", round=1))
    with pytest.raises(NotCoveredError, match="sysmbench/999 is not covered"):
        llm.complete([{"role": "user", "content": "x"}], context=CallContext(task_id="sysmbench/999"))
    # a published output is a final model: it does not stand in for a pre-stage document
    with pytest.raises(LLMError, match="not the 'analyst' step"):
        llm.complete([{"role": "user", "content": "analyse"}], context=CallContext(task_id="sysmbench/7",
                                                                                   purpose="analyst"))


def test_cil_answers_round_by_round_with_the_transcript(shared_benchmarks: Path) -> None:
    provider = ReplayProvider.from_name("replay/cil:openai", shared_benchmarks)
    iterations = _cil(shared_benchmarks, "openai", CIL_ID)["run"]["iterations"]
    assert provider.replies(f"sysmbench/{CIL_ID}") == [it["response_text"] for it in iterations]
    verdicts = provider.source.output(f"sysmbench/{CIL_ID}").verdicts
    assert [v.valid for v in verdicts] == [False, False, True]


def test_sysmobench_answers_with_the_spec_and_its_cfg(shared_benchmarks: Path) -> None:
    provider = ReplayProvider.from_name("replay/sysmobench:gpt5", shared_benchmarks)
    (reply,) = provider.replies("sysmobench/locksvc")
    spec = (shared_benchmarks / "sysmobench/example_specs/locksvc/gpt5/locksvc.tla").read_text()
    assert "File: locksvc.tla" in reply and "File: locksvc.cfg" in reply and spec.strip() in reply
    assert provider.replies("sysmobench/etcd") == []  # only a cfg there: not covered
    specula = ReplayProvider.from_name("replay/sysmobench:deepseek/specula", shared_benchmarks)
    assert "File: dqueue.tla" in specula.replies("sysmobench/dqueue")[0]


# -- through sysmo run

@pytest.fixture(scope="module")
def replayed(shared_benchmarks: Path, tmp_path_factory) -> dict:
    """One replay experiment: DesignBench gpt_4.1 direct, the CIL openai loop and the CIL agent (which lacks ids 1
    and 10: they were its in-context examples)."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    out = tmp_path_factory.mktemp("replay")
    ids = ["sysmbench/1", "sysmbench/6", f"sysmbench/{CIL_ID}"]
    config = ExperimentConfig(id="rp", output_dir=out, data_dir=shared_benchmarks, agents=["base_modeling"],
                              models=["replay/designbench:gpt_4.1/direct", "replay/cil:openai", "replay/cil:ai_agent"],
                              samples=1, max_rounds=8, concurrency=2, scoring={"text.bertscore": False},
                              tasks=TaskSelection(benchmarks=["sysmbench"], ids=ids))
    summary = run_experiment(config, progress=False)
    from sysmo.evals.report import write_report

    write_report(out / "rp")
    store = Store(out / "rp" / "results.sqlite")
    attempts = {(a.model, a.task_id): a for a in store.attempts("rp")}
    cards = {key: store.scorecard(a.id) for key, a in attempts.items()}
    store.close()
    return {"config": config, "summary": summary, "attempts": attempts, "cards": cards, "dir": out / "rp"}


def test_a_replayed_run_stores_the_published_replies_and_scores_them(replayed, shared_benchmarks: Path) -> None:
    assert replayed["config"].kind == "replay" and replayed["config"].experiment_id() == "rp"
    attempt = replayed["attempts"][("replay/designbench:gpt_4.1/direct", "sysmbench/6")]
    assert attempt.kind == "replay" and not attempt.is_control
    assert attempt.rounds[0].response == _published_line(shared_benchmarks, "gpt_4.1", "direct", 6)["prediction"]
    # one published answer: a rejected model ends the attempt as failed after round 0, with no empty round
    if attempt.status.value != "passed":
        assert attempt.status.value == "failed" and len(attempt.rounds) == 1 and attempt.error is None
    card = replayed["cards"][("replay/designbench:gpt_4.1/direct", "sysmbench/6")]
    assert {"validity", "text", "elements"} <= {s.stage for s in card.stages}
    assert 0 < card.flat()["text.bleu_paper"] < 1


def test_a_cil_transcript_drives_the_repair_loop_round_by_round(replayed, shared_benchmarks: Path) -> None:
    attempt = replayed["attempts"][("replay/cil:openai", f"sysmbench/{CIL_ID}")]
    iterations = _cil(shared_benchmarks, "openai", CIL_ID)["run"]["iterations"]
    assert 1 <= len(attempt.rounds) <= len(iterations)
    assert [r.response for r in attempt.rounds] == [it["response_text"] for it in iterations[: len(attempt.rounds)]]
    assert [r.kind for r in attempt.rounds][:2] == ["generate", "repair"][: len(attempt.rounds)]
    # our repair request carries OpenSysML's diagnostics of the published reply before it
    if len(attempt.rounds) > 1:
        assert attempt.rounds[1].messages[-1]["role"] == "user"
    if attempt.status.value == "failed":  # the transcript ran out before OpenSysML accepted a reply
        assert len(attempt.rounds) == len(iterations)
        assert attempt.extras["replay_ended_at_round"] == len(iterations)


def test_a_task_the_source_lacks_is_not_covered_and_left_out_of_the_rates(replayed) -> None:
    missing = replayed["attempts"][("replay/cil:ai_agent", "sysmbench/1")]
    assert missing.status.value == "not_covered" and missing.rounds == [] and "not covered" in missing.error
    assert replayed["summary"].not_covered == 2 and replayed["summary"].errors == 0
    report = (replayed["dir"] / "report" / "report.md").read_text()
    assert "REPLAY EXPERIMENT" in report and "Not covered by the replayed source: 2 attempts" in report
    row = next(line for line in report.splitlines() if line.startswith("| base_modeling | replay/cil:ai_agent |"))
    assert row.split("|")[4].strip() == "1"  # tasks: the one it covers
    assert "CONTROL EXPERIMENT" not in report


def test_the_trace_of_a_replayed_attempt_says_replay(replayed) -> None:
    from rich.console import Console
    from sysmo.evals.trace_view import render_attempt

    key = ("replay/cil:openai", f"sysmbench/{CIL_ID}")
    console = Console(record=True, width=200)
    render_attempt(replayed["attempts"][key], replayed["cards"][key], console)
    text = console.export_text()
    assert "[REPLAY: published output]" in text and "CONTROL" not in text


@pytest.mark.slow
def test_a_sysmobench_example_spec_replays_through_sany_and_tlc(shared_benchmarks: Path, tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    config = ExperimentConfig(id="tla", output_dir=tmp_path, data_dir=shared_benchmarks, agents=["base_modeling"],
                              models=["replay/sysmobench:gpt5"], samples=1, max_rounds=0, score=False,
                              tasks=TaskSelection(benchmarks=["sysmobench"], ids=["sysmobench/locksvc"]))
    summary = run_experiment(config, progress=False)
    store = Store(tmp_path / "tla" / "results.sqlite")
    (attempt,) = list(store.attempts("tla"))
    store.close()
    assert summary.ran == 1 and attempt.kind == "replay"
    assert attempt.final_artifact is not None and "locksvc.tla" in attempt.final_artifact.files
    assert attempt.rounds[0].check is not None and attempt.rounds[0].check.tool


def test_the_replay_judge_gives_the_stored_sysmeval_answers_the_right_way_round(shared_benchmarks: Path) -> None:
    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.benchmarks import sysmbench
    from sysmo.evals.cascade import ScoringContext
    from sysmo.evals.cascades.sysml import sysmeval_stage
    from sysmo.reproduce.sysmbench import published_dir, references, samples, score_sample
    from sysmo.llm import ModelRoles

    llm = LLM(ModelRoles(generator="replay/designbench:qwen3/direct", judge="replay"), cache=False,
              data_dir=shared_benchmarks)
    task = next(t for t in sysmbench.load(shared_benchmarks / "sysmbench") if t.id == "sysmbench/3")
    sample = next(s for s in samples(published_dir(shared_benchmarks), "qwen3", "direct") if s.id == 3)
    stage = sysmeval_stage(Artifact(language=Language.SYSML, files={"model.sysml": sample.prediction}), task,
                           ScoringContext(judge=llm))
    expected = score_sample(sample, references(shared_benchmarks)[3])
    assert stage.metrics["precision"] == expected.precision and stage.metrics["recall"] == expected.recall
    assert stage.detail["responses"]["precision"] == sample.sysm_eval_r_response  # the authors' swap undone
    with pytest.raises(ConfigError, match="replay judge needs a replay/<source>:<model> generator"):
        LLM(ModelRoles(generator="mockllm/default", judge="replay"), cache=False).provider("judge")


def _starter_tasks(kind: str) -> list:
    from sysmo.benchmarks.registry import load_tasks

    return [t for t in load_tasks(None, families=["starter"]) if t.kind.value == kind][:2]


def test_published_outputs_replay_only_through_agents_whose_calls_are_rounds() -> None:
    """A published output is one round's whole model: base_modeling and trace_learning take it; metagpt
    (analyst, architect, reviewer), openhands (tool actions) and code_translation (translate, abstract) are
    skipped for a replay model, each with the reason, and still run with the other models."""
    from sysmo.agents.registry import AGENT_NAMES
    from sysmo.runner import ExperimentConfig, SkippedPair, expand, missing_inputs
    from sysmo.runner.summary import skipped_lines

    replay, live = "replay/sysmobench:claude", "reference"
    tasks = _starter_tasks("tla")
    config = ExperimentConfig(agents=list(AGENT_NAMES), models=[replay, live], samples=1)
    units, skipped = expand(config, tasks, "exp")
    pairs = {(u.agent, u.model) for u in units}
    assert {a for a, m in pairs if m == replay} == {"base_modeling", "trace_learning"}
    assert {a for a, m in pairs if m == live} == set(AGENT_NAMES)
    refused = [p for p in skipped if p.model == replay]
    assert sorted(p.agent for p in refused) == ["code_translation", "metagpt", "openhands"]
    assert all(p.task_id is None and "cannot replay published outputs" in p.reason
               and "replay them with base_modeling, trace_learning" in p.reason for p in refused)
    lines = skipped_lines([*skipped, SkippedPair("trace_learning", "no traces", task_id="starter/tla/x")])
    assert lines[0] == "skipped pairs the agents cannot do: 1 (agent, task), 3 (agent, replay model)"
    assert "  trace_learning: 1 task: no traces" in lines
    assert f"  metagpt: {replay}: replays no published outputs" in lines
    assert all(len(line) <= 80 for line in lines)
    # notes on missing inputs name only the pairs that run
    only_replay = ExperimentConfig(agents=list(AGENT_NAMES), models=[replay], samples=1)
    units, _ = expand(only_replay, tasks, "exp")
    assert {note.split("'")[1] for note in missing_inputs(units)} <= {"base_modeling", "trace_learning"}


def test_a_run_with_nothing_to_run_is_one_error_and_leaves_no_experiment(shared_benchmarks: Path,
                                                                         tmp_path: Path) -> None:
    from sysmo_cli import run_sysmo

    run = run_sysmo("run", "-a", "metagpt", "-m", "replay/sysmobench:claude", "-b", "starter", "--kind", "tla",
                    "-n", "1", "--id", "nothing", "-o", str(tmp_path), "--no-progress",
                    env={"SYSMO_DATA_DIR": str(shared_benchmarks)})
    assert run.code != 0
    assert "nothing to run" in run.output and "metagpt: replay/sysmobench:claude: replays no published outputs" in run.output
    assert not (tmp_path / "nothing").exists()
    attempt = run_sysmo("attempt", "--agent", "openhands", "--task", "starter/tla/spinlock",
                        "--model", "replay/sysmobench:claude", env={"SYSMO_DATA_DIR": str(shared_benchmarks)})
    assert attempt.code != 0 and "agent 'openhands' cannot replay published outputs" in attempt.output
