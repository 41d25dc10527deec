"""``sysmo tasks``: list and filter benchmark tasks with per-family counts, and show one task in detail."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from sysmo.benchmarks import datadir, registry
from sysmo.benchmarks.selection import TaskSelection, selection_from_options
from sysmo.contracts.task import Task

app = typer.Typer(no_args_is_help=True)
console = Console()

DATA_DIR_HELP = "Benchmark data directory (default: $SYSMO_DATA_DIR, else data_dir in the config)."
SOURCES_DIR_HELP = "Folder of system checkouts, one per SysMoBench task (default: $SYSMO_SOURCES_DIR / config)."


def _split(values: list[str] | None) -> list[str]:
    """Repeated options and comma-separated values both work: ``-b a -b b`` == ``-b a,b``."""
    return [part.strip() for v in values or [] for part in v.split(",") if part.strip()]


def task_summary(task: Task) -> dict[str, Any]:
    """The one-line view of a task used by ``list --json``."""
    return {
        "id": task.id,
        "benchmark": task.benchmark,
        "kind": task.kind.value,
        "title": task.title,
        "domain": task.domain,
        "difficulty": task.difficulty,
        "key_grammar": task.key_grammar,
        "ablation": task.labels.get("ablation"),
        "has_reference": task.references.model is not None,
        "n_invariants": len(task.references.invariants),
        "n_traces": len(task.references.traces.files) if task.references.traces else 0,
    }


@app.command("list")
def list_tasks(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    sources_dir: Path | None = typer.Option(None, "--sources-dir", help=SOURCES_DIR_HELP),
    benchmark: list[str] | None = typer.Option(None, "--benchmark", "-b", help=f"Family: {', '.join(registry.FAMILIES)}."),
    kind: list[str] | None = typer.Option(None, "--kind", "-k", help="tla, sysml, uml_class, architecture."),
    domain: list[str] | None = typer.Option(None, "--domain", help="Domain (case-insensitive; globs allowed)."),
    difficulty: list[str] | None = typer.Option(None, "--difficulty", help="Difficulty level or range, e.g. 1 or 1-2."),
    grammar: list[str] | None = typer.Option(None, "--grammar", help="Key grammar label (SysMBench; globs allowed)."),
    ids: list[str] | None = typer.Option(None, "--ids", help="Task id globs, e.g. 'sysmbench/1*'."),
    exclude: list[str] | None = typer.Option(None, "--exclude", help="Task id globs to leave out."),
    ablation: list[str] | None = typer.Option(None, "--ablation", help="R2ABench input: full (default), no-arch, min, '*'."),
    sample: int | None = typer.Option(None, "--sample", help="Keep N tasks, chosen deterministically by --seed."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    per_benchmark: bool = typer.Option(False, "--per-benchmark", help="--sample N from each benchmark."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Print per-family task counts and the selected tasks."""
    selection = selection_from_options(
        benchmarks=_split(benchmark),
        kinds=_split(kind),
        domains=_split(domain),
        difficulties=_split(difficulty),
        grammars=_split(grammar),
        ids=_split(ids),
        exclude_ids=_split(exclude),
        ablations=_split(ablation),
        sample=sample,
        seed=seed,
        sample_per="benchmark" if per_benchmark else "all",
    )
    tasks = registry.load_tasks(data_dir, families=selection.families(), sources_dir=sources_dir)
    chosen = selection.apply(tasks)
    resolved = datadir.resolve_data_dir(data_dir)
    statuses = registry.family_statuses(resolved)
    loaded, selected = Counter(t.benchmark for t in tasks), Counter(t.benchmark for t in chosen)
    if as_json:
        counts = {
            s.family: {"present": s.present, "path": s.path, "loaded": loaded[s.family], "selected": selected[s.family]}
            for s in statuses
        }
        payload = {"data_dir": str(resolved) if resolved else None, "counts": counts,
                   "tasks": [task_summary(t) for t in chosen]}
        print(json.dumps(payload, indent=2))
        return
    _print_counts(statuses, loaded, selected, selection)
    if resolved is None:
        console.print(
            "[yellow]no data directory set[/]: only the starter suite is listed (use --data-dir or SYSMO_DATA_DIR)"
        )
    _print_rows(chosen)


def _print_counts(
    statuses: list[registry.FamilyStatus], loaded: Counter[str], selected: Counter[str], selection: TaskSelection
) -> None:
    table = Table(title="tasks per family")
    for col in ("family", "selected", "loaded", "data"):
        table.add_column(col, justify="right" if col in ("selected", "loaded") else "left")
    for s in statuses:
        if selection.benchmarks and s.family not in selection.benchmarks:
            continue
        if s.present:
            where = s.path or "-"
        else:
            where = f"[dim]not found at {s.path}[/]" if s.path else "[dim]no data dir[/]"
        table.add_row(s.family, str(selected[s.family]), str(loaded[s.family]), where)
    table.add_row("[bold]total[/]", f"[bold]{sum(selected.values())}[/]", str(sum(loaded.values())), "")
    console.print(table)


def _print_rows(tasks: list[Task]) -> None:
    """A table when ids fit whole beside the other columns (free text wraps), else one block per task."""
    from sysmo.terminal import print_records

    rows = [{"id": t.id, "kind": t.kind.value, "domain": t.domain or "", "diff": str(t.difficulty or ""),
             "grammar": ", ".join(t.key_grammar), "title": t.title} for t in tasks]
    print_records(console, f"{len(tasks)} tasks", ["id", "kind", "domain", "diff", "grammar", "title"], rows,
                  wrap=("domain", "grammar", "title"))


def _short(text: str | None, limit: int = 300) -> str:
    if not text:
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _lines(text: str) -> int:
    return len(text.splitlines())


@app.command()
def show(
    task_id: str = typer.Argument(..., help="Task id, e.g. sysmbench/17 or sysmobench/spin."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    sources_dir: Path | None = typer.Option(None, "--sources-dir", help=SOURCES_DIR_HELP),
    text: bool = typer.Option(False, "--text", help="Also print the full requirement and reference model."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole task as JSON."),
) -> None:
    """Print one task: inputs, references, invariants and labels."""
    task = registry.get_task(task_id, data_dir=data_dir, sources_dir=sources_dir)
    if as_json:
        print(task.model_dump_json(indent=2))
        return
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("id", task.id)
    head.add_row("benchmark / kind", f"{task.benchmark} / {task.kind.value} ({task.language.value})")
    head.add_row("title", task.title or "-")
    head.add_row("domain", task.domain or "-")
    head.add_row("difficulty", str(task.difficulty) if task.difficulty is not None else "-")
    head.add_row("key grammar", ", ".join(task.key_grammar) or "-")
    console.print(head)

    inputs = task.inputs
    console.rule("inputs")
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold")
    rows.add_column()
    if inputs.requirement:
        rows.add_row("requirement", f"{len(inputs.requirement)} chars, {_lines(inputs.requirement)} lines: {_short(inputs.requirement)}")
    if inputs.description:
        rows.add_row("description", _short(inputs.description))
    if inputs.module_name:
        rows.add_row("module", inputs.module_name)
    if inputs.prompts:
        rows.add_row("prompts", ", ".join(sorted(inputs.prompts)))
    if inputs.source:
        src = inputs.source
        rows.add_row("source", f"{src.url or '-'} @ {src.commit or src.branch or '-'}")
        rows.add_row("source files", ", ".join(src.files) or "-")
        if inputs.source_files:
            rows.add_row("checkout", f"{src.checkout} ({len(inputs.source_files)}/{len(src.files)} files read)")
        else:
            rows.add_row("checkout", "[yellow]none[/] (set --sources-dir or SYSMO_SOURCES_DIR to a folder with a checkout per task)")
    if inputs.traces:
        rows.add_row("traces", f"{len(inputs.traces.files)} files ({inputs.traces.format}); {inputs.traces.description}")
    if inputs.trace_format:
        rows.add_row("trace format doc", f"{len(inputs.trace_format)} chars")
    console.print(rows)

    refs = task.references
    console.rule("references")
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold")
    rows.add_column()
    if refs.model:
        files = ", ".join(f"{n} ({_lines(t)} lines)" for n, t in refs.model.files.items())
        rows.add_row("reference model", f"{refs.model.language.value}: {files}")
    else:
        rows.add_row("reference model", "-")
    if refs.traces:
        rows.add_row("conformance traces", f"{len(refs.traces.files)} ({refs.traces.format})")
    for variant in refs.buggy_variants:
        rows.add_row("buggy variant", f"{variant.name}: {_short(variant.description, 200)}")
    if refs.extra:
        rows.add_row("extra", ", ".join(sorted(refs.extra)))
    console.print(rows)
    if refs.invariants:
        table = Table(title=f"{len(refs.invariants)} invariant templates")
        for col in ("name", "type", "natural language"):
            table.add_column(col)
        for inv in refs.invariants:
            table.add_row(inv.name, inv.type, _short(inv.natural_language, 120))
        console.print(table)

    if task.labels:
        console.rule("labels")
        labels = Table.grid(padding=(0, 2))
        labels.add_column(style="bold")
        labels.add_column()
        for key, value in task.labels.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            labels.add_row(key, _short(shown, 160))
        console.print(labels)

    if text:
        if inputs.requirement:
            console.rule("requirement")
            console.print(inputs.requirement, markup=False, highlight=False)
        if refs.model:
            for name, body in refs.model.files.items():
                console.rule(name)
                console.print(body, markup=False, highlight=False)


@app.command()
def source(
    task_id: str = typer.Argument(..., help="A SysMoBench task id, e.g. sysmobench/etcd."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    sources_dir: Path | None = typer.Option(None, "--sources-dir", help=SOURCES_DIR_HELP),
) -> None:
    """Print the modelled system's source files from the user's checkout, or say where to get them."""
    from sysmo.benchmarks.sysmobench import require_source_files

    task = registry.get_task(task_id, data_dir=data_dir, sources_dir=sources_dir)
    for name, body in require_source_files(task).items():
        console.rule(name)
        console.print(body, markup=False, highlight=False)

