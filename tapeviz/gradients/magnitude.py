"""How big a gradient is next to the weights it updates: ``||g|| / ||w||``, per variable or
per layer, and one log scale that maps it to [0, 1] for a picture and its colour bar.

Why relative: an SGD step changes a weight by ``lr * g``, so ``||g|| / ||w||`` (times the
learning rate) is the fraction by which one step moves the weights. A layer whose ratio
sits several orders of magnitude below the others barely learns (vanishing); one far above
them jumps around (exploding). Absolute norms hide this, because weights of different
layers have very different sizes.

Every norm here is computed by TensorFlow (``tf.norm`` on the gradient TF computed and on the
weight value the forward pass read); grouping into layers combines the per-variable norms as
``sqrt(sum ||.||^2)``, which is the norm of the layer's parameters taken as one vector.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import tensorflow as tf

if TYPE_CHECKING:
    from matplotlib.colors import LogNorm

#: Default bounds of the log scale: 1e-8 (a gradient a hundred-millionth of its weights:
#: that layer does not learn) to 1e1 (ten times its weights: one SGD step with lr=0.1
#: replaces them). Both ends are decades, so the colour bar's ticks are powers of ten.
DEFAULT_LO = 1e-8
DEFAULT_HI = 1e1

#: Colours for values that are not a ratio (used by MagnitudeScale.color).
NAN_COLOR = "#d62728"  # NaN / Inf gradient: red, as in the pictures
MISSING_COLOR = "#bdbdbd"  # no gradient, or zero weights: grey

STATUSES = ("ok", "no_gradient", "zero_weights", "nonfinite")


def layer_of(name: str) -> str:
    """The layer a variable belongs to: its Keras path without the last part
    (``"mlp/dense/kernel"`` -> ``"mlp/dense"``); a name without ``/`` is its own layer."""
    return name.rsplit("/", 1)[0] if "/" in name else name


@dataclass(frozen=True)
class Magnitude:
    """One variable's (or layer's) gradient next to its weights, at one step.

    ``relative`` is ``grad_norm / weight_norm``; it is None when there is no gradient
    (``status="no_gradient"``) or the weights are all zero (``"zero_weights"``, e.g. a
    bias at initialisation), and NaN/Inf when the gradient is (``"nonfinite"``).
    ``node`` is the picture's node id when the magnitude comes from a GradientFlow.
    """

    name: str
    layer: str
    grad_norm: float | None
    weight_norm: float
    relative: float | None
    status: str
    node: Any = None


def _relative(grad_norm: float | None, weight_norm: float) -> tuple[float | None, str]:
    if grad_norm is None:
        return None, "no_gradient"
    if not math.isfinite(grad_norm):
        return grad_norm, "nonfinite"
    if not math.isfinite(weight_norm):
        return float("nan"), "nonfinite"
    if weight_norm == 0.0:
        return None, "zero_weights"
    return grad_norm / weight_norm, "ok"


def magnitude(
    name: str, grad_norm: float | None, weight_norm: float, *, layer: str | None = None, node: Any = None
) -> Magnitude:
    """A Magnitude from two norms (``grad_norm=None``: the variable got no gradient)."""
    rel, status = _relative(None if grad_norm is None else float(grad_norm), float(weight_norm))
    return Magnitude(
        name,
        layer if layer is not None else layer_of(name),
        None if grad_norm is None else float(grad_norm),
        float(weight_norm),
        rel,
        status,
        node,
    )


def flow_magnitudes(flow) -> list[Magnitude]:
    """One Magnitude per variable of a GradientFlow's picture, in graph order.

    The weight norm is of the value the forward pass read (the weights the gradient was
    computed at), the gradient norm of what TF computed for it (an IndexedSlices counts
    its values, as TF's clip functions do). ``name`` is the picture's name for the
    variable, ``layer`` the layer of its Keras path (else of its name), ``node`` its node id.
    """
    g = flow.graph
    out = []
    for node, d in g.nx.nodes(data=True):
        if d["kind"] != "variable" or not d["reads"]:
            continue
        read_id = g.capture.ops[d["reads"][0]].outputs[0]
        if not g.tensors[read_id].trainable:
            continue  # an integer variable (a seed, a step counter): no gradient to measure
        read = g.capture.tensor(read_id)
        grad = flow.computed_tensor(node)
        grad_norm = None if grad is None else float(tf.norm(_values(grad)))
        weight_norm = float(tf.norm(read))
        out.append(magnitude(d["name"], grad_norm, weight_norm, layer=layer_of(d.get("path") or d["name"]), node=node))
    return out


def _values(g):
    return g.values if isinstance(g, tf.IndexedSlices) else g


def group_by_layer(
    items: Iterable[Magnitude], layer: Callable[[Magnitude], str] | Mapping[str, str] | None = None
) -> list[Magnitude]:
    """Per-layer Magnitudes: the layer's gradient and weight norms are the norms of all its
    variables taken together (``sqrt(sum of squares)``). A layer with a NaN/Inf gradient
    stays non-finite; variables without a gradient add nothing (a layer none of whose
    variables got one is ``no_gradient``).

    ``layer``: how to group, by default each Magnitude's ``layer``; a mapping
    ``{variable name: layer}`` or a function of the Magnitude overrides it, e.g. a
    picture's own grouping: ``layer=lambda m: groups[m.node]`` with ``groups`` from
    ``tapeviz.picture.opening.layer_groups(graph.nx)`` (None keeps the Magnitude's layer).
    """
    if layer is None:
        key = lambda m: m.layer  # noqa: E731
    elif isinstance(layer, Mapping):
        key = lambda m: layer.get(m.name) or m.layer  # noqa: E731
    else:
        key = lambda m: layer(m) or m.layer  # noqa: E731  (None: keep the variable's own layer)
    sums: dict[str, list] = {}
    for m in items:
        s = sums.setdefault(key(m), [0.0, 0.0, False])
        s[1] += m.weight_norm**2
        if m.grad_norm is not None:
            s[0] += m.grad_norm**2
            s[2] = True
    return [
        magnitude(name, math.sqrt(gs) if has else None, math.sqrt(ws), layer=name)
        for name, (gs, ws, has) in sums.items()
    ]


def relative_magnitudes(
    source: Any,
    *,
    by: str = "variable",
    layer: Callable[[Magnitude], str] | Mapping[str, str] | None = None,
) -> dict[str, float | None]:
    """``{name: ||g|| / ||w||}`` per variable (``by="variable"``) or per layer (``by="layer"``).

    ``source``: a GradientFlow (a picture: its variables, at the step it recorded), a
    ``tv.History`` (its latest step; ``hist.relative_magnitudes(step=...)`` for another),
    a list of Magnitude, or ``{name: (grad_norm, weight_norm)}`` with ``grad_norm=None``
    for a variable without a gradient. Values are None where there is no ratio (no
    gradient, zero weights) and NaN/Inf where the gradient is. ``layer`` regroups layers,
    see :func:`group_by_layer`.
    """
    if by not in ("variable", "layer"):
        raise ValueError(f"by must be 'variable' or 'layer', got {by!r}.")
    items = magnitudes_of(source)
    if by == "layer":
        items = group_by_layer(items, layer)
    return {m.name: m.relative for m in items}


def magnitudes_of(source) -> list[Magnitude]:
    """The per-variable Magnitudes of a GradientFlow, History, list or ``{name: (g, w)}``."""
    from .flow import GradientFlow

    if isinstance(source, GradientFlow):
        return flow_magnitudes(source)
    if hasattr(source, "magnitudes") and callable(source.magnitudes):  # a History
        return source.magnitudes()
    if isinstance(source, Mapping):
        out = []
        for name, pair in source.items():
            try:
                grad_norm, weight_norm = pair
            except (TypeError, ValueError):
                raise TypeError(
                    f"{name!r}: expected a (grad_norm, weight_norm) pair, got {pair!r}. "
                    "Pass {name: (grad_norm, weight_norm)}, a GradientFlow or a tv.History."
                ) from None
            out.append(magnitude(str(name), grad_norm, weight_norm))
        return out
    if isinstance(source, (list, tuple)) and all(isinstance(m, Magnitude) for m in source):
        return list(source)
    raise TypeError(
        f"relative_magnitudes needs a GradientFlow (tv.flow(tape, loss)), a tv.History, a list of Magnitude "
        f"or {{name: (grad_norm, weight_norm)}}, got {type(source).__name__}."
    )


@dataclass(frozen=True)
class MagnitudeScale:
    """A log scale for ``||g|| / ||w||`` shared by a picture and its colour bar.

    ``scale(v)`` maps ``lo -> 0.0`` and ``hi -> 1.0`` linearly in ``log10(v)``; values
    outside are clipped to the ends (0 included: it maps to 0.0), NaN / Inf give NaN
    (draw them red, :data:`NAN_COLOR`), None (no ratio) gives None (grey). ``lo`` and
    ``hi`` are positive, ``lo < hi``; :meth:`fit` rounds data out to whole decades.
    """

    lo: float = DEFAULT_LO
    hi: float = DEFAULT_HI
    cmap: str = "viridis"

    def __post_init__(self):
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and 0 < self.lo < self.hi):
            raise ValueError(f"MagnitudeScale needs 0 < lo < hi (finite), got lo={self.lo}, hi={self.hi}.")

    @classmethod
    def fit(cls, values: Iterable[float | None], *, cmap: str = "viridis") -> MagnitudeScale:
        """The smallest whole-decade scale holding every positive finite value (at least
        one decade wide); the default scale when there are none."""
        arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
        arr = arr[np.isfinite(arr) & (arr > 0)]
        if not arr.size:
            return cls(cmap=cmap)
        lo = math.floor(math.log10(arr.min()))
        hi = max(math.ceil(math.log10(arr.max())), lo + 1)
        return cls(10.0**lo, 10.0**hi, cmap)

    @overload
    def __call__(self, value: float) -> float: ...
    @overload
    def __call__(self, value: None) -> None: ...

    def __call__(self, value: float | None) -> float | None:
        if value is None:
            return None
        v = float(value)
        if not math.isfinite(v):
            return float("nan")
        if v <= self.lo:
            return 0.0
        if v >= self.hi:
            return 1.0
        return (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))

    def ticks(self) -> list[tuple[float, str]]:
        """(position in [0, 1], label) for each power of ten between lo and hi."""
        first, last = math.ceil(math.log10(self.lo) - 1e-9), math.floor(math.log10(self.hi) + 1e-9)
        return [(self(10.0**k), f"1e{k}") for k in range(first, last + 1)]

    def color(self, value: float | None) -> str:
        """The hex colour of a value: the colormap at ``scale(value)``, red for NaN/Inf,
        grey for None."""
        from matplotlib import colormaps
        from matplotlib.colors import to_hex

        pos = self(value)
        if pos is None:
            return MISSING_COLOR
        if math.isnan(pos):
            return NAN_COLOR
        return to_hex(colormaps[self.cmap](pos))

    def mpl_norm(self) -> LogNorm:
        """A matplotlib ``LogNorm`` with the same bounds, for ``fig.colorbar``."""
        from matplotlib.colors import LogNorm

        return LogNorm(vmin=self.lo, vmax=self.hi, clip=True)
