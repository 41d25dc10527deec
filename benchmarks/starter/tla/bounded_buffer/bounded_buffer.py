"""A bounded FIFO buffer shared by producer and consumer threads, run under a seeded scheduler and traced.

Producers block while the buffer is full and consumers while it is empty (condition waits); each
producer puts its own id as the item, so the trace shows whose item is where.
"""

from __future__ import annotations

from collections import deque

from sysmo.benchmarks.starter.tla.scheduler import Scheduler, Thread, TraceRecorder, Until


class BoundedBuffer:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: deque[int] = deque()

    def not_full(self) -> bool:
        return len(self.items) < self.capacity

    def not_empty(self) -> bool:
        return bool(self.items)


def producer(me: int, buffer: BoundedBuffer, trace: TraceRecorder, items: int) -> Thread:
    for _ in range(items):
        yield Until(buffer.not_full)  # resumed only when there is room: the check and the put are one step
        buffer.items.append(me)
        trace.emit("Put", me, item=me)


def consumer(me: int, buffer: BoundedBuffer, trace: TraceRecorder) -> Thread:
    while True:
        yield Until(buffer.not_empty)
        item = buffer.items.popleft()
        trace.emit("Get", me, item=item)


def record(seed: int, producers: int = 2, consumers: int = 2, capacity: int = 2, items: int = 6,
           max_events: int = 24) -> str:
    """One trace (NDJSON text): ``producers`` threads put ``items`` items each, ``consumers`` take them."""
    buffer = BoundedBuffer(capacity)
    trace = TraceRecorder(lambda: {"buffer": list(buffer.items)},
                          config={"Producers": producers, "Consumers": consumers, "Capacity": capacity})
    scheduler = Scheduler(seed)
    for me in range(1, producers + 1):
        scheduler.spawn(f"producer-{me}", producer(me, buffer, trace, items))
    for me in range(1, consumers + 1):
        scheduler.spawn(f"consumer-{me}", consumer(me, buffer, trace))
    scheduler.run(max_steps=10 * max_events, stop=lambda: trace.events >= max_events)
    return trace.ndjson()
