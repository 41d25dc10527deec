"""Cost of LangGraph step checkpoints per attempt: recording while the graph runs, and saving to SQLite.

Run: python speed/checkpoint_speed.py [--attempts 300] [--nodes 8] [--state-kb 4]

A graph of ``--nodes`` nodes in a line, each adding ``--state-kb`` KB of text to the state (as a round adds a
prompt, a reply and diagnostics), runs ``--attempts`` times with a ``StepRecorder``, and each attempt's steps are
saved to one ``CheckpointStore`` file. Prints the time per attempt of the graph run without a checkpointer, with
the recorder, and of the save (CPU time of this process, best of three rounds: other load on the machine
barely moves it), and the file's bytes per attempt.
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from sysmo.graphs.checkpoint import CheckpointStore, StepRecorder


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    status: str


def build(nodes: int, chunk: str, checkpointer: Any) -> Any:
    graph = StateGraph(State)
    names = [f"n{i}" for i in range(nodes)]
    for i, name in enumerate(names):
        async def node(state: State, i: int = i) -> dict[str, Any]:
            return {"log": [f"{i}:{chunk}"], "status": f"step {i}"}

        graph.add_node(name, node)
    graph.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph.compile(checkpointer=checkpointer)


def one_round(attempts: int, nodes: int, chunk: str, folder: Path) -> tuple[float, float, float, int]:
    """Seconds per attempt: plain run, recorded run, save; and the checkpoint file's bytes."""
    plain = build(nodes, chunk, None)
    started = time.process_time()
    for _ in range(attempts):
        asyncio.run(plain.ainvoke({"log": []}))
    bare = (time.process_time() - started) / attempts
    path = folder / f"checkpoints-{time.monotonic_ns()}.sqlite"
    recorded_s = saved_s = 0.0
    with CheckpointStore(path) as store:
        for a in range(attempts):
            recorder = StepRecorder(path)
            graph = build(nodes, chunk, recorder)
            started = time.process_time()
            asyncio.run(graph.ainvoke({"log": []}, {"configurable": {"thread_id": f"a{a}"}}))
            recorded_s += time.process_time() - started
            started = time.process_time()
            store.save(recorder, f"a{a}")
            saved_s += time.process_time() - started
    size = sum(p.stat().st_size for p in folder.glob(path.name + "*"))
    return bare, recorded_s / attempts, saved_s / attempts, size // attempts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--state-kb", type=int, default=4)
    args = parser.parse_args()
    chunk = "x" * (args.state_kb * 1024)
    with tempfile.TemporaryDirectory() as tmp:
        rounds = [one_round(args.attempts, args.nodes, chunk, Path(tmp)) for _ in range(3)]
    bare = min(r[0] for r in rounds)
    recorded = min(r[1] for r in rounds)
    saved = min(r[2] for r in rounds)
    print(f"{args.attempts} attempts x {args.nodes} nodes, {args.state_kb} KB per node (CPU time, best of 3 rounds)")
    print(f"graph run without checkpoints  {bare * 1e3:7.2f} ms per attempt")
    print(f"graph run with StepRecorder    {recorded * 1e3:7.2f} ms per attempt "
          f"(+{(recorded - bare) * 1e3:.2f} ms recording)")
    print(f"CheckpointStore.save           {saved * 1e3:7.2f} ms per attempt")
    print(f"checkpoint file                {rounds[-1][3] / 1024:7.1f} KB per attempt")


if __name__ == "__main__":
    main()
