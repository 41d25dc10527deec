"""``sysmo agents list/show``: every agent listed; the Mermaid drawing is the compiled graph's; unknown names exit 2."""

from __future__ import annotations

import json
import re

import typer
from sysmo.agents.describe import register
from sysmo.agents.registry import all_agents, get_agent
from typer.testing import CliRunner

app = typer.Typer()
app.callback()(lambda: None)
register(app)
runner = CliRunner()
AGENTS = ["base_modeling", "code_translation", "metagpt", "openhands", "trace_learning"]


def test_list_shows_all_five_agents() -> None:
    result = runner.invoke(app, ["agents", "list", "--json"])
    assert result.exit_code == 0
    assert [a["name"] for a in json.loads(result.output)] == AGENTS
    # which agents published outputs (replay/... models) can answer: those whose every model call is a round
    assert {a["name"] for a in json.loads(result.output) if a["replays_outputs"]} == {"base_modeling",
                                                                                     "trace_learning"}
    assert "replays published outputs (replay/... models): no" in runner.invoke(app, ["agents", "show",
                                                                                      "openhands"]).output
    text = runner.invoke(app, ["agents", "list"]).output
    assert all(name in text for name in AGENTS)


def test_show_draws_the_compiled_graphs_nodes_in_mermaid() -> None:
    result = runner.invoke(app, ["agents", "show", "metagpt"])
    assert result.exit_code == 0, result.output
    mermaid = result.output.split("```mermaid", 1)[1].split("```", 1)[0]
    compiled = get_agent("metagpt").build(None, checkpointer=None).get_graph()
    drawn = set(re.findall(r"^\s*(\w+)[(\[]", mermaid, flags=re.M)) - {"graph", "classDef"}
    assert drawn == set(compiled.nodes)
    assert "analyst -> architect" in result.output
    info = json.loads(runner.invoke(app, ["agents", "show", "code_translation", "--json"]).output)
    assert [g["variant"] for g in info["graphs"]] == [""] and info["supports"] == ["tla"]
    assert "translate -> check_translation" in runner.invoke(app, ["agents", "show", "code_translation"]).output
    shown = json.loads(runner.invoke(app, ["agents", "show", "trace_learning", "--json"]).output)
    assert shown["checks"][0].startswith("the tool check") and shown["checks"][1].startswith("trace validation")
    assert len(all_agents()) == len(AGENTS)


def test_unknown_agent_is_a_one_line_error_with_exit_code_2() -> None:
    result = runner.invoke(app, ["agents", "show", "nope"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0, result.output
    assert "unknown agent 'nope'" in result.output and "base_modeling" in result.output
