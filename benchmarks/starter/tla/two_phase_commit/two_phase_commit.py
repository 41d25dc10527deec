"""Two-phase commit over a simulated network: a coordinator and resource managers, seeded and traced.

Each resource manager (RM) votes yes (and becomes prepared) or no (and aborts on its own) by sending its
vote to the coordinator. The coordinator records votes as they arrive; it commits once every vote is yes
and aborts as soon as one vote is no, then broadcasts the decision; prepared RMs apply it. Messages are
delivered one at a time, in the order the scheduler picks the receiving threads.
"""

from __future__ import annotations

import random

from sysmo.benchmarks.starter.tla.scheduler import Scheduler, Thread, TraceRecorder, Until

COORDINATOR = "coordinator"


class Network:
    """Mailboxes: messages wait in per-receiver FIFO queues until the receiver takes them."""

    def __init__(self) -> None:
        self.queues: dict[str, list[tuple]] = {}

    def send(self, to: str, message: tuple) -> None:
        self.queues.setdefault(to, []).append(message)

    def has_mail(self, to: str) -> bool:
        return bool(self.queues.get(to))

    def receive(self, to: str) -> tuple:
        return self.queues[to].pop(0)


class System:
    def __init__(self, rms: int) -> None:
        self.rms = list(range(1, rms + 1))
        self.rm_state = {rm: "working" for rm in self.rms}
        self.tm_state = "init"
        self.votes = {rm: "none" for rm in self.rms}
        self.net = Network()

    def snapshot(self) -> dict:
        return {"rmState": [self.rm_state[rm] for rm in self.rms], "tmState": self.tm_state,
                "votes": [self.votes[rm] for rm in self.rms]}


def resource_manager(rm: int, system: System, trace: TraceRecorder, votes_yes: bool) -> Thread:
    if votes_yes:
        system.rm_state[rm] = "prepared"
        system.net.send(COORDINATOR, ("yes", rm))
        trace.emit("VoteYes", rm)
    else:
        system.rm_state[rm] = "aborted"  # a no-voter knows the outcome already and stops here
        system.net.send(COORDINATOR, ("no", rm))
        trace.emit("VoteNo", rm)
        return
    yield Until(lambda: system.net.has_mail(f"rm-{rm}"))
    decision, = system.net.receive(f"rm-{rm}")
    if decision == "commit":
        system.rm_state[rm] = "committed"
        trace.emit("RecvCommit", rm)
    else:
        system.rm_state[rm] = "aborted"
        trace.emit("RecvAbort", rm)


def coordinator(system: System, trace: TraceRecorder) -> Thread:
    while True:
        yield Until(lambda: system.net.has_mail(COORDINATOR))
        vote, rm = system.net.receive(COORDINATOR)
        system.votes[rm] = vote
        trace.emit("RecvVote", COORDINATOR, rm=rm, vote=vote)
        yield
        if vote == "no" or all(v == "yes" for v in system.votes.values()):
            break
    decision = "commit" if vote == "yes" else "abort"
    system.tm_state = "committed" if decision == "commit" else "aborted"
    for rm in system.rms:
        if system.rm_state[rm] != "aborted" or decision == "commit":
            system.net.send(f"rm-{rm}", (decision,))
    trace.emit("Commit" if decision == "commit" else "Abort", COORDINATOR)


def record(seed: int, rms: int = 3, yes_probability: float = 0.75, max_events: int = 40) -> str:
    """One run of the protocol (NDJSON text); each RM's vote is drawn from the seed too."""
    votes = random.Random(seed * 7919 + 1)  # the votes, apart from the scheduling choices
    system = System(rms)
    trace = TraceRecorder(system.snapshot, config={"N": rms})
    scheduler = Scheduler(seed)
    scheduler.spawn(COORDINATOR, coordinator(system, trace))
    for rm in system.rms:
        scheduler.spawn(f"rm-{rm}", resource_manager(rm, system, trace, votes.random() < yes_probability))
    scheduler.run(max_steps=10 * max_events, stop=lambda: trace.events >= max_events)
    return trace.ndjson()
