"""``hist.callback(x, y, every=N)``: watch gradients during ``model.fit``.

A compiled ``model.fit`` runs its train step inside a ``tf.function``, where no eager
tape sees anything. Keras calls its callbacks from Python between batches, eagerly, so
every ``every`` batches this callback computes the gradients itself: the compiled loss
(``model.compute_loss``, regularisation included) on the probe batch at the current
weights, in training mode, recorded with a ``tv.GradientTape`` so the step has a picture.
Clipping is applied as the model's optimizer is configured (``global_clipnorm``,
``clipnorm`` or ``clipvalue``), computed by ``tf.clip_by_global_norm`` /
``tf.clip_by_norm`` / ``tf.clip_by_value``.

It does not disturb training: the forward pass in training mode would move
BatchNormalization statistics and Dropout's random state, and a custom ``compute_loss``
may update metrics, so every non-trainable and metric variable is restored after the
probe, and the optimizer is never called. Fitting with or without the callback gives
the same weights (a test checks it).

A model that overrides ``train_step`` (a GAN's two tapes, a VAE's extra losses, a
decorated ``@tf.function`` step) trains something ``compute_loss`` does not compute. For
such a model the callback records the model's own ``train_step`` on the probe batch through
``tv.record_step`` instead: one eager run with every tape recorded, then every variable it
wrote put back (weights, optimizer slots and iterations, metrics, seed generators). The
step's ``tape.gradient`` calls give what is recorded: the gradients TF returned for every
variable a tape differentiated (a GAN's discriminator and generator together, each once),
the first scalar target as the loss (the first tape's loss), the first tape's picture; no
clipping (the step's own code decides it). A step that opens no tape, or differentiates no
variable, is refused at ``fit``'s first batch with the reason.

Steps are counted in batches from the callback's creation, over all epochs and ``fit``
calls: batch 0, ``every``, ``2 * every``, ... are recorded.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ..record.step import RecordedStep, record_step
from ..record.tape import GradientTape
from .step_arguments import is_variable


def _clip_like(optimizer, grads):
    """The gradients clipped as ``optimizer``'s settings say, or None without clipping."""
    if optimizer is None:
        return None
    gcn = getattr(optimizer, "global_clipnorm", None)
    cn = getattr(optimizer, "clipnorm", None)
    cv = getattr(optimizer, "clipvalue", None)
    if gcn:
        return tf.clip_by_global_norm(grads, gcn)[0]
    if cn:
        return [None if g is None else tf.clip_by_norm(g, cn) for g in grads]
    if cv:
        return [None if g is None else tf.clip_by_value(g, -cv, cv) for g in grads]
    return None


def overrides_train_step(model) -> bool:
    """Whether ``model``'s class defines its own ``train_step`` (decorated with
    ``@tf.function`` or not) instead of Keras's."""
    fn = getattr(type(model), "train_step", None)
    fn = getattr(fn, "python_function", fn)
    module = getattr(fn, "__module__", None) or ""
    return fn is not None and not (module == "keras" or module.startswith("keras."))


def _as_fit_gives(batch: Any) -> Any:
    """The probe batch as ``fit`` hands it to ``train_step``: NumPy arrays as tensors,
    floating ones in Keras's float type."""

    def one(v):
        if isinstance(v, np.ndarray):
            if np.issubdtype(v.dtype, np.floating):
                v = v.astype(keras.backend.floatx())
            return tf.convert_to_tensor(v)
        return v

    return tf.nest.map_structure(one, batch)


def what_was_trained(steps: RecordedStep) -> tuple[Any, list, list, Any]:
    """(loss, grads, variables, tape) of a recorded step: every variable a tape's gradient
    was asked for, once, with what TF returned for it; the first scalar target as the loss
    and its tape (for the picture), or None when no target was a scalar."""
    grads, variables, seen = [], [], set()
    loss = tape = None
    for k, target, sources, result in steps.gradients:
        flat_sources, flat_result = tf.nest.flatten(sources), tf.nest.flatten(result)
        if len(flat_sources) != len(flat_result):
            continue  # unconnected_gradients or a structure tf.nest reads differently: not a gradient per source
        found = False
        for v, g in zip(flat_sources, flat_result, strict=True):
            if is_variable(v) and id(v) not in seen:
                seen.add(id(v))
                variables.append(v)
                grads.append(g)
                found = True
        if found and loss is None and isinstance(target, tf.Tensor) and target.shape.rank == 0:
            loss, tape = target, steps.tapes[k]
    return loss, grads, variables, tape


class HistoryCallback(keras.callbacks.Callback):
    """Records a probe batch's gradients into a tv.History every ``every`` batches."""

    def __init__(self, history, x, y=None, *, every: int = 10, sample_weight=None):
        super().__init__()
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive whole number of batches, got {every!r}.")
        if x is None:
            raise ValueError(
                "hist.callback needs a probe batch: hist.callback(x_probe, y_probe, every=10), "
                "e.g. the first 64 training examples."
            )
        self.history = history
        self.x, self.y, self.sample_weight = x, y, sample_weight
        self.every = every
        self.batches = 0  # train batches seen (the step counter)
        self.last_step: RecordedStep | None = None  # a custom train_step's last recording, every tape

    def on_train_batch_end(self, batch, logs=None):
        step = self.batches
        self.batches += 1
        if step % self.every == 0:
            self.record(step)

    def record(self, step: int) -> None:
        """Compute and record the probe batch's gradients now (at the current weights)."""
        if overrides_train_step(self.model):
            self._record_train_step(step)
            return
        model = self.model
        state = list(model.non_trainable_variables) + list(getattr(model, "metrics_variables", []))
        saved = [tf.convert_to_tensor(v) for v in state]
        try:
            with GradientTape() as tape:
                y_pred = model(self.x, training=True)
                try:
                    loss = model.compute_loss(x=self.x, y=self.y, y_pred=y_pred, sample_weight=self.sample_weight)
                except ValueError as e:
                    if "No loss to compute" in str(e):
                        raise ValueError(
                            "hist.callback needs a compiled loss: model.compile(optimizer, loss=...)."
                        ) from e
                    raise
            variables = model.trainable_variables
            grads = tape.gradient(loss, variables)
        finally:
            for v, value in zip(state, saved, strict=True):
                v.assign(value)
        clipped = _clip_like(getattr(model, "optimizer", None), grads)
        self.history.add(step, loss=loss, grads=grads, variables=variables, clipped=clipped, tape=tape)

    def _record_train_step(self, step: int) -> None:
        """The model's own train_step on the probe batch, through tv.record_step."""
        model = self.model
        name = f"{type(model).__name__}.train_step"
        batch = (
            [self.x]
            + ([] if self.y is None else [self.y])
            + ([] if self.sample_weight is None else [self.sample_weight])
        )
        if self.y is None and self.sample_weight is not None:
            raise ValueError("hist.callback got sample_weight without y: pass hist.callback(x, y, sample_weight=w).")
        try:
            steps = record_step(model, *_as_fit_gives(tuple(batch)))
        except Exception as e:  # any failure of the probe call is explained, its cause chained
            if "opened no tf.GradientTape" not in str(e):
                raise ValueError(
                    f"hist.callback records {name} on the probe batch (the model overrides train_step), and that "
                    f"call raised {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''} "
                    "(every variable was put back). Fix: give the probe batch in the form fit gives train_step: "
                    "hist.callback(x) for a train_step(self, data) on x alone (a GAN's images), hist.callback(x, y) "
                    "for (x, y)."
                ) from e
            raise ValueError(
                f"hist.callback records {name} (the model overrides train_step), but it opened no tf.GradientTape "
                "on the probe batch, so there are no gradients to record (every variable was put back). Fix: "
                "give the probe batch in the form fit gives train_step (hist.callback(x) for a train_step(self, "
                "data) on x alone, hist.callback(x, y) for (x, y)), or record the step yourself with hist.add."
            ) from e
        loss, grads, variables, tape = what_was_trained(steps)
        if not variables:
            raise ValueError(
                f"hist.callback recorded {name} (the model overrides train_step), but its tapes' gradients were "
                "asked of no variable (only of tensors), so there is no gradient per weight to record. Fix: "
                "record the step yourself: steps = tv.record_step(model, batch), then view steps[0]."
            )
        self.last_step = steps
        self.history.add(step, loss=loss, grads=grads, variables=variables, tape=tape)
