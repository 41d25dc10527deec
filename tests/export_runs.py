"""A small real experiment for the export tests: ``sysmo run`` against the fake OpenAI-compatible server, checked by
the real PlantUML and scored. The server answers a task's first request with a broken class diagram and a repair
request with the gold one, so every attempt has two rounds (two model calls, two tool checks) and passes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, FakeReply, reply
from sysmo_cli import CliResult, run_sysmo

TASKS = ["starter/uml_class/library_loans", "starter/uml_class/recipe_book"]
MODEL = "openai/fake-export"
SAMPLES = 2
LIGHT_SCORING = "scoring:\n  embedding: token\n  similarity: token\n"


def repairing_server() -> FakeOpenAI:
    """Broken diagram first, the gold one once the model is asked to repair."""
    from sysmo.agents.control_script import broken_artifact
    from sysmo.benchmarks.registry import get_task
    from sysmo.llm.reference import format_reference

    marks, gold, broken = {}, {}, {}
    for task_id in TASKS:
        task = get_task(task_id)
        marks[task_id] = task.inputs.requirement.strip().splitlines()[0][:60]
        gold[task_id] = "Here is the model.\n\n" + format_reference(task.references.model)
        broken[task_id] = "Here is the model.\n\n" + format_reference(broken_artifact(task))

    def answer(body: dict[str, Any]) -> FakeReply:
        messages = body["messages"]
        text = "\n".join(str(m.get("content") or "") for m in messages)
        task_id = next(t for t, mark in marks.items() if mark in text)
        first = not any(m["role"] == "assistant" for m in messages)
        return reply(broken[task_id] if first else gold[task_id], usage=(120, 40))

    return FakeOpenAI(default=answer)


def run_export_experiment(runs: Path, name: str, *extra: str, env: dict[str, str] | None = None,
                          tasks: list[str] = TASKS) -> CliResult:
    """``sysmo run`` of ``tasks`` x ``SAMPLES`` samples with ``base_modeling`` on the fake model."""
    runs.parent.mkdir(parents=True, exist_ok=True)
    settings = runs.parent / "light.yaml"
    settings.write_text(LIGHT_SCORING)
    environment = {"SYSMO_HOME": str(runs.parent / "home"),
                   "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-fake"), **(env or {})}
    with repairing_server() as server:
        return run_sysmo("run", str(settings), "--ids", ",".join(tasks), "--agent", "base_modeling", "--samples",
                         str(SAMPLES), "--model", MODEL, "--api-base", server.base_url, "--id", name, "-o", str(runs),
                         "--no-progress", "--no-report", *extra, env=environment)
