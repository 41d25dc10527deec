"""What ``sysmo run --resume EXP`` may be given: flags about how the run goes, never one that changes results.

Flags that change how the run goes (progress, concurrency, report, executor, spending caps) are applied; a
flag that would change results is refused in one line naming it, except an arm factor's new values, which
add arms (docs/ablations.md)."""

from __future__ import annotations

from sysmo.contracts.arms import ARM_FACTORS
from sysmo.errors import ConfigError
from sysmo.runner.config import ExperimentConfig

# settings that change how a run goes, never what an attempt yields: a resume applies them
OPERATIONAL = frozenset({"concurrency", "tool_concurrency", "budget", "executor", "processes", "ray_address",
                         "ray_workers", "checkpoints", "output_dir"})


def changed_settings(stored: ExperimentConfig, resumed: ExperimentConfig) -> list[str]:
    """The settings whose values differ between the two configs (as stored: JSON values)."""
    before, after = stored.model_dump(mode="json"), resumed.model_dump(mode="json")
    return [name for name in after if before.get(name) != after[name]]


def model_flags(stored: ExperimentConfig, resumed: ExperimentConfig) -> list[str]:
    """Which of ``--model`` (the models' names), ``--api-base`` (their endpoint) and ``--tool-calling`` (their role
    option ``tool_calling``: native and text protocols ask differently) a change of the generator models comes
    from."""
    def endpoints(config: ExperimentConfig) -> set[str | None]:
        return {m.get("api_base") if isinstance(m, dict) else None for m in config.models}

    def tool_calling(config: ExperimentConfig) -> list[str]:
        return [m.get("tool_calling") or "auto" if isinstance(m, dict) else "auto" for m in config.models]

    changed = (["--model"] if stored.model_names != resumed.model_names else []) + (
        ["--api-base"] if endpoints(stored) != endpoints(resumed) else []) + (
        ["--tool-calling"] if tool_calling(stored) != tool_calling(resumed) else [])
    return changed or ["--model"]  # another setting of a model's role config: it came with --model


def check_resume_flags(stored: ExperimentConfig, resumed: ExperimentConfig, flags: dict[str, list[str]]) -> None:
    """Refuse a resume whose flags change a result-changing setting, naming the flags; arm factors may only
    gain values (new arms). ``flags``: setting -> the flags that set it (the models: the flag of what changed,
    ``--model`` or ``--api-base``)."""
    refused: list[str] = []
    for setting in changed_settings(stored, resumed):
        if setting in OPERATIONAL:
            continue
        if setting in ARM_FACTORS:
            old = list(getattr(stored, setting))
            if list(getattr(resumed, setting))[:len(old)] == old:
                continue  # new values appended: new arms, the old ones and their attempt ids kept
        refused.extend(model_flags(stored, resumed) if setting == "models" else flags.get(setting) or [setting])
    if refused:
        names = ", ".join(dict.fromkeys(refused))
        raise ConfigError(f"--resume {stored.id} cannot change {names}: that changes the results of attempts "
                          f"already run; start another experiment (--id) for it")


def added_arms(stored: ExperimentConfig, resumed: ExperimentConfig) -> list[str]:
    """The labels of the arms the resume adds."""
    before = {arm.label for arm in stored.arms()}
    return [arm.label for arm in resumed.arms() if arm.label not in before]

