"""The view models of ``sysmo view``: what each page shows, as plain typed data (no HTML, no SQL).

``sysmo.view.gather`` builds them from the experiment store; the templates only lay them out. A future typed
event stream of an attempt can replace ``gather`` and feed the same models.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ArmRate(BaseModel):
    """One arm's pass rate in the experiments list: passed / attempts of the arm, forks left out."""

    arm: str  # the arm's varied settings, e.g. "feedback=none"
    attempts: int
    passed: int

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.attempts if self.attempts else None


class ExperimentSummary(BaseModel):
    """One experiment folder of the runs directory."""

    id: str
    status: str
    label: str  # CONTROL | REPLAY | LIVE
    created_at: str | None = None
    updated_at: str | None = None
    attempts: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    unpriced_models: list[str] = Field(default_factory=list)  # their calls had no known price: cost counted as $0
    tokens: int = 0
    agents: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    isolation: str = "not recorded"
    planned: int | None = None  # attempts the last run planned (None: recorded before sysmo kept the number)
    # attempts made by `sysmo fork`: shown beside the counts, never in them (a fork is not a sample of the plan;
    # attempts, passed, failed, errors, cost and tokens above are the plan's)
    forks: int = 0
    # why its store cannot be read (damaged, or on a full or unreadable disk): listed with this instead of numbers
    unreadable: str | None = None

    @property
    def done(self) -> int:
        return self.passed + self.failed + self.errors

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.attempts if self.attempts else None

    @property
    def isolation_badge(self) -> str:
        """The isolation in a word or two (the full text goes on hover)."""
        if self.isolation == "not recorded":
            return "not recorded"
        kinds = sorted({part.strip() for item in self.isolation.split(";") for part in item.split(":")[-1].split(",")})
        return ", ".join(kinds)[:24]
    # every setting of the run (sysmo.evals.tables.run_settings), as (name, text) for the experiment page
    settings: list[tuple[str, str]] = Field(default_factory=list)
    arms: int = 1  # how many arms the experiment runs (the attempt table names each attempt's when more than one)
    # with more than one arm: each arm's pass rate (forks left out), shown instead of one rate over every arm
    arm_rates: list[ArmRate] = Field(default_factory=list)


class AttemptRow(BaseModel):
    """One line of an experiment's attempt table."""

    id: str
    experiment_id: str
    task_id: str
    kind: str = ""
    agent: str
    model: str
    sample_index: int = 0
    status: str
    failed_stage: str = ""  # the first scoring stage that did not pass ("" when all passed or unscored)
    rounds: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    duration_s: float = 0.0
    error: str = ""
    error_kind: str = ""  # model | budget | infrastructure ("" when the attempt did not error)
    parent_attempt_id: str | None = None  # set for a fork (``sysmo fork``): the attempt it was forked from
    arm: str = ""  # the arm's varied settings, e.g. "feedback=full" ("" for an experiment of one arm)
    scores: dict[str, float | None] = Field(default_factory=dict)  # stage -> value; None: the stage was not scored
    not_scored: dict[str, str] = Field(default_factory=dict)  # stage -> why it was not scored (shown on hover)


class AttemptFilters(BaseModel):
    """The attempt table's query parameters: each filter is an exact value ("" = any)."""

    agent: str = ""
    model: str = ""
    kind: str = ""
    task: str = ""
    status: str = ""
    failed_stage: str = ""
    error_kind: str = ""
    arm: str = ""
    q: str = ""  # text searched in the task, the prompts, the replies, the diagnostics and the error
    sort: str = "task_id"  # a SORT_FIELDS name, or "score:<stage>"
    desc: bool = False
    page: int = Field(default=1, ge=1)

    def active(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if k in FILTER_FIELDS and v}

    def query(self, **changes: object) -> dict[str, object]:
        """The query parameters of this view (filters, search, sort, page), with ``changes``; defaults left out."""
        values = {**self.active(), "q": self.q, "sort": self.sort, "desc": "1" if self.desc else "", "page": self.page,
                  **changes}
        defaults = {"sort": "task_id", "page": 1, "desc": False}
        return {k: v for k, v in values.items() if v not in ("", None) and defaults.get(k, "") != v}


FILTER_FIELDS = ("agent", "model", "kind", "task", "arm", "status", "failed_stage", "error_kind")
SORT_FIELDS = ("task_id", "kind", "agent", "model", "sample_index", "arm", "status", "failed_stage", "rounds", "cost_usd",
               "tokens", "duration_s", "error_kind")


class GroupSummary(BaseModel):
    """Per (agent, model, kind, arm): counts whose numbers link to the attempts behind them."""

    agent: str
    model: str
    kind: str
    arm: str = ""  # the arm's varied settings ("" for an experiment of one arm)
    attempts: int
    passed: int
    failed: int
    errors: int
    infrastructure_errors: int
    pass_rate: float  # over every attempt, errors included (shown beside the error count)
    pass_rate_without_errors: float | None  # over the attempts that ran to their end
    mean_rounds: float
    cost_usd: float


class LlmCallView(BaseModel):
    role: str
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    cached: bool


class ToolCallView(BaseModel):
    """One tool call of an assistant turn: the tool's name and its arguments (indented JSON when they parse)."""

    name: str
    arguments: str
    id: str = ""


class MessageView(BaseModel):
    role: str
    content: str  # "" for an assistant turn made only of tool calls (never "null")
    tool_calls: list[ToolCallView] = Field(default_factory=list)
    tool_call_id: str = ""  # a tool result: the call it answers


class ListingLine(BaseModel):
    number: int
    text: str
    diagnostics: list[str] = Field(default_factory=list)


class FileListing(BaseModel):
    """An artifact file, line by line, with the diagnostics that name each line."""

    name: str
    lines: list[ListingLine]
    unplaced: list[str] = Field(default_factory=list)  # diagnostics naming a line past the end


class DiffRow(BaseModel):
    """One row of a side-by-side diff: ``tag`` is equal | replace | delete | insert."""

    tag: str
    left_number: int | None = None
    left: str = ""
    right_number: int | None = None
    right: str = ""


class FileDiff(BaseModel):
    name: str
    rows: list[DiffRow]


class CheckView(BaseModel):
    tool: str
    tool_version: str
    outcome: str
    duration_s: float
    diagnostics: list[str]
    details: str = ""  # the tool's structured details (TLC error trace, ...), as indented JSON
    cached: bool = False  # served from the TLA+ run cache (tools.tla.run_cache), not run for this check


class StateChange(BaseModel):
    """One key of the graph's state that a step changed: ``kind`` is added | changed | removed."""

    key: str
    kind: str
    value: str = ""  # the new value (the old one for a removed key), as JSON cut at a limit


class GraphStepView(BaseModel):
    step: int
    node: str | None
    next: list[str]
    checkpoint_id: str
    status: str | None = None
    round_index: int | None = None  # the round the graph's state is in after the step
    source: str | None = None  # LangGraph's: input, loop, update, fork
    state: str = ""  # the graph's state at this checkpoint, as indented JSON
    ran_in_round: int | None = None  # the round the step ran in (the round its state was in before it)
    changes: list[StateChange] = Field(default_factory=list)  # the state's changes since the previous step
    short_id: str = ""  # the shortest prefix of the checkpoint id telling it from the attempt's others (8+)
    inherited: bool = False  # a fork's step up to its fork point: the parent's
    fork_command: str = ""  # ``sysmo fork ATTEMPT --at STEP`` resuming from here ("" at the end of the graph)


class TimeSplit(BaseModel):
    """Where a round's time went: model calls, tool checks, and the rest (waiting for a slot, the harness)."""

    round_index: int
    kind: str
    total_s: float
    model_s: float
    tool_s: float
    inherited: bool = False  # a fork's round taken from its parent: the parent's span, not the fork's

    @property
    def queue_s(self) -> float:
        return max(0.0, self.total_s - self.model_s - self.tool_s)


class Outcome(BaseModel):
    """The answer at the top of an attempt page: how it ended and the first reason it did not pass."""

    status: str
    headline: str  # "passed", "failed at stage syntax", "infrastructure error"
    reason: str = ""  # the first failing diagnostic (file:line: message), the error, or the stage's reason
    anchor: str = ""  # the element of the page that shows the reason in context


class GraphDrawing(BaseModel):
    """The agent's compiled LangGraph drawn as inline SVG, the nodes and edges this attempt took highlighted."""

    svg: str
    variant: str
    visited: list[str]


class RoundView(BaseModel):
    index: int
    kind: str
    duration_s: float
    inherited: bool = False  # a fork's round taken from its parent (its record and timing are the parent's)
    messages: list[MessageView]
    response: str
    llm_calls: list[LlmCallView]
    check: CheckView | None = None
    listings: list[FileListing] = Field(default_factory=list)
    diffs: list[FileDiff] = Field(default_factory=list)  # against the previous round's artifact
    extraction_error: str | None = None
    extraction_notes: list[str] = Field(default_factory=list)
    error: str | None = None
    graph_steps: list[GraphStepView] = Field(default_factory=list)


class TimelineEvent(BaseModel):
    """One event of an attempt, in order: a graph step, a model call, a tool check, an error."""

    kind: str  # graph_step | llm_call | tool_check | error
    round_index: int | None
    label: str
    detail: str = ""
    anchor: str = ""  # the element of the page that shows the event in full


class DetailTable(BaseModel):
    title: str
    columns: list[str]
    rows: list[list[str]]


class StageView(BaseModel):
    stage: str
    value: float
    passed: bool
    outcome: str
    metrics: dict[str, float | None]
    skipped_because: str | None = None
    provenance: dict[str, str] = Field(default_factory=dict)
    duration_s: float = 0.0
    scalars: dict[str, str] = Field(default_factory=dict)
    tables: list[DetailTable] = Field(default_factory=list)  # alignment tables, error traces, ...
    other: str = ""  # the rest of the detail as indented JSON


class ModelCallView(BaseModel):
    """One model call of the attempt's event stream (every role and stage: pre-stages, helper and judge too)."""

    seq: int
    stage: str  # "attempt" (the agent's run) or "score" (helper / judge calls while scoring)
    role: str
    purpose: str
    round: int | None
    model: str
    tokens: str
    spend: str
    messages: list[MessageView]
    reply: str
    error: str = ""
    requested: str = ""  # the call's parameters as requested (temperature, max_tokens, seed, tools, ...)
    received: str = ""  # what the provider received of them (litellm's dropping and renaming); "" not known
    dropped: bool = False  # the provider dropped one of them
    sent_params: dict[str, Any] | None = None  # the event's record of it (``LLMCallEvent.sent_params``)
    latency_s: float = 0.0
    cost_usd: float = 0.0  # what the reply cost when it was made (``spend`` is new money only)
    cached: bool = False
    # what the call record holds about the request: its parameters (tools by name), then any other
    # request-parameter field the record carries (e.g. what the provider was really sent), as (name, text)
    params: list[tuple[str, str]] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)  # the names of the tools offered to the model
    reply_tool_calls: list[ToolCallView] = Field(default_factory=list)
    finish_reason: str = ""
    raw_reply: str = ""  # the stored reply record as indented JSON


class SideSetting(BaseModel):
    """One setting of a compared attempt (its agent, model, sample, each arm factor); ``differs`` when the other
    side's value is not the same."""

    name: str
    value: str
    differs: bool = False


class StepPair(BaseModel):
    """A row of the compare page's aligned graph steps: the same step number on each side; ``shared`` when both
    sides hold the same checkpoint (a fork's inherited step)."""

    step: int
    left: GraphStepView | None = None
    right: GraphStepView | None = None
    shared: bool = False


class ForkView(BaseModel):
    """Where a fork came from: its parent, the step it resumed, what it changed."""

    parent_attempt_id: str
    forked_at: str | None  # the checkpoint id
    forked_at_step: int | None
    inherited_rounds: int  # its first rounds, the parent's
    changes: dict[str, str] = Field(default_factory=dict)


class AttemptView(BaseModel):
    """Everything the attempt page shows."""

    dropped_params: str = ""  # parameters a provider dropped in the attempt's calls (``llm.sent.dropped_text``)

    row: AttemptRow
    is_control: bool
    max_rounds: int
    arm: str = ""  # every setting of the attempt's arm (Attempt.arm_label)
    seed: int | None = None  # the (task, sample)'s seed sent with its model calls
    time_limit_s: float | None = None
    started_at: str
    checkpoint_db: str | None
    rounds: list[RoundView]
    timeline: list[TimelineEvent]
    graph_steps: list[GraphStepView]
    stages: list[StageView]
    cascade: str | None = None
    extras: str = ""  # agent-specific outputs (intermediate models, role outputs) as indented JSON
    final_files: dict[str, str] = Field(default_factory=dict)
    siblings: list[AttemptRow] = Field(default_factory=list)  # other attempts of the same task, to compare with
    model_calls: list[ModelCallView] = Field(default_factory=list)  # from the event stream, in order
    fork: ForkView | None = None  # set for an attempt made by ``sysmo fork``
    forks: list[AttemptRow] = Field(default_factory=list)  # the attempts forked from this one
    outcome: Outcome | None = None
    times: list[TimeSplit] = Field(default_factory=list)
    settings: list[tuple[str, str]] = Field(default_factory=list)  # the run's settings
    graph: GraphDrawing | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class BoardCell(BaseModel):
    text: str
    query: dict[str, str] | None = None  # the attempt-table filters behind the number (None: no link)
    value: float | None = None  # the number the cell shows (its mean), to mark the best and draw the bar
    low: float | None = None  # its 95% CI, when it has one
    high: float | None = None
    scale: tuple[float, float] | None = None  # the metric's range, for the CI bar
    best: bool = False
    title: str = ""  # on hover: the full text, or why a stage was not scored


class BoardColumn(BaseModel):
    name: str  # the short header shown
    title: str  # the full header and what it measures (on hover)
    extra: bool = False  # shown on request ("every column"): pass@k beyond 1, sub-metrics, best-of-n
    phone: bool = True  # shown on a phone: agent, model, pass@1 after repair and the kind's headline score


class Leaderboard(BaseModel):
    kind: str
    columns: list[BoardColumn]
    rows: list[list[BoardCell]]


class Plot(BaseModel):
    name: str  # the file name under <experiment>/report/plots/
    caption: str


class PairedTable(BaseModel):
    family: str
    columns: list[str]
    rows: list[list[str]]
    # per cell: a test whose adjusted p is below ``view.gather.SIGNIFICANCE`` (its Δ and its p cell are marked)
    significant: list[list[bool]] = Field(default_factory=list)


class MatrixCell(BaseModel):
    """One sample of a task by one agent / model: its status, score and attempt."""

    attempt_id: str
    status: str
    score: float | None
    title: str


class TaskMatrix(BaseModel):
    """Per task (rows) x agent / model (columns): every sample's outcome, as inspect's epochs view."""

    columns: list[str]
    rows: list[tuple[str, list[list[MatrixCell]]]]


class BreakdownTable(BaseModel):
    """The report's "Pass rate by <by>" table: the pass rate per (agent, model) and level of ``by``."""

    by: str
    columns: list[str]
    rows: list[list[str]]


class ReportView(BaseModel):
    """The report's per-kind leaderboards, each number linked to the attempts behind it."""

    boards: list[Leaderboard]
    metric_lines: list[str]
    errored_note: str | None = None
    notes: list[str] = Field(default_factory=list)  # the report's scoring notes (``evals.report.report_notes``)
    plots: list[Plot] = Field(default_factory=list)
    plots_missing: str = ""  # why there are no plots (the report was not written yet)
    paired: list[PairedTable] = Field(default_factory=list)
    paired_note: str = ""
    significance_note: str = ""  # what the * of a paired cell means: "* Holm-adjusted p < 0.05"
    matrix: TaskMatrix | None = None
    breakdowns: list[BreakdownTable] = Field(default_factory=list)  # ``evals.report.pass_rate_breakdowns``
