"""Property: the same generated program gives bit-identical results and the same errors
with tapeviz or without — gradients, jacobians, higher-order gradients through an outer
tape, unconnected_gradients=ZERO, and a second gradient() on a non-persistent tape; and
tf.py_function, whose gradient TF lets run only once, with tv.flow before or between calls."""

import re

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from random_programs import build, programs

import tapeviz as tv
from tapeviz.record import hooks


def run(prog, mode):
    """Run the program under a plain tape ('tf'), tv.GradientTape ('tv') or tv.record ('rec'),
    nested inside an outer tape of the same kind; return everything observable."""
    ls, steps, extra_targets, _ = prog
    leaf_objs = [tf.Variable(v) if kind == "variable" else tf.constant(v) for kind, _, v in ls]
    leaves_ = [(kind, obj) for (kind, _, _), obj in zip(ls, leaf_objs, strict=True)]
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
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{what}[{i}]")
        return
    assert (a is None) == (b is None), f"{what}: {a!r} vs {b!r}"
    if a is not None and not isinstance(a, tuple):
        x, y = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
        assert x.dtype == y.dtype and x.shape == y.shape, what
        np.testing.assert_array_equal(x, y, err_msg=what)  # bit-identical, not close


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@pytest.mark.slow
@given(programs())
def test_results_and_errors_identical_with_or_without_tapeviz(prog):
    plain = run(prog, "tf")
    for mode in ("tv", "rec"):
        got = run(prog, mode)
        for key in ("target", "grads", "zeros", "second", "jac"):
            same(got[key], plain[key], f"{mode} {key}")
        assert got["error"] == plain["error"]
        assert not hooks.hooks_installed()


def _py_function_run(cls, flow_at=None, want=None):
    """A persistent tape over a tf.py_function; tape.gradient twice (TF itself refuses the
    second: the py_function's gradient entry is used up), and tv.flow before call number
    `flow_at`, whose gradient must be `want`."""
    x = tf.Variable([0.5, -1.0])
    with cls(persistent=True) as tape:
        y = tf.reduce_sum(tf.py_function(lambda t: tf.sin(t) * 2.0, [x * 3.0], tf.float32) ** 2)
    seen = []
    for call in range(2):
        if flow_at == call:
            np.testing.assert_array_equal(tv.flow(tape, y).grad(x), want)
        try:
            seen.append(tape.gradient(y, x).numpy())
        except Exception as e:  # noqa: BLE001 - compared below
            seen.append((type(e), re.sub(r"pyfunc_\d+", "pyfunc_N", str(e)).splitlines()[0]))
    return seen


@pytest.mark.parametrize(
    "flow_at", [None, 0, 1], ids=["no flow", "flow before gradient", "flow between two gradient calls"]
)
def test_py_function_gradient_calls_behave_as_without_tapeviz(flow_at):
    plain = _py_function_run(tf.GradientTape)
    assert isinstance(plain[1], tuple)  # TF's own limit: the second call fails
    got = _py_function_run(tv.GradientTape, flow_at, want=plain[0])
    np.testing.assert_array_equal(got[0], plain[0])
    assert got[1] == plain[1]
    assert not hooks.hooks_installed()


def test_a_dropped_tape_frees_its_tensors_without_the_cyclic_collector():
    """As with tf.GradientTape, the tape and what it recorded go when the user lets go of
    them: the recorder's op callback (which refers to the recorder) is dropped with the
    hooks, so no reference cycle waits for the garbage collector."""
    import gc
    import weakref

    x = tf.Variable([1.0, 2.0])

    def step(cls):
        with cls() as tape:
            y = x * 3.0
            loss = tf.reduce_sum(y**2)
        tape.gradient(loss, x)
        return weakref.ref(tape), weakref.ref(y)

    was = gc.isenabled()
    gc.disable()
    try:
        for cls in (tf.GradientTape, tv.GradientTape):
            tape_ref, tensor_ref = step(cls)
            assert tape_ref() is None and tensor_ref() is None, cls
    finally:
        if was:
            gc.enable()
