"""--executor ray on a Ray cluster: a head and two worker nodes on this machine, each started by ``ray start`` as
its own process tree (as on separate machines), inside a private network namespace (only loopback). One run of
tests/ray_cluster_scenarios.py serves every test: a node killed mid-run, the same experiment run by the local
executor, then a node without Java."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")

from ray_cluster_scenarios import stop_cluster  # noqa: E402

SCENARIOS = Path(__file__).with_name("ray_cluster_scenarios.py")
# a cluster start is 20-60 s on a loaded 2-core machine, the scenarios minutes under load (pytest's limit: 900 s)
TIMEOUT_S = 840


def namespace_command() -> list[str] | None:
    """``unshare`` into a private network namespace (as root, or as a user mapped to root in a user namespace
    of their own), or None where that is not allowed here."""
    base = ["unshare", "--net"]
    for command in (base, [*base, "--map-root-user"]):
        try:
            if subprocess.run([*command, "true"], capture_output=True, timeout=30).returncode == 0:
                return command
        except (OSError, subprocess.TimeoutExpired):
            return None
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, skip_missing) -> dict:
    command = namespace_command()
    if command is None:
        skip_missing("netns", "`unshare --net` is not allowed here (needs root or user namespaces): the Ray "
                     "cluster tests run their nodes in a private network namespace")
    out = tmp_path_factory.mktemp("ray-cluster")
    env = {**os.environ, "HOME": str(out / "home"), "SYSMO_HOME": str(out / "sysmo-home"), "SYSMO_LOG_JSON": "1",
           "SYSMO_LOG_LEVEL": "INFO", "RAY_USAGE_STATS_ENABLED": "0"}
    (out / "home").mkdir()
    temp = Path(tempfile.mkdtemp(prefix="sr-", dir="/tmp"))  # Ray's socket paths under it must stay short
    try:
        completed = subprocess.run([*command, sys.executable, str(SCENARIOS), str(out), str(temp)],
                                   capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    finally:  # whatever happened to the scenarios (a time-out): no process of the cluster outlives the test
        stop_cluster(temp)
        shutil.rmtree(temp, ignore_errors=True)
    results_file = out / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    if completed.returncode != 0:
        pytest.fail(f"the cluster scenarios failed ({completed.returncode}): {completed.stderr[-3000:]}\n{results}")
    return results


@pytest.mark.slow
def test_a_node_without_a_tool_stops_the_run_in_one_line_naming_the_node(cluster):
    error = cluster["missing_tool_error"]
    assert error is not None and "\n" not in error
    assert error.startswith("ToolMissingError: node ") and f"(node {cluster['node_c'][:8]})" in error
    assert "(java: Java not found" in error and "sysmo tools install" in error
    # only that node: the head, checked for the run before, is not named
    assert error.count("(node ") == 1


@pytest.mark.slow
def test_a_node_killed_mid_run_loses_no_finished_attempt_and_its_units_run_again_once(cluster):
    units = 3 * 4
    summary = cluster["cluster_summary"]
    assert summary == {"ran": units, "passed": units, "errors": 0, "stopped": None}
    rows = cluster["cluster_rows"]
    assert len(rows) == units == len({row["id"] for row in rows})  # every unit stored once
    events = cluster["cluster_events"]
    lost = [e for e in events if e["event"] == "ray.node_lost"]
    rerun = [e["unit"] for e in events if e["event"] == "ray.unit_rerun"]
    assert len(lost) == 1 and f"(node {cluster['node_b'][:8]})" in lost[0]["node"]
    # the units node B had in flight, each sent once more: at most two requests per unit (seed), two only for
    # a unit that was rerun (the one B had asked for when it was killed, at least)
    assert len(rerun) == len(set(rerun)) == cluster["b_in_flight_at_kill"] >= 1
    per_seed = cluster["requests_per_seed"]
    assert len(per_seed) == units and set(per_seed.values()) == {1, 2}
    assert 1 <= sum(1 for n in per_seed.values() if n == 2) <= len(rerun)
    done = next(e for e in events if e["event"] == "ray.done")
    assert done["rerun"] == len(rerun)
    # progress as locally, with the lost node noted
    assert any(line.startswith("12/12 (100%) ✓12 ✗0 !0, 0 running, ") for line in cluster["cluster_stderr"])  # the progress line
    assert f"(node {cluster['node_b'][:8]}) lost; its attempts in flight run again" in " ".join(
        line.strip() for line in cluster["cluster_stderr"])


@pytest.mark.slow
def test_a_cluster_run_stores_what_the_local_executor_stores(cluster):
    assert cluster["local_summary"] == {"ran": 12, "passed": 12, "errors": 0}
    assert cluster["cluster_rows"] == cluster["local_rows"]  # the same attempts (ids, statuses, rounds) and scores
    assert all(row["scores"] for row in cluster["cluster_rows"])
    # both nodes ran units (node B at least one before it was lost)
    done = next(e for e in cluster["cluster_events"] if e["event"] == "ray.done")
    by_node = {label.rsplit("(node ", 1)[1][:8]: count for label, count in done["by_node"].items()}
    assert by_node[cluster["node_b"][:8]] >= 1 and sum(by_node.values()) == 12


def test_the_paths_a_node_must_see_are_those_the_tasks_name_and_a_replay_models_data():
    from sysmo.benchmarks.registry import get_task, load_tasks
    from sysmo.contracts.task import TraceSet
    from sysmo.runner.ray_cluster import data_paths, tools_for

    uml = get_task("starter/uml_class/library_loans")
    tla = next(t for t in load_tasks(None) if t.kind.value == "tla")
    traced = uml.model_copy(update={"references": uml.references.model_copy(update={
        "traces": TraceSet(files=[Path("/data/t/1.ndjson")]), "windows": Path("/data/t/windows")})})
    assert data_paths([uml], ["mockllm/control"], Path("/data")) == []  # its text travels with the unit
    assert data_paths([uml, traced], ["replay/designbench:gpt_4.1/direct"], Path("/data")) == [
        "/data", "/data/t/1.ndjson", "/data/t/windows"]
    assert tools_for([uml]) == ["java", "sandbox", "PlantUML"]
    assert tools_for([uml, tla]) == ["java", "sandbox", "SANY", "TLC", "PlantUML"]
