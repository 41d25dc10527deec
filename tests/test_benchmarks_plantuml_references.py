"""Every PlantUML reference a loader produces or a fixture holds passes the real PlantUML (one sandboxed batch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.benchmarks import ardoco, oodeval, r2abench
from sysmo.contracts.check import Outcome

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.slow
def test_ardoco_oodeval_and_r2abench_references_pass_plantuml(shared_benchmarks: Path) -> None:
    from sysmo.tools.plantuml.check import check_batch

    tasks = ardoco.load(shared_benchmarks / "ardoco") + oodeval.load(FIXTURES / "oodeval") + r2abench.load(FIXTURES / "r2abench")
    references = {t.references.model.sha256: (t.id, t.references.model.main_text) for t in tasks}
    results = check_batch([text for _, text in references.values()])
    failed = {task_id: [d.message for d in r.diagnostics] for (task_id, _), r in zip(references.values(), results)
              if r.outcome is not Outcome.OK}
    assert len(results) == 5 + 3 + 2
    assert failed == {}
