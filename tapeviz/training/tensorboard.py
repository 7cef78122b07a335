"""``hist.to_tensorboard(logdir)``: a History as TensorBoard scalars and text.

Tags (``NAME`` is a variable path, a layer, or ``global`` for all variables together):
``loss``; ``grad_norm/NAME``, ``clipped_norm/NAME`` (when clipped gradients were
recorded), ``relative/NAME`` (``||g|| / ||w||``), ``clip_scale/NAME`` (clipped / raw);
``flags``: one markdown list per step that raised flags. Scalars are written at each
stored point's step (its last value: see ``hist.steps()``); values not measured are
skipped (NaN / Inf gradients show in the flags text). Each call appends only the points
and flags after what an earlier call wrote to the same logdir.

Events are written with ``tf.summary.write`` and the scalar / text plugin metadata
TensorBoard reads, so writing needs only TensorFlow (``tensorflow-cpu`` does not install
the ``tensorboard`` package; viewing the logs does).
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

_TAGS = (("grad", "grad_norm"), ("clipped", "clipped_norm"), ("relative", "relative"), ("clip_scale", "clip_scale"))


def _metadata(plugin: str, data_class) -> summary_pb2.SummaryMetadata:
    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin), data_class=data_class
    )


SCALAR = _metadata("scalars", summary_pb2.DATA_CLASS_SCALAR)
TEXT = _metadata("text", summary_pb2.DATA_CLASS_TENSOR)


def _write_scalars():
    """A tf.function writing every (tag, step, value) in one graph run: thousands of
    scalars would cost ~0.5 ms each as eager ops. Made per call, so it is traced with the
    writer that is the default now."""

    @tf.function
    def write(tags, steps, values):
        for i in tf.range(tf.size(steps)):
            tf.summary.write(tags[i], values[i], step=steps[i], metadata=SCALAR)

    return write


def write_history(hist, logdir) -> str:
    logdir = os.fspath(logdir)
    key = os.path.abspath(logdir)
    parent = os.path.dirname(key)
    if not os.path.isdir(parent):
        raise FileNotFoundError(
            f"Cannot write TensorBoard logs into {logdir}: the folder {parent} does not exist; "
            "create it first (os.makedirs)."
        )
    steps = hist.steps()
    since = hist._tb_written.get(key)
    new = steps > since if since is not None else np.ones(len(steps), bool)
    series = [("loss", hist.losses())]
    variables = hist.variables()
    names = [(n, "variable") for n in variables] + [(n, "layer") for n in hist.layers() if n not in variables]
    for quantity, tag in _TAGS:
        series.append((f"{tag}/global", hist.norms(None, quantity)))
        for name, level in names:
            series.append((f"{tag}/{name}", hist.norms(name, quantity, level=level)))
    flags = [f for f in hist.flags() if since is None or f.step > since]
    by_step: dict[int, list] = {}
    for f in flags:
        by_step.setdefault(f.step, []).append(f)
    writer = tf.summary.create_file_writer(logdir)
    try:
        with writer.as_default():
            tags, at, vals = [], [], []
            for tag, values in series:
                ok = new & np.isfinite(values)
                tags += [tag] * int(ok.sum())
                at.append(steps[ok])
                vals.append(values[ok])
            if tags:
                _write_scalars()(
                    tf.constant(tags),
                    tf.constant(np.concatenate(at), tf.int64),
                    tf.constant(np.concatenate(vals), tf.float32),
                )
            for s, fs in by_step.items():
                text = "\n".join(f"- **{f.kind}** `{f.name}`: {f.message}" for f in fs)
                tf.summary.write("flags", tf.constant(text), step=s, metadata=TEXT)
        writer.flush()
    finally:
        writer.close()
    if len(steps):
        hist._tb_written[key] = int(steps[-1])
    return logdir
