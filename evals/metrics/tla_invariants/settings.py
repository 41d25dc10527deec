"""Default bounds, time limits and switches of the TLA+ invariant score, per scoring mode."""

from __future__ import annotations

DEFAULT_TIMEOUT_S = 60.0  # SysMoBench's ManualInvariantEvaluator(tlc_timeout=60)
BOUNDED_POLICIES = ("harness", "strict", "sysmo")
DEFAULT_BOUNDED = "harness"
# ``sysmo`` scoring mode: the state bound, not the clock, ends a check (docs/tla-verdicts.md). 100,000 distinct
# states hold the PGo locksvc gold spec's whole space (29,074) and keep a check above ``jvm.SHORT_CHECK_STATES``
# (a long liveness check keeps C2: on C1 alone locksvc's took twice the CPU); the wall-clock limit only catches a
# check that is slow on few states (a large liveness tableau), and such a check is inconclusive.
SYSMO_MAX_STATES = 100_000
# Temporal properties (liveness, ``[][A]_v``) get a bound of their own: TLC's liveness check of the explored graph
# grows much faster than the graph (PGo raftkvs: its two liveness templates decided within 10,000 states in 77 s,
# not within 600 s at 100,000). 30,000 still holds the whole space of the PGo locksvc gold spec (29,074), so its
# liveness templates are decided exactly.
SYSMO_MAX_TEMPORAL_STATES = 30_000
SYSMO_TIMEOUT_S = 600.0
SYSMO_BOUNDED = "sysmo"
WITHIN_BOUND_NOTE = "bounded: holds within the state bound"
DEFAULT_GROUPED = True
DEFAULT_GROUP_LIVENESS = True
DEFAULT_MERGE_LIVENESS = True
DEFAULT_SANY_FIRST = False
DEFAULT_HELPER_ATTEMPTS = 2
# Temporal properties checked once, on the explored graph, after the search (TLC's ``-lncheck final``), in the
# ``sysmo`` mode: TLC otherwise also checks them on the graph so far every minute of wall time, so whether a bounded
# run finds a counterexample before its bound, and how much CPU it spends, depended on the clock (PGo locksvc's
# three liveness templates over 29,074 states: docs/tla-cascade-speed.md). The ``harness`` mode keeps TLC's default,
# as SysMoBench's harness runs it (a 60 s time-out there would otherwise never see a liveness violation).
DEFAULT_LIVENESS_AT_END = False
SYSMO_LIVENESS_AT_END = True
# A template the system is documented to violate, quantified over a constant set (``\A i, j \in S : F``), checked one
# instance per TLC run until one is violated, in the ``sysmo`` mode (``instances``): PGo locksvc's NoPriorityInversion
# is 30 tableaux in one run, decided by its 7th instance alone. The ``harness`` mode checks it whole, as SysMoBench.
DEFAULT_BY_INSTANCE = False
SYSMO_BY_INSTANCE = True
# ... and after its first instance, in batches of doubling size (2-3, 4-7, ...), one TLC run each: one search per batch
# instead of one per instance (PGo locksvc's NoPriorityInversion: 3 runs instead of 7).
DEFAULT_INSTANCE_BATCHES = False
SYSMO_INSTANCE_BATCHES = True
# A safety group with a temporal property (``[][A]_v``) runs under the temporal bound like the liveness group of its
# cfg: in the ``sysmo`` mode the two share one run, which decides both when the bound ends it (PGo raftkvs: one
# search of 30,000 states instead of two).
DEFAULT_MERGE_SAME_BOUND = False
SYSMO_MERGE_SAME_BOUND = True
# A liveness template stating another one's formula over equal sets (``twins``) is decided by that one's check in
# their shared run, in the ``sysmo`` mode: PGo locksvc's SystemLiveness is its ProgressOK (ProcSet = NodeSet).
DEFAULT_DEDUPE_LIVENESS = False
SYSMO_DEDUPE_LIVENESS = True
