"""How the report's plots tell groups apart and keep their labels readable.

Colours are the Okabe-Ito palette (told apart with every common colour-vision deficiency); each group also gets
a marker and a line style of its own, so groups stay distinct past the palette's 8 colours (40 before a
(colour, marker, line) triple repeats) and in greyscale. Point labels are placed by ``place_labels``: each takes
the first of a ring of offsets around its point where it overlaps no label placed before it and no point.

>>> style(9)
GroupStyle(color='#56B4E9', marker='P', linestyle='--')
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.transforms import Bbox

OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
LINESTYLES = ["-", "--", "-.", ":"]
# where a label may go, in points from its point: right, above, left, below, then further out
OFFSETS = [(6, 4), (6, -12), (-8, 6), (-8, -14), (0, 12), (0, -18), (14, 14), (14, -22), (-16, 16), (-16, -24),
           (24, 0), (-28, 0), (0, 26), (0, -30), (30, 24), (30, -32), (-34, 26), (-34, -34), (0, 40),
           (0, -44), (44, 10), (-48, 10)]


@dataclass(frozen=True)
class GroupStyle:
    color: str
    marker: str
    linestyle: str


def style(index: int) -> GroupStyle:
    """The ``index``-th group's colour, marker and line style (distinct for the first 40 groups)."""
    return GroupStyle(OKABE_ITO[index % len(OKABE_ITO)], MARKERS[index % len(MARKERS)],
                      LINESTYLES[index % len(LINESTYLES)])


def place_labels(ax: Axes, points: list[tuple[float, float]], labels: list[str], fontsize: float = 8) -> None:
    """Annotate each point with its label at the first offset where the label's box overlaps no label placed
    before it and no marker (the last offset tried when none is free); a thin line joins a far label to its
    point."""
    fig = ax.figure
    fig.canvas.draw()  # text extents need a renderer
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    scale = fig.dpi / 72.0  # points -> pixels
    markers = [ax.transData.transform(p) for p in points]
    reach = 5 * scale  # a marker of size 60 points^2 reaches about 4 points from its centre, and a bit more
    taken: list[Bbox] = [Bbox.from_extents(x - reach, y - reach, x + reach, y + reach) for x, y in markers]
    inside = ax.get_window_extent(renderer)
    for (x, y), label in zip(points, labels):
        chosen, box = OFFSETS[0], None
        for dx, dy in OFFSETS:
            # measured without its leader line (an annotation's extent includes the line to its point)
            text = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize)
            extent = text.get_window_extent(renderer).expanded(1.05, 1.1)
            text.remove()
            if inside.contains(extent.x0, extent.y0) and inside.contains(extent.x1, extent.y1) \
                    and not any(extent.overlaps(other) for other in taken):
                chosen, box = (dx, dy), extent
                break
        dx, dy = chosen  # nowhere free: the first place
        text = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                           arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.4", "shrinkA": 0, "shrinkB": 4}
                           if abs(dx) > 10 or abs(dy) > 14 else None)
        taken.append(box if box is not None else text.get_window_extent(renderer))
