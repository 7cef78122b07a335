"""Jacobian: d target / d source element by element, one backward pass per row.

``tape.jacobian(y, x)`` is, row by row, what this tool already animates: row i is the
gradient of element ``y[i]`` alone, i.e. the backward pass seeded with a one-hot
``output_gradients``. So a :class:`Jacobian` holds no arithmetic of its own: each row
is TensorFlow's backprop replayed over the recording (as every GradientFlow is) with
the seed ``e_i``; ``.matrix`` stacks the rows in ``tape.jacobian``'s shape and
``.flow(i)`` is row i's GradientFlow, to draw and step through like any other. (The
heatmap is drawn by the output stage: ``tapeviz.Jacobian`` is this class with ``figure()``.)

``batch_jacobian`` is the same with one seed per row for every example at once (ones at
element i of each example): the examples are independent, so row i of every example's
Jacobian comes out of one backward pass.

The user's tape is never asked for anything: the rows come from the private replay, so
``tape.jacobian`` / ``tape.gradient`` return and raise what they would without tapeviz,
in either order.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import tensorflow as tf

from ..messages import Phrase
from ..record.graph import TapeGraph
from .flow import GradientFlow, _to_numpy

__all__ = ["JacobianRows", "element_labels"]


class JacobianRows:
    """d target / d source of a recorded tape, as rows (one backward pass each); the
    public :class:`tapeviz.Jacobian` adds its heatmap (output.jacobian_heatmap).

    ``matrix``: the Jacobian in ``tape.jacobian``'s shape (``target.shape + source.shape``;
    with ``batch=True``, ``batch_jacobian``'s ``[B] + target.shape[1:] + source.shape[1:]``),
    or None where TF's is None (the target does not depend on the source).
    ``rows``: how many rows (target elements; per example for a batch Jacobian);
    ``flow(i)``: the backward pass of row i; ``row(i)``: its gradient, flat.
    """

    def __init__(self, graph: TapeGraph, target: Any, source: Any, *, batch: bool = False):
        for what, t in (("target", target), ("source", source)):
            if len(tf.nest.flatten(t)) != 1:
                raise TypeError(
                    f"tv.jacobian takes one {what} tensor (as tape.jacobian's {what}), got {type(t).__name__}; "
                    "call it once per pair."
                )
        self.graph = graph
        self.target = target
        self.source = source
        self.batch = batch
        key = graph.key_of(target)
        if graph.node_of(target) is None or key is None or key not in graph.tensors:
            raise ValueError(
                "The Jacobian's target was not produced while this tape recorded: compute it inside "
                "the `with tv.GradientTape() as tape:` block, then call tv.jacobian(tape, y, x)."
            )
        self._source_node = graph.node_of(source)
        if self._source_node is None:
            name = getattr(source, "name", None) or type(source).__name__
            raise ValueError(
                f"The source {name} is neither a variable read nor a tensor seen while the tape recorded; "
                "pass a variable or a (watched) tensor used inside the `with` block."
            )
        self._target_key: int = key
        self._source_key = cast(int, graph.key_of(source))  # node_of found it: it has a key
        info = graph.tensors[key]
        if not info.trainable:
            raise TypeError(
                f"The Jacobian's target has dtype {info.dtype}, which carries no gradient; pass a float tensor."
            )
        self.target_shape = tuple(int(s) for s in info.shape)
        self.source_shape = tuple(int(s) for s in _shape_of(source))
        self.dtype = tf.as_dtype(info.dtype)
        if batch:
            if not self.target_shape or not self.source_shape or self.target_shape[0] != self.source_shape[0]:
                raise ValueError(
                    f"batch_jacobian needs target and source with the same first (batch) dimension, got "
                    f"{self.target_shape} and {self.source_shape} (as tape.batch_jacobian)."
                )
            self.row_shape = self.target_shape[1:]
        else:
            self.row_shape = self.target_shape
        self.rows = int(np.prod(self.row_shape, dtype=np.int64))
        self._flows: dict[int, GradientFlow] = {}
        self._rows: dict[int, np.ndarray | None] = {}

    # -- rows ---------------------------------------------------------------------------
    def seed(self, i: int) -> tf.Tensor:
        """The output_gradients whose backward pass is row i: 1 at target element i (at
        element i of every example for a batch Jacobian), 0 elsewhere."""
        i = self._check_row(i)
        one = tf.reshape(tf.one_hot(i, self.rows, dtype=self.dtype), self.row_shape)
        if self.batch:
            return tf.broadcast_to(one, self.target_shape)
        return one

    def flow(self, i: int) -> GradientFlow:
        """The backward pass of row i (a GradientFlow seeded with :meth:`seed`): its
        ``grad(source)`` is row i of the Jacobian."""
        i = self._check_row(i)
        if i not in self._flows:
            self._flows[i] = GradientFlow(self.graph, self.target, output_gradients=self.seed(i))
        return self._flows[i]

    def row(self, i: int) -> np.ndarray | None:
        """Row i: d target[i] / d source in the source's shape ([B] + source row for a batch
        Jacobian), from TF's backprop over the recording; None where TF gives None."""
        i = self._check_row(i)
        if i not in self._rows:
            if i in self._flows:
                self._rows[i] = self._flows[i].grad(self.source)
            else:
                grads, _ = self.graph.capture.replay([self._target_key], [self._source_key], [self.seed(i)])
                self._rows[i] = _to_numpy(grads[0])
        return self._rows[i]

    @property
    def matrix(self) -> np.ndarray | None:
        """The whole Jacobian, in tape.jacobian's (or batch_jacobian's) shape."""
        if "_matrix" not in self.__dict__:
            got = [self.row(i) for i in range(self.rows)]
            rows = [r for r in got if r is not None]
            if len(rows) < len(got):
                self._matrix = None
            elif self.batch:
                b = self.target_shape[0]
                stacked = np.stack([r.reshape(b, -1) for r in rows], axis=1)  # [B, rows, source row]
                self._matrix = stacked.reshape(self.target_shape + self.source_shape[1:])
            else:
                self._matrix = np.stack([r.reshape(-1) for r in rows]).reshape(self.target_shape + self.source_shape)
        return self._matrix

    def matrix2d(self, example: int = 0) -> np.ndarray | None:
        """The Jacobian as rows x columns (target elements x source elements); for a batch
        Jacobian, that of one example."""
        m = self.matrix
        if m is None:
            return None
        if self.batch:
            return m[example].reshape(self.rows, -1)
        return m.reshape(self.rows, -1)

    # -- names --------------------------------------------------------------------------
    @property
    def target_name(self) -> str:
        return _name(self.graph, self.graph.node_of(self.target), "y")

    @property
    def source_name(self) -> str:
        return _name(self.graph, self._source_node, "x")

    def row_labels(self) -> list[str]:
        """``y[0]``, ``y[1, 2]``, ...: one per row (target element; per example in a batch)."""
        return element_labels(self.target_name, self.row_shape, batch=self.batch)

    def column_labels(self) -> list[str]:
        shape = self.source_shape[1:] if self.batch else self.source_shape
        return element_labels(self.source_name, shape, batch=self.batch)

    def _check_row(self, i: int) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"A Jacobian row is an int index, got {type(i).__name__}.")
        if not -self.rows <= i < self.rows:
            raise IndexError(f"Row {i} is out of range: the Jacobian has rows 0 to {self.rows - 1}.")
        return int(i) % self.rows

    def __repr__(self) -> str:
        kind = "batch_jacobian" if self.batch else "jacobian"
        shape = self.target_shape + (self.source_shape[1:] if self.batch else self.source_shape)
        return f"Jacobian({kind} d {self.target_name} / d {self.source_name}, shape={shape}, rows={self.rows})"


def element_labels(name: str, shape: tuple, *, batch: bool = False) -> list[str]:
    """The names of a tensor's elements in row-major order: ``x[0]``, ``x[1, 2]``; a batch
    Jacobian's name them per example: ``x[b, 3]``; a scalar is its name."""
    if not shape:
        return [f"{name}[b]" if batch else name]
    out = []
    for idx in np.ndindex(*shape):
        inner = ", ".join(str(k) for k in idx)
        out.append(f"{name}[b, {inner}]" if batch else f"{name}[{inner}]")
    return out


def _name(graph: TapeGraph, node: Any, fallback: str) -> str:
    if node is None:
        return fallback
    name = graph.display_name(node)
    if isinstance(name, Phrase):
        return fallback
    return str(name)


def _shape_of(obj: Any) -> tuple:
    shape = getattr(obj, "shape", None)
    if shape is None:
        return ()
    return tuple(shape)
