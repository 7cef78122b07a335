"""tv.History: watch gradients over a whole training run, in bounded memory.

``hist.add(step, loss=, grads=, variables=, clipped=)`` once per training step records
the gradient norm of every variable (raw and clipped), its weight norm and the loss;
flags vanishing / exploding / NaN gradients as the steps arrive; keeps whole pictures
(graph + backward pass) of some steps recorded with a ``tv.GradientTape``. How a step is
taken in, at what cost and in how much memory: :mod:`tapeviz.training.intake`; this
module reads the run back (series, flags, clipping counts, pictures, plots).

Names are Keras paths (``"sequential/dense/kernel"``) for Keras variables and the TF name
without ``":0"`` for a plain ``tf.Variable``; two different variables with the same name
are told apart by a suffix (``"Variable"``, ``"Variable_2"``). A variable's layer is its
path without the last part.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..gradients.magnitude import Magnitude, MagnitudeScale, magnitude
from .intake import FLAGS, NO_GRAD, QUANTITIES, ClipStats, Intake
from .step_arguments import as_step
from .step_warnings import KINDS, Flag, Thresholds, kinds_of

if TYPE_CHECKING:  # for annotations only (keras_callback imports Keras: only when a callback is made)
    from matplotlib.figure import Figure

    from ..gradients.flow import GradientFlow
    from ..record.graph import TapeGraph
    from .keras_callback import HistoryCallback
    from .layer_plot import NormTable

__all__ = ["History", "Flag", "Thresholds", "ClipStats"]


class History(Intake):
    """Gradient norms, weight norms, losses, flags and sampled pictures of a training run.

    ``thresholds``: when flags fire (:class:`~tapeviz.training.step_warnings.Thresholds`); ``capacity``:
    points kept per series (then steps merge, see :mod:`tapeviz.training.bounded_series`);
    ``max_pictures`` / ``picture_budget_bytes``: how many step pictures are kept and their
    estimated bytes (see :mod:`tapeviz.training.step_pictures`); ``flush_every``: steps whose norms
    stay on the device before being fetched together.

    Reading it back (each query first fetches what is pending):

    - series, one value per stored point: :meth:`steps`, :meth:`spans`, :meth:`losses`,
      :meth:`norms` (a variable, a layer or all together; grad / clipped / weight /
      relative / clip_scale; last / min / max);
    - :meth:`flags` (filter by step, name, kind), :meth:`clipping` (exact counts);
    - for pictures and a step scrubber: :meth:`recorded_steps` and :meth:`picture` (the
      steps that kept a TapeGraph + GradientFlow), :meth:`magnitudes` /
      :meth:`relative_magnitudes` at any stored step (``||g|| / ||w||`` per variable or
      layer) and :meth:`magnitude_scale` (one log scale, value -> [0, 1], for every step);
    - :meth:`plot`, :meth:`to_tensorboard`, :meth:`callback` (``model.fit``).
    """

    def __len__(self) -> int:
        """Number of recorded steps (every ``add``; the series may hold fewer points)."""
        return self._count

    def steps(self) -> np.ndarray:
        """The step of each stored point: every recorded step until ``capacity`` is
        reached, then the last step of each bucket (see :meth:`spans`)."""
        self.flush()
        return self._buckets.steps()

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(first step, last step) each stored point covers (equal while not merged)."""
        self.flush()
        return self._buckets.spans()

    def variables(self) -> list[str]:
        """Names of the variables seen, in the order they were first passed."""
        return list(self._vars.names)

    def layers(self) -> list[str]:
        """Names of the layers (variable paths without the last part), in order."""
        return list(self._layers.names)

    def losses(self, stat: str = "last") -> np.ndarray:
        """The loss at each stored point (NaN where none was passed); ``stat``: "last"
        (the value at the point's step), "min" or "max" over the steps it covers."""
        self.flush()
        return self._buckets.column(self._loss_col, stat).astype(np.float64)

    def norms(
        self, name: str | None = None, kind: str = "grad", stat: str = "last", *, level: str | None = None
    ) -> np.ndarray:
        """One value per stored point (see :meth:`steps`) for a variable, a layer, or
        (``name=None``) all variables together.

        ``kind``: "grad" (gradient norm), "clipped" (norm of the clipped gradient),
        "weight" (weight norm), "relative" (grad / weight) or "clip_scale" (clipped / raw).
        NaN where the step did not measure it (no gradient, no clipped list passed).
        ``stat``: "last", "min" or "max" over the steps a point covers. ``level``:
        "variable" or "layer" when a name is both.
        """
        if kind not in QUANTITIES:
            raise ValueError(f"kind must be one of {', '.join(QUANTITIES)}, got {kind!r}.")
        self.flush()
        ent, i = self._entity(name, level)
        return self._buckets.column(int(ent.cols[i, QUANTITIES.index(kind)]), stat).astype(np.float64)

    def _entity(self, name, level):
        if level not in (None, "variable", "layer"):
            raise ValueError(f"level must be 'variable' or 'layer', got {level!r}.")
        if name is None:
            return self._global, 0
        if level != "layer" and name in self._vars.index:
            return self._vars, self._vars.index[name]
        if level != "variable" and name in self._layers.index:
            return self._layers, self._layers.index[name]
        known = self._vars.names + [n for n in self._layers.names if n not in self._vars.index]
        hint = ", ".join(known[:8]) + (" ..." if len(known) > 8 else "") if known else "none yet: call hist.add first"
        raise KeyError(f"No variable or layer named {name!r} in this History; known names: {hint}.")

    def flags(self, step: int | None = None, name: str | None = None, kind: str | None = None) -> list[Flag]:
        """Flags raised so far, in step order; keep those at ``step``, about ``name``
        (a variable, a layer or "loss") and of ``kind`` when given."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
        self.flush()
        return [
            f
            for f in self._detector.flags
            if (step is None or f.step == step)
            and (name is None or f.name == name)
            and (kind is None or f.kind == kind)
        ]

    @property
    def dropped_flags(self) -> int:
        """Flags not kept because ``thresholds.max_flags`` were already kept."""
        self.flush()
        return self._detector.dropped

    def clipping(self, by: str = "variable") -> dict[str, ClipStats]:
        """How often clipping engaged and by how much: ``{name: ClipStats}`` per variable
        (``by="variable"``), per layer (``"layer"``) or for the global norm (``"global"``)."""
        ent = {"variable": self._vars, "layer": self._layers, "global": self._global}.get(by)
        if ent is None:
            raise ValueError(f"by must be 'variable', 'layer' or 'global', got {by!r}.")
        self.flush()
        return {n: ent.clip_stats(i) for i, n in enumerate(ent.names)}

    def magnitudes(self, step: int | None = None, by: str = "variable") -> list[Magnitude]:
        """``||g||`` and ``||w||`` of each variable (or layer) at ``step`` (default: the
        latest stored point; after merging, the last step of the point holding ``step``).
        Variables not part of that step are left out."""
        if by not in ("variable", "layer"):
            raise ValueError(f"by must be 'variable' or 'layer', got {by!r}.")
        self.flush()
        b = self._bucket(step)
        if b is None:
            return []
        last = self._buckets.row(b, "last")
        grad, weight = QUANTITIES.index("grad"), QUANTITIES.index("weight")
        out = []
        if by == "layer":  # the layer's own columns: its norms computed in float64, rounded once
            for i, name in enumerate(self._layers.names):
                cols = self._layers.cols[i]
                w, g = last[cols[weight]], last[cols[grad]]
                if np.isnan(w):
                    continue  # not part of this step
                missing = np.isnan(g) and "nan" not in kinds_of(float(last[cols[FLAGS]]))  # NaN: no gradient
                out.append(magnitude(name, None if missing else float(g), float(w), layer=name))
            return out
        for i, name in enumerate(self._vars.names):
            cols = self._vars.cols[i]
            w = last[cols[weight]]
            if np.isnan(last[cols[NO_GRAD]]):
                continue  # not part of this step
            g = None if last[cols[NO_GRAD]] == 1.0 else float(last[cols[grad]])
            out.append(magnitude(name, g, float(w), layer=self._layers.names[self._var_layer[i]]))
        return out

    def flagged(self, step: int | None = None, by: str = "layer") -> dict[str, tuple[str, ...]]:
        """``{name: kinds}`` of the layers (or variables) where a flag's condition holds at
        ``step`` (default: the latest stored point; after merging, the last step of the
        point holding ``step``). A flag is raised once, at the first step of an episode;
        this says where the condition still holds at any later step (a layer's kinds
        include its variables' nan / no_gradient)."""
        if by not in ("variable", "layer"):
            raise ValueError(f"by must be 'variable' or 'layer', got {by!r}.")
        self.flush()
        b = self._bucket(step)
        if b is None:
            return {}
        last = self._buckets.row(b, "last")
        ent = self._vars if by == "variable" else self._layers
        out = {}
        for i, name in enumerate(ent.names):
            kinds = kinds_of(float(last[ent.cols[i, FLAGS]]))
            if kinds:
                out[name] = kinds
        return out

    def relative_magnitudes(self, step: int | None = None, by: str = "variable") -> dict[str, float | None]:
        """``{name: ||g|| / ||w||}`` at ``step`` (see :meth:`magnitudes`)."""
        return {m.name: m.relative for m in self.magnitudes(step, by)}

    def magnitude_scale(self, cmap: str = "viridis") -> MagnitudeScale:
        """A log scale (whole decades) holding every ``||g|| / ||w||`` recorded, per
        variable and per layer: one colour bar for every step of the run."""
        self.flush()
        vals = []
        for ent in (self._vars, self._layers):
            for i in range(len(ent.names)):
                col = int(ent.cols[i, QUANTITIES.index("relative")])
                vals.extend(self._buckets.column(col, "min").tolist())
                vals.extend(self._buckets.column(col, "max").tolist())
        return MagnitudeScale.fit(vals, cmap=cmap)

    def _bucket(self, step):
        n = self._buckets.n
        if n == 0:
            return None
        if step is None:
            return n - 1
        b = self._buckets.bucket_of(as_step(step))
        if b is None:
            raise KeyError(
                f"Step {step} was not recorded; recorded steps run from {self._buckets.first_step[0]} to "
                f"{self._buckets.last_step[n - 1]} (hist.steps() lists the stored points)."
            )
        return b

    # ------------------------------------------------------------------ pictures
    def recorded_steps(self) -> list[int]:
        """Steps whose picture is kept (recorded with ``tape=``), ascending."""
        self.flush()
        return self._pictures.steps()

    def picture(self, step: int) -> tuple[TapeGraph, GradientFlow] | None:
        """``(TapeGraph, GradientFlow)`` of a step in :meth:`recorded_steps`, else None.

        The flow (the backward pass of the loss, as ``tv.flow(tape, loss)``) is computed on
        first request from what the tape recorded, then kept."""
        self.flush()
        pic = self._pictures.get(as_step(step))
        if pic is None:
            return None
        return pic.graph, pic.flow()

    @property
    def dropped_pictures(self) -> int:
        """Pictures recorded with ``tape=`` but not kept (sampled out, or over budget)."""
        self.flush()
        return self._pictures.dropped

    @property
    def nbytes(self) -> int:
        """Bytes held: the series arrays plus the estimate of the kept pictures."""
        self.flush()
        return self._buckets.nbytes + self._pictures.nbytes

    # ------------------------------------------------------------------ outputs
    def plot(
        self, by: str = "layer", names: Iterable[str] | None = None, kind: str = "grad", lang: str = "en"
    ) -> Figure:
        """A matplotlib Figure: loss; gradient norms over steps (log scale; raw solid,
        clipped dashed; min-max band where steps merged) with flags marked; and, when
        clipped gradients were recorded, the clip scale with how often it engaged.

        ``by``: "layer" or "variable"; ``names``: only these; ``kind``: "grad" or
        "relative" (``||g|| / ||w||``) in the norms panel; ``lang``: "en" or "zh". See
        :mod:`tapeviz.training.plot`."""
        from .plot import plot_history

        return plot_history(self, by=by, names=names, kind=kind, lang=lang)

    def plot_layers(
        self, step: int | None = None, *, by: str = "layer", relative: bool = False, lang: str = "en"
    ) -> Figure:
        """A matplotlib Figure: the gradient norm of each layer at ``step`` (None: the
        last), one horizontal bar per layer on a log axis, first layer at the top, its name
        on the axis; layers where a flag's condition holds are coloured and named.
        ``by="variable"``: a layer's variables (kernel, bias) side by side;
        ``relative=True``: a second panel with ``‖g‖ / ‖w‖``; ``lang``: "en" or "zh".
        See :mod:`tapeviz.training.layer_plot`."""
        from .layer_plot import plot_layers

        return plot_layers(self, step, by=by, relative=relative, lang=lang)

    def compare(self, a: int, b: int, *, by: str = "layer", lang: str = "en") -> tuple[Figure, NormTable]:
        """What changed between steps ``a`` and ``b``: a Figure (both steps' norms by layer,
        and the ratio b / a) and a :class:`~tapeviz.training.layer_plot.NormTable` of per-layer
        ratios of ``‖g‖``, ``‖g‖ / ‖w‖`` and ``‖w‖``."""
        from .layer_plot import compare

        return compare(self, a, b, by=by, lang=lang)

    def callback(self, x: Any, y: Any = None, *, every: int = 10, sample_weight: Any = None) -> HistoryCallback:
        """A Keras callback for ``model.fit``: every ``every`` batches it computes the
        gradients of the compiled loss on the probe batch ``(x, y)`` at the current
        weights, eagerly with a ``tv.GradientTape``, and records them (with the picture),
        clipped as the model's optimizer would clip them. See :mod:`tapeviz.training.keras_callback`."""
        from .keras_callback import HistoryCallback

        return HistoryCallback(self, x, y, every=every, sample_weight=sample_weight)

    def to_tensorboard(self, logdir: str | os.PathLike[str]) -> str:
        """Write norms, clip scales, losses and flags as TensorBoard scalars / text in
        ``logdir``; a second call adds only what is new. Returns the logdir."""
        from .tensorboard import write_history

        return write_history(self, logdir)

    def __repr__(self) -> str:
        self.flush()
        return (
            f"History(steps={self._count}, points={self._buckets.n}, variables={len(self._vars.names)}, "
            f"flags={len(self._detector.flags)}, pictures={len(self._pictures)})"
        )
