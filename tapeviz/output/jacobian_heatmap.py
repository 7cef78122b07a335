"""``tv.Jacobian`` and ``jac.figure()``: a Jacobian as a labelled heatmap (object API, no pyplot).

Rows are target elements (``y[0]``, ``y[1]``...), columns source elements; the colour
is the value on a diverging scale centred at 0 (blue negative, red positive, white 0),
so the sign pattern reads at a glance; small matrices print each value in its cell.
Large matrices keep at most ~24 tick labels per axis (every k-th element) so labels
never overlap. One row can be outlined: the row whose backward pass the explorer shows.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..gradients.jacobian import JacobianRows

__all__ = ["Jacobian", "heatmap", "MAX_PRINTED", "MAX_TICKS"]

#: Matrices with at most this many cells per side print their values.
MAX_PRINTED = 12
#: At most this many tick labels per axis.
MAX_TICKS = 24
_CELL_IN = 0.62  # inches per cell when values are printed (fits "-0.123" at 8 pt)


class Jacobian(JacobianRows):
    """d target / d source of a recorded tape (tv.jacobian / tv.batch_jacobian): the rows
    (each a backward pass: ``flow(i)``, ``row(i)``), ``matrix`` in ``tape.jacobian``'s shape,
    and ``figure()``, its heatmap."""

    def figure(self, *, row: int | None = None, example: int = 0, values: bool | None = None, dpi: int = 100) -> Figure:
        """A labelled heatmap (rows: target elements, columns: source elements; values printed
        when the matrix is at most 12 x 12). ``row``: outline that row; ``example``: which
        example of a batch Jacobian."""
        return heatmap(self, row=row, example=example, values=values, dpi=dpi)


def heatmap(
    jac: JacobianRows,
    *,
    row: int | None = None,
    example: int = 0,
    values: bool | None = None,
    dpi: int = 100,
) -> Figure:
    """The Jacobian ``jac`` as a heatmap Figure. ``row``: outline that row (its backward
    pass is the one shown beside it); ``example``: which example of a batch Jacobian;
    ``values``: print the numbers (default: when the matrix is at most 12 x 12)."""
    m = jac.matrix2d(example)
    rows, cols = jac.rows, int(np.prod((jac.source_shape[1:] if jac.batch else jac.source_shape), dtype=np.int64))
    data = np.zeros((rows, cols)) if m is None else np.asarray(m, dtype=np.float64)
    if values is None:
        values = rows <= MAX_PRINTED and cols <= MAX_PRINTED
    # ticks name the element ("[0, 2]"); the axis label names the tensor
    row_labels = [_index(s) for s in jac.row_labels()]
    col_labels = [_index(s) for s in jac.column_labels()]
    longest_row = max(len(s) for s in row_labels)
    longest_col = max(len(s) for s in col_labels)
    cell = _CELL_IN if values else max(0.12, min(0.4, 7.0 / max(rows, cols)))
    width = max(3.2, cols * cell + 0.09 * longest_row + 1.6)
    height = max(2.4, rows * cell + 0.08 * longest_col + 1.1)
    fig = Figure(figsize=(min(width, 16.0), min(height, 14.0)), dpi=dpi, layout="constrained")
    ax = fig.add_subplot()
    finite = data[np.isfinite(data)]
    span = float(np.abs(finite).max()) if finite.size else 0.0
    span = span if span > 0 else 1.0
    image = ax.imshow(data, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -span, span), aspect="auto", interpolation="nearest")
    fig.colorbar(image, ax=ax, shrink=0.8)
    _ticks(ax.set_yticks, row_labels, rows)
    _ticks(ax.set_xticks, col_labels, cols)
    ax.tick_params(axis="x", labelrotation=45 if longest_col > 4 else 0, labelsize=9)
    ax.tick_params(axis="y", labelsize=9)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    for t in ax.get_xticklabels():
        t.set_horizontalalignment("left" if longest_col > 4 else "center")
    ax.set_xlabel(f"{jac.source_name} (source)")
    ax.set_ylabel(f"{jac.target_name} (target)")
    what = "batch_jacobian" if jac.batch else "jacobian"
    title = f"d {jac.target_name} / d {jac.source_name}  ({what}, {rows} × {cols})"
    if jac.batch:
        title += f", example {example}"
    if m is None:
        title += ": None (the target does not depend on the source)"
    ax.set_title(title, fontsize=10, loc="left")
    if values and m is not None:
        for (i, j), v in np.ndenumerate(data):
            dark = abs(v) > 0.6 * span
            ax.text(
                j, i, _cell(v), ha="center", va="center", fontsize=8,
                color="white" if dark else "black",
            )  # fmt: skip
    if row is not None:
        r = jac._check_row(row)
        ax.add_patch(Rectangle((-0.5, r - 0.5), cols, 1, fill=False, edgecolor="#111111", linewidth=2.2))
    return fig


def _ticks(setter, labels: list[str], n: int) -> None:
    every = max(1, -(-n // MAX_TICKS))
    positions = list(range(0, n, every))
    setter(positions, [labels[k] for k in positions])


def _index(label: str) -> str:
    """``x[1, 2]`` -> ``[1, 2]`` (a scalar's label is its name)."""
    k = label.find("[")
    return label[k:] if k > 0 else label


def _cell(v: float) -> str:
    """A value in 3 significant digits ("0" for an exact zero: the sparsity shows)."""
    return "0" if v == 0 else f"{v:.3g}"
