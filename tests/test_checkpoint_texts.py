"""Long texts of checkpointed steps are stored once per file and read back as they were."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from sysmo.graphs.checkpoint import CheckpointStore, StepRecorder
from sysmo.graphs.checkpoint_texts import MIN_CHARS, TextsSerializer, swap_in, swap_out

PROMPT = "Model the order system: " + "an order has lines, each line a product and a quantity. " * 20


class State(TypedDict, total=False):
    pending: list[dict[str, Any]]
    reply: str


def graph_with(checkpointer: Any):
    graph = StateGraph(State)

    async def generate(state: State) -> dict[str, Any]:
        return {"reply": "@startuml\nclass Order\n@enduml\n" + "' note\n" * 60}

    graph.add_node("generate", generate)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", END)
    return graph.compile(checkpointer=checkpointer)


def test_swapping_out_and_in_gives_the_value_back() -> None:
    value = {"pending": [{"role": "user", "content": PROMPT}], "short": "x" * (MIN_CHARS - 1), "n": 3,
             "pair": (PROMPT, 1)}
    found: dict[str, str] = {}
    swapped = swap_out(value, found)
    assert list(found.values()) == [PROMPT] and PROMPT not in str(swapped)
    assert swap_in(swapped, found.__getitem__) == value


def test_a_text_shared_by_steps_and_attempts_is_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with CheckpointStore(path) as store:
        for thread in ("a", "b"):  # two attempts with the same prompt
            recorder = StepRecorder()
            asyncio.run(graph_with(recorder).ainvoke({"pending": [{"role": "user", "content": PROMPT}]},
                                                     {"configurable": {"thread_id": thread}}))
            store.save(recorder, thread)
    with sqlite3.connect(path) as conn:
        texts = [t for (t,) in conn.execute("SELECT text FROM texts")]
        blobs = b"".join(b for (b,) in conn.execute("SELECT checkpoint FROM checkpoints UNION ALL "
                                                     "SELECT value FROM writes"))
        with_texts = conn.execute("SELECT type, value FROM writes WHERE type LIKE '%+texts%'").fetchone()
    assert sorted(texts) == sorted([PROMPT, "@startuml\nclass Order\n@enduml\n" + "' note\n" * 60])
    assert PROMPT.encode() not in blobs
    with SqliteSaver.from_conn_string(str(path)) as saver:
        saver.serde = TextsSerializer(path=path)
        latest = saver.get_tuple({"configurable": {"thread_id": "b"}})
        assert latest.checkpoint["channel_values"]["pending"][0]["content"] == PROMPT
    with pytest.raises(NotImplementedError, match="Unknown serialization type"):  # a reader without the texts
        JsonPlusSerializer().loads_typed(with_texts)


def test_steps_written_before_are_read_as_they_are(tmp_path: Path) -> None:
    plain = JsonPlusSerializer().dumps_typed({"content": PROMPT})
    assert TextsSerializer(path=tmp_path / "none.sqlite").loads_typed(plain) == {"content": PROMPT}
