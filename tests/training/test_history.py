"""tv.History: norms, flags, clipping, pictures, plot, Keras callback, TensorBoard,
tf.distribute and bounded memory, all on real TF / Keras training steps and compared with
what TensorFlow computes."""

from __future__ import annotations

import glob
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.magnitude import MagnitudeScale, relative_magnitudes
from tapeviz.training.bounded_series import Buckets
from tapeviz.training.step_warnings import Thresholds

keras = pytest.importorskip("keras")
REPO = Path(__file__).resolve().parents[2]


def batch(n=32, d=8, seed=0, classes=None):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(n, d)).astype("float32"))
    if classes:
        return x, tf.constant(rng.integers(0, classes, size=(n,)))
    return x, tf.constant(rng.normal(size=(n, 1)).astype("float32"))


def mlp(name="mlp", d=8, width=16, depth=2, act="relu", init="glorot_uniform", seed=0):
    keras.utils.set_random_seed(seed)
    layers = [keras.layers.Dense(width, activation=act, kernel_initializer=init, name=f"h{i}") for i in range(depth)]
    return keras.Sequential([keras.Input((d,))] + layers + [keras.layers.Dense(1, name="out")], name=name)


def sigmoid_net(seed=0):
    """10 Dense layers, sigmoid, small initial weights: the textbook vanishing gradient."""
    keras.utils.set_random_seed(seed)
    init = keras.initializers.RandomNormal(stddev=0.1)
    layers = [keras.layers.Dense(32, activation="sigmoid", kernel_initializer=init, name=f"d{i}") for i in range(9)]
    return keras.Sequential([keras.Input((16,))] + layers + [keras.layers.Dense(1, name="d9")], name="sig")


def train(model, hist, x, y, steps, *, lr=0.01, clip=None, tape_every=None, loss_fn=None, keep=None, first=0):
    """An eager custom training loop that records every step; returns what TF computed."""
    opt = keras.optimizers.SGD(learning_rate=lr)
    loss_fn = loss_fn or (lambda: tf.reduce_mean(tf.square(model(x, training=True) - y)))
    seen = []
    for step in range(first, first + steps):
        pic = tape_every is not None and step % tape_every == 0
        with tv.GradientTape() if pic else tf.GradientTape() as tape:
            loss = loss_fn()
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        clipped, gnorm = tf.clip_by_global_norm(grads, clip) if clip else (None, tf.linalg.global_norm(grads))
        weights = [tf.norm(v).numpy() for v in variables]
        hist.add(step, loss=loss, grads=grads, variables=variables, clipped=clipped, tape=tape if pic else None)
        seen.append(
            {"loss": float(loss), "grads": grads, "clipped": clipped, "weights": weights, "global": float(gnorm)}
        )
        opt.apply_gradients(zip(clipped if clip else grads, variables, strict=True))
    return seen


def train_sigmoid_net(hist, steps, tape_every=None):
    """The vanishing network on a binary task (Keras's cross-entropy), SGD lr 0.1."""
    model = sigmoid_net()
    x, y = batch(64, 16, seed=1)
    y = tf.cast(y > 0, tf.float32)
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    return train(
        model, hist, x, y, steps, lr=0.1, tape_every=tape_every, loss_fn=lambda: bce(y, model(x, training=True))
    )


# ---------------------------------------------------------------- norms are TensorFlow's
def test_norms_equal_tf_norm_of_the_gradients_tf_computed():
    model = mlp()
    x, y = batch()
    hist = tv.History(flush_every=4)  # several flushes, one partial
    seen = train(model, hist, x, y, 10)
    names = [v.path for v in model.trainable_variables]
    assert (
        hist.variables()
        == names
        == ["mlp/h0/kernel", "mlp/h0/bias", "mlp/h1/kernel", "mlp/h1/bias", "mlp/out/kernel", "mlp/out/bias"]
    )
    assert hist.layers() == ["mlp/h0", "mlp/h1", "mlp/out"]
    np.testing.assert_array_equal(hist.steps(), np.arange(10))
    for i, name in enumerate(names):
        want = [tf.norm(s["grads"][i]).numpy() for s in seen]
        np.testing.assert_allclose(hist.norms(name), want, rtol=1e-6)
        np.testing.assert_allclose(hist.norms(name, "weight"), [s["weights"][i] for s in seen], rtol=1e-6)
        w = np.array([s["weights"][i] for s in seen])
        rel = hist.norms(name, "relative")
        np.testing.assert_allclose(rel[w > 0], np.array(want)[w > 0] / w[w > 0], rtol=1e-6)
        assert np.isnan(rel[w == 0]).all()  # zero weights (a bias at step 0): no ratio
    np.testing.assert_allclose(hist.norms(), [s["global"] for s in seen], rtol=1e-6)
    np.testing.assert_allclose(hist.losses(), [s["loss"] for s in seen], rtol=1e-7)
    layer = [tf.linalg.global_norm(s["grads"][2:4]).numpy() for s in seen]
    np.testing.assert_allclose(hist.norms("mlp/h1"), layer, rtol=1e-6)
    assert len(hist) == 10
    assert np.isnan(hist.norms("mlp/h1", "clipped")).all()  # no clipped list was passed


def test_clipped_norms_equal_clip_by_global_norms():
    model = mlp()
    x, y = batch()
    hist = tv.History()
    seen = train(model, hist, x, y, 12, lr=0.05, clip=2.0)  # global norm falls from ~4.7 to ~1.1
    for i, v in enumerate(model.trainable_variables):
        np.testing.assert_allclose(
            hist.norms(v.path, "clipped"), [tf.norm(s["clipped"][i]).numpy() for s in seen], rtol=1e-6
        )
    np.testing.assert_allclose(
        hist.norms(None, "clipped"), [tf.linalg.global_norm(s["clipped"]).numpy() for s in seen], rtol=1e-6
    )
    engaged = [s["global"] > 2.0 for s in seen]
    g = hist.clipping(by="global")["global"]
    assert (g.steps, g.engaged) == (12, sum(engaged))
    assert 0 < g.engaged < 12  # the run has both
    scales = [2.0 / s["global"] for s in seen if s["global"] > 2.0]
    assert g.mean_scale == pytest.approx(np.mean(scales), rel=1e-5)
    assert g.min_scale == pytest.approx(min(scales), rel=1e-5)
    assert g.fraction == pytest.approx(sum(engaged) / 12)
    per_var = hist.clipping()
    assert set(per_var) == set(hist.variables())
    assert all(c.engaged == g.engaged for c in per_var.values())  # global clipping scales every gradient
    scale = hist.norms("mlp/out/kernel", "clip_scale")
    np.testing.assert_allclose(scale[np.array(engaged)], scales, rtol=1e-5)
    np.testing.assert_allclose(scale[~np.array(engaged)], 1.0, rtol=1e-5)


def test_clip_by_norm_engages_per_variable():
    model = mlp()
    x, y = batch()
    hist = tv.History()
    opt = keras.optimizers.SGD(0.01)
    raw = []
    limit = None
    for step in range(6):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        if limit is None:  # between the variables' norms: some are clipped, some not
            limit = float(np.median([tf.norm(g) for g in grads]))
        clipped = [tf.clip_by_norm(g, limit) for g in grads]
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, clipped=clipped)
        raw.append([float(tf.norm(g)) for g in grads])
        opt.apply_gradients(zip(clipped, model.trainable_variables, strict=True))
    stats = hist.clipping()
    for i, name in enumerate(hist.variables()):
        assert stats[name].engaged == sum(r[i] > limit for r in raw)
    assert len({s.engaged for s in stats.values()}) > 1  # some variables clipped more often than others
    by_layer = hist.clipping(by="layer")
    assert set(by_layer) == set(hist.layers())


def test_names_keras_paths_and_plain_variables_stay_distinct():
    a, b = tf.Variable(1.0), tf.Variable(2.0)  # both named "Variable"
    w = tf.Variable([1.0, 2.0], name="w")
    hist = tv.History()
    for step in range(3):
        with tf.GradientTape() as tape:
            loss = a * b + tf.reduce_sum(w**2)
        grads = tape.gradient(loss, [a, b, w])
        hist.add(step, loss=loss, grads=grads, variables=[a, b, w])
    assert hist.variables() == ["Variable", "Variable_2", "w"]
    np.testing.assert_allclose(hist.norms("Variable"), [2.0] * 3)  # d/da = b
    np.testing.assert_allclose(hist.norms("Variable_2"), [1.0] * 3)
    np.testing.assert_allclose(hist.norms("w"), [np.linalg.norm([2.0, 4.0])] * 3, rtol=1e-6)
    assert hist.layers() == ["Variable", "Variable_2", "w"]  # a name without "/" is its own layer


def test_indexed_slices_gradient_norm_is_what_clipping_uses():
    keras.utils.set_random_seed(0)
    emb = keras.layers.Embedding(10, 3, name="emb")
    ids = tf.constant([1, 2, 2, 5])
    emb(ids)
    hist = tv.History()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(emb(ids) ** 2)
    grads = tape.gradient(loss, emb.trainable_variables)
    assert isinstance(grads[0], tf.IndexedSlices)
    clipped, gnorm = tf.clip_by_global_norm(grads, 0.1)
    hist.add(0, loss=loss, grads=grads, variables=emb.trainable_variables, clipped=clipped)
    np.testing.assert_allclose(hist.norms(), [gnorm.numpy()], rtol=1e-6)
    np.testing.assert_allclose(hist.norms(None, "clipped"), [0.1], rtol=1e-5)


# ---------------------------------------------------------------- flags
def test_vanishing_flagged_at_first_layers_not_the_last():
    hist = tv.History()
    seen = train_sigmoid_net(hist, 5)
    flagged = {f.name for f in hist.flags(kind="vanishing")}
    assert {"sig/d0", "sig/d1", "sig/d2"} <= flagged
    assert "sig/d9" not in flagged and "sig/d8" not in flagged
    first = hist.flags(name="sig/d0")[0]
    assert first.step == 0 and first.kind == "vanishing"
    g0 = tf.linalg.global_norm(seen[0]["grads"][0:2]).numpy()
    w0 = np.sqrt(seen[0]["weights"][0] ** 2 + seen[0]["weights"][1] ** 2)
    assert first.value == pytest.approx(g0 / w0, rel=1e-5)  # the ratio TF's norms give
    assert "He initialisation" in first.message and "normalisation" in first.message
    assert len(hist.flags(name="sig/d0")) == 1  # one episode, one flag (not one per step)
    assert hist.flags(step=0, name="sig/d0") == [first] and hist.flags(step=3, name="sig/d0") == []


def test_healthy_training_raises_no_flags():
    model = mlp(depth=3)
    x, y = batch()
    hist = tv.History()
    train(model, hist, x, y, 40, lr=0.01)
    assert hist.flags() == []


def test_diverging_learning_rate_flagged_as_exploding():
    model = mlp(name="m")
    x, y = batch()
    hist = tv.History()
    seen = train(model, hist, x, y, 12, lr=1.0)
    exploding = hist.flags(kind="exploding")
    assert exploding, [str(f) for f in hist.flags()]
    f = exploding[0]
    norms = hist.norms(f.name)
    assert f.value == pytest.approx(norms[f.step], rel=1e-6)
    assert norms[f.step] > 4 * norms[0]
    first_bad = next(i for i, s in enumerate(seen) if not np.isfinite(s["global"]))
    assert f.step < first_bad  # warned before the run broke
    # There TF's float32 global norm overflowed (clip_by_global_norm would give NaN); the
    # gradients are finite and History's norm is finite too (a float32 square that overflows
    # is summed again in float64): tf.norm in float64 within the documented 1e-6
    exact = np.sqrt(sum(float(tf.norm(tf.cast(g, tf.float64))) ** 2 for g in seen[first_bad]["grads"]))
    assert np.isfinite(exact) and hist.norms()[first_bad] == pytest.approx(exact, rel=1e-6)
    assert "tf.clip_by_global_norm" in f.message and "learning rate" in f.message


def test_exploding_jump_rule_and_custom_thresholds():
    w = tf.Variable([1.0, 1.0], name="w")
    hist = tv.History(thresholds=Thresholds(exploding_jump=5.0, min_history=3))
    scale = [1.0] * 10 + [20.0] + [1.0] * 5
    for step, s in enumerate(scale):
        with tf.GradientTape() as tape:
            loss = s * tf.reduce_sum(w)
        hist.add(step, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    flags = hist.flags(kind="exploding")
    assert [(f.step, f.name, f.rule) for f in flags] == [(10, "w", "jump")]
    assert f"{20 * np.sqrt(2):.3g}" in flags[0].message
    strict = tv.History(thresholds=Thresholds(exploding_jump=50.0))
    for step, s in enumerate(scale):
        with tf.GradientTape() as tape:
            loss = s * tf.reduce_sum(w)
        strict.add(step, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    assert strict.flags(kind="exploding") == []


def test_nan_flagged_at_its_step_and_the_variables_where_it_appears():
    a = tf.Variable(0.5, name="a")
    b = tf.Variable(2.0, name="b")
    hist = tv.History()
    first_nan = {}
    for step in range(8):
        s = tf.constant(0.0 if step == 5 else 1.0)
        with tf.GradientTape() as tape:
            loss = a * a + tf.math.log(b * s) * s  # at step 5: 0 * log(0) -> NaN, only through b
        grads = tape.gradient(loss, [a, b])
        for v, g in zip(("a", "b"), grads, strict=True):
            if not tf.reduce_all(tf.math.is_finite(g)) and v not in first_nan:
                first_nan[v] = step
        hist.add(step, loss=loss, grads=grads, variables=[a, b])
    assert first_nan == {"b": 5}  # what TF says
    nan = hist.flags(kind="nan")
    assert [(f.step, f.name) for f in nan] == [(5, "b"), (5, "loss")]
    assert np.isnan(nan[0].value) and "NaN" in nan[0].message and "learning rate" in nan[0].message
    assert hist.flags(step=5, name="a") == []
    assert np.isnan(hist.norms("b")[5]) and np.isfinite(hist.norms("b")[6])


def test_none_gradient_is_recorded_as_no_gradient():
    used, unused = tf.Variable(1.0, name="used"), tf.Variable(1.0, name="unused")
    hist = tv.History()
    for step in range(3):
        with tf.GradientTape() as tape:
            loss = used * 3.0
        grads = tape.gradient(loss, [used, unused])
        assert grads[1] is None
        clipped, _ = tf.clip_by_global_norm(grads, 1.0)
        hist.add(step, loss=loss, grads=grads, variables=[used, unused], clipped=clipped)
    (flag,) = hist.flags(kind="no_gradient")
    assert (flag.step, flag.name, flag.value) == (0, "unused", None)
    assert "None" in flag.message and "tv.explain" in flag.message
    assert np.isnan(hist.norms("unused")).all()
    np.testing.assert_allclose(hist.norms("unused", "weight"), [1.0] * 3)
    np.testing.assert_allclose(hist.norms(), [3.0] * 3)
    mags = {m.name: m for m in hist.magnitudes()}
    assert mags["unused"].status == "no_gradient" and mags["unused"].relative is None
    assert mags["used"].relative == pytest.approx(3.0)


def test_flags_are_bounded_by_max_flags():
    w = tf.Variable(1.0, name="w")
    hist = tv.History(thresholds=Thresholds(quiet_steps=1, max_flags=3))
    for step in range(10):  # NaN at every other step: a new episode each time
        with tf.GradientTape() as tape:
            loss = w * (float("nan") if step % 2 else 1.0)
        hist.add(step, grads=tape.gradient(loss, [w]), variables=[w])
    assert [f.step for f in hist.flags()] == [1, 3, 5]
    assert hist.dropped_flags == 2


def test_flags_are_found_without_an_explicit_flush_and_filter():
    hist = tv.History(flush_every=1000)
    v = tf.Variable(1.0, name="v")
    with tf.GradientTape() as tape:
        loss = v * float("nan")
    hist.add(0, loss=loss, grads=tape.gradient(loss, [v]), variables=[v])
    assert [f.name for f in hist.flags()] == ["v", "loss"]
    assert hist.flags(name="loss")[0].kind == "nan"
    with pytest.raises(ValueError, match="kind must be one of"):
        hist.flags(kind="boom")


# ---------------------------------------------------------------- magnitudes for pictures
def test_magnitudes_on_the_vanishing_network_span_the_scale():
    hist = tv.History()
    train_sigmoid_net(hist, 3, tape_every=2)
    scale = hist.magnitude_scale()
    layers = hist.relative_magnitudes(by="layer")
    assert list(layers) == [f"sig/d{i}" for i in range(10)]
    pos = [scale(v) for v in layers.values()]
    assert pos[0] < 0.2 and pos[-1] > 0.8  # first layers at one end, last at the other
    assert all(a < b for a, b in itertools.pairwise(pos))  # and in order of depth
    # the picture of step 2 gives the same numbers, from its own flow
    graph, fl = hist.picture(2)
    from_flow = relative_magnitudes(fl, by="layer")
    from_hist = hist.relative_magnitudes(step=2, by="layer")
    assert set(from_flow) == set(from_hist)
    for k in from_hist:
        assert from_flow[k] == pytest.approx(from_hist[k], rel=1e-5)
    # regrouped by a function of each Magnitude (a picture passes its own boxes): one group
    # holding every variable is the global ||g|| / ||w||
    everything = relative_magnitudes(fl, by="layer", layer=lambda m: "all")
    assert everything == {"all": pytest.approx(hist.norms(None, "relative")[2], rel=1e-5)}
    assert all(m.node in graph.nx for m in tv.gradients.magnitude.flow_magnitudes(fl))
    per_var = relative_magnitudes(fl)
    assert set(per_var) == {d["name"] for _, d in graph.nx.nodes(data=True) if d["kind"] == "variable"}
    # colours for a picture and its colour bar
    assert scale.color(layers["sig/d0"]) != scale.color(layers["sig/d9"])
    assert scale.color(float("nan")) == "#d62728" and scale.color(None) == "#bdbdbd"


def test_magnitude_scale_maps_log_values_to_unit_interval():
    s = MagnitudeScale(1e-6, 1e2)
    assert s(1e-6) == 0.0 and s(1e2) == 1.0 and s(1e-2) == pytest.approx(0.5)
    assert s(1e-12) == 0.0 and s(0.0) == 0.0 and s(1e9) == 1.0
    assert np.isnan(s(float("nan"))) and np.isnan(s(float("inf"))) and s(None) is None
    assert [label for _, label in s.ticks()] == [f"1e{k}" for k in range(-6, 3)]
    assert s.mpl_norm()(1e-2) == pytest.approx(0.5)
    assert MagnitudeScale.fit([3e-5, 0.2, None, float("nan"), 0.0]) == MagnitudeScale(1e-5, 1.0)
    assert MagnitudeScale.fit([]) == MagnitudeScale()
    with pytest.raises(ValueError, match="0 < lo < hi"):
        MagnitudeScale(1.0, 0.1)


def test_relative_magnitudes_from_plain_norms_and_bad_input():
    mags = relative_magnitudes({"m/d/kernel": (0.2, 2.0), "m/d/bias": (0.0, 0.0), "m/e/kernel": (None, 1.0)})
    assert mags == {"m/d/kernel": pytest.approx(0.1), "m/d/bias": None, "m/e/kernel": None}
    layers = relative_magnitudes({"m/d/kernel": (0.3, 3.0), "m/d/bias": (0.4, 4.0)}, by="layer")
    assert layers == {"m/d": pytest.approx(0.5 / 5.0)}
    with pytest.raises(TypeError, match="grad_norm, weight_norm"):
        relative_magnitudes({"x": 1.0})
    with pytest.raises(TypeError, match="GradientFlow"):
        relative_magnitudes(3)
    with pytest.raises(ValueError, match="by must be"):
        relative_magnitudes({}, by="op")


# ---------------------------------------------------------------- pictures
def test_pictures_are_sampled_first_last_flagged_and_spread():
    model = mlp()
    x, y = batch()
    hist = tv.History(max_pictures=5)
    grads_at = {}
    opt = keras.optimizers.SGD(0.01)
    for step in range(30):
        with tv.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
            if step == 13:
                loss = loss * float("nan")  # a flagged step
        grads = tape.gradient(loss, model.trainable_variables)
        grads_at[step] = [g.numpy() for g in grads]
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, tape=tape)
        if step != 13:
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    kept = hist.recorded_steps()
    assert len(kept) == 5 and kept[0] == 0 and kept[-1] == 29 and 13 in kept
    gaps = np.diff([s for s in kept if s != 13])
    assert gaps.max() <= 2 * gaps.min() + 2  # evenly spread
    assert hist.dropped_pictures == 25
    assert hist.picture(kept[1] + 1 if kept[1] + 1 not in kept else 1000) is None
    graph, fl = hist.picture(29)
    assert isinstance(graph, tv.TapeGraph) and isinstance(fl, tv.GradientFlow)
    got = fl.gradients()
    for v, want in zip(model.trainable_variables, grads_at[29], strict=True):
        np.testing.assert_array_equal(got[v.path], want)  # tape.gradient at that step, bit for bit
    assert hist.picture(29)[1] is fl  # computed once, then kept


def test_picture_budget_bounds_memory():
    from tapeviz.training.step_pictures import estimate_bytes

    model = mlp(width=64)
    x, y = batch(128)
    with tv.GradientTape() as probe:
        tf.reduce_mean(tf.square(model(x) - y))
    one = estimate_bytes(probe.graph)
    hist = tv.History(picture_budget_bytes=int(3.5 * one), max_pictures=50)
    for step in range(12):
        with tv.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, tape=tape)
        assert hist._pictures.nbytes <= 3.5 * one
    assert len(hist.recorded_steps()) == 3 and hist.recorded_steps()[0] == 0 and hist.recorded_steps()[-1] == 11
    tiny = tv.History(picture_budget_bytes=one // 2)
    tiny.add(0, loss=loss, grads=grads, variables=model.trainable_variables, tape=tape)
    assert tiny.recorded_steps() == [] and tiny.dropped_pictures == 1
    assert len(tiny) == 1 and np.isfinite(tiny.norms()).all()  # the norms are recorded anyway


def test_the_usual_call_records_what_the_fully_checked_call_records():
    """hist.add takes a short path for the usual call (History._add_usual); the same steps
    given in shapes only the full checks accept (a generator, a NumPy step, a tuple) must
    give the same series, and the short path must still refuse bad input. The kernel of
    128 x 130 values is summed in pieces; steps 8-11 have a None gradient (a second layout,
    short path too)."""
    model = mlp("usual", d=128, width=130, seed=3)
    x, y = batch(32, 128, seed=3)
    opt = keras.optimizers.SGD(0.05)
    usual, checked = tv.History(flush_every=7), tv.History(flush_every=7)
    short = []
    full_usual = usual._add_usual
    usual._add_usual = lambda *a: short.append(full_usual(*a)) or short[-1]
    for step in range(20):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        if 8 <= step < 12:
            grads = [None, *grads[1:]]
        clipped, _ = tf.clip_by_global_norm(grads, 0.5)
        usual.add(step, loss=loss, grads=grads, variables=variables, clipped=clipped)
        checked.add(np.int64(step), loss=loss, grads=iter(grads), variables=tuple(variables), clipped=list(clipped))
        opt.apply_gradients((g, v) for g, v in zip(clipped, variables, strict=True) if g is not None)
    assert short.count(True) == 17, str(short)  # all but the first call and the first of each None pattern
    assert short[0] is short[8] is short[12] is False
    for q in ("grad", "clipped", "weight", "relative", "clip_scale"):
        np.testing.assert_array_equal(usual.norms(kind=q), checked.norms(kind=q))
        np.testing.assert_array_equal(usual.norms("usual/h0", q), checked.norms("usual/h0", q))
    np.testing.assert_array_equal(usual.losses(), checked.losses())
    np.testing.assert_array_equal(usual.steps(), np.arange(20))
    assert np.isnan(usual.norms("usual/h0/kernel")[8:12]).all() and not np.isnan(usual.norms("usual/h0/kernel")[12])
    with pytest.raises(ValueError, match="steps must increase"):
        usual.add(19, loss=loss, grads=grads, variables=variables, clipped=clipped)
    with pytest.raises(ValueError, match="needs the scalar loss"):
        usual.add(20, loss=tf.stack([loss, loss]), grads=grads, variables=variables, clipped=clipped)
    with pytest.raises(ValueError, match="same order"):  # swapped variables: a new layout, checked in full
        usual.add(20, loss=loss, grads=grads, variables=variables[::-1], clipped=clipped)
    usual.add(20, loss=loss, grads=[None, *grads[1:]], variables=variables, clipped=clipped)
    assert np.isnan(usual.norms("usual/h0/kernel")[-1]) and not np.isnan(usual.norms("usual/h0/bias")[-1])
    assert len(usual.steps()) == 21


# ---------------------------------------------------------------- memory over long runs
def test_buckets_stay_bounded_and_keep_spikes_over_100k_steps():
    rng = np.random.default_rng(0)
    n = 100_000
    values = rng.normal(size=(n, 3)).astype(np.float32)
    values[54_321, 1] = 1e6  # one spike
    values[77_777, 2] = np.nan  # one missing value
    b = Buckets(capacity=128)
    b.add_columns(3)
    steps = np.arange(n) * 2  # recorded every other step
    at = 0
    while at < n:  # blocks of varying size, as flushes deliver them
        k = int(rng.integers(1, 200))
        b.append(steps[at : at + k], values[at : at + k])
        at += k
        assert b.n <= 128
    assert b.n <= 128 and b.nbytes == Buckets(128).nbytes + 3 * 128 * 3 * 4
    first, last = b.spans()
    # every point covers consecutive steps, the points tile the whole run
    assert first[0] == 0 and last[-1] == steps[-1]
    assert np.all(first[1:] == last[:-1] + 2)
    # min / max / last are exact over each point's steps
    for k in (0, 37, b.n - 1):
        rows = (steps >= first[k]) & (steps <= last[k])
        np.testing.assert_array_equal(b.row(k, "max"), np.nanmax(values[rows], axis=0))
        np.testing.assert_array_equal(b.row(k, "min"), np.nanmin(values[rows], axis=0))
        np.testing.assert_array_equal(b.row(k, "last"), values[rows][-1])
    assert b.column(1, "max").max() == 1e6  # the spike survives every merge
    assert b.bucket_of(54_321 * 2) == int(np.flatnonzero((first <= 108_642) & (last >= 108_642))[0])


def test_buckets_filled_in_blocks_equal_buckets_filled_one_step_at_a_time():
    """Blocks fill many wide buckets at once (Buckets._fill_buckets); one row at a time
    never does: both must store the same values, spans and counts."""
    rng = np.random.default_rng(5)
    n = 3000
    values = rng.normal(size=(n, 4)).astype(np.float32)
    values[rng.random((n, 4)) < 0.2] = np.nan  # missing values, some whole buckets of a column
    values[:, 3] = np.nan
    steps = np.cumsum(rng.integers(1, 4, size=n))
    blocks, single = Buckets(capacity=16), Buckets(capacity=16)
    blocks.add_columns(4)
    single.add_columns(4)
    at = 0
    while at < n:
        k = int(rng.integers(1, 400))
        blocks.append(steps[at : at + k], values[at : at + k])
        at += k
    for i in range(n):
        single.append(steps[i : i + 1], values[i : i + 1])
    assert blocks.n == single.n and blocks.width == single.width > 64
    np.testing.assert_array_equal(blocks.spans(), single.spans())
    np.testing.assert_array_equal(blocks.count[: blocks.n], single.count[: single.n])
    for stat in ("min", "max", "last"):
        for col in range(4):
            np.testing.assert_array_equal(blocks.column(col, stat), single.column(col, stat))


def test_history_memory_is_bounded_over_many_steps():
    kernel = tf.Variable([[0.5], [-0.3]], name="lin/kernel")
    bias = tf.Variable([0.1], name="lin/bias")
    x, y = batch(4, 2)
    hist = tv.History(capacity=8, flush_every=50)
    sizes = []
    for step in range(1000):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ kernel + bias - y)) * (1e4 if step == 777 else 1.0)
        grads = tape.gradient(loss, [kernel, bias])
        hist.add(step, loss=loss, grads=grads, variables=[kernel, bias])
        if step != 777:
            kernel.assign_sub(0.001 * grads[0])
            bias.assign_sub(0.001 * grads[1])
        if step % 200 == 199:
            sizes.append((len(hist.steps()), hist.nbytes))
    assert hist.layers() == ["lin"]
    assert all(points <= 8 for points, _ in sizes)
    assert len({nbytes for _, nbytes in sizes}) == 1  # flat
    assert len(hist) == 1000
    assert [(f.step, f.kind, f.name) for f in hist.flags()] == [(777, "exploding", "lin")]  # exact values, not buckets
    assert hist.norms(stat="max").max() > 1e3 * np.nanmedian(hist.norms())  # the spike is in its point's max


# ---------------------------------------------------------------- plot
def test_plot_shows_norms_loss_clipping_and_flags(tmp_path):
    from matplotlib.figure import Figure

    model = mlp(name="m")
    x, y = batch()
    hist = tv.History()
    train(model, hist, x, y, 12, lr=1.0, clip=None)  # diverges: exploding flags
    kernel = model.get_layer("h0").kernel
    kernel.assign(tf.fill(kernel.shape, np.nan))  # then breaks: NaN gradients from step 12 on
    train(model, hist, x, y, 3, lr=1.0, first=12)
    fig = hist.plot()
    assert isinstance(fig, Figure)
    ax_loss, ax_norm = fig.axes[:2]
    assert len(fig.axes) == 2  # no clipping recorded: no clipping panel
    assert ax_norm.get_yscale() == "log"
    lines = {ln.get_label(): ln for ln in ax_norm.get_lines()}
    for layer in hist.layers():
        np.testing.assert_allclose(lines[layer].get_ydata(), np.where(hist.norms(layer) > 0, hist.norms(layer), np.nan))
        np.testing.assert_array_equal(lines[layer].get_xdata(), hist.steps())
    np.testing.assert_allclose(ax_loss.get_lines()[0].get_ydata(), hist.losses())
    markers = [ln for ln in ax_norm.get_lines() if ln.get_marker() in ("^", "X")]
    flagged_steps = {f.step for f in hist.flags() if f.kind in ("exploding", "nan")}
    assert {float(ln.get_xdata()[0]) for ln in markers} == flagged_steps
    legend = [t.get_text() for t in ax_norm.get_legend().get_texts()]
    assert "flag: exploding" in legend and "flag: NaN / Inf" in legend and "NaN / Inf gradients" in legend
    bad = hist.steps()[~np.isfinite(hist.norms())]
    shaded = [p.get_x() for p in ax_norm.patches]  # one span per run of NaN / Inf steps
    assert shaded and shaded[0] == bad[0] - 0.5
    assert ax_norm.get_xlim()[1] >= hist.steps()[-1]  # the whole run is shown, NaN steps included
    fig.savefig(tmp_path / "diverging.png", dpi=80)

    clipped = tv.History()
    train(mlp(name="c"), clipped, x, y, 20, lr=0.05, clip=0.5)
    fig = clipped.plot(by="variable")
    assert len(fig.axes) == 3
    ax_clip = fig.axes[2]
    (line,) = ax_clip.get_lines()[:1]
    np.testing.assert_allclose(line.get_ydata(), clipped.norms(None, "clip_scale"))
    g = clipped.clipping(by="global")["global"]
    assert f"engaged {g.engaged}/20 steps" in ax_clip.get_title(loc="left")  # one global scale: one line
    dashed = [ln for ln in fig.axes[1].get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == len(clipped.variables())  # raw solid, clipped dashed
    fig.savefig(tmp_path / "clipped.png", dpi=80)
    assert (tmp_path / "clipped.png").stat().st_size > 10_000
    with pytest.raises(ValueError, match="Nothing to plot"):
        tv.History().plot()
    with pytest.raises(KeyError, match="No layer named"):
        clipped.plot(names=["nope"])


def test_plot_of_merged_points_draws_min_max_bands():
    w = tf.Variable([1.0, 2.0], name="w")
    hist = tv.History(capacity=8)
    for step in range(40):
        with tf.GradientTape() as tape:
            loss = (1.0 + step % 5) * tf.reduce_sum(w**2)
        hist.add(step, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    assert len(hist.steps()) <= 8
    first, last = hist.spans()
    assert first[0] == 0 and last[-1] == 39 and (last - first).max() > 0  # points cover several steps
    np.testing.assert_array_equal(hist.steps(), last)
    fig = hist.plot()
    bands = fig.axes[1].collections
    assert bands, "merged points are drawn with a min-max band"
    assert "min-max bands" in fig.axes[0].get_title(loc="left")


# ---------------------------------------------------------------- Keras model.fit
def _fit_model(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu", name="h"),
            keras.layers.Dropout(0.3),
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.Dense(1, name="out"),
        ],
        name="fitted",
    )
    model.compile(optimizer=keras.optimizers.SGD(0.05, global_clipnorm=0.5), loss="mse")
    return model


def test_callback_records_during_a_compiled_fit_and_does_not_disturb_it():
    x, y = batch(96, 8, seed=3)
    model = _fit_model()
    assert not model.run_eagerly
    hist = tv.History()
    cb = hist.callback(x[:32], y[:32], every=2)
    keras.utils.set_random_seed(7)
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[cb])
    assert model.train_function is not None  # a compiled train step ran
    np.testing.assert_array_equal(hist.steps(), np.arange(0, 12, 2))  # 6 batches x 2 epochs, every 2nd
    assert hist.variables() == [v.path for v in model.trainable_variables]
    assert np.isfinite(hist.losses()).all()
    kept = hist.recorded_steps()
    assert kept[0] == 0 and kept[-1] == 10
    graph, fl = hist.picture(10)
    grads = fl.gradients()
    for v in model.trainable_variables:
        i = hist.steps().tolist().index(10)
        assert hist.norms(v.path)[i] == pytest.approx(float(tf.norm(grads[v.path])), rel=1e-5)
    g = hist.clipping(by="global")["global"]
    assert g.steps == 6  # the optimizer's global_clipnorm, applied with tf.clip_by_global_norm
    np.testing.assert_array_less(hist.norms(None, "clipped"), 0.5 + 1e-5)

    twin = _fit_model()
    keras.utils.set_random_seed(7)
    twin.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(model.variables, twin.variables, strict=True):  # BatchNorm statistics and Dropout's seed included
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


def test_callback_bad_input():
    hist = tv.History()
    with pytest.raises(ValueError, match="positive whole number"):
        hist.callback(np.zeros((2, 8)), np.zeros((2, 1)), every=0)
    with pytest.raises(ValueError, match="probe batch"):
        hist.callback(None)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd")  # no loss
    cb = hist.callback(np.zeros((2, 8), "float32"), np.zeros((2, 1), "float32"))
    cb.set_model(model)
    with pytest.raises(ValueError, match="compiled loss"):
        cb.record(0)


# ---------------------------------------------------------------- TensorBoard
def _events(logdir):
    out = []
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for e in tf.compat.v1.train.summary_iterator(path):
            for v in e.summary.value:
                out.append((e.step, v.tag, v.metadata.plugin_data.plugin_name, tf.make_ndarray(v.tensor)))
    return out


def test_tensorboard_event_files_hold_norms_and_flags(tmp_path):
    model = mlp(name="m")
    x, y = batch()
    hist = tv.History()
    train(model, hist, x, y, 12, lr=1.0, clip=100.0)
    logdir = tmp_path / "tb"
    assert hist.to_tensorboard(logdir) == str(logdir)
    events = _events(logdir)
    scalars = {}
    for step, tag, plugin, value in events:
        if plugin == "scalars":
            scalars.setdefault(tag, {})[step] = float(value)
    assert {
        "loss",
        "grad_norm/global",
        "clipped_norm/global",
        "grad_norm/m/h0/kernel",
        "grad_norm/m/h0",
        "relative/m/out",
        "clip_scale/global",
    } <= set(scalars)
    steps = hist.steps()
    for tag, series in (
        ("loss", hist.losses()),
        ("grad_norm/m/h0/kernel", hist.norms("m/h0/kernel")),
        ("grad_norm/m/h0", hist.norms("m/h0")),
        ("relative/m/out", hist.norms("m/out", "relative")),
    ):
        want = {int(s): float(np.float32(v)) for s, v in zip(steps, series, strict=True) if np.isfinite(v)}
        assert scalars[tag] == pytest.approx(want, rel=1e-6), tag
    texts = {step: value.item().decode() for step, tag, plugin, value in events if plugin == "text"}
    for f in hist.flags():
        assert f.message in texts[f.step]
    # a second call appends only what is new
    more = tv.History()
    w = tf.Variable(1.0, name="w")
    for step in range(3):
        with tf.GradientTape() as tape:
            loss = w * 2.0
        more.add(step, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    more.to_tensorboard(tmp_path / "tb2")
    with tf.GradientTape() as tape:
        loss = w * 2.0
    more.add(3, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    more.to_tensorboard(tmp_path / "tb2")
    losses = [step for step, tag, _, _ in _events(tmp_path / "tb2") if tag == "loss"]
    assert sorted(losses) == [0, 1, 2, 3]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        more.to_tensorboard(tmp_path / "missing" / "deeper")


# ---------------------------------------------------------------- tf.distribute
DISTRIBUTED = textwrap.dedent("""
    import json, os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import tapeviz as tv

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 4)).astype("float32")
    Y = rng.normal(size=(16, 1)).astype("float32")
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)],
                                 name="m")
        opt = keras.optimizers.SGD(0.1)
    hist = tv.History()
    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((X, Y)).batch(16).repeat())
    it = iter(data)

    def replica_step(step, x, y):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum(tf.square(model(x) - y), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=16)
        grads = tape.gradient(loss, model.trainable_variables)
        clipped, _ = tf.clip_by_global_norm(grads, 0.1)
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, clipped=clipped)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return grads, clipped

    out = {"replicas": strategy.num_replicas_in_sync, "want": [], "want_clipped": [], "single": [], "per_replica": []}
    for step in range(3):
        with tf.GradientTape() as t:  # the whole batch on one device, same weights
            single_loss = tf.reduce_mean(tf.reduce_sum(tf.square(model(X) - Y), axis=1))
        single = t.gradient(single_loss, model.trainable_variables)
        grads, clipped = strategy.run(replica_step, args=(step,) + next(it))
        summed = [strategy.reduce("SUM", g, axis=None) for g in grads]
        out["want"].append([float(tf.norm(g)) for g in summed])
        summed_clipped = [strategy.reduce("SUM", c, axis=None) for c in clipped]
        out["want_clipped"].append(float(tf.linalg.global_norm(summed_clipped)))
        out["single"].append([float(tf.norm(g)) for g in single] + [float(single_loss)])
        out["per_replica"].append([float(tf.norm(r)) for r in strategy.experimental_local_results(grads[0])])
    out["got"] = [hist.norms(n).tolist() for n in hist.variables()]
    out["got_clipped"] = hist.norms(None, "clipped").tolist()
    out["loss"] = hist.losses().tolist()
    out["steps"] = hist.steps().tolist()
    out["names"] = hist.variables()
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.slow
def test_mirrored_strategy_sums_the_replicas(tmp_path):
    script = tmp_path / "distributed.py"
    script.write_text(DISTRIBUTED)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["replicas"] == 2
    assert out["steps"] == [0, 1, 2]
    assert out["names"] == ["m/dense/kernel", "m/dense/bias", "m/dense_1/kernel", "m/dense_1/bias"]
    got = np.array(out["got"]).T  # (steps, variables)
    np.testing.assert_allclose(got, out["want"], rtol=1e-6)  # the sum of the replicas' gradients
    single = np.array(out["single"])
    np.testing.assert_allclose(got, single[:, :4], rtol=1e-5)  # = the whole batch's gradient
    np.testing.assert_allclose(out["loss"], single[:, 4], rtol=1e-5)
    np.testing.assert_allclose(out["got_clipped"], out["want_clipped"], rtol=1e-6)
    a, b = out["per_replica"][0]
    assert a != pytest.approx(b)  # the replicas really saw different halves of the batch


# ---------------------------------------------------------------- bad input
def test_bad_input_names_cause_and_fix():
    v, w = tf.Variable(1.0, name="v"), tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape(persistent=True) as tape:
        loss = v * tf.reduce_sum(w)
    grads = tape.gradient(loss, [v, w])
    hist = tv.History()
    with pytest.raises(ValueError, match="1 gradients for 2 variables"):
        hist.add(0, loss=loss, grads=grads[:1], variables=[v, w])
    with pytest.raises(ValueError, match="1 clipped gradients for 2"):
        hist.add(0, loss=loss, grads=grads, variables=[v, w], clipped=grads[:1])
    with pytest.raises(ValueError, match="same order"):
        hist.add(0, loss=loss, grads=grads[::-1], variables=[v, w])
    with pytest.raises(ValueError, match="without variables"):
        hist.add(0, loss=loss, grads=grads)
    with pytest.raises(ValueError, match="without grads"):
        hist.add(0, loss=loss, variables=[v, w])
    with pytest.raises(TypeError, match="not a variable"):
        hist.add(0, loss=loss, grads=grads, variables=[v, tf.constant([1.0, 2.0])])
    with pytest.raises(TypeError, match="lists"):
        hist.add(0, loss=loss, grads={"v": grads[0]}, variables=[v])
    with pytest.raises(ValueError, match="scalar loss"):
        hist.add(0, loss=tf.constant([1.0, 2.0]), grads=grads, variables=[v, w])
    with pytest.raises(TypeError, match="integer"):
        hist.add("first", loss=loss, grads=grads, variables=[v, w])
    with pytest.raises(TypeError, match=r"plain tf\.GradientTape"):
        hist.add(0, loss=loss, grads=grads, variables=[v, w], tape=tape)
    assert len(hist) == 0 and hist.steps().size == 0  # refused calls recorded nothing
    hist.add(np.int64(5), loss=loss, grads=grads, variables=[v, w])
    with pytest.raises(ValueError, match="steps must increase"):
        hist.add(5, loss=loss, grads=grads, variables=[v, w])
    with tv.GradientTape() as tvtape:
        other = v * 2.0
    with pytest.raises(ValueError, match="loss= the tensor computed inside"):
        hist.add(6, loss=loss, grads=grads, variables=[v, w], tape=tvtape)

    @tf.function
    def in_graph():
        hist.add(7, loss=loss)

    with pytest.raises(RuntimeError, match=r"inside a tf\.function"):
        in_graph()
    hist.add(8, loss=other, grads=grads, variables=[v, w])  # still usable
    assert hist.steps().tolist() == [5, 8]
    with pytest.raises(KeyError, match="known names: v, w"):
        hist.norms("nope")
    with pytest.raises(ValueError, match="kind must be one of"):
        hist.norms("v", kind="size")
    with pytest.raises(ValueError, match="stat must be one of"):
        hist.norms("v", stat="mean")
    with pytest.raises(KeyError, match="was not recorded"):
        hist.magnitudes(step=6)
    with pytest.raises(ValueError, match="positive number"):
        Thresholds(vanishing_ratio=-1)
    with pytest.raises(ValueError, match="factor below the last layer"):
        Thresholds(vanishing_gap=2.0)
    with pytest.raises(ValueError, match="at least 2"):
        tv.History(max_pictures=1)


def test_loss_only_steps_and_python_numbers():
    hist = tv.History()
    hist.add(0, loss=2.5)
    hist.add(1, loss=np.float32(1.5))
    hist.add(2, loss=tf.constant(0.5, tf.float64))
    np.testing.assert_allclose(hist.losses(), [2.5, 1.5, 0.5])
    assert hist.variables() == [] and np.isnan(hist.norms()).all()
    assert repr(hist).startswith("History(steps=3")


def test_running_median_matches_numpy():
    import warnings

    from tapeviz.training.step_warnings import _nanmedian

    rng = np.random.default_rng(0)
    for _ in range(100):
        w = rng.normal(size=(3, 4, int(rng.integers(1, 9))))
        if rng.random() < 0.7:  # some blocks with gaps, some full (the partition path)
            w[rng.random(w.shape) < 0.4] = np.nan
        k, m = _nanmedian(w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nanmedian(w, axis=-1)
        np.testing.assert_array_equal(k, np.isfinite(w).sum(axis=-1))
        np.testing.assert_allclose(m, want, equal_nan=True)


def test_plot_speaks_chinese_with_no_english_words_but_names():
    """hist.plot(lang="zh"): every text of the figure is Chinese, apart from the variables'
    names, NaN / Inf and the norms' symbols (the zh lessons' picture rule)."""
    import re

    w = tf.Variable([1.0, 2.0], name="w")
    hist = tv.History()
    for step in range(6):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w) * (100.0 if step == 4 else 1.0)
        grads = tape.gradient(loss, [w])
        hist.add(step, loss=loss, grads=grads, variables=[w], clipped=tf.clip_by_global_norm(grads, 1.0)[0])
    fig = hist.plot(lang="zh")
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    english = {
        word
        for t in texts
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t)
        if len(word) > 1 and word not in {"NaN", "Inf", "mathdefault"} and not w.name.startswith(word)
    }
    assert not english, english
    assert any("训练历史" in t for t in texts) and any("梯度裁剪" in t for t in texts)
    en = [t.get_text() for t in hist.plot().findobj(lambda a: hasattr(a, "get_text"))]
    assert any(t.startswith("Training history") for t in en), "English stays the default"


def test_episode_onsets_worked_out_per_block_match_the_row_by_row_rule():
    """A flag is raised where an episode starts: the condition holds and no episode is
    open; an episode closes after quiet_steps rows without it. Blocks of any size, columns
    appearing later, must give the onsets the plain row-by-row rule gives."""
    from tapeviz.training.step_warnings import _Episodes

    rng = np.random.default_rng(1)
    for trial in range(60):
        quiet = int(rng.integers(1, 6))
        rows = rng.random((int(rng.integers(1, 80)), 5)) < rng.choice([0.02, 0.1, 0.5])
        active, since = np.zeros(5, bool), np.zeros(5, np.int64)
        want = []
        for i, c in enumerate(rows):  # the rule, one row at a time
            want += [(i, int(j)) for j in np.flatnonzero(c & ~active)]
            active |= c
            since = np.where(c, 0, since + 1)
            active &= since < quiet
        ep, got, at = _Episodes(), [], 0
        while at < len(rows):
            b = int(rng.integers(0, 12))
            width = 3 if at < len(rows) // 3 and not rows[: at + b, 3:].any() else 5  # columns 3, 4 join later
            got += [(at + i, j) for i, j in ep.onsets(rows[at : at + b, :width], quiet)]
            at += b
        assert got == want, (trial, quiet)


def test_growth_streaks_worked_out_per_block_match_the_row_by_row_rule():
    """The exploding rule's growth streak (a layer's norm grew by growth_factor for
    growth_steps steps in a row) must not depend on how steps are split into blocks."""
    from tapeviz.training.step_warnings import FlagDetector

    rng = np.random.default_rng(2)
    t = Thresholds(growth_factor=2.0, growth_steps=3)
    for trial in range(40):
        factors = np.where(rng.random((int(rng.integers(2, 70)), 4)) < 0.6, 2.5, 0.9)
        norms = np.cumprod(factors, axis=0)
        streak, want = np.zeros(4, int), []
        for i in range(len(norms)):  # the rule, one step at a time
            grew = norms[i] >= 2.0 * norms[i - 1] if i else np.zeros(4, bool)
            streak = np.where(grew, streak + 1, 0)
            want.append(streak >= 3)
        det, got, at = FlagDetector(t), [], 0
        det._grow_layers(4)
        while at < len(norms):
            b = int(rng.integers(0, 9))
            got += list(det._exploding(norms[at : at + b])[1])
            at += b
        np.testing.assert_array_equal(np.array(got), np.array(want), err_msg=f"trial {trial}")
