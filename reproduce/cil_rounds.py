"""``cil-rounds``: the compiler-in-the-loop repair curves (published/cil) replayed through sysmo's repair loop.

Each CIL transcript (``replay/cil:<loop>``) drives ``base_modeling``'s repair loop round by round: round k's
reply is the transcript's iteration k, our OpenSysML check judges it, and the loop goes on while OpenSysML
rejects and the transcript has replies. Per round we set our verdict beside the transcript's own (SysIDE's
return code), and per loop the share of samples valid after round k, k = 0..N, under each checker: does the
published repair curve hold under our validator?

Where our loop stops before the transcript did (OpenSysML accepted a reply SysIDE rejected), the later
transcript rounds are not replayed (the loop ends at a pass); where it goes on past the transcript's end (we
reject the reply SysIDE accepted), the attempt ends failed, as the source ended.

OpenSysML makes strict typing checks other SysML v2 tools do not (``usage-typing``,
``part-usage-part-definition``, ...; ``sysmo.tools.sysml.diagnostics.TYPING_CODES``). On the full data nearly
every round SysIDE accepts and OpenSysML rejects is rejected for those alone (138 of 139), so each loop also
gets the curve with them as warnings (a round counts as valid when it parses and resolves): the like-for-like
comparison with SysIDE.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field
from sysmo.benchmarks.datadir import require_data_dir
from sysmo.llm.replay import CILSource

CIL_REPLAY_LOOPS = ("openai", "anthropic", "deepseek_reasoner", "mistral_large")
MAX_ROUNDS = 8  # the longest published loop has 8 iterations
CURVE_TOLERANCE = 0.05


class LoopRounds(BaseModel):
    loop: str
    generator: str | None = None
    samples: int = 0
    source_valid_after: list[float] = Field(default_factory=list)  # index k: share valid by round k (SysIDE)
    ours_valid_after: list[float] = Field(default_factory=list)  # index k: share passed by round k (OpenSysML)
    # the same with OpenSysML's strict typing checks as warnings (SysIDE makes no such checks)
    ours_parse_valid_after: list[float] = Field(default_factory=list)
    rounds_agreeing_typing_as_warnings: int = 0
    rounds_compared: int = 0
    rounds_agreeing: int = 0
    disagreements: list[str] = Field(default_factory=list)  # "id round k: SysIDE valid, OpenSysML invalid"
    model: str = ""  # the replay model in the experiment (replay/cil:<loop>)
    attempts: list[str] = Field(default_factory=list)  # the attempts of the transcripts compared


class CILRounds(BaseModel):
    loops: list[LoopRounds]
    experiment: str

    def reproduction(self):
        from sysmo.reproduce.registry import Compared, Evidence, Reproduction, ReproTable

        tables = []
        for loop in self.loops:
            n = max(len(loop.source_valid_after), len(loop.ours_valid_after))
            table = ReproTable(title=f"{loop.loop} ({loop.generator or '?'}): valid after round k, ours (transcript)",
                               columns=["round k", "valid after k", "typing checks as warnings"])

            def at(curve: list[float], k: int) -> float:
                return curve[min(k, len(curve) - 1)] if curve else 0.0

            for k in range(n):
                theirs = at(loop.source_valid_after, k)
                strict, lenient = at(loop.ours_valid_after, k), at(loop.ours_parse_valid_after, k)
                table.add({"round k": str(k),
                           "valid after k": Compared(ours=strict, published=f"{theirs:.2f}",
                                                     agrees=abs(strict - theirs) <= CURVE_TOLERANCE),
                           "typing checks as warnings": Compared(ours=lenient, published=f"{theirs:.2f}",
                                                                 agrees=abs(lenient - theirs) <= CURVE_TOLERANCE)},
                          Evidence(experiment_dir=self.experiment, model=loop.model, attempts=loop.attempts))
            compared = loop.rounds_compared or 1
            table.notes = [f"{loop.samples} transcripts; per-round verdicts agree on {loop.rounds_agreeing}/"
                           f"{loop.rounds_compared} rounds ({loop.rounds_agreeing / compared:.0%}), "
                           f"{loop.rounds_agreeing_typing_as_warnings}/{loop.rounds_compared} "
                           f"({loop.rounds_agreeing_typing_as_warnings / compared:.0%}) with OpenSysML's strict "
                           f"typing checks as warnings; curves agree within {CURVE_TOLERANCE:.2f}.",
                           *(f"disagreement: {d}" for d in loop.disagreements[:5])]
            tables.append(table)
        return Reproduction(name="cil-rounds", title="Compiler-in-the-loop repair curves under OpenSysML",
                            source="github.com/cmuchancel/SysMBench_Compiler_In_Loop @ 587c7f5 (api_loop transcripts)",
                            tables=tables, experiments=[self.experiment],
                            flaws=["The CIL study checks with SysIDE only; its 'final_valid' is re-judged here by "
                                   "OpenSysML, round by round, with the disagreements listed."])


def cil_rounds(data_dir: Path | str | None = None, *, loops: list[str] | None = None, ids: list[int] | None = None,
               output_dir: Path | None = None) -> CILRounds:
    from sysmo.reproduce.replay import replay_experiment

    data = require_data_dir(data_dir)
    loops = loops or list(CIL_REPLAY_LOOPS)
    models = {f"replay/cil:{loop}": loop for loop in loops}
    task_ids = [f"sysmbench/{i}" for i in sorted(ids)] if ids else None
    replayed = replay_experiment(list(models), data_dir=data, output_dir=output_dir, max_rounds=MAX_ROUNDS,
                                 ids=task_ids, name="reproduce-cil")
    results = []
    experiment = ""
    for name, run in replayed.items():
        experiment = str(run.directory)
        source = CILSource(data, models[name], None)
        loop = LoopRounds(loop=models[name], model=name)
        ours_first: list[int | None] = []
        parse_first: list[int | None] = []
        theirs_first: list[int | None] = []
        longest = 0
        for sample_id, attempt in sorted(run.attempts.items()):
            output = source.output(attempt.task_id)
            if output is None or attempt.status == "not_covered":
                continue
            loop.samples += 1
            loop.attempts.append(attempt.attempt_id)
            loop.generator = loop.generator or output.served_model
            longest = max(longest, len(output.verdicts), len(attempt.rounds))
            theirs_first.append(next((v.round for v in output.verdicts if v.valid), None))
            ours_first.append(next((k for k, r in enumerate(attempt.rounds) if r.valid), None))
            parse_first.append(next((k for k, r in enumerate(attempt.rounds) if r.valid or r.typing_only), None))
            for k, rnd in enumerate(attempt.rounds):
                if k < len(output.verdicts) and rnd.valid is not None and output.verdicts[k].valid is not None:
                    loop.rounds_compared += 1
                    if (rnd.valid or rnd.typing_only) == output.verdicts[k].valid:
                        loop.rounds_agreeing_typing_as_warnings += 1
                    if rnd.valid == output.verdicts[k].valid:
                        loop.rounds_agreeing += 1
                    else:
                        loop.disagreements.append(
                            f"sysmbench/{sample_id} round {k}: SysIDE {'valid' if output.verdicts[k].valid else 'invalid'}"
                            f", OpenSysML {'valid' if rnd.valid else 'invalid'}"
                            f"{' (typing checks only)' if rnd.typing_only else ''} (attempt {attempt.attempt_id})")
        n = loop.samples or 1
        loop.source_valid_after = [sum(f is not None and f <= k for f in theirs_first) / n for k in range(longest)]
        loop.ours_valid_after = [sum(f is not None and f <= k for f in ours_first) / n for k in range(longest)]
        loop.ours_parse_valid_after = [sum(f is not None and f <= k for f in parse_first) / n
                                       for k in range(longest)]
        results.append(loop)
    return CILRounds(loops=results, experiment=experiment)
