"""``replay/<source>:<model>[/<strategy>]``: answers each task with a published model output (labelled REPLAY).

No model is called: the answers are real outputs that a model gave when a paper's authors ran it, so runs
through the normal pipeline (cascades, statistics, paired tests, reports, traces) see real variance and real
failure modes for free. The provider plugs into ``LLM`` like ``reference`` and ``mockllm`` (offline: not
cached, not retried, nothing spent) but its runs are labelled REPLAY, not CONTROL (``roles.model_kind``).

Sources (under the data directory, ``--data-dir`` / ``$SYSMO_DATA_DIR``):

``designbench`` -- ``published/designbench/<model>/<strategy>.jsonl``: SysMBench's stored predictions, one JSON
    line per sample with ``id`` (the task ``sysmbench/<id>``), ``prediction`` (the verbatim model output) and the
    authors' per-sample scores. ``<model>`` is the folder name (``gpt_4.1``, ``qwen3``, ``claude3``,
    ``deepseek_r1``, ``Mistral-7B-Instruct-v0.2``, ...; matched case-insensitively); ``<strategy>`` is
    ``direct`` (default, the paper's zero-shot), ``few-shot``, ``cot`` or ``grammar``. One answer per task.
``cil`` -- ``published/cil/<loop>/<id>.json``: compiler-in-the-loop transcripts (task ``sysmbench/<id>``).
    ``<model>`` is the loop folder (``openai``, ``anthropic``, ``deepseek_reasoner``, ``mistral_large``,
    ``ai_agent``). Round k of sysmo's repair loop is answered with ``run.iterations[k].response_text``; when the
    transcript has no iteration k the attempt ends as the source ended (``ReplayEndedError``). ``ai_agent``
    has no transcripts: its one answer is ``final_model``.
``sysmobench`` -- ``sysmobench/example_specs/<system>/[<strategy>/]<model>/<system>.tla`` (+ ``.cfg``):
    SysMoBench's model-generated TLA+ specs (task ``sysmobench/<system>``). ``<model>``: ``claude``, ``gpt5``,
    ``deepseek``, ``gemini``; ``<strategy>``: the optional level between system and model (``specula``,
    ``simpleloop``). The answer is every file as a fenced block, like the ``reference`` control's.

``r2abench`` -- ``<checkout>/Output/E-R2A/<workflow>/<model>/<project>/predicted.puml`` of a checkout of the
    R2ABench replication package (``$SYSMO_R2ABENCH_DIR``, else ``<data dir>/r2abench``): each model's published
    diagram for a project answers the task ``r2abench/<project>/srs`` (the package generated them from the
    project's SRS, ``checked_srs.md``; the other input ablations are not covered). ``<model>`` is the folder
    (``gpt-5``, ``claude-sonnet-4-6``, ``deepseek-v3.2``, ``qwen3-coder-480b-a35b-instruct``); ``<strategy>`` the
    workflow folder (``direct``, default; ``metagpt-custom``, ``openhands``, ``mini-swe-agent``; a unique prefix
    such as ``metagpt`` or ``OpenHands`` will do). The source's label ends with ``@<n>:<digest>``: how many
    predictions the checkout holds for that model and workflow and a digest of which (names and contents), so a
    replay of a fuller checkout is never mistaken for an earlier one. One answer per task.

A task the source has no output for is *not covered* (``NotCoveredError``; the attempt's status is
``not_covered``, which is neither a pass nor a failure). Generator calls are answered with the outputs; judge
calls (``--judge replay``) with the source's stored SysMEval judge answers, where it has them: DesignBench's
runs judged by the authors (their "r" answer for our precision prompt and their "p" answer for our recall
prompt, undoing their role swap) and the CIL ``openai`` / ``ai_agent`` judge files (filled the right way round).
The direction comes from the call's purpose (``sysmeval_precision`` / ``sysmeval_recall``). The stored answer
judged the published reply verbatim.

>>> provider = ReplayProvider.from_name("replay/designbench:gpt_4.1/direct", data_dir=Path("/data"))
>>> provider.replies("sysmbench/1")[0][:7]
'package'
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from functools import cached_property
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError
from sysmo.contracts.artifact import Artifact, Language
from sysmo.errors import ConfigError, DataMissingError, LLMError, NotCoveredError, ReplayEndedError
from sysmo.llm.request import LLMRequest
from sysmo.llm.response import LLMResponse, Usage
from sysmo.log import get_logger

log = get_logger(__name__)

PREFIX = "replay/"
REPLAY_NOTE = "replayed published output: no model was called and nothing was spent"
NAME_FORM = "replay/<source>:<model>[/<strategy>]"
DESIGNBENCH_STRATEGIES = ("direct", "few-shot", "cot", "grammar")
CIL_LOOPS = ("openai", "anthropic", "deepseek_reasoner", "mistral_large", "ai_agent")
R2ABENCH_OUTPUT = Path("Output") / "E-R2A"
R2ABENCH_DEFAULT_WORKFLOW = "direct"


class ReplaySpec(BaseModel):
    """A parsed ``replay/<source>:<model>[/<strategy>]`` name."""

    source: str
    model: str
    strategy: str | None = None

    @classmethod
    def parse(cls, name: str) -> ReplaySpec:
        match = re.fullmatch(r"replay/([a-z0-9_-]+):([^/\s]+)(?:/([^/\s]+))?", name)
        if match is None:
            raise ConfigError(f"bad replay model name {name!r}: use {NAME_FORM}, e.g. replay/designbench:gpt_4.1/direct")
        source, model, strategy = match.groups()
        if source not in SOURCES:
            raise ConfigError(f"unknown replay source {source!r} in {name!r}: use one of {', '.join(SOURCES)}")
        return cls(source=source, model=model, strategy=strategy)


class RoundVerdict(BaseModel):
    """What the source's own checker said about one of its rounds (CIL: SysIDE's return code)."""

    round: int
    valid: bool | None = None
    return_code: int | None = None
    diagnostics: str = ""


class SourceOutput(BaseModel):
    """Everything a source holds for one task: the reply of every round, and the source's own verdicts."""

    model_config = ConfigDict(frozen=True)
    replies: list[str]
    verdicts: list[RoundVerdict] = []
    served_model: str | None = None
    completion_tokens: list[int] = []
    judge: dict[str, str] = {}  # direction (precision / recall, right way round) -> the stored judge answer


class Source(Protocol):
    label: str

    def output(self, task_id: str) -> SourceOutput | None: ...

    def task_ids(self) -> list[str]: ...


def _folder(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise DataMissingError(f"replay source {what} not found at {path} (see the layouts in sysmo/llm/replay.py)")
    return path


def _pick(name: str, choices: list[str], what: str, where: Path, prefix: bool = False) -> str:
    for choice in choices:
        if choice == name:
            return choice
    folded = [c for c in choices if c.lower() == name.lower()]
    if folded:
        return folded[0]
    started = [c for c in choices if prefix and c.lower().startswith(name.lower())]
    if len(started) == 1:
        return started[0]
    raise ConfigError(f"no {what} {name!r} under {where}: use one of {', '.join(sorted(choices, key=str.lower))}")


class DesignBenchSource:
    """``published/designbench/<model>/<strategy>.jsonl``: one stored prediction per SysMBench sample."""

    def __init__(self, data_dir: Path, model: str, strategy: str | None) -> None:
        root = _folder(data_dir / "published" / "designbench", "designbench")
        models = [p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.jsonl"))]
        self.model = _pick(model, models, "DesignBench model", root)
        self.strategy = strategy or "direct"
        self.path = root / self.model / f"{self.strategy}.jsonl"
        if not self.path.is_file():
            have = sorted(p.stem for p in (root / self.model).glob("*.jsonl"))
            raise ConfigError(f"no DesignBench strategy {self.strategy!r} for {self.model}: use one of {', '.join(have)}")
        self.label = f"designbench:{self.model}/{self.strategy}"

    @cached_property
    def lines(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        with self.path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    out[f"sysmbench/{int(row['id'])}"] = row
                    str(row["prediction"])
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise DataMissingError(
                        f"{self.path}:{n} is not a DesignBench line (needs id and prediction): {exc}"
                    ) from exc
        return out

    def output(self, task_id: str) -> SourceOutput | None:
        row = self.lines.get(task_id)
        if not row:
            return None
        judge = {}
        if row.get("sysm_eval_r_response") is not None and row.get("sysm_eval_p_response") is not None:
            # the authors' role swap: their "r" answer judged the prediction's claims (precision), "p" the reference's
            judge = {"precision": row["sysm_eval_r_response"], "recall": row["sysm_eval_p_response"]}
        return SourceOutput(replies=[row["prediction"]], served_model=row.get("paper_model"), judge=judge)

    def task_ids(self) -> list[str]:
        return list(self.lines)


class CILTranscript(BaseModel):
    """The fields of ``cil/<loop>/<id>.json`` the replay reads."""

    model_config = ConfigDict(extra="ignore")
    id: int
    generator_model: list[str] | str | None = None
    final_model: str | None = None
    run: dict | None = None
    judge: dict | None = None


class CILSource:
    """``published/cil/<loop>/<id>.json``: one reply per round of the compiler-in-the-loop transcript."""

    def __init__(self, data_dir: Path, model: str, strategy: str | None) -> None:
        root = _folder(data_dir / "published" / "cil", "cil")
        loops = [p.name for p in root.iterdir() if p.is_dir() and any(p.glob("[0-9]*.json"))]
        self.loop = _pick(model, loops, "CIL loop", root)
        if strategy is not None:
            raise ConfigError(f"replay/cil:{self.loop} takes no strategy (got /{strategy})")
        self.folder = root / self.loop
        self.label = f"cil:{self.loop}"
        self._cache: dict[str, SourceOutput | None] = {}
        self._lock = threading.Lock()

    def transcript(self, task_id: str) -> CILTranscript | None:
        family, _, number = task_id.partition("/")
        if family != "sysmbench" or not number.isdigit():
            return None
        path = self.folder / f"{int(number)}.json"
        if not path.is_file():
            return None
        try:
            return CILTranscript.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise DataMissingError(f"{path} is not a CIL transcript (needs id, run.iterations or final_model)") from exc

    def _read(self, task_id: str) -> SourceOutput | None:
        doc = self.transcript(task_id)
        if doc is None:
            return None
        served = doc.generator_model[0] if isinstance(doc.generator_model, list) and doc.generator_model else None
        judge = {d: str((doc.judge or {}).get(d, {}).get("response_text") or "") for d in ("precision", "recall")}
        judge = {d: t for d, t in judge.items() if t}
        iterations = sorted((doc.run or {}).get("iterations") or [], key=lambda it: it.get("iteration", 0))
        if not iterations:
            if doc.final_model is None:
                raise DataMissingError(f"{self.folder}/{doc.id}.json has neither run.iterations nor final_model")
            return SourceOutput(replies=[doc.final_model], served_model=served, judge=judge)
        verdicts = [
            RoundVerdict(round=i, valid=it.get("valid"), return_code=it.get("validator_return_code"),
                         diagnostics=(it.get("validator_stdout") or "") + (it.get("validator_stderr") or ""))
            for i, it in enumerate(iterations)
        ]
        tokens = [int((it.get("response_usage") or {}).get("output_tokens")
                       or (it.get("response_usage") or {}).get("completion_tokens") or 0) for it in iterations]
        # the reply is what the model answered; the CIL loop's model_text is what it kept from that reply
        replies = [it.get("response_text") or it.get("model_text") or "" for it in iterations]
        return SourceOutput(replies=replies, verdicts=verdicts, served_model=served, completion_tokens=tokens,
                            judge=judge)

    def output(self, task_id: str) -> SourceOutput | None:
        with self._lock:
            if task_id not in self._cache:
                self._cache[task_id] = self._read(task_id)
            return self._cache[task_id]

    def task_ids(self) -> list[str]:
        return sorted((f"sysmbench/{p.stem}" for p in self.folder.glob("[0-9]*.json")), key=lambda t: int(t[10:]))


class SysMoBenchSource:
    """``sysmobench/example_specs/<system>/[<strategy>/]<model>/``: model-generated TLA+ specs with their cfg."""

    def __init__(self, data_dir: Path, model: str, strategy: str | None) -> None:
        self.root = _folder(data_dir / "sysmobench" / "example_specs", "sysmobench example_specs")
        self.model = model
        self.strategy = strategy
        known = {p.parent.name for p in self.root.rglob("*.tla")} - {p.name for p in self.root.iterdir()}
        known -= {p.name for system in self.root.iterdir() if system.is_dir() for p in system.iterdir()
                  if p.is_dir() and not any(p.glob("*.tla"))}
        self.model = _pick(model, sorted(known), "SysMoBench example-spec model", self.root)
        self.label = f"sysmobench:{self.model}" + (f"/{strategy}" if strategy else "")

    def folder(self, system: str) -> Path:
        base = self.root / system
        return base / self.strategy / self.model if self.strategy else base / self.model

    def output(self, task_id: str) -> SourceOutput | None:
        family, _, system = task_id.partition("/")
        if family != "sysmobench" or not system:
            return None
        folder = self.folder(system)
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*")) if p.suffix in (".tla", ".cfg")}
        if not any(name.endswith(".tla") for name in files):
            return None
        from sysmo.llm.reference import format_reference

        artifact = Artifact(language=Language.TLA, files=files)
        return SourceOutput(replies=[format_reference(artifact)], served_model=self.model)

    def task_ids(self) -> list[str]:
        return sorted(f"sysmobench/{p.name}" for p in self.root.iterdir() if p.is_dir() and self.output(f"sysmobench/{p.name}"))


class R2ABenchSource:
    """``<checkout>/Output/E-R2A/<workflow>/<model>/<project>/predicted.puml``: one published diagram per project."""

    def __init__(self, root: Path, model: str, strategy: str | None) -> None:
        out = _folder(root / R2ABENCH_OUTPUT, f"r2abench predictions ({R2ABENCH_OUTPUT} of the checkout)")
        workflows = [p.name for p in out.iterdir() if p.is_dir()]
        self.workflow = _pick(strategy or R2ABENCH_DEFAULT_WORKFLOW, workflows, "R2ABench workflow", out, prefix=True)
        models = [p.name for p in (out / self.workflow).iterdir() if p.is_dir() and any(p.glob("*/predicted.puml"))]
        self.model = _pick(model, models, f"R2ABench model with predictions for {self.workflow}", out / self.workflow)
        self.folder = out / self.workflow / self.model
        self.predictions = {p.parent.name: p for p in sorted(self.folder.glob("*/predicted.puml"))}
        digest = hashlib.sha256()
        for project, path in self.predictions.items():
            digest.update(f"{project}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\0".encode())
        self.label = f"r2abench:{self.model}/{self.workflow}@{len(self.predictions)}:{digest.hexdigest()[:10]}"
        log.info("replay.r2abench", source=self.label, projects=sorted(self.predictions))

    def output(self, task_id: str) -> SourceOutput | None:
        family, _, rest = task_id.partition("/")
        project, _, ablation = rest.rpartition("/")
        path = self.predictions.get(project)
        if family != "r2abench" or ablation != "srs" or path is None:
            return None
        return SourceOutput(replies=[path.read_text(encoding="utf-8")], served_model=self.model)

    def task_ids(self) -> list[str]:
        return [f"r2abench/{project}/srs" for project in self.predictions]


SOURCES = {"designbench": DesignBenchSource, "cil": CILSource, "sysmobench": SysMoBenchSource,
           "r2abench": R2ABenchSource}


def r2abench_checkout(data_dir: Path | str | None = None) -> Path:
    """The R2ABench checkout: ``$SYSMO_R2ABENCH_DIR``, else ``<data dir>/r2abench``."""
    from sysmo.benchmarks.datadir import DATASETS, require_data_dir

    dataset = DATASETS["r2abench"]
    return dataset.path(None if dataset.override() is not None else require_data_dir(data_dir))


def open_source(spec: ReplaySpec, data_dir: Path | str | None = None) -> Source:
    from sysmo.benchmarks.datadir import require_data_dir

    if spec.source == "r2abench":
        return R2ABenchSource(r2abench_checkout(data_dir), spec.model, spec.strategy)
    return SOURCES[spec.source](require_data_dir(data_dir), spec.model, spec.strategy)


class ReplayProvider:
    """Answers generator calls for task T, round k with the source's k-th reply for T."""

    name = "replay"
    # offline: the client neither caches nor retries it; its answers are not controls (labelled REPLAY: roles.model_kind)
    is_control = True

    def __init__(self, model: str, source: Source) -> None:
        self.model = model
        self.source = source

    @classmethod
    def from_name(cls, model: str, data_dir: Path | str | None = None) -> ReplayProvider:
        return cls(model, open_source(ReplaySpec.parse(model), data_dir))

    def replies(self, task_id: str) -> list[str]:
        found = self.source.output(task_id)
        return found.replies if found is not None else []

    def complete(self, request: LLMRequest) -> LLMResponse:
        ctx = request.context
        if ctx is None or ctx.task_id is None:
            raise LLMError(f"{self.model} needs the task: call with context=CallContext(task=task)")
        if request.role == "judge":
            return self._judge(request, ctx.task_id, ctx.purpose or "")
        if request.role != "generator":
            raise LLMError(f"{self.model} only answers generator and judge calls (this was a {request.role} call)")
        if ctx.purpose not in (None, "generate", "repair"):
            raise LLMError(f"{self.model} answers a round's model (generate, repair), not the {ctx.purpose!r} step: "
                           f"a published output is a final model (replay it with base_modeling or trace_learning)")
        found = self.source.output(ctx.task_id)
        if found is None:
            raise NotCoveredError(f"{ctx.task_id} is not covered by replay source {self.source.label}")
        round_index = ctx.round or 0
        if round_index >= len(found.replies):
            raise ReplayEndedError(
                f"replay source {self.source.label} has no reply for {ctx.task_id} round {round_index}: "
                f"its attempt ended after {len(found.replies)} round(s)",
                rounds=len(found.replies),
            )
        tokens = found.completion_tokens[round_index] if round_index < len(found.completion_tokens) else 0
        return LLMResponse(text=found.replies[round_index], finish_reason="stop", model=self.model,
                           served_model=found.served_model, provider=self.name, is_control=False,
                           role=request.role, sample_index=request.sample_index, cost_note=REPLAY_NOTE,
                           usage=Usage(completion_tokens=tokens),
                           raw={"replay_source": self.source.label, "replay_round": round_index})

    def _judge(self, request: LLMRequest, task_id: str, purpose: str) -> LLMResponse:
        direction = purpose.removeprefix("sysmeval_")
        if direction not in ("precision", "recall"):
            raise LLMError(f"the replay judge answers only SysMEval calls (purpose sysmeval_precision/recall), "
                           f"not {purpose or 'an unnamed call'!r}")
        found = self.source.output(task_id)
        answer = found.judge.get(direction) if found is not None else None
        if answer is None:
            raise LLMError(f"replay source {self.source.label} stored no SysMEval {direction} answer for {task_id}")
        return LLMResponse(text=answer, finish_reason="stop", model="replay", served_model="stored judge answer",
                           provider=self.name, role=request.role, sample_index=request.sample_index,
                           cost_note=REPLAY_NOTE, raw={"replay_source": self.source.label, "direction": direction})

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return self.complete(request)
