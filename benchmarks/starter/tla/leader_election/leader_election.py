"""Chang-Roberts leader election on a unidirectional ring, run under a seeded scheduler and traced.

Node ``n`` (ring position 1..N) has a unique id and sends only to its successor. It starts by sending its
own id; on receiving an id it forwards a larger one (and knows it lost), drops a smaller one, and becomes
leader when its own id comes back. Channels are FIFO; the ids' order around the ring comes from the seed.
"""

from __future__ import annotations

import random
from collections import deque

from sysmo.benchmarks.starter.tla.scheduler import Scheduler, Thread, TraceRecorder, Until


class Ring:
    def __init__(self, ids: list[int]) -> None:
        self.ids = ids
        self.size = len(ids)
        self.status = {n: "init" for n in range(1, self.size + 1)}
        self.inbox: dict[int, deque[int]] = {n: deque() for n in range(1, self.size + 1)}

    def successor(self, n: int) -> int:
        return 1 if n == self.size else n + 1

    def snapshot(self) -> dict:
        nodes = range(1, self.size + 1)
        return {"status": [self.status[n] for n in nodes], "inbox": [list(self.inbox[n]) for n in nodes]}


def node(n: int, ring: Ring, trace: TraceRecorder) -> Thread:
    me = ring.ids[n - 1]
    ring.status[n] = "candidate"
    ring.inbox[ring.successor(n)].append(me)
    trace.emit("Start", n, id=me)
    while True:
        yield Until(lambda: bool(ring.inbox[n]))
        received = ring.inbox[n].popleft()
        if received > me:
            ring.status[n] = "lost"
            ring.inbox[ring.successor(n)].append(received)
            trace.emit("Forward", n, id=received)
        elif received < me:
            trace.emit("Discard", n, id=received)
        else:
            ring.status[n] = "leader"
            trace.emit("Elected", n, id=received)
            return


def record(seed: int, nodes: int = 4, ids: list[int] | None = None, max_events: int = 40) -> str:
    """One election (NDJSON text) on a ring with the given ``ids`` (default: 1..nodes shuffled by the seed)."""
    if ids is None:
        ids = list(range(1, nodes + 1))
        random.Random(seed * 7919 + 2).shuffle(ids)
    ring = Ring(ids)
    trace = TraceRecorder(ring.snapshot, config={"Ids": ids})
    scheduler = Scheduler(seed)
    for n in range(1, nodes + 1):
        scheduler.spawn(f"node-{n}", node(n, ring, trace))
    scheduler.run(max_steps=10 * max_events, stop=lambda: trace.events >= max_events)
    return trace.ndjson()
