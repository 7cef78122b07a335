"""Property: the same generated program gives bit-identical results and the same errors
with tapeviz or without — gradients, jacobians, higher-order gradients through an outer
tape, unconnected_gradients=ZERO, and a second gradient() on a non-persistent tape."""

import numpy as np
import tensorflow as tf
from hypothesis import HealthCheck, given, settings

import tapeviz as tv
from tapeviz import capture
from test_properties import build, programs


def run(prog, mode):
    """Run the program under a plain tape ('tf'), tv.GradientTape ('tv') or tv.record ('rec'),
    nested inside an outer tape of the same kind; return everything observable."""
    ls, steps, extra_targets, _ = prog
    leaf_objs = [tf.Variable(v) if kind == "variable" else tf.constant(v) for kind, _, v in ls]
    leaves_ = [(kind, obj) for (kind, _, _), obj in zip(ls, leaf_objs)]
    outer_cls = tv.GradientTape if mode == "tv" else tf.GradientTape
    with outer_cls(persistent=True) as outer:
        for obj in leaf_objs:
            outer.watch(obj)
        if mode == "rec":
            with tf.GradientTape(persistent=True) as tape, tv.record(tape):
                target = build(tape, leaves_, steps, extra_targets)
        else:
            cls = tv.GradientTape if mode == "tv" else tf.GradientTape
            with cls(persistent=True) as tape:
                target = build(tape, leaves_, steps, extra_targets)
        grads = tape.gradient(target, leaf_objs)
        zeros = tape.gradient(target, leaf_objs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        first = next((g for g in grads if g is not None), None)
        if isinstance(first, tf.IndexedSlices):  # tf.gather's gradient: make it a tensor to square it
            first = tf.convert_to_tensor(first)
        probe = tf.reduce_sum(first * first) if first is not None else None
    second = outer.gradient(probe, leaf_objs) if probe is not None else None
    jac = tape.jacobian(target, leaf_objs[0], experimental_use_pfor=False)
    out = {"grads": grads, "zeros": zeros, "second": second, "jac": jac, "target": target}
    # a non-persistent tape refuses a second call the same way
    cls = tv.GradientTape if mode == "tv" else tf.GradientTape
    with cls() as once:
        for obj in leaf_objs:
            once.watch(obj)
        t2 = tf.reduce_sum(tf.add_n([tf.reduce_sum(o) for o in leaf_objs]))
    once.gradient(t2, leaf_objs)
    try:
        once.gradient(t2, leaf_objs)
        out["error"] = None
    except Exception as e:  # noqa: BLE001 - compared below
        out["error"] = (type(e), str(e))
    return out


def same(a, b, what):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{what}[{i}]")
        return
    assert (a is None) == (b is None), f"{what}: {a!r} vs {b!r}"
    if a is not None and not isinstance(a, tuple):
        x, y = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
        assert x.dtype == y.dtype and x.shape == y.shape, what
        np.testing.assert_array_equal(x, y, err_msg=what)  # bit-identical, not close


@settings(max_examples=25, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_results_and_errors_identical_with_or_without_tapeviz(prog):
    plain = run(prog, "tf")
    for mode in ("tv", "rec"):
        got = run(prog, mode)
        for key in ("target", "grads", "zeros", "second", "jac"):
            same(got[key], plain[key], f"{mode} {key}")
        assert got["error"] == plain["error"]
        assert not capture.hooks_installed()
