"""``sysmo reproduce all`` and the reproduction registry; ``cil-rounds`` on a few real transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from sysmo_cli import run_sysmo


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))


def test_a_registered_reproduction_joins_the_report_without_edits(tmp_path: Path) -> None:
    from sysmo.reproduce import registry as r

    @r.register_reproduction("toy-family", title="Toy family Table 1")
    def toy(options: r.ReproduceOptions) -> r.Reproduction:
        table = r.ReproTable(title="Table 1", columns=["model", "pass"], rows=[
            {"model": "a", "pass": r.Compared(ours=0.5, published="0.50", agrees=True)},
            {"model": "b", "pass": r.Compared(ours=0.1, published="0.30", agrees=False)}])
        return r.Reproduction(name="toy-family", title="Toy family Table 1", tables=[table], flaws=["a flaw"])

    try:
        assert "toy-family" in r.discover() and "sysmbench-table2" in r.discover()
        rep = r.run_reproduction("toy-family", r.ReproduceOptions())
        paths = r.write_report([rep], tmp_path)
        text = paths["markdown"].read_text()
        assert "| toy-family | Table 1 | 1/2 (50%) |" in text and "0.10 (0.30) ✗" in text and "- a flaw" in text
        assert 'class=bad' in paths["html"].read_text()
    finally:
        r.REGISTRY.pop("toy-family")


def test_an_unknown_reproduction_lists_the_known_ones() -> None:
    from sysmo.errors import UnknownNameError
    from sysmo.reproduce.registry import ReproduceOptions, run_reproduction

    with pytest.raises(UnknownNameError, match="use one of .*cil-rounds.*sysmbench-table2"):
        run_reproduction("nope", ReproduceOptions())


def test_cil_rounds_sets_our_verdicts_beside_the_transcripts(shared_benchmarks: Path, tmp_path: Path) -> None:
    from sysmo.reproduce.cil_rounds import cil_rounds

    result = cil_rounds(shared_benchmarks, loops=["openai"], ids=[2, 10], output_dir=tmp_path)
    (loop,) = result.loops
    assert loop.loop == "openai" and loop.samples == 2 and loop.generator == "gpt-5.2-codex"
    # the transcripts: id 2 valid at iteration 2, id 10 at iteration 3 (SysIDE)
    assert loop.source_valid_after == [0.0, 0.5, 1.0]
    assert loop.rounds_compared >= 3 and len(loop.ours_valid_after) == 3
    assert loop.rounds_compared - loop.rounds_agreeing == len(loop.disagreements)
    # typing checks as warnings: never fewer valid, never fewer rounds agreeing with SysIDE
    assert all(a >= b for a, b in zip(loop.ours_parse_valid_after, loop.ours_valid_after, strict=True))
    assert loop.rounds_agreeing_typing_as_warnings >= loop.rounds_agreeing
    table = result.reproduction().tables[0]
    assert [row["round k"] for row in table.rows] == ["0", "1", "2"]
    # every row refers to the two replayed attempts, which sysmo trace opens from the experiment's store
    from sysmo.store import Store

    evidence = table.row_evidence[0]
    assert evidence.model == "replay/cil:openai" and len(evidence.attempts) == 2
    store = Store(Path(evidence.experiment_dir) / "results.sqlite")
    try:
        assert {store.attempt(a).task_id for a in evidence.attempts} == {"sysmbench/2", "sysmbench/10"}
    finally:
        store.close()


def test_reproduce_all_writes_one_report(shared_benchmarks: Path, tmp_path: Path) -> None:
    command = ["reproduce", "all", "--data-dir", str(shared_benchmarks), "--from-files", "--only", "sysmbench-table2",
               "--id", "1", "--id", "2", "--out", str(tmp_path / "rep")]
    run = run_sysmo(*command)  # the command's entry point in this process (tests/sysmo_cli.py)
    assert run.code == 0, run.stderr
    assert "sysmbench-table2: Table 2: ours (paper), in %:" in run.stdout
    text = (tmp_path / "rep" / "reproduction.md").read_text()
    assert "SysMEval precision/recall swapped" in text and "| gpt-4.1 |" in text
    assert (tmp_path / "rep" / "reproduction.html").is_file()
    # from the files, each row refers to the published file and the samples it was computed on
    assert "/published/designbench/gpt_4.1/direct.jsonl` samples 1-2 |" in text
    # a second table run into the same folder joins the report; the first stays, with its agreement
    command[command.index("sysmbench-table2")] = "sysmbench-breakdowns"
    run = run_sysmo(*command)
    assert run.code == 0, run.stderr
    text = (tmp_path / "rep" / "reproduction.md").read_text()
    table2_line = next(line for line in text.splitlines() if line.startswith("| sysmbench-table2 | Table 2"))
    assert not table2_line.endswith("| 0/0 |") and "| sysmbench-breakdowns | by difficulty" in text


def test_judge_agreement_ranks_and_correlates_the_points() -> None:
    from sysmo.reproduce.judge_agreement import SamplePoint, agreement

    pts = [SamplePoint(model=m, strategy="direct", id=i, judge_f1=j, element_f1=e, valid=v)
           for m, i, j, e, v in [("a", 1, 0.9, 0.8, True), ("a", 2, 0.7, 0.6, True), ("b", 1, 0.5, 0.4, False),
                                 ("b", 2, 0.3, 0.2, False), ("c", 1, 0.95, 0.0, False), ("c", 2, 0.1, 0.1, False)]]
    result = agreement(pts)
    assert result.n_samples == 6 and result.n_runs == 3
    assert 0 < result.spearman_element_f1 < 1
    assert result.kendall_runs_element_f1 == pytest.approx(1 / 3)  # c's judge mean is above b's, its elements not
    assert result.examples[0].startswith("c/direct sysmbench/1: judge F1 0.95, element F1 0.00, invalid")
    assert result.n_valid == 2 and result.spearman_element_f1_valid == pytest.approx(1.0)
    assert result.judge_mean_valid == pytest.approx(0.8) and result.judge_mean_invalid == pytest.approx(0.4625)


@pytest.mark.slow
def test_judge_agreement_on_real_stored_answers(shared_benchmarks: Path) -> None:
    from sysmo.reproduce.judge_agreement import agreement, points

    pts = points(shared_benchmarks, runs=[("gpt_4.1", "direct"), ("qwen3", "direct"), ("gemma-2-9b-it", "direct")],
                 ids=frozenset({1, 2, 3}), workers=1)
    assert len(pts) == 9 and all(0 <= p.judge_f1 <= 1 for p in pts)
    assert agreement(pts).kendall_runs_element_f1 is not None


def test_sysmbench_strategies_covers_the_72_runs_and_the_33_judged(shared_benchmarks: Path) -> None:
    from sysmo.reproduce.registry import ReproduceOptions, run_reproduction

    rep = run_reproduction("sysmbench-strategies", ReproduceOptions(data_dir=shared_benchmarks, from_files=True,
                                                                    ids=[1, 2]))
    (table,) = rep.tables
    assert len(table.rows) == 72 and {r["strategy"] for r in table.rows} == {"direct", "few-shot", "cot", "grammar"}
    assert sum(r["SysM-F1"].ours is not None for r in table.rows) == 33
    assert "Only samples [1, 2]" in table.notes[-1]


def test_the_authors_breakdowns_come_out_of_the_task_metadata(shared_benchmarks: Path) -> None:
    from sysmo.reproduce.registry import ReproduceOptions, run_reproduction

    rep = run_reproduction("sysmbench-breakdowns", ReproduceOptions(data_dir=shared_benchmarks, from_files=True))
    assert [t.title.split(":")[0] for t in rep.tables] == ["by difficulty", "by domain", "by key grammar"]
    for table in rep.tables:
        agreeing, total = table.agreement
        assert total > 0 and agreeing == total
    assert sum(int(r["n"]) for r in rep.tables[0].rows) == 151


def test_each_number_refers_to_the_attempts_behind_it(tmp_path: Path) -> None:
    from sysmo.reproduce import registry as r

    runs = tmp_path / "runs"
    many = r.Evidence(experiment_dir=str(runs / "exp1"), model="replay/designbench:gpt_4.1/direct",
                      attempts=["a1", "a2", "a3", "a4"])
    one = r.Evidence(experiment_dir=str(runs / "exp1"), attempts=["a9"])
    table = r.ReproTable(title="T", columns=["model", "BLEU", "F1"])
    table.add({"model": "gpt", "BLEU": r.Compared(ours=1.0, published="1.0", agrees=True),
               "F1": r.Compared(ours=0.5, published="0.6", agrees=False, evidence=one)}, many)
    table.add({"model": "file", "BLEU": r.Compared(ours=2.0, published="2.0", agrees=True)},
              r.Evidence(file=str(tmp_path / "gpt_4.1" / "direct.jsonl"), samples=[1, 2, 3, 7]))
    paths = r.write_report([r.Reproduction(name="toy", title="Toy", tables=[table])], tmp_path / "rep",
                           view_url="http://127.0.0.1:9000")
    text = paths["markdown"].read_text()
    assert (f"| gpt | 1.00 (1.0) | 0.50 (0.6) ✗ | `exp1` model=`replay/designbench:gpt_4.1/direct`, 4 attempts "
            f"(`sysmo trace exp1 --all -o {runs}`) |") in text
    assert f"`{tmp_path / 'gpt_4.1' / 'direct.jsonl'}` samples 1-3, 7 |" in text
    page = paths["html"].read_text()
    # the row's numbers open the experiment filtered to the model in sysmo view; a cell with its own attempt, that one
    assert "<a href='http://127.0.0.1:9000/e/exp1?model=replay%2Fdesignbench%3Agpt_4.1%2Fdirect'" in page
    assert "<a href='http://127.0.0.1:9000/e/exp1/a/a9'" in page
    assert f"<a href='{(tmp_path / 'gpt_4.1' / 'direct.jsonl').as_uri()}'" in page


def test_reports_of_single_tables_build_up_one_report(tmp_path: Path) -> None:
    from sysmo.reproduce import registry as r

    def rep(name: str, ours: float) -> r.Reproduction:
        table = r.ReproTable(title=name, columns=["x"])
        table.add({"x": r.Compared(ours=ours, published="1.00", agrees=ours == 1.0)},
                  r.Evidence(experiment_dir="/runs/e", attempts=["a"]))
        return r.Reproduction(name=name, title=name, tables=[table])

    r.write_report([rep("b", 1.0), rep("a", 0.0)], tmp_path)
    earlier = r.load_report(tmp_path)
    assert isinstance(earlier[0].tables[0].rows[0]["x"], r.Compared)  # the JSON reads back typed
    assert earlier[0].tables[0].row_evidence[0].attempts == ["a"]
    combined = r.merged(earlier, [rep("a", 1.0)], order=["a", "b"])
    assert [x.name for x in combined] == ["a", "b"] and [x.tables[0].agreement for x in combined] == [(1, 1), (1, 1)]


def test_a_heavy_reproduction_is_listed_as_not_run_with_how_to_run_it() -> None:
    from sysmo.reproduce import registry as r

    r.discover()
    assert "sysmobench" in r.HEAVY and "r2abench" in r.REGISTRY and "r2abench" not in r.HEAVY
    entry = r.left_out("sysmobench")
    assert entry.error.startswith("not run by default: TLC-heavy") and "--only sysmobench" in entry.error


def test_r2abench_needs_a_checkout(tmp_path: Path) -> None:
    from sysmo.reproduce.registry import ReproduceOptions, run_reproduction

    rep = run_reproduction("r2abench", ReproduceOptions(data_dir=tmp_path, r2abench_dir=tmp_path / "none"))
    assert rep.error is not None and "--r2abench-dir" in rep.error
