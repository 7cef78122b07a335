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

Steps are counted in batches from the callback's creation, over all epochs and ``fit``
calls: batch 0, ``every``, ``2 * every``, ... are recorded.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from ..record.tape import GradientTape


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

    def on_train_batch_end(self, batch, logs=None):
        step = self.batches
        self.batches += 1
        if step % self.every == 0:
            self.record(step)

    def record(self, step: int) -> None:
        """Compute and record the probe batch's gradients now (at the current weights)."""
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
