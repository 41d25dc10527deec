"""SysMoBench loader: the 11 task folders, invariant templates, PGo references and traces, user checkouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.contracts.artifact import Language
from sysmo.benchmarks import sysmobench
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import DataMissingError

NAMES = ["curp", "dqueue", "etcd", "locksvc", "mutex", "raftkvs", "redisraft", "ringbuffer", "rwmutex", "spin", "zookeeper"]
INVARIANTS = {"curp": 7, "dqueue": 1, "etcd": 13, "locksvc": 6, "mutex": 7, "raftkvs": 15, "redisraft": 16,
              "ringbuffer": 7, "rwmutex": 10, "spin": 7, "zookeeper": 11}
# (trace files, runs) of the PGo tasks in the staged data (raftkvs keeps 2 of its 10 runs)
TRACES = {"dqueue": (8, 4), "locksvc": (132, 22), "raftkvs": (12, 2)}
BUGGY = {"curp", "etcd", "mutex", "redisraft", "rwmutex"}


@pytest.fixture(scope="module")
def root(shared_benchmarks: Path) -> Path:
    return shared_benchmarks / "sysmobench"


@pytest.fixture(scope="module")
def tasks(root: Path) -> dict[str, Task]:
    return {t.labels["system"]: t for t in sysmobench.load(root)}


def test_loads_all_eleven_tasks_as_tla_tasks(tasks: dict[str, Task]) -> None:
    assert sorted(tasks) == NAMES
    assert {t.id for t in tasks.values()} == {f"sysmobench/{n}" for n in NAMES}
    assert all(t.kind is TaskKind.TLA and t.benchmark == "sysmobench" for t in tasks.values())


def test_invariant_template_counts_per_task(tasks: dict[str, Task]) -> None:
    assert {n: len(t.references.invariants) for n, t in tasks.items()} == INVARIANTS


def test_invariant_templates_keep_type_and_example(tasks: dict[str, Task]) -> None:
    spin = tasks["spin"].references.invariants
    # the yaml's own metadata claims 6 safety / 1 liveness; the templates themselves say 5 / 2
    assert [i.type for i in spin].count("liveness") == 2
    mutual = next(i for i in spin if i.name == "MutualExclusion")
    assert mutual.type == "safety" and "Cardinality" in mutual.tla_example
    assert all(i.natural_language for t in tasks.values() for i in t.references.invariants)


def test_pgo_tasks_have_ground_truth_spec_and_traces(tasks: dict[str, Task]) -> None:
    for name, (n_files, n_runs) in TRACES.items():
        task = tasks[name]
        model = task.references.model
        assert model is not None and model.language is Language.TLA
        assert sorted(model.files) == [f"{name}.cfg", f"{name}.tla"]
        assert f"MODULE {name}" in model.main_text
        traces = task.references.traces
        assert traces is not None and traces.format == "pgo"
        assert len(traces.files) == n_files
        assert len({f.parent for f in traces.files}) == n_runs
        assert all(f.name.startswith("trace-") and f.suffix == ".log" and f.is_file() for f in traces.files)
        assert task.inputs.traces == traces
        assert "tracelink_mapping" in task.inputs.prompts


def test_non_pgo_tasks_have_no_gold_spec_or_traces(tasks: dict[str, Task]) -> None:
    for name in set(NAMES) - set(TRACES):
        assert tasks[name].references.model is None
        assert tasks[name].references.traces is None


def test_bug_reproduction_specs_become_buggy_variants(tasks: dict[str, Task]) -> None:
    assert {n for n, t in tasks.items() if t.references.buggy_variants} == BUGGY
    mutex = tasks["mutex"].references.buggy_variants[0]
    assert mutex.name == "1_mutex" and set(mutex.artifact.files) == {"1_mutex.tla", "1_mutex.cfg"}
    assert mutex.invariant == "MutualExclusion"  # the cfg checks a template invariant
    assert "asterinas/pull/1279" in mutex.description


def test_task_yaml_fields_reach_inputs(tasks: dict[str, Task]) -> None:
    etcd = tasks["etcd"]
    assert etcd.inputs.module_name == "etcdraft"
    assert etcd.inputs.source is not None and etcd.inputs.source.url == "https://github.com/etcd-io/raft.git"
    assert etcd.inputs.source.commit == "v3.5.12" and etcd.inputs.source.files == ["raft.go"]
    assert tasks["curp"].inputs.source.commit == "71479a4fabdd12fe67eec0bee95e652976937541"
    assert len(tasks["zookeeper"].inputs.source.files) == 6  # multi-file default_source_file
    assert {"direct_call", "agent_based", "trace_based"} <= set(etcd.inputs.prompts)
    assert "alloy/agent_based" in tasks["spin"].inputs.prompts
    assert etcd.domain == "distributed" and tasks["spin"].domain == "concurrent"
    # the trace-format doc named by task.yaml; zookeeper's is absent upstream
    assert etcd.inputs.trace_format and tasks["zookeeper"].inputs.trace_format is None


def test_without_checkout_the_source_request_names_repository_commit_and_files(tasks: dict[str, Task]) -> None:
    curp = tasks["curp"]
    assert curp.inputs.source_files == {} and curp.inputs.source.checkout is None
    with pytest.raises(DataMissingError) as err:
        sysmobench.require_source_files(curp)
    message = str(err.value)
    assert "https://github.com/xline-kv/Xline.git" in message
    assert "71479a4fabdd12fe67eec0bee95e652976937541" in message
    assert "crates/curp/src/server/curp_node.rs" in message and "SYSMO_SOURCES_DIR" in message


def test_user_checkout_fills_source_files(root: Path, tmp_path: Path) -> None:
    spin_rs = tmp_path / "spin" / "ostd" / "src" / "sync" / "spin.rs"
    spin_rs.parent.mkdir(parents=True)
    spin_rs.write_text("pub struct SpinLock;\n")
    (tmp_path / "etcd").mkdir()  # a checkout without the named file
    by_name = {t.labels["system"]: t for t in sysmobench.load(root, sources_dir=tmp_path)}
    spin = by_name["spin"]
    assert spin.inputs.source_files == {"ostd/src/sync/spin.rs": "pub struct SpinLock;\n"}
    assert spin.inputs.source.checkout == tmp_path / "spin" and spin.labels["has_source"] is True
    assert sysmobench.require_source_files(spin) == spin.inputs.source_files
    with pytest.raises(DataMissingError, match="lacks these files"):
        sysmobench.require_source_files(by_name["etcd"])


def test_config_mapping_of_checkouts_overrides_sources_dir(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "my-raft"
    elsewhere.mkdir()
    (elsewhere / "raft.go").write_text("package raft\n")
    by_name = {t.labels["system"]: t for t in sysmobench.load(root, sources_dir=tmp_path / "none", checkouts={"etcd": elsewhere})}
    assert by_name["etcd"].inputs.source_files == {"raft.go": "package raft\n"}
    assert by_name["spin"].inputs.source_files == {}
