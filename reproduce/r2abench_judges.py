"""Which stored judge alignment (``judge_alignment_<judge>.json``) a published R2ABench prediction is scored with.

Some prediction folders of the replication package hold the answers of two judges (``gpt-4.1-mini`` and
``gpt-5.4-mini``; openhands/qwen3-coder-480b-a35b-instruct for 9 projects at commit ``381e3e6``).
``Output/results_e_r2a.csv`` was computed from ``gpt-5.4-mini``'s, so that judge comes first: taking the first
file by name picks ``gpt-4.1-mini`` and those rows come out wrong (GED accuracy 54.0 where the CSV has 64.5).

The order: ``JUDGE_PREFERENCE``, then any other judge found, by name. ``--judge-file-model`` replaces it with
the judges named there, and only those: a folder with none of them is scored for validity alone.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from sysmo.log import get_logger

log = get_logger(__name__)

PREFIX = "judge_alignment_"
# the judge whose answers results_e_r2a.csv was computed from first, then the older one
JUDGE_PREFERENCE: tuple[str, ...] = ("gpt-5.4-mini", "gpt-4.1-mini")
EXAMPLES = 3  # folders named in the warning about several judges


def judges_in(folder: Path) -> list[str]:
    """The judges with a stored alignment in ``folder``, by name."""
    return sorted(p.name[len(PREFIX):-len(".json")] for p in folder.glob(f"{PREFIX}*.json"))


def judge_order(present: list[str], preferred: list[str] | None = None) -> list[str]:
    """The judges of ``present`` in the order they are tried (see the module docstring)."""
    if preferred:
        return [j for j in preferred if j in present]
    return [j for j in JUDGE_PREFERENCE if j in present] + [j for j in present if j not in JUDGE_PREFERENCE]


class JudgeChoice(BaseModel):
    """The alignment file a prediction is scored with, and the judges its folder offered."""

    judge: str | None = None  # None: no usable alignment
    path: Path | None = None
    present: list[str] = Field(default_factory=list)

    @property
    def note(self) -> str:
        """What the row's notes say about the choice ("" when there was nothing to choose)."""
        if self.judge is None:
            return f"no alignment of the judges asked for (has {', '.join(self.present)})" if self.present else ""
        others = [j for j in self.present if j != self.judge]
        return f"judge {self.judge}" + (f" (also present: {', '.join(others)})" if others else "")


def choose_judge_file(folder: Path, preferred: list[str] | None = None) -> JudgeChoice:
    """The alignment to score the prediction in ``folder`` with: the first judge of ``judge_order``."""
    present = judges_in(folder)
    order = judge_order(present, preferred)
    if not order:
        return JudgeChoice(present=present)
    return JudgeChoice(judge=order[0], path=folder / f"{PREFIX}{order[0]}.json", present=present)


class JudgeChoices(BaseModel):
    """Over a re-scoring: how many rows each judge scored, and the folders that offered several."""

    preferred: list[str] = Field(default_factory=list)  # --judge-file-model ([]: JUDGE_PREFERENCE)
    used: dict[str, int] = Field(default_factory=dict)
    several: list[str] = Field(default_factory=list)  # "workflow/model/project" of folders with several judges
    without_asked_judge: int = 0  # folders whose alignments are all of judges not asked for

    def add(self, key: str, choice: JudgeChoice) -> None:
        if choice.judge is not None:
            self.used[choice.judge] = self.used.get(choice.judge, 0) + 1
        elif choice.present:
            self.without_asked_judge += 1
        if len(choice.present) > 1:
            self.several.append(key)

    @property
    def warning(self) -> str | None:
        """One sentence when some folder held several judges' alignments (None otherwise)."""
        if not self.several:
            return None
        rule = (f"--judge-file-model {' '.join(self.preferred)}" if self.preferred else
                f"the judge results_e_r2a.csv was computed from, {JUDGE_PREFERENCE[0]}, first")
        used = ", ".join(f"{judge} for {n} row(s)" for judge, n in sorted(self.used.items()))
        return (f"{len(self.several)} prediction folder(s) hold alignments of several judges (e.g. "
                f"{', '.join(self.several[:EXAMPLES])}): chosen by {rule}; used {used}")

    def log_warning(self) -> None:
        if self.several:
            log.warning("reproduce.r2abench.several_judges", folders=len(self.several), examples=self.several[:EXAMPLES],
                        used=self.used, preferred=self.preferred or list(JUDGE_PREFERENCE))
