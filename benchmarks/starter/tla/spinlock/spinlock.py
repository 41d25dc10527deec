"""A test-and-set spinlock shared by worker threads, run under a seeded scheduler and traced as NDJSON.

Each worker repeatedly requests the lock, spins on an atomic test-and-set until it wins, works in its
critical section and releases the lock. ``pc`` is the instrumentation's view of where each worker is.
"""

from __future__ import annotations

from sysmo.benchmarks.starter.tla.scheduler import Scheduler, Thread, TraceRecorder


class AtomicFlag:
    """A boolean with an atomic test-and-set (one scheduler step never interleaves with another)."""

    def __init__(self) -> None:
        self.value = False

    def test_and_set(self) -> bool:
        old, self.value = self.value, True
        return old

    def clear(self) -> None:
        self.value = False


class SpinLock:
    def __init__(self) -> None:
        self.flag = AtomicFlag()

    def try_lock(self) -> bool:
        return not self.flag.test_and_set()

    def unlock(self) -> None:
        self.flag.clear()


def worker(me: int, lock: SpinLock, pc: dict[int, str], trace: TraceRecorder, rounds: int) -> Thread:
    for _ in range(rounds):
        pc[me] = "spin"
        trace.emit("Request", me)
        yield
        while not lock.try_lock():  # the test-and-set and the step's event form one atomic step
            trace.emit("Spin", me)
            yield
        pc[me] = "cs"
        trace.emit("Acquire", me)
        yield
        # the critical section touches no shared state; leaving it releases the lock
        lock.unlock()
        pc[me] = "idle"
        trace.emit("Release", me)
        yield


def record(seed: int, workers: int = 2, rounds: int = 3, max_events: int = 30) -> str:
    """One trace (NDJSON text) of ``workers`` threads doing ``rounds`` lock/unlock cycles each."""
    lock = SpinLock()
    pc = {me: "idle" for me in range(1, workers + 1)}
    trace = TraceRecorder(lambda: {"locked": lock.flag.value, "pc": [pc[me] for me in sorted(pc)]},
                          config={"N": workers})
    scheduler = Scheduler(seed)
    for me in sorted(pc):
        scheduler.spawn(f"worker-{me}", worker(me, lock, pc, trace, rounds))
    scheduler.run(max_steps=10 * max_events, stop=lambda: trace.events >= max_events)
    return trace.ndjson()
