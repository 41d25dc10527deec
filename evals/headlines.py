"""The one-line headline of each task kind of a written report: the best group's pass@1 and the kind's headline
score, what `sysmo report` and `sysmo run` print after writing the report (report/summary.csv is the source)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from sysmo.evals.metric_scales import metric_scale
from sysmo.evals.tables import DEFAULT_SELECTION_METRIC, display_name


def headline_lines(directory: Path) -> list[str]:
    """``kind: pass@1 0.850 (agent / model, best of N groups; over A attempts of T tasks); <headline> 0.712`` per
    kind, best first by pass@1 then the headline, as the report's leaderboards rank them."""
    summary_path = Path(directory) / "report" / "summary.csv"
    if not summary_path.is_file():
        return []
    summary = pd.read_csv(summary_path)
    if summary.empty:
        return []
    config_path = Path(directory) / "config.yaml"
    config = yaml.safe_load(config_path.read_text()) if config_path.is_file() else {}
    headline = {**DEFAULT_SELECTION_METRIC, **((config or {}).get("selection_metric") or {})}
    lines = []
    for kind, group in summary.groupby("kind", sort=True):
        metric = headline.get(str(kind))
        scored = metric in group.columns and group[metric].notna().any()
        order = group.sort_values(["pass@1", metric] if scored else ["pass@1"], ascending=False, na_position="last")
        best = order.iloc[0]
        line = (f"{kind}: {display_name('pass@1')} {best['pass@1']:.3f} ({best['agent']} / {best['model']}, best of "
                f"{len(group)} group{'s' if len(group) != 1 else ''}; over {int(best['samples'])} attempts of "
                f"{int(best['tasks'])} tasks)")
        if metric:
            value = best[metric] if scored else None
            shown = f"{value:.{metric_scale(metric).decimals}f}" if value is not None and pd.notna(value) else "not scored"
            line += f"; {display_name(metric)} {shown}"
        lines.append(line)
    return lines
