"""Server-side time of ``sysmo view``'s pages over an experiment of 500+ attempts, against a baseline in the same run.

Run: python speed/view_speed.py [--attempts 504] [--repeat 5] [--keep DIR]

The experiment is made by ``build_experiment`` (also the fixture of tests/test_view_browser.py): a real
``run_experiment`` of ``base_modeling`` with the offline ``reference`` and ``mockllm/control`` models on six starter
tasks (three class diagrams, three architectures), one repair round at most, every LangGraph step checkpointed,
checked in the repair loop by the real PlantUML and scored by the real cascades with the score cache (each distinct
final artifact is scored once) and no judge (the architecture's judge stage is "not scored"). Three offline models
answer: ``reference`` (the gold model: passes at once), ``mockllm/control`` (a scripted mistake, then the gold
model: repaired in round 1) and ``mockllm/stubborn`` (the same mistake every round: fails after its repair, with
PlantUML's real diagnostics). ``sysmo report`` then writes its plots.

Prints the machine's load average, then per page (experiments, attempts, attempts as CSV, report, one attempt,
compare) the time of its first request (imports, and the app's cache of this state of the store filled; the report
page's view model as ``sysmo report`` keeps it in report/view.json, and once with nothing kept) and the
median server time of ``--repeat`` requests after it through Starlette's test client, each with its ratio to the
baseline: the median time of the store query that lists the experiment's attempts (the least any page does).
Target: every page under 1 s at 500 attempts once the app has seen the store.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S = 1.0
STARTER_TASKS = ("starter/uml_class/library_loans", "starter/uml_class/hotel_booking", "starter/uml_class/recipe_book",
                 "starter/architecture/bike_sharing_system", "starter/architecture/greenhouse_monitoring",
                 "starter/architecture/online_exam_system")
MODELS = ("reference", "mockllm/control", "mockllm/stubborn")


def stubborn_script() -> Any:
    """``mockllm/stubborn``: on each task the control's scripted mistake, again at every round (never repaired)."""
    from sysmo.agents.control_script import broken_artifact, reply
    from sysmo.benchmarks.registry import get_task
    from sysmo.llm.mockllm import MockAnswer, MockCondition, MockScript

    answers = [MockAnswer(text=reply(broken_artifact(get_task(task_id)), "Here is the model."),
                          when=MockCondition(task=task_id)) for task_id in STARTER_TASKS]
    return MockScript(mode="repeat_last", responses=answers)


def build_experiment(output: Path, attempts: int = 504, experiment_id: str = "wide") -> Path:
    """Run the experiment described in the module's docstring into ``output``; return its folder."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.evals.report import write_report
    from sysmo.llm.mockllm import register_script
    from sysmo.runner import ExperimentConfig, run_experiment

    samples = -(-attempts // (len(STARTER_TASKS) * len(MODELS)))
    config = ExperimentConfig(id=experiment_id, output_dir=output, agents=["base_modeling"], models=list(MODELS),
                              tasks=TaskSelection(ids=list(STARTER_TASKS)), samples=samples, concurrency=8, checkpoints="steps", max_rounds=[1],
                              scoring={"embedding": "token", "similarity": "token", "text.bertscore": False})
    register_script("stubborn", stubborn_script)
    run_experiment(config, progress=False)
    directory = output / experiment_id
    write_report(directory)  # as `sysmo report` does: the report, then the viewer's report page kept beside it
    from sysmo.view.report_cache import save_report_view

    save_report_view(directory)
    return directory


def _median_s(call: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(runs: Path, experiment_id: str, repeat: int) -> dict[str, float]:
    """Median seconds per page (and of the baseline query), over ``repeat`` requests each."""
    from starlette.testclient import TestClient

    from sysmo.store import Store
    from sysmo.view.app import create_app

    from sysmo.view.app import warm_up

    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    # `sysmo view` warms up in the background as it starts (imports, agent graphs): timed on its own here, so the
    # first requests below are what a user gets once the server has been up for those seconds
    started = time.perf_counter()
    warm_up()
    warm_up_s = time.perf_counter() - started
    store = Store(runs / experiment_id / "results.sqlite")
    ids = [r["id"] for r in store.query("SELECT id, task_id FROM attempts WHERE experiment_id=? ORDER BY task_id",
                                         (experiment_id,))]
    out = {"warm-up at start (background)": warm_up_s, "baseline (attempt list query)": _median_s(
        lambda: store.query("SELECT a.*, s.scorecard_json FROM attempts a LEFT JOIN scores s ON s.attempt_id = a.id "
                            "WHERE a.experiment_id=?", (experiment_id,)), repeat)}
    store.close()
    pages = {"experiments": "/", "attempts": f"/e/{experiment_id}", "attempts (search)": f"/e/{experiment_id}?q=kettle",
             "attempts CSV": f"/e/{experiment_id}/attempts.csv", "report": f"/e/{experiment_id}/report",
             "attempt": f"/e/{experiment_id}/a/{ids[0]}", "compare": f"/e/{experiment_id}/compare?a={ids[0]}&b={ids[1]}",
             "progress JSON": "/progress.json"}
    # the report page with nothing kept: computed at the first request (what a page of a store changed since its
    # report was written costs), then as `sysmo report` leaves it (view.json kept beside the report)
    kept = runs / experiment_id / "report" / "view.json"
    saved = kept.read_bytes() if kept.is_file() else None
    kept.unlink(missing_ok=True)
    out["report, nothing kept (first request)"] = _median_s(
        lambda: TestClient(create_app(runs), base_url="http://127.0.0.1").get(f"/e/{experiment_id}/report"), 1)
    if saved is not None:
        kept.write_bytes(saved)
    else:
        from sysmo.view.report_cache import save_report_view

        save_report_view(runs / experiment_id)
    for name, url in pages.items():
        def get(url: str = url) -> None:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
        # the first request imports what the page needs and fills the app's cache of this state of the store
        out[f"{name} (first request)"] = _median_s(get, 1)
        out[name] = _median_s(get, repeat)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=504)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the experiment here (and reuse it when it is there)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="view-speed-"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if not (root / "wide" / "results.sqlite").is_file():
        started = time.monotonic()
        build_experiment(root, args.attempts)
        print(f"built {args.attempts} attempts in {time.monotonic() - started:.1f} s (load average {load})")
    figures = measure(root, "wide", args.repeat)
    baseline = figures["baseline (attempt list query)"]
    print(f"sysmo view, server time per page (median of {args.repeat}); load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, seconds in figures.items():
        verdict = "" if name.startswith(("baseline", "warm-up")) else (
            "  target met" if seconds < TARGET_S else "  NOT met (< 1 s)")
        print(f"  {name:40s} {1000 * seconds:8.1f} ms  x{seconds / baseline:6.1f} baseline{verdict}")


if __name__ == "__main__":
    main()
