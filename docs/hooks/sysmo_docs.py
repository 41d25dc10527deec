"""MkDocs hooks of the documentation site: pages made from the code at build time, so they cannot go stale.

- ``index.md``: the README (one text for both).
- ``cli.md``: the CLI reference, from the Typer app (``cli_reference.py`` beside this file).
- ``<!-- divergences: FAMILY -->``: the rows of docs/scoring-modes.md's divergence table for one family.
- ``<!-- agent: NAME -->``: an agent's description, inputs, options, in-loop checks, prompts and LangGraph (SVG),
  from ``sysmo.agents.describe``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from mkdocs.structure.files import File

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def home_page() -> str:
    """The site's home page is the README, its links into docs/ made relative to the site."""
    text = (DOCS.parent / "README.md").read_text()
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files, config):
    files.append(File.generated(config, "cli.md", content=_load("cli_reference").page()))
    files.append(File.generated(config, "index.md", content=home_page()))
    return files


def divergence_rows(family: str) -> str:
    """The divergence table of docs/scoring-modes.md cut to the rows whose family cell starts with ``family``."""
    lines = (DOCS / "scoring-modes.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| family |"))
    header, rule = lines[start], lines[start + 1]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and family.lower() in cells[0].lower():
            rows.append(line)
    if not rows:
        return f"No divergence: for {family} sysmo's scoring mode and the harness mode compute the same numbers."
    return "\n".join([header, rule, *rows])


def agent_block(name: str) -> str:
    from sysmo.agents.describe import describe
    from sysmo.agents.registry import all_agents

    specs = {spec.name: spec for spec in all_agents()}
    if name not in specs:
        raise ValueError(f"unknown agent {name!r} in the docs; known: {', '.join(specs)}")
    info = describe(specs[name])
    lines = [
        f"*{info.description}*",
        "",
        f"- **Task kinds:** {', '.join(info.supports)}",
        f"- **Needs:** {', '.join(info.needs) or '—'}; **uses when present:** {', '.join(info.uses) or '—'}",
        f"- **Options:** {'; '.join(info.options)}",
        "- **Checked each round (its feedback):** " + "; ".join(f"{n}. {c}" for n, c in enumerate(info.checks, 1)),
        "- **Replays published outputs:** " + ("yes" if info.replays_outputs else "no (its model calls are not only rounds)"),
        "",
    ]
    prompts = sorted((DOCS.parent / "agents" / "prompts" / name).glob("*.md"))
    if prompts:
        lines += ["**What it is told**: its prompt templates (`agents/prompts/" + name + "/`; the task's own text is",
                  "filled in from `agents/prompts/common/task_<kind>.md`, the repair request from the round's",
                  "diagnostics):", ""]
        for prompt in prompts:
            body = prompt.read_text().rstrip().replace("```", "` ` `")
            lines += [f'??? note "{prompt.name}"', "    ```text", *("    " + line for line in body.splitlines()),
                      "    ```", ""]
    from sysmo.view.graph_svg import draw  # the drawing `sysmo view` shows on an attempt's page

    for graph in info.graphs:
        title = f"Graph ({graph.variant})" if graph.variant else "Graph"
        svg = draw(list(graph.nodes), [tuple(edge) for edge in graph.edges], [])
        lines += [f"**{title}**, drawn from the compiled LangGraph (`sysmo agents show {name}` prints it as Mermaid):",
                  "", f'<div class="agent-graph">{svg}</div>', ""]
    return "\n".join(lines)


MARKER = re.compile(r"<!--\s*(divergences|agent):\s*([^>]+?)\s*-->")


def on_page_markdown(markdown, page, config, files):
    def replace(match: re.Match) -> str:
        kind, arg = match.group(1), match.group(2)
        if kind == "agent":
            return agent_block(arg)
        rows = divergence_rows(arg)
        up = "../" * page.file.src_uri.count("/")  # the rows' links are relative to docs/, the page may sit lower
        return re.sub(r"\]\((?!https?:|#|/)", f"]({up}", rows) if up else rows

    return MARKER.sub(replace, markdown)
