"""The TLC runs of one invariant stage: each check alone, or several in one run (grouped, merged), per verdict.

Grouped checks (``grouped``, cascade option ``invariants.grouped``, default true): the safety templates that
TLC names when violated (state predicates, and ``[]P`` / ``[][A]_v`` with nothing temporal inside) and that
run under the same cfg are checked in ONE TLC run of a module defining each as ``SysmoInvariant_<i>``. With
one worker TLC explores the states in the same order whatever it checks, so the first violation it reports
is the first state where that template fails: that template gets the verdict it gets alone (same
counterexample, same distinct-state count), and the run is repeated without it until none is violated; a
complete run without violation, or a time-out, is then every remaining template's verdict, as each alone
would get it. Anything TLC does not pin on one template (an evaluation error, a violation it does not name)
sends the remaining templates to one run each. Liveness templates expected to hold that run under the same
cfg are likewise checked in ONE TLC run under PROPERTY (``group_liveness``, cascade option
``invariants.grouped_liveness``, default true): a complete run without violation, or a time-out, is each one's
verdict; a violation, which TLC does not pin on one temporal property, sends each to a run alone (PGo
locksvc: ProgressOK, SystemLiveness and SpecNoDeadlock over the same 29,074 states, about 45 s of TLC alone,
about 39 s together; PGo raftkvs: ClientsLiveness and ElectionLiveness both reach the time limit, one run
instead of two). The two groups of one cfg share ONE TLC run (``merge_liveness``, cascade option
``invariants.merge_liveness``, default true): the safety templates under INVARIANT, the liveness ones under
PROPERTY. A complete run without violation is every template's verdict (a correct model: one JVM and one
exploration of the state space less); a violated safety template gets its verdict from it as in the safety
group's own run, and the rest of each group goes on as without the merge; a time-out is the liveness templates'
verdict, and the safety group runs on its own (it may finish within the limit alone); a violated temporal
property, named by TLC or the only PROPERTY, is that template's verdict; when TLC does not say which of several
failed, each liveness template runs alone, as after its group's own run; anything else sends both groups to their
own runs. The safety group then runs on its own in every case where the shared run did not decide it, so a
model that breaks liveness costs the JVMs it cost before. Possibility checks and templates expected to be
violated are always checked alone. Only a time limit tells grouped and alone apart: the grouped run evaluates
every template on each state, so within the same limit it may explore fewer states than a run per template would
(``grouped=False``: one TLC run per template, as the harness runs them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import CheckResult, Outcome
from sysmo.evals.metrics.tla_invariants.checks import _attributed, _Check, _parse_failure, _temporal_violation
from sysmo.evals.metrics.tla_invariants.formulas import combined_module, member_name
from sysmo.evals.metrics.tla_invariants import instances, twins
from sysmo.evals.metrics.tla_invariants.hunt import hunted
from sysmo.evals.metrics.tla_invariants.verdicts import InvariantVerdict
from sysmo.log import get_logger
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla import tlc

log = get_logger(__name__)

Decided = list[tuple[int, InvariantVerdict, str]]  # (template index, verdict, TLC version) per decided template


@dataclass
class TlcRuns:
    """Runs the checks of one stage with TLC under one set of bounds; ``rejected`` collects the templates whose
    example, sent without a SANY run of its own (``unchecked``), TLC's parse rejected."""

    tla_files: dict[str, str]
    main_module: str
    reserved: set[str]  # the model's names: a combined module must not redefine them
    unchecked: bool  # the formulas went to TLC without a SANY run of their own (``sany_first=False``)
    strategy: str
    bounded: str
    timeout_s: float
    max_states: int | None
    max_states_temporal: int | None
    max_depth: int | None
    liveness_at_end: bool = False  # temporal properties checked once, after the search (``tlc.model_check``)
    constants: set[str] = field(default_factory=set)  # the model's CONSTANTs (an instance guard may name them)
    by_instances: bool = False  # an expected violation quantified over a constant set: one instance at a time
    instance_batches: bool = False  # ... after the first, batches of doubling size, one run each (``by_instance``)
    same_bound: bool = False  # a merged run ended by the state bound decides a safety group under that same bound
    dedupe: bool = False  # a liveness template stating another's formula is left out of their shared run (``twins``)
    rejected: list[int] = field(default_factory=list)

    def bound_of(self, members: list[_Check]) -> int | None:
        """The state bound of a TLC run of ``members``: the temporal one when it checks a temporal property."""
        return self.max_states_temporal if any(c.as_property for c in members) else self.max_states

    def single(self, check: _Check) -> tuple[InvariantVerdict, str]:
        files = {**self.tla_files, f"{check.module}.tla": check.wrapper}
        if self.strategy == "hunt":  # escalating search for a counterexample (sysmo.tools.tla.bug_hunt)
            result, verdict = hunted(check, files, self.timeout_s, self.bounded)
            self.sent_back(result, check)
            return verdict, result.tool_version
        if self.by_instances and check.as_property and check.template.expected == "violated" and check.standard:
            decided = self.by_instance(check)
            if decided is not None:
                return decided
        result = tlc.model_check(
            Artifact(language=Language.TLA, files=files),
            check.config,
            module=check.module,
            check_deadlock=False,
            timeout_s=self.timeout_s,
            max_states=self.bound_of([check]),
            max_depth=self.max_depth,
            liveness_at_end=self.liveness_at_end,
        )
        self.sent_back(result, check)
        return check.verdict(result, self.bounded), result.tool_version

    def by_instance(self, check: _Check) -> tuple[InvariantVerdict, str] | None:
        """A template expected to be violated, ``\\A i, j \\in S : F``, checked one instance per TLC run in TLC's
        order of S until one is violated (``instances``); None: no instance plan, the template is checked whole.

        Each run explores the same states under the same bound as the whole template's run. A violated instance
        in a complete run is a violation of the conjunction (that verdict); every instance holding in complete
        runs is the conjunction holding; any other result (a bound, the clock, an evaluation error) is what the
        whole run gives too (inconclusive or error), and ends the checks.

        ``instance_batches``: after the first instance, the runs check batches of instances in one formula, of
        doubling size (2-3, 4-7, 8-15, ...): each batch is the template's own conjunction restricted to those
        instances, so the same reading holds for it (violated in a complete run: the conjunction is; holding:
        each of its instances does), with one search per batch instead of one per instance."""
        plan = instances.plan(check.candidate, self.constants)
        if plan is None:
            return None
        total, k, last, result = None, 1, 1, None
        while total is None or k <= total:
            name = f"{check.module}I{k}"
            files = {**self.tla_files, f"{name}.tla": plan.module(name, self.main_module, k, last)}
            result = tlc.model_check(Artifact(language=Language.TLA, files=files), check.config, module=name,
                                     check_deadlock=False, timeout_s=self.timeout_s, max_states=self.bound_of([check]),
                                     max_depth=self.max_depth, liveness_at_end=self.liveness_at_end,
                                     printed_marker=instances.MARKER)
            if total is None:
                total = instances.count(result.details.get("printed", []))
                if not total:  # the set is not constant, or empty: the template is checked whole
                    log.info("tla_invariants.instances_fallback", module=self.main_module, template=check.template.name,
                             outcome=result.outcome.value, instances=total)
                    return None
            which = f"instance {k}" if last == k else f"instances {k}-{last} (checked in one run)"
            violated = _attributed(result, {instances.CHECKED_NAME: check}) is not None
            if violated and not result.details.get("bound_hit"):
                note = f"{which} of {total} violated (each {'instance' if last == k else 'batch'} checked alone, " \
                       f"in TLC's order; one violated instance decides the conjunction, the other {total - last} " \
                       "were not checked)"
                break
            if result.outcome != Outcome.OK:
                note = f"{which} of {total} checked alone: {result.outcome.value}, which the whole template " \
                       "would be too; the rest were not checked"
                break
            note = f"all {total} instances hold, " + ("checked in batches of doubling size, each batch alone"
                                                      if self.instance_batches else "each checked alone")
            k, last = last + 1, min(total, 2 * last + 1) if self.instance_batches else last + 1
        assert result is not None and total is not None
        log.info("tla_invariants.instances", module=self.main_module, template=check.template.name,
                 checked=min(last, total), instances=total, outcome=result.outcome.value,
                 batches=self.instance_batches)
        return check.verdict(result, self.bounded, [note]), result.tool_version

    def sent_back(self, result: CheckResult, first: _Check) -> bool:
        """TLC's parse rejected an example sent without a SANY run of its own: the stage is scored again with
        SANY first (``sany_first``)."""
        if self.unchecked and _parse_failure(result):
            self.rejected.append(first.index)
            return True
        return False

    def combined_run(self, suffix: str, members: list[_Check], base: tlc_cfg.TlcConfig,
                     left_out: list[twins.Twin] | None = None) -> CheckResult | None:
        """One TLC run of a module defining every member's formula (None: they cannot share one module): the
        state predicates under INVARIANT, the rest under PROPERTY, on ``base``'s cfg; ``left_out``: twins of
        members, not checked, whose bound sets TLC compares (``twins``)."""
        name = f"{members[0].module}{suffix}"
        module = combined_module(name, self.main_module, {c.index: c.candidate for c in members}, self.reserved,
                                 standard=members[0].standard)
        if module is None:
            return None
        if left_out:
            module = module.replace("\n====\n", f"\n{twins.assumptions(left_out)}\n====\n")
        config_ = base.model_copy(update={
            "invariants": [member_name(c.index) for c in members if not c.as_property],
            "properties": [member_name(c.index) for c in members if c.as_property]})
        # several temporal properties in one run: one behaviour graph per property instance, checked over the whole
        # explored graph; C2 halves that work where C1 alone is quicker for a short check (PGo locksvc's merged
        # liveness run, 29,074 states: 116 -> 71 s of CPU; docs/tla-cascade-speed.md)
        several_temporal = sum(c.as_property for c in members) > 1
        return tlc.model_check(Artifact(language=Language.TLA, files={**self.tla_files, f"{name}.tla": module}),
                               config_, module=name, check_deadlock=False, timeout_s=self.timeout_s,
                               max_states=self.bound_of(members), max_depth=self.max_depth,
                               liveness_at_end=self.liveness_at_end, keep_c2=several_temporal,
                               printed_marker=twins.MARKER if left_out else None)

    def twins_of(self, checks: list[_Check]) -> list[twins.Twin]:
        """The liveness templates among ``checks`` that state another one's formula (none unless ``dedupe``)."""
        if not self.dedupe or self.strategy == "hunt":
            return []
        return twins.find([c for c in checks if c.template.type == "liveness"], list(self.tla_files.values()),
                          self.constants)

    def twin_verdicts(self, result: CheckResult, left_out: list[twins.Twin], note: list[str]) -> Decided:
        """The left-out twins of a run that decided their formulas without a violation: the verdict of that run
        for each twin TLC showed to range over the same sets; every other one is checked alone, as without the
        lever."""
        same = twins.proven(result.details.get("printed", []))
        out: Decided = []
        for twin in left_out:
            if twin.check.index in same:
                extra = [*note, f"the same formula as {twin.of.template.name} (its bound sets equal in the model, "
                                "shown by TLC): decided by that formula's check (invariants.dedupe_liveness)"]
                out.append((twin.check.index, twin.check.verdict(result, self.bounded, extra), result.tool_version))
            else:
                out.append((twin.check.index, *self.single(twin.check)))
        return out

    def together(self, group: list[_Check], dedupe: bool = True) -> Decided:
        """One TLC run checks the group; a violated template gets its verdict and the run is repeated
        without it (TLC explores the states in the same order, so each template meets the same first
        violation as alone); anything TLC does not pin on one template falls back to one run each. A template
        stating another's formula is left out of the run while that one is in it (``twins``)."""
        bounded = self.bounded
        out: Decided = []
        remaining = list(group)
        found = self.twins_of(remaining) if dedupe else []
        while len(remaining) > 1:
            left_out = [t for t in found if t.check in remaining and t.of in remaining]
            running = [c for c in remaining if all(c is not t.check for t in left_out)]
            result = self.combined_run("G", running, running[0].config, left_out)
            if result is None:
                break
            by_name = {member_name(c.index): c for c in running}
            if self.sent_back(result, running[0]):  # scored again with SANY first: no verdict here
                return out + [(c.index, c.verdict(result, bounded), result.tool_version) for c in remaining]
            kind = "liveness" if remaining[0].template.type == "liveness" else "safety"
            note = [f"checked in one TLC run with {len(remaining) - 1} other {kind} template(s) "
                    f"(invariants.grouped)"]
            violated = _attributed(result, by_name)
            if violated is not None:
                out.append((violated.index, violated.verdict(result, bounded, note), result.tool_version))
                remaining.remove(violated)
                continue
            if result.outcome in (Outcome.OK, Outcome.INCONCLUSIVE):
                out += [(c.index, c.verdict(result, bounded, note), result.tool_version) for c in running]
                return out + self.twin_verdicts(result, left_out, note)
            log.info("tla_invariants.group_fallback", module=self.main_module, templates=len(remaining),
                     outcome=result.outcome.value, reason=str(result.details.get("reason", ""))[:200])
            break
        return out + [(c.index, *self.single(c)) for c in remaining]

    def group(self, checks: list[_Check], dedupe: bool = True) -> Decided:
        if len(checks) > 1:
            return self.together(checks, dedupe)
        return [(c.index, *self.single(c)) for c in checks]

    def merged(self, safety: list[_Check], liveness: list[_Check]) -> Decided:
        """The safety group and the liveness group of one cfg in one TLC run (``merge_liveness``, module doc):
        what the run decides is kept, the rest of each group goes on as it would without the merge. A liveness
        template stating another's formula is left out of the run (``twins``): decided with it when the run
        decides the liveness templates without a violation, otherwise checked as without the lever."""
        bounded, group = self.bounded, self.group
        left_out = self.twins_of(liveness)
        members = [*safety, *[c for c in liveness if all(c is not t.check for t in left_out)]]
        result = self.combined_run("M", members, liveness[0].config, left_out)
        if result is None:
            return group(safety) + group(liveness)
        version = result.tool_version
        if self.sent_back(result, members[0]):  # scored again with SANY first: no verdict here
            return [(c.index, c.verdict(result, bounded), version) for c in [*safety, *liveness]]
        note = [(f"checked in one TLC run with {len(safety) + len(liveness) - 1} other safety and liveness "
                 "template(s) (invariants.grouped, invariants.merge_liveness)")]
        violated = _attributed(result, {member_name(c.index): c for c in members})
        if violated is not None:
            decided = [(violated.index, violated.verdict(result, bounded, note), version)]
            if violated in safety:
                return decided + group([c for c in safety if c is not violated]) + group(liveness)
            return decided + group([c for c in liveness if c is not violated]) + group(safety)
        if result.outcome == Outcome.OK:
            return [(c.index, c.verdict(result, bounded, note), version) for c in members] + \
                self.twin_verdicts(result, left_out, note)
        if result.outcome == Outcome.INCONCLUSIVE:
            decided = [(c.index, c.verdict(result, bounded, note), version) for c in members if c not in safety] + \
                self.twin_verdicts(result, left_out, note)
            if self.decides_safety(result, safety, members):
                extra = [*note, "the safety templates' own run has the same state bound (a temporal property among "
                                "them): the same states, the same verdicts (invariants.merge_same_bound)"]
                return decided + [(c.index, c.verdict(result, bounded, extra), version) for c in safety]
            return decided + group(safety)
        log.info("tla_invariants.merged_fallback", module=self.main_module, templates=len(members),
                 outcome=result.outcome.value, reason=str(result.details.get("reason", ""))[:200])
        if _temporal_violation(result) and not any(c.as_property for c in safety):
            # a liveness template is violated and TLC does not say which: each alone, as after the group's run
            return [(c.index, *self.single(c)) for c in liveness] + group(safety)
        return group(safety, dedupe=not left_out) + group(liveness, dedupe=not left_out)

    def decides_safety(self, result: CheckResult, safety: list[_Check], members: list[_Check]) -> bool:
        """A merged run ended by its state bound, not by the clock, explored exactly the states the safety group's
        own run explores when that run has the same bound (``same_bound``): one worker, breadth-first, the bound a
        state constraint on the count of distinct states, and the properties checked do not steer the search. The
        run found no violation, so the safety group's own run would end at the same bound without one."""
        return (self.same_bound and bool(result.details.get("bound_hit")) and not result.details.get("timed_out")
                and self.bound_of(safety) == self.bound_of(members) and self.max_depth is None)

    def run(self, job: list[_Check]) -> Decided:
        """One job of the stage: a group of one cfg (merged when it has both kinds), or a single check."""
        safety = [c for c in job if c.template.type != "liveness"]
        liveness = [c for c in job if c.template.type == "liveness"]
        return self.merged(safety, liveness) if safety and liveness else self.group(job)
