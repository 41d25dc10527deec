"""The report's plots: colour-blind-safe colours with a marker and line style per group (distinct past 10
groups), labels that do not overlap, identical curves drawn once and named together, captions that say what
is plotted (in report.md and report.html, not file names)."""

from __future__ import annotations

import itertools

import matplotlib
import matplotlib.figure
import pandas as pd

from sysmo.evals.plot_style import OKABE_ITO, style
from sysmo.evals.report import plot_cost, plot_rounds


def _capture(draw) -> dict:
    """What ``draw`` put on its figure's first axes, read just before it is saved."""
    seen: dict = {}
    original = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        seen["boxes"] = [t.get_window_extent(renderer) for t in ax.texts]
        seen["labels"] = [t.get_text() for t in ax.texts]
        seen["legend"] = [t.get_text() for t in ax.get_legend().get_texts()]
        seen["lines"] = ax.get_lines()
        seen["title"] = ax.get_title()
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = keep
    try:
        seen["plots"] = draw()
    finally:
        matplotlib.figure.Figure.savefig = original
    return seen


def test_groups_past_the_palette_stay_distinct_in_colour_and_marker() -> None:
    looks = [style(n) for n in range(28)]
    assert {look.color for look in looks} <= set(OKABE_ITO)
    assert len({(look.color, look.marker) for look in looks}) == 28
    assert len({look.marker for look in looks[:10]}) == 10


def test_cost_labels_of_a_crowd_of_nearby_points_do_not_overlap(tmp_path) -> None:
    summary = pd.DataFrame([{"agent": f"agent{n}", "model": "m", "kind": "tla", "cost $": 0.10 + 0.002 * n,
                             "pass@1": 0.50 + 0.01 * (n % 4)} for n in range(12)])
    seen = _capture(lambda: plot_cost(summary, tmp_path))
    assert sorted(seen["labels"], key=int) == [str(n) for n in range(1, 13)]
    for a, b in itertools.combinations(seen["boxes"], 2):
        assert not a.overlaps(b), (a, b)
    assert "pass@1 after repair against cost" in seen["title"]
    assert "incl. cached at list price" in seen["plots"][0].caption


def test_identical_rounds_curves_are_one_line_named_together(tmp_path) -> None:
    curves = pd.DataFrame([{"agent": a, "model": "m", "round": r, "passed_share": share}
                           for a, shares in (("a", (0.2, 0.6)), ("b", (0.2, 0.6)), ("c", (0.1, 0.3)))
                           for r, share in enumerate(shares)])
    seen = _capture(lambda: plot_rounds(curves, tmp_path))
    assert len(seen["lines"]) == 2
    assert seen["legend"] == ["a / m = b / m", "c / m"]
    assert "share of attempts passed by each round" in seen["title"]


def test_a_curve_shared_by_many_groups_has_a_legend_broken_into_lines_that_fits(tmp_path) -> None:
    import warnings

    curves = pd.DataFrame([{"agent": f"agent_number_{n}", "model": "provider/some-long-model-name", "round": r,
                            "passed_share": share} for n in range(12) for r, share in enumerate((1.0, 1.0))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Tight layout not applied" when the legend is too wide
        seen = _capture(lambda: plot_rounds(curves, tmp_path))
    (label,) = seen["legend"]
    assert sorted(label.replace(" =\n", " = ").split(" = ")) == sorted(
        f"agent_number_{n} / provider/some-long-model-name" for n in range(12))
    longest = max(len(f"agent_number_{n} / provider/some-long-model-name") for n in range(12))
    assert max(len(line) for line in label.splitlines()) <= max(44, longest) + len(" =")


def test_a_heatmap_title_is_never_cut(tmp_path, monkeypatch) -> None:
    """One agent and one model (the narrowest heatmap) with the longest title: wrapped within the figure."""
    from sysmo.evals.report import plot_heatmaps

    summary = pd.DataFrame([{"agent": "base_modeling", "model": "mockllm/control", "kind": "architecture",
                             "tasks": 3, "samples": 6, "pass@1": 0.5, "first answer parses pass@1": 0.75}])
    titles: list[tuple[str, float, float, float]] = []
    original = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        renderer = fig.canvas.get_renderer()
        box = fig.axes[0].title.get_window_extent(renderer)
        titles.append((fig.axes[0].get_title(), box.x0, box.x1, fig.bbox.width))
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    plots = plot_heatmaps(summary, tmp_path)
    assert len(plots) == 2 and len(titles) == 2
    for title, x0, x1, width in titles:
        assert "per agent and model" in " ".join(title.split())
        assert 0 <= x0 and x1 <= width, (title, x0, x1, width)
