"""tv.explore(hist) on a run that went NaN (issue 34): it opens at the first step whose
gradient TensorFlow gave as NaN / Inf (the History's first "nan" flag); that step kept a
picture, so the picture marks the op where the NaN starts and the inspector says why."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import state as st
from tapeviz.explorer.training_explorer import opening_step


def where_trap_run(went_nan_at: int, steps: int = 6, tape_every: int = 1):
    """log(x) behind tf.where; at ``went_nan_at`` x gets a 0: TF's gradient turns NaN there."""
    hist = tv.History()
    x = tf.Variable([1.0, 2.0])
    tf_bad = []
    for step in range(steps):
        if step == went_nan_at:
            x.assign([0.0, 1.0])
        with tv.GradientTape() as tape:
            y = tf.reduce_sum(tf.where(x > 0, tf.math.log(x), tf.zeros_like(x)))
        grads = tape.gradient(y, [x])
        tf_bad.append(not np.all(np.isfinite(grads[0].numpy())))
        hist.add(step, loss=y, grads=grads, variables=[x], tape=tape if step % tape_every == 0 else None)
    return hist, tf_bad


def test_explore_opens_at_the_first_nan_step_and_shows_the_diagnosis():
    hist, tf_bad = where_trap_run(went_nan_at=3)
    first_bad = tf_bad.index(True)
    assert first_bad == 3 and opening_step(hist) == first_bad
    te = tv.explore(hist)
    try:
        assert te.train_step == first_bad
        assert te.picture is not None and te.picture.layout.display is None
        model, state = te.picture.graph_targets, te.picture.state
        assert model.graph is hist.picture(first_bad)[0]
        assert 'id="origin-mark"' in st.picture(model, state)
        assert "tf.where trap" in te.picture.inspector.value
        assert te.picture.controls["jump"].layout.display != "none"
    finally:
        te.close()


def test_a_healthy_run_opens_at_its_latest_picture():
    hist, tf_bad = where_trap_run(went_nan_at=99, steps=4)
    assert not any(tf_bad) and not hist.flags(kind="nan")
    assert opening_step(hist) == hist.recorded_steps()[-1]


def test_a_nan_step_without_a_picture_opens_there_and_says_which_steps_have_one():
    hist, _ = where_trap_run(went_nan_at=3, tape_every=2)  # pictures at 0, 2, 4
    assert 3 not in hist.recorded_steps()
    te = tv.explore(hist)
    try:
        assert te.train_step == 3 and te.picture.layout.display == "none"
        assert "0, 2, 4" in te.note.value
    finally:
        te.close()
