"""Data location, the task registry over all families, and the `sysmo tasks` commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sysmo.benchmarks import datadir, registry
from sysmo.cli.benchmarks import app
from sysmo.config import settings
from sysmo.errors import DataMissingError, UnknownNameError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _no_r2abench_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """$SYSMO_R2ABENCH_DIR (set to run the real-checkout tests) would stand in for every data dir's r2abench/."""
    monkeypatch.delenv("SYSMO_R2ABENCH_DIR", raising=False)


@pytest.fixture(scope="module")
def data_dir(shared_benchmarks: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with every family: the staged data plus our own OODEval/R2ABench fixture tasks (linked, not copied)."""
    root = tmp_path_factory.mktemp("data")
    for family in ("sysmobench", "sysmbench", "ardoco"):
        (root / family).symlink_to(shared_benchmarks / family)
    for family in ("oodeval", "r2abench"):
        (root / family).symlink_to(FIXTURES / family)
    return root


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch):
    for name in ("SYSMO_DATA_DIR", "SYSMO_SOURCES_DIR", "SYSMO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(Path(__file__).parent)  # no sysmo.yaml here
    settings.cache_clear()
    yield monkeypatch
    settings.cache_clear()


def test_data_dir_from_option_then_env_then_config(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"data_dir: {tmp_path / 'from-config'}\n")
    clean_env.setenv("SYSMO_CONFIG", str(config))
    settings.cache_clear()
    assert datadir.resolve_data_dir(None) == tmp_path / "from-config"
    clean_env.setenv("SYSMO_DATA_DIR", str(tmp_path / "from-env"))
    assert datadir.resolve_data_dir(None) == tmp_path / "from-env"
    assert datadir.resolve_data_dir(tmp_path / "explicit") == tmp_path / "explicit"


def test_loads_every_family_present(data_dir: Path, clean_env: pytest.MonkeyPatch) -> None:
    tasks = registry.load_tasks(data_dir)
    counts = Counter(t.benchmark for t in tasks)
    assert {k: counts[k] for k in ("sysmobench", "sysmbench", "oodeval", "r2abench", "ardoco")} == {
        "sysmobench": 11, "sysmbench": 151, "oodeval": 3, "r2abench": 6, "ardoco": 5}
    assert len({t.id for t in tasks}) == len(tasks)
    clean_env.setenv("SYSMO_DATA_DIR", str(data_dir))
    assert Counter(t.benchmark for t in registry.load_tasks(families=["ardoco"])) == {"ardoco": 5}


def test_absent_families_are_skipped_unless_asked_for(shared_benchmarks: Path, clean_env: pytest.MonkeyPatch) -> None:
    present = {t.benchmark for t in registry.load_tasks(shared_benchmarks)}
    assert {"sysmobench", "sysmbench", "ardoco"} <= present and "oodeval" not in present
    with pytest.raises(DataMissingError) as err:
        registry.load_tasks(shared_benchmarks, families=["oodeval"])
    assert str(shared_benchmarks / "oodeval") in str(err.value) and "sysmo.benchmarks.oodeval" in str(err.value)
    with pytest.raises(DataMissingError, match="luuquangkhai9/R2ABench"):
        registry.load_tasks(shared_benchmarks, families=["r2abench"])


def test_wrong_data_dir_is_a_data_missing_error(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataMissingError, match="does not exist"):
        registry.load_tasks(tmp_path / "nope")
    with pytest.raises(DataMissingError) as err:
        registry.load_tasks(tmp_path, families=["sysmbench"])
    assert str(tmp_path / "sysmbench") in str(err.value) and "jdm4pku/DesignBench" in str(err.value)


def test_no_data_dir_is_fine_for_the_starter_suite(clean_env: pytest.MonkeyPatch) -> None:
    assert all(t.benchmark == "starter" for t in registry.load_tasks(families=["starter"]))
    assert all(t.benchmark == "starter" for t in registry.load_tasks())
    with pytest.raises(DataMissingError, match="no benchmark data directory"):
        registry.load_tasks(families=["sysmbench"])


def test_unknown_family_and_task_id_are_named(data_dir: Path) -> None:
    with pytest.raises(UnknownNameError, match="sysmobench"):
        registry.load_tasks(data_dir, families=["sysmobenchh"])
    with pytest.raises(UnknownNameError, match="did you mean sysmobench/spin"):
        registry.get_task("sysmobench/spinn", data_dir=data_dir)
    assert registry.get_task("sysmbench/100", data_dir=data_dir).difficulty == 3


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_cli_list_prints_family_counts_and_rows(data_dir: Path) -> None:
    result = _invoke("list", "--data-dir", str(data_dir))
    assert result.exit_code == 0, result.output
    assert "tasks per family" in result.output
    row = next(line for line in result.output.splitlines() if "│ sysmbench " in line)
    assert row.split("│")[2].strip() == "151"
    assert "sysmobench/zookeeper" in result.output and "r2abench/clinic_booking/full" in result.output


def test_cli_list_filters_and_samples_as_json(data_dir: Path) -> None:
    result = _invoke("list", "--data-dir", str(data_dir), "-b", "sysmbench", "--difficulty", "4-5",
                     "--grammar", "state*", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [t["id"] for t in payload["tasks"]] and all(t["difficulty"] >= 4 for t in payload["tasks"])
    assert payload["counts"]["sysmbench"]["loaded"] == 151
    sampled = [json.loads(_invoke("list", "--data-dir", str(data_dir), "--sample", "7", "--seed", "4", "--json").output)
               for _ in range(2)]
    assert len(sampled[0]["tasks"]) == 7 and sampled[0]["tasks"] == sampled[1]["tasks"]


def test_cli_show_prints_inputs_references_invariants_labels(data_dir: Path) -> None:
    result = _invoke("show", "sysmobench/locksvc", "--data-dir", str(data_dir))
    assert result.exit_code == 0, result.output
    for expected in ("locksvc.tla", "132 files (pgo)", "6 invariant templates", "LockSafety",
                     "github.com/DistCompiler/pgo", "has_reference_model"):
        assert expected in result.output
    shown = json.loads(_invoke("show", "sysmbench/11", "--data-dir", str(data_dir), "--json").output)
    assert shown["labels"]["json_index"] == 20 and shown["kind"] == "sysml"


def test_cli_wrong_data_dir_prints_one_clear_error_line(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "400"}
    run = subprocess.run([sys.executable, "-m", "sysmo.cli", "tasks", "list", "--data-dir", str(tmp_path / "nope")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and str(tmp_path / "nope") in lines[0]


def test_the_dataset_yaml_loader_reads_every_starter_file_as_yaml_safe_load_does() -> None:
    import yaml
    from sysmo.benchmarks.starter import STARTER_DIR
    from sysmo.benchmarks.yaml_load import SAFE_LOADER, safe_load

    files = sorted(STARTER_DIR.rglob("*.yaml"))
    assert len(files) >= 30 and SAFE_LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert safe_load(text) == yaml.safe_load(text), path
    with pytest.raises(yaml.YAMLError):
        safe_load("id: [unclosed\n")
    with pytest.raises(yaml.YAMLError):  # no Python objects from a task file
        safe_load("!!python/object/apply:os.system ['true']\n")
