"""tv.explain: for every None gradient, which path was cut, where, why, and the fix.

The messages are part of the behaviour: each test pins the sentence fragments a student
relies on (the variable's name, the op, the fix)."""

import pytest
import tensorflow as tf

import tapeviz as tv


def test_gradient_that_flows_has_no_diagnosis():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        y = x * x
    assert tv.explain(tape, y, x) is None


def test_stop_gradient():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    d = tv.explain(tape, z, y)
    assert d.reason == "stop_gradient"
    assert "y is read through tf.stop_gradient" in d.message
    assert "Remove tf.stop_gradient" in d.fix and "dz/dy" in d.fix
    assert tape.gradient(z, y) is None


def test_integer_tensor():
    i = tf.constant(3)
    with tv.GradientTape() as tape:
        tape.watch(tf.constant(1.0))
        y = tf.cast(i, tf.float32) * 2.0
    d = tv.explain(tape, y, i)
    assert d.reason == "integer_dtype"
    assert "i is an int32 tensor" in d.message and "tf.cast(i, tf.float32)" in d.fix


def test_integer_cast_on_the_path():
    x = tf.Variable(2.5)
    with tv.GradientTape() as tape:
        y = tf.cast(tf.cast(x, tf.int32), tf.float32) * 3.0
    d = tv.explain(tape, y, x)
    assert d.reason == "integer_dtype" and "int32" in d.message
    assert "floating point" in d.fix
    assert tape.gradient(y, x) is None


def test_constant_not_watched():
    c = tf.constant(5.0)
    x = tf.Variable(1.0)
    with tv.GradientTape() as tape:
        y = c * x
    d = tv.explain(tape, y, c)
    assert d.reason == "not_watched"
    assert "c is a plain tf.Tensor" in d.message and "tape.watch(c)" in d.fix


def test_variable_replaced_by_tensor():
    x = tf.Variable(1.0)
    x = x + 1  # the classic mistake: x is a tensor now
    with tv.GradientTape() as tape:
        y = x * x
    d = tv.explain(tape, y, x)
    assert d.reason == "not_watched"
    assert "x = x + 1" in d.fix and "assign_add" in d.fix
    assert tape.gradient(y, x) is None


def test_non_trainable_variable():
    w = tf.Variable(1.0, trainable=False)
    b = tf.Variable(0.5)
    with tv.GradientTape() as tape:
        y = w * 3.0 + b
    d = tv.explain(tape, y, w)
    assert d.reason == "not_watched"
    assert "w is a non-trainable variable" in d.message and "trainable=True" in d.fix


def test_watch_accessed_variables_false():
    w = tf.Variable(1.0)
    with tv.GradientTape(watch_accessed_variables=False) as tape:
        y = w * 3.0
    d = tv.explain(tape, y, w)
    assert d.reason == "not_watched"
    assert "watch_accessed_variables=False" in d.message and "tape.watch(w)" in d.fix


def test_stop_recording():
    x = tf.Variable(2.0)
    y = tf.Variable(1.0)
    with tv.GradientTape() as tape:
        a = x * 2
        with tape.stop_recording():
            b = a * 3
        z = b + y
    d = tv.explain(tape, z, x)
    assert d.reason == "not_recorded"
    assert "stop_recording()" in d.message and "Move that computation out" in d.fix


def test_reset():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        a = x * 2
        tape.reset()
        z = a * 3
    d = tv.explain(tape, z, x)
    assert d.reason == "not_recorded" and "tape.reset()" in d.message
    assert tape.gradient(z, x) is None


def test_numpy_round_trip():
    x2 = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        a = x2 * 2
        b = tf.constant(a.numpy()) * 3
    d = tv.explain(tape, b, x2)
    assert d.reason == "outside_tf"
    assert "x2 left TensorFlow through .numpy()" in d.message and "TensorFlow ops" in d.fix


def test_assign_is_stateful():
    x = tf.Variable(2.0)
    v = tf.Variable(0.0)
    with tv.GradientTape() as tape:
        v.assign_add(x * 2)
        out = v * 1.0
    d = tv.explain(tape, out, x)
    assert d.reason == "stateful"
    assert "AssignAddVariableOp writes it into v" in d.message and "assign" in d.fix


def test_non_differentiable_op():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        out = tf.round(x * 1.5)
    d = tv.explain(tape, out, x)
    assert d.reason == "no_gradient" and "Round" in d.message


@pytest.mark.parametrize("use_first", [True, False])
def test_control_flow_skipped_a_variable(use_first):
    a = tf.Variable(1.0)
    b = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        out = a * 3.0 if use_first else b * 3.0
    skipped, name = (b, "b") if use_first else (a, "a")
    d = tv.explain(tape, out, skipped)
    assert d.reason == "unconnected"
    assert "never used while the tape was recording" in d.message and "if/else or loop" in d.fix


def test_unconnected_but_used():
    a = tf.Variable(1.0)
    b = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        out = a * 3.0
        unused = b * 2.0  # noqa: F841
    d = tv.explain(tape, out, b)
    assert d.reason == "unconnected" and "out does not depend on b" in d.message


def test_str_is_message_then_fix():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x + tf.stop_gradient(y)
    d = tv.explain(tape, z, y)
    assert str(d) == f"{d.message} {d.fix}"
