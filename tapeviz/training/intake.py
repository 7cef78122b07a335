"""The recording side of tv.History: ``hist.add`` packs a step, the flush judges the steps.

``hist.add(step, loss=, grads=, variables=, clipped=)`` once per training step records
the gradient norm of every variable (raw and clipped), its weight norm and the loss, and
keeps the step's picture when it came with a ``tv.GradientTape``; :class:`Intake` holds
all of it until :mod:`tapeviz.training.history` reads it back.

Cost: per step, the sum of squares of every tensor (gradient, weight, clipped gradient),
the cheapest way measured on its device (see :mod:`tapeviz.training.squared_norms`): on CPU a
float32 BLAS dot on each tensor's buffer in place (no eager op but one batched read of the
variables; norms within 1e-6 of ``tf.norm`` in float64); on a GPU one tf.function a step
leaves a vector on the device. Every ``flush_every`` steps (and before any query) the
device vectors are fetched together and all steps are judged together with array
operations, so a step pays no device-to-host copy and no per-step Python analysis.

Memory: norms go into :class:`~tapeviz.training.bounded_series.Buckets` (``capacity`` points; past that,
neighbouring steps merge, keeping min, max and last, so spikes stay visible); flags are
decided from the exact per-step values before merging; pictures are sampled to a byte
budget (see :mod:`tapeviz.training.step_pictures`).
"""

from __future__ import annotations

import functools
import itertools
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import tensorflow as tf

from ..gradients.magnitude import layer_of
from ..record.bounded_cache import BoundedCache
from ..record.variable_reads import EagerTensor, VariableReader, host_shape, host_views, is_float_scalar
from .bounded_series import Buckets
from .squared_norms import device_sums, on_cpu, view_sums
from .step_arguments import (
    as_list,
    as_step,
    grad_shape,
    inner_variable,
    is_variable,
    loss_number,
    loss_tensor,
    reduce_per_replica,
    require_scalar,
    sum_replicas,
    variable_name,
    weak_or_strong_ref,
)
from .step_pictures import PictureStore
from .step_warnings import BITS, FlagDetector, Thresholds

__all__ = ["Intake", "ClipStats", "QUANTITIES", "NO_GRAD", "FLAGS"]

_is_none = functools.partial(operator.is_, None)
_SEQUENCES = (list, tuple)

QUANTITIES = ("grad", "clipped", "weight", "relative", "clip_scale")
# stored per variable / layer: the quantities above, 1.0 where the gradient was None, and
# the flag conditions that hold at the step (step_warnings.BITS; see History.flagged)
_COLUMNS = QUANTITIES + ("no_grad", "flags")
NO_GRAD = len(QUANTITIES)
FLAGS = NO_GRAD + 1
_ENGAGED = 1 - 1e-5  # clipped/raw below this: clipping changed the gradient (float32 round-off above)
_MAX_LAYOUTS = 16


@dataclass(frozen=True)
class ClipStats:
    """How clipping acted on one variable, layer or the global norm, over every recorded
    step that passed ``clipped=`` (exact counts, never downsampled).

    ``engaged``: steps where the clipped norm was below the raw norm; ``mean_scale`` and
    ``min_scale``: clipped / raw norm over those steps (1.0 when it never engaged).
    """

    name: str
    steps: int
    engaged: int
    mean_scale: float
    min_scale: float

    @property
    def fraction(self) -> float:
        """Share of the steps where clipping engaged."""
        return self.engaged / self.steps if self.steps else 0.0


class _Entities:
    """Names of variables or layers, each with its block of bucket columns and exact
    clipping counters."""

    def __init__(self):
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.cols = np.zeros((0, len(_COLUMNS)), np.int64)
        self.clip_steps = np.zeros(0, np.int64)
        self.clip_engaged = np.zeros(0, np.int64)
        self.clip_sum = np.zeros(0)
        self.clip_min = np.zeros(0)

    def add(self, name: str, first_col: int) -> int:
        i = len(self.names)
        self.names.append(name)
        self.index[name] = i
        self.cols = np.vstack([self.cols, first_col + np.arange(len(_COLUMNS))])
        self.clip_steps = np.append(self.clip_steps, 0)
        self.clip_engaged = np.append(self.clip_engaged, 0)
        self.clip_sum = np.append(self.clip_sum, 0.0)
        self.clip_min = np.append(self.clip_min, 1.0)
        return i

    def count_clipping(self, raw: np.ndarray, clipped: np.ndarray, present: np.ndarray) -> None:
        """raw, clipped: (steps, n) norms; present: where a clipped gradient was given."""
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(present & (raw > 0), clipped / raw, 1.0)
        engaged = present & (scale < _ENGAGED)
        self.clip_steps += present.sum(axis=0)
        self.clip_engaged += engaged.sum(axis=0)
        self.clip_sum += np.where(engaged, scale, 0.0).sum(axis=0)
        if engaged.any():
            self.clip_min = np.minimum(self.clip_min, np.where(engaged, scale, 1.0).min(axis=0))

    def clip_stats(self, i: int) -> ClipStats:
        e = int(self.clip_engaged[i])
        return ClipStats(
            self.names[i],
            int(self.clip_steps[i]),
            e,
            float(self.clip_sum[i] / e) if e else 1.0,
            float(self.clip_min[i]),
        )


class _Layout:
    """What one shape of ``hist.add`` call packs: which variables, which gradients are
    None, whether clipped gradients and a loss tensor come with it."""

    def __init__(
        self,
        variables: Sequence,
        grads: Sequence,
        var_index: np.ndarray,
        present: np.ndarray,
        has_clipped: bool,
        clipped_present: np.ndarray,
        loss_packed: bool,
        last_layer: int,
    ):
        self.variables = variables  # strong refs: the ids in the cache key stay theirs
        self.weights = [inner_variable(v) for v in variables]
        self.read_weights = VariableReader(self.weights)  # one op a step, its inputs worked out once
        self.var_index = var_index  # position in hist's variable list, per variable passed
        self.present = present  # gradient is not None
        self.some_none = not present.all()
        self.has_clipped = has_clipped
        self.clipped_present = clipped_present  # clipped gradient given and not None
        self.loss_packed = loss_packed
        self.last_layer = last_layer
        self.key: tuple = ()  # Intake._layout's cache key: variable ids, None gradients, None clipped
        # NumPy reads CPU tensors in place; elsewhere one tf.function a step (squared_norms.py)
        self.on_host = on_cpu(list(self.weights) + [g for g in grads if g is not None])
        self.n_grad = int(present.sum())  # gradients not None
        self.width = int(loss_packed) + self.n_grad + len(variables) + int(clipped_present.sum())


class Intake:
    """What ``hist.add`` took in: the bounded series, the flags' detector, the kept
    pictures and the steps waiting for their flush (:class:`~tapeviz.training.history.History`
    reads them back). The arguments: as for History."""

    def __init__(
        self,
        *,
        thresholds: Thresholds | None = None,
        capacity: int = 1024,
        max_pictures: int = 16,
        picture_budget_bytes: int = 256 << 20,
        flush_every: int = 256,
    ):
        if thresholds is not None and not isinstance(thresholds, Thresholds):
            raise TypeError(f"thresholds must be a tv.training.history.Thresholds, got {type(thresholds).__name__}.")
        if flush_every < 1:
            raise ValueError(f"flush_every must be at least 1, got {flush_every}.")
        self.thresholds = thresholds or Thresholds()
        self.flush_every = int(flush_every)
        self._buckets = Buckets(capacity)
        self._detector = FlagDetector(self.thresholds)
        self._pictures = PictureStore(max_pictures, picture_budget_bytes)
        self._vars = _Entities()
        self._layers = _Entities()
        self._global = _Entities()
        self._var_layer: list[int] = []  # variable index -> layer index
        self._layer_vars: list[list[int]] = []
        self._loss_col = self._new_columns(1)
        self._global.add("global", self._new_columns(len(_COLUMNS)))
        self._registry: dict[int, tuple[Any, str]] = {}  # id(variable) -> (weakref, name)
        self._layouts: BoundedCache[tuple, _Layout] = BoundedCache(_MAX_LAYOUTS)
        self._usual: _Layout | None = None  # the layout of the last call with a loss tensor (see _add_usual)
        self._pending_values: list = []  # per step: floats, loss tensors, device vectors; fetched at the flush
        self._pending: list[tuple] = []  # (step, layout or None, host loss, picture or None)
        self._count = 0
        self._last_step: int | None = None
        self._lock = threading.RLock()
        self._tb_written: dict[str, int] = {}

    # ------------------------------------------------------------------ recording
    def add(
        self,
        step: int,
        *,
        loss: Any = None,
        grads: Sequence | None = None,
        variables: Sequence | None = None,
        clipped: Sequence | None = None,
        tape: Any = None,
    ) -> None:
        """Record one training step.

        ``step``: an int, larger than the previous one. ``loss``: the scalar loss (tensor
        or number). ``grads`` / ``variables``: what ``tape.gradient(loss, variables)``
        returned and the variables (a None gradient is recorded as "no gradient").
        ``clipped``: the gradients after clipping, as given to the optimizer. ``tape``: a
        ``tv.GradientTape`` that recorded this step: its picture may be kept (see
        :meth:`recorded_steps`). Call it before ``apply_gradients`` so the weight norms
        are those the gradients were computed at.

        Inside ``MirroredStrategy.run`` (one call per replica) the replicas' gradients,
        clipped gradients and losses are summed across replicas (the sum of replica
        gradients is what the optimizer applies) and recorded once.
        """
        if tape is None and self._add_usual(step, loss, grads, variables, clipped):
            return
        if not tf.executing_eagerly():
            raise RuntimeError(
                "hist.add runs eagerly, but it was called inside a tf.function. Return the gradients from your "
                "train step and call hist.add after it, or use hist.callback(...) with model.fit."
            )
        grads, variables, clipped = as_list(grads), as_list(variables), as_list(clipped)
        ctx = tf.distribute.get_replica_context()
        if ctx is not None and ctx.num_replicas_in_sync > 1:
            loss, grads, clipped, primary = sum_replicas(ctx, loss, grads, clipped)
            if not primary:
                return
        elif grads and grads[0].__class__ is not EagerTensor and isinstance(grads[0], tf.distribute.DistributedValues):
            loss, grads, clipped = reduce_per_replica(loss, grads, clipped)
        step = as_step(step)
        with self._lock:
            if self._last_step is not None and step <= self._last_step:
                raise ValueError(
                    f"hist.add(step={step}) comes after step {self._last_step}: steps must increase. Pass a step "
                    "counter that grows (e.g. the batch index over all epochs); record a second model or optimizer "
                    "(e.g. a GAN's discriminator) in its own tv.History."
                )
            layout = packed_loss = host_loss = None
            values = self._pending_values
            mark = len(values)
            try:
                picture = self._picture_input(step, tape, loss) if tape is not None else None
                if loss is not None:
                    packed_loss = loss_tensor(loss)
                    if packed_loss is None:
                        host_loss = loss_number(loss)
                if grads is not None:
                    layout = self._layout(grads, variables, clipped, loss_packed=packed_loss is not None)
                    values.append(_measure(packed_loss, grads, clipped, layout))
                elif variables is not None or clipped is not None:
                    raise ValueError("hist.add got variables/clipped without grads: pass grads= as well.")
                elif packed_loss is not None:
                    require_scalar(tuple(packed_loss.shape))
                    host_loss = float(packed_loss)  # a loss-only step: fetch it now
            except BaseException:
                del values[mark:]  # a refused call leaves nothing half-recorded
                raise
            self._pending.append((step, layout, host_loss, picture))
            self._last_step = step
            self._count += 1
            if layout is not None and layout.loss_packed and picture is None:
                self._usual = layout
            if picture is not None or len(self._pending) >= self.flush_every:
                self.flush()

    def _add_usual(self, step, loss, grads, variables, clipped) -> bool:
        """Record the usual call (an int step, a float scalar eager loss, the same variables
        and None gradients as the last call, no tape, CPU tensors) with only the checks it
        needs; False, recording nothing, for any other call, which :meth:`add` then checks
        in full. The same values as :func:`_measure`, in the same order.

        Why one flat function: right after a training step every Python call costs 1-3 µs
        (the step evicted it from the caches), and the weight read and dots alone cost
        70-90 µs there. Measured on the light step, this path takes 120 µs where
        :meth:`add`'s checked path takes 131 µs (bench/RESULTS.md, "the usual call in fewer
        Python calls")."""
        layout = self._usual
        if (
            layout is None
            or step.__class__ is not int
            or grads.__class__ not in _SEQUENCES
            or not (
                variables is layout.variables
                or (
                    variables.__class__ in _SEQUENCES
                    and len(variables) == len(layout.variables)
                    and all(map(operator.is_, variables, layout.variables))
                )
            )
            or tuple(map(_is_none, grads)) != layout.key[1]
            or (None if clipped is None else clipped.__class__ in _SEQUENCES and tuple(map(_is_none, clipped)))
            != layout.key[2]
            or not layout.on_host
            or not is_float_scalar(loss)
            or not tf.executing_eagerly()
            or tf.distribute.has_strategy()  # replicas to sum, or a strategy's scope: add decides
        ):
            return False
        if list(map(type, grads)).count(EagerTensor) != layout.n_grad and any(
            isinstance(g, tf.distribute.DistributedValues) for g in grads
        ):
            return False  # per-replica values: add reduces them
        sums = _host_sums(grads, clipped, layout)
        with self._lock:
            if self._last_step is not None and step <= self._last_step:
                return False  # add raises the error
            self._pending_values.append([loss, *sums])
            self._pending.append((step, layout, None, None))
            self._last_step = step
            self._count += 1
            if len(self._pending) >= self.flush_every:
                self.flush()
        return True

    def _picture_input(self, step, tape, loss):
        from ..record.tape import graph_of

        graph = graph_of(tape)
        if loss is None or graph.key_of(loss) not in graph.tensors:
            raise ValueError(
                "hist.add(tape=...) keeps the picture of the loss: pass loss= the tensor computed inside that "
                "tv.GradientTape's `with` block."
            )
        return graph, loss

    def _layout(self, grads, variables, clipped, *, loss_packed: bool) -> _Layout:
        if variables is None:
            raise ValueError(
                "hist.add got grads without variables: pass variables=model.trainable_variables (the list "
                "you gave tape.gradient), so each gradient is named and compared with its weights."
            )
        if len(grads) != len(variables):
            raise ValueError(
                f"hist.add got {len(grads)} gradients for {len(variables)} variables: pass the list "
                "tape.gradient(loss, variables) returned together with that same variables list."
            )
        if clipped is not None:
            if len(clipped) != len(grads):
                raise ValueError(
                    f"hist.add got {len(clipped)} clipped gradients for {len(grads)} gradients: pass the "
                    "whole list tf.clip_by_global_norm(grads, ...)[0] returned (one per variable)."
                )
        key = (  # map() in C: the key is built at every step
            tuple(map(id, variables)),
            tuple(map(_is_none, grads)),
            None if clipped is None else tuple(map(_is_none, clipped)),
            loss_packed,
        )
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._new_layout(grads, variables, clipped, loss_packed)
            layout.key = key
            self._layouts.put(key, layout)
        return layout

    def _new_layout(self, grads, variables, clipped, loss_packed) -> _Layout:
        for i, v in enumerate(variables):
            if not is_variable(v):
                raise TypeError(
                    f"variables[{i}] is a {type(v).__name__}, not a variable: pass the tf.Variables / "
                    "Keras variables the gradients are for (e.g. model.trainable_variables)."
                )
        for i, (g, v) in enumerate(zip(grads, variables, strict=True)):
            if g is None:
                continue
            if not isinstance(g, (tf.Tensor, tf.IndexedSlices)):
                raise TypeError(f"grads[{i}] is a {type(g).__name__}: pass the tensors tape.gradient returned.")
            gshape = grad_shape(g)
            if tuple(gshape) != tuple(v.shape):
                raise ValueError(
                    f"grads[{i}] has shape {tuple(gshape)} but variables[{i}] ({variable_name(v)}) "
                    f"has shape {tuple(v.shape)}: grads and variables must be in the same order."
                )
            if clipped is not None and clipped[i] is not None and tuple(grad_shape(clipped[i])) != tuple(gshape):
                raise ValueError(
                    f"clipped[{i}] has shape {tuple(clipped[i].shape)}, grads[{i}] {tuple(g.shape)}: pass "
                    "the clipped gradients in the order of grads."
                )
        index = np.array([self._register(v) for v in variables], np.int64)
        present = np.array([g is not None for g in grads], bool)
        cp = (
            np.zeros(len(grads), bool)
            if clipped is None
            else np.array([c is not None and g is not None for c, g in zip(clipped, grads, strict=True)], bool)
        )
        last_layer = self._var_layer[index[-1]] if len(index) else 0
        return _Layout(tuple(variables), grads, index, present, clipped is not None, cp, loss_packed, last_layer)

    def _register(self, v) -> int:
        found = self._registry.get(id(v))
        if found is not None and found[0]() is v:
            return self._vars.index[found[1]]
        name = base = variable_name(v)
        k = 1
        while name in self._vars.index:
            k += 1
            name = f"{base}_{k}"
        self._registry[id(v)] = (weak_or_strong_ref(v), name)
        i = self._vars.add(name, self._new_columns(len(_COLUMNS)))
        layer = layer_of(name)
        if layer not in self._layers.index:
            self._layers.add(layer, self._new_columns(len(_COLUMNS)))
            self._layer_vars.append([])
        li = self._layers.index[layer]
        self._var_layer.append(li)
        self._layer_vars[li].append(i)
        return i

    def _new_columns(self, k: int) -> int:
        first = self._buckets.columns
        self._buckets.add_columns(k)
        return first

    # ------------------------------------------------------------------ flushing
    def flush(self) -> None:
        """Fetch the norms still on the device, judge them (flags) and store them.

        Every query calls it first; call it yourself to see flags sooner."""
        with self._lock:
            if not self._pending:
                return
            pending, self._pending = self._pending, []
            values, self._pending_values = self._pending_values, []
            self._ingest(pending, _fetch(values))

    def _ingest(self, pending, fetched: np.ndarray) -> None:
        b = len(pending)
        nv, nl = len(self._vars.names), len(self._layers.names)
        g2 = np.zeros((b, nv))
        w2 = np.zeros((b, nv))
        c2 = np.zeros((b, nv))
        present = np.zeros((b, nv), bool)  # gradient measured
        missing = np.zeros((b, nv), bool)  # gradient was None
        in_step = np.zeros((b, nv), bool)  # variable passed (weights measured)
        clip_present = np.zeros((b, nv), bool)
        loss = np.full(b, np.nan)
        loss_given = np.zeros(b, bool)
        last_layer = np.zeros(b, np.int64)
        has_grads = np.zeros(b, bool)
        for i, (_, _, host_loss, _) in enumerate(pending):
            if host_loss is not None:
                loss[i], loss_given[i] = host_loss, True
        at = 0
        for start, stop, layout in _runs(pending):  # consecutive steps of one layout: one block
            rows = np.arange(start, stop)[:, None]
            block = fetched[at : at + (stop - start) * layout.width].reshape(stop - start, layout.width)
            at += (stop - start) * layout.width
            k = 0
            if layout.loss_packed:
                loss[start:stop], loss_given[start:stop] = block[:, 0], True
                k = 1
            idx = layout.var_index
            got, clip = idx[layout.present], idx[layout.clipped_present]
            g2[rows, got] = block[:, k : k + len(got)]
            k += len(got)
            w2[rows, idx] = block[:, k : k + len(idx)]
            k += len(idx)
            c2[rows, clip] = block[:, k:]
            present[rows, got] = True
            missing[rows, idx[~layout.present]] = True
            in_step[rows, idx] = True
            clip_present[rows, clip] = True
            last_layer[start:stop] = layout.last_layer
            has_grads[start:stop] = True

        with np.errstate(invalid="ignore", divide="ignore"):
            var_g = np.where(present, np.sqrt(g2), np.nan)
            var_w = np.where(in_step, np.sqrt(w2), np.nan)
            var_c = np.where(clip_present, np.sqrt(c2), np.nan)
            lay_g, lay_w, lay_c = (np.full((b, nl), np.nan) for _ in range(3))
            lay_clip = np.zeros((b, nl), bool)
            for li, members in enumerate(self._layer_vars):
                m = np.asarray(members)
                any_g = present[:, m].any(axis=1)
                lay_g[:, li] = np.where(any_g, np.sqrt(np.where(present[:, m], g2[:, m], 0).sum(axis=1)), np.nan)
                any_w = in_step[:, m].any(axis=1)
                lay_w[:, li] = np.where(any_w, np.sqrt(np.where(in_step[:, m], w2[:, m], 0).sum(axis=1)), np.nan)
                lay_clip[:, li] = clip_present[:, m].any(axis=1)
                lay_c[:, li] = np.where(
                    lay_clip[:, li], np.sqrt(np.where(clip_present[:, m], c2[:, m], 0).sum(axis=1)), np.nan
                )
            glob_g = np.where(has_grads, np.sqrt(np.where(present, g2, 0).sum(axis=1)), np.nan)[:, None]
            glob_w = np.where(has_grads, np.sqrt(np.where(in_step, w2, 0).sum(axis=1)), np.nan)[:, None]
            # (numpy's stubs type any(axis=...) as a bool or an array; of a 2-D array it is the array)
            glob_clip = cast(np.ndarray, clip_present.any(axis=1))[:, None]
            glob_c = np.where(glob_clip[:, 0], np.sqrt(np.where(clip_present, c2, 0).sum(axis=1)), np.nan)[:, None]

        rows = np.full((b, self._buckets.columns), np.nan, np.float32)
        rows[:, self._loss_col] = loss
        _fill(rows, self._vars.cols, var_g, var_w, var_c, np.where(in_step, missing.astype(np.float64), np.nan))
        _fill(rows, self._layers.cols, lay_g, lay_w, lay_c)
        _fill(rows, self._global.cols, glob_g, glob_w, glob_c)
        steps = np.array([p[0] for p in pending], np.int64)

        self._vars.count_clipping(var_g, var_c, clip_present & present)
        self._layers.count_clipping(lay_g, lay_c, lay_clip)
        self._global.count_clipping(glob_g, glob_c, glob_clip)

        with np.errstate(invalid="ignore", divide="ignore"):
            clip_scale = (glob_c / glob_g)[:, 0]
        new_flags = self._detector.observe(
            steps,
            layers=self._layers.names,
            layer_grad=lay_g,
            layer_weight=lay_w,
            last_layer=last_layer,
            variables=self._vars.names,
            var_grad=var_g,
            var_present=present,
            var_missing=missing,
            loss=loss,
            loss_given=loss_given,
            clip_scale=clip_scale,
        )
        self._store_conditions(rows, present, in_step)
        self._buckets.append(steps, rows)
        flagged = {f.step for f in new_flags}
        for step, _, _, picture in pending:
            if picture is not None:
                self._pictures.add(step, picture[0], picture[1], flagged=step in flagged)
        for s in flagged:
            self._pictures.mark_flagged(s)

    def _store_conditions(self, rows: np.ndarray, present: np.ndarray, in_step: np.ndarray) -> None:
        """Write which flag conditions hold at each step (bits of flags.BITS) into rows:
        per variable (nan, no_gradient), per layer (its own vanishing / exploding and its
        variables' bits) and globally (every bit, a NaN / Inf loss as nan)."""
        cond = self._detector.conditions
        var_bits = cond["nan"] * BITS["nan"] + cond["no_gradient"] * BITS["no_gradient"]
        lay_bits = cond["vanishing"] * BITS["vanishing"] + cond["exploding"] * BITS["exploding"]
        for li, members in enumerate(self._layer_vars):
            lay_bits[:, li] |= np.bitwise_or.reduce(var_bits[:, members], axis=1)
        glob = np.bitwise_or.reduce(lay_bits, axis=1) | cond["nan_loss"] * BITS["nan"]
        lay_in = np.zeros_like(lay_bits, bool)
        for li, members in enumerate(self._layer_vars):
            lay_in[:, li] = in_step[:, members].any(axis=1)
        rows[:, self._vars.cols[:, FLAGS]] = np.where(in_step, var_bits, np.nan)
        rows[:, self._layers.cols[:, FLAGS]] = np.where(lay_in, lay_bits, np.nan)
        rows[:, self._global.cols[0, FLAGS]] = glob

    # ------------------------------------------------------------------ queries


# ---------------------------------------------------------------------- helpers
def _fill(rows: np.ndarray, cols: np.ndarray, g, w, c, no_grad=None) -> None:
    """Write grad, clipped, weight, relative and clip scale of n entities into rows (and
    for variables, 1.0 / 0.0 where the gradient was / was not None)."""
    if not len(cols):
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(w > 0, g / w, np.nan)
        scale = np.where(g > 0, c / g, np.nan)
    for q, vals in zip(QUANTITIES, (g, c, w, rel, scale), strict=True):
        rows[:, cols[:, QUANTITIES.index(q)]] = vals
    if no_grad is not None:
        rows[:, cols[:, NO_GRAD]] = no_grad


def _measure(loss, grads, clipped, layout: _Layout) -> list | tf.Tensor:
    """One step's values in the layout's order: the loss (when packed), then the sum of
    squares of each gradient, weight and clipped gradient. On CPU, floats computed now by
    a BLAS dot on the tensors' buffers, after the loss tensor itself (an eager tensor never
    changes, so reading it at the flush gives the same number, for 1.7 µs instead of 8 µs
    right after the step); elsewhere one float64 vector left on the device. Both are
    fetched together at the next flush (:func:`_fetch`)."""
    if not layout.on_host:
        if loss is not None:
            require_scalar(tuple(loss.shape))
        tensors = [g for g, p in zip(grads, layout.present, strict=True) if p] + list(layout.weights)
        if layout.has_clipped:
            tensors += [c for c, p in zip(clipped, layout.clipped_present, strict=True) if p]
        return device_sums(loss, tensors)
    sums = _host_sums(grads, clipped, layout)
    if not layout.loss_packed:
        return sums
    require_scalar(host_shape(loss))
    return [loss, *sums]  # the loss is read at the flush (warm there): see _fetch


def _host_sums(grads, clipped, layout: _Layout) -> list[float]:
    """The sums of squares of a CPU step in the layout's order: the gradients that are not
    None, the weights (read now, one batched op), the clipped gradients given; each by a
    BLAS dot on the tensor's own buffer (:func:`~tapeviz.training.squared_norms.view_sums`)."""
    views = layout.read_weights.views_after(
        list(itertools.compress(grads, layout.present)) if layout.some_none else grads
    )
    if layout.has_clipped:
        views += host_views(list(itertools.compress(clipped, layout.clipped_present)))
    return view_sums(views)


def _fetch(items: list) -> np.ndarray:
    """The pending steps' values as one float64 array: host lists as they are (a loss
    tensor first in a list is read here, all together), device vectors fetched with one
    concat and one copy."""
    device = [it for it in items if not isinstance(it, list)]
    lossy = [it for it in items if it.__class__ is list and it and it[0].__class__ is EagerTensor]
    for it, value in zip(lossy, host_views([it[0] for it in lossy]), strict=True):
        it[0] = value  # a 0-d array: NumPy reads it in C (float() of the tensor: 1.5 µs each)
    if not device:  # chain.from_iterable walks the lists in C: 0.1 ms for 256 steps, a generator 0.5 ms
        return np.fromiter(itertools.chain.from_iterable(items), np.float64)
    fetched = tf.concat(device, 0).numpy()
    parts, at = [], 0
    for it in items:
        if isinstance(it, list):
            parts.append(np.asarray(it, np.float64))
        else:
            n = int(it.shape[0])
            parts.append(fetched[at : at + n])
            at += n
    return np.concatenate(parts) if parts else np.zeros(0)


def _runs(pending):
    """(start, stop, layout) for each run of consecutive pending steps with one layout."""
    start = None
    for i, p in enumerate(pending):
        if start is not None and p[1] is not pending[start][1]:
            yield start, i, pending[start][1]
            start = None
        if start is None and p[1] is not None:
            start = i
    if start is not None:
        yield start, len(pending), pending[start][1]
