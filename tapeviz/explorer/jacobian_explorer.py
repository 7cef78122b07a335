"""``tv.explore(jac)``: a Jacobian's heatmap above the backward pass of one of its rows.

Row i of a Jacobian is the backward pass seeded with element i of the target, so the
explorer below the heatmap is the ordinary Explorer over the same recording, its targets
being the rows (``y[0]``, ``y[1]``...: the target menu is the row control). Clicking a
cell of the heatmap picks its row: a small anywidget reports the click as a row number;
the heatmap outlines the row shown. Every number on screen is TF's: the heatmap is
``jac.matrix``, the picture is ``jac.flow(i)``.
"""

from __future__ import annotations

import base64
import io

import anywidget
import ipywidgets as W
import traitlets as T

from ..output.jacobian_heatmap import Jacobian
from . import static_files
from .fallback import StaticFallback
from .state import GraphTargets
from .widget import Explorer

__all__ = ["JacobianExplorer", "RowPicker"]


class RowPicker(anywidget.AnyWidget):
    """An image of a heatmap that reports the row clicked (``row``); ``top`` / ``bottom``
    are where the matrix starts and ends down the image (fractions of its height)."""

    _esm = static_files.path("row_picker.js")
    src = T.Unicode("").tag(sync=True)
    top = T.Float(0.0).tag(sync=True)
    bottom = T.Float(1.0).tag(sync=True)
    rows = T.Int(0).tag(sync=True)
    row = T.Int(0).tag(sync=True)


class JacobianExplorer(StaticFallback, W.VBox):
    """The heatmap of ``jac`` (click a row) and an Explorer of that row's backward pass.

    ``controls["row"]`` is the row menu (the explorer's target menu; a one-row Jacobian
    has none), ``picker`` the clickable heatmap, ``explorer`` the Explorer below."""

    def __init__(self, jac: Jacobian, *, presenter: bool = False, **settings):
        super().__init__()
        self.jac = jac
        self.add_class("tv-jacobian")
        labels = jac.row_labels()
        rows = {label: i for i, label in enumerate(labels)}
        explored = GraphTargets(jac.graph, rows, flow_factory=jac.flow)
        self.explorer = Explorer(explored, presenter=presenter, **settings)
        self.controls = dict(self.explorer.controls)
        if "target" in self.controls:
            self.controls["row"] = self.controls["target"]
            self.controls["row"].description = "row"
        self.picker = RowPicker(rows=jac.rows).add_class("tv-heatmap")
        self.picker.observe(lambda ch: self.select(ch["new"]), names="row")
        if "row" in self.controls:
            self.controls["row"].observe(lambda ch: self._draw(labels.index(ch["new"])), names="value")
        self.children = [self.picker, self.explorer]
        self._draw(0)

    @property
    def row(self) -> int:
        """The row whose backward pass is shown."""
        return self.jac.row_labels().index(self.explorer.state.target)

    def select(self, i: int) -> None:
        """Show row i (what a click on the heatmap does)."""
        i = self.jac._check_row(i)
        if "row" in self.controls:
            self.controls["row"].value = self.jac.row_labels()[i]  # the menu's observer redraws
        else:
            self._draw(i)

    def _draw(self, i: int) -> None:
        fig = self.jac.figure(row=i)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        fig.canvas.draw()  # the axes' place is final once drawn
        box = fig.axes[0].get_position()
        with self.picker.hold_sync():
            self.picker.src = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
            self.picker.top, self.picker.bottom = 1.0 - box.y1, 1.0 - box.y0
            self.picker.row = i
