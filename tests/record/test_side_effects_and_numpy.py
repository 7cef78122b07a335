"""Gradients with side effects, values that leave TensorFlow, graph-mode tapes.

tf.py_function's gradient pops state TF keeps for it, NumPy reads a tensor's memory
where no Python hook sees it, and inside tf.function there is nothing eager to record:
each case must leave the user's own tape.gradient untouched and get an honest answer."""

import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.stop_reasons import Cause, Reason
from tapeviz.record import hooks, records


def _square_in_python(a):
    return a * a


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("flow_first", [True, False])
def test_py_function_gives_tfs_number_in_either_order(persistent, flow_first):
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=persistent) as plain:
        want_y = tf.py_function(_square_in_python, [x], tf.float32) * 2.0
    want = plain.gradient(want_y, x)
    with tv.GradientTape(persistent=persistent) as tape:
        y = tf.py_function(_square_in_python, [x], tf.float32) * 2.0
    if flow_first:
        fl = tv.flow(tape, y)
        got = tape.gradient(y, x)
    else:
        got = tape.gradient(y, x)
        fl = tv.flow(tape, y)
    assert float(want) == 12.0
    assert float(got) == float(want), "the user's own gradient is TF's, whatever tapeviz did first"
    assert float(fl.grad(x)) == float(want)
    if persistent:  # a second call of the user's own fails as it does in plain TF (TF pops its cache)
        with pytest.raises(tf.errors.UnknownError, match="pyfunc"):
            plain.gradient(want_y, x)
        with pytest.raises(tf.errors.UnknownError, match="pyfunc"):
            tape.gradient(y, x)
    assert not hooks.hooks_installed()


def test_py_function_cache_is_left_as_tf_left_it():
    from tensorflow.python.ops import script_ops

    x = tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        y = tf.py_function(_square_in_python, [x], tf.float32)
    before = dict(script_ops.tape_cache)
    tv.flow(tape, y)
    assert dict(script_ops.tape_cache) == before
    tape.gradient(y, x)
    after_user = dict(script_ops.tape_cache)
    tv.flow(tape, y)
    assert dict(script_ops.tape_cache) == after_user


def test_py_function_in_a_keras_model_step():
    layer = keras.layers.Dense(2)
    x = tf.constant(np.arange(6, dtype="float32").reshape(3, 2))
    with tv.GradientTape() as tape:
        h = layer(x)
        h = tf.py_function(lambda a: tf.tanh(a) * 2.0, [h], tf.float32)
        loss = tf.reduce_sum(h)
    fl = tv.flow(tape, loss)
    grads = tape.gradient(loss, layer.trainable_variables)
    for v, g in zip(layer.trainable_variables, grads, strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())


# --------------------------------------------------------------------------- values leaving TF


def test_numpy_function_is_named_with_its_tf_equivalent():
    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tv.GradientTape() as tape:
        x2 = x**2
        y = np.mean(x2, axis=0)  # the TF autodiff guide's own example
        y = tf.reduce_mean(y, axis=0)
    assert tape.gradient(y, x) is None
    d = tv.explain(tape, y, x)
    assert d.reason == "outside_tf"
    assert "np.mean(x2, axis=0)" in d.message and "tf.reduce_mean instead of np.mean" in d.fix
    why = tv.flow(tape, y).why_none(x)
    assert why.reason is Reason.OUTSIDE_TF and why.cause is Cause.LEFT and "np.mean()" in why.message


@pytest.mark.parametrize("how", ["asarray", "array", "ufunc"])
def test_buffer_protocol_conversions_are_outside_tf(how):
    """np.asarray / np.array / ufuncs read the tensor's memory in C (the buffer protocol),
    where no hook sees them; the dead end plus the NumPy value coming back still tells."""
    x = tf.Variable([1.0, 2.0])
    with tv.GradientTape() as tape:
        h = x * 3.0
        arr = {"asarray": lambda: np.asarray(h) + 1.0, "array": lambda: np.array(h), "ufunc": lambda: np.exp(h)}[how]()
        y = tf.reduce_sum(arr)
    assert tape.gradient(y, x) is None
    d = tv.explain(tape, y, x)
    assert d.reason == "outside_tf" and d.case == "left_unseen", str(d)
    assert "tf.reduce_sum(arr)" in d.message


@pytest.mark.parametrize("how, via", [("numpy", ".numpy()"), ("float", "float()")])
def test_numpy_and_float_name_how_the_value_left(how, via):
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        h = x * 3.0
        out = h.numpy() if how == "numpy" else np.float32(float(h))
        y = tf.constant(out + 1.0) * 2.0
    d = tv.explain(tape, y, x)
    assert d.reason == "outside_tf" and via.rstrip(")") in d.message and via in str(d), str(d)


def test_numpy_results_while_recording_are_unchanged():
    """The NumPy dispatch hook returns what NumPy returns, and binary operators between
    arrays and tensors still give tensors (TF's __array_priority__ wins, as without it)."""
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    arr = np.array([[2.0, 2.0], [2.0, 2.0]], dtype=np.float32)
    plain = (np.mean(t, axis=0), np.concatenate([t, t]), np.stack([t, t]), np.asarray(t), arr * t, t * arr)
    x = tf.Variable(1.0)
    with tv.GradientTape():
        x * 1.0
        hooked = (np.mean(t, axis=0), np.concatenate([t, t]), np.stack([t, t]), np.asarray(t), arr * t, t * arr)
    for a, b in zip(plain, hooked, strict=True):
        assert type(a) is type(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not hasattr(type(t), "__array_function__")


def test_a_numpy_value_made_before_a_dead_end_is_not_blamed():
    """The NumPy constant entered TF before b's product was computed, so it cannot be
    that value coming back: b is plainly unconnected."""
    a = tf.Variable(1.0)
    b = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        out = a * tf.constant(np.float32(3.0))
        unused = b * 2.0  # noqa: F841 - used by nothing
    d = tv.explain(tape, out, b)
    assert d.reason == "unconnected" and "out does not depend on b" in d.message
    assert tv.explain(tape, out, a) is None


# --------------------------------------------------------------------------- graph-mode tapes


def test_tape_inside_tf_function_names_the_cause_and_the_fix():
    x = tf.Variable(2.0)
    kept = {}

    @tf.function
    def step():
        with tv.GradientTape() as tape:
            y = x * x
        kept["tape"] = tape
        return tape.gradient(y, x)

    assert float(step()) == 4.0  # the user's gradient inside the function is untouched
    with pytest.raises(records.GraphModeError, match=r"tf\.function.*run_eagerly=True.*run_functions_eagerly"):
        tv.flow(kept["tape"], tf.constant(1.0))
    assert not hooks.hooks_installed()


def test_compiled_keras_train_step_names_the_cause():
    class Model(keras.Model):
        def train_step(self, data):
            xb, yb = data
            with tv.GradientTape() as tape:
                loss = tf.reduce_mean((self(xb) - yb) ** 2)
            tv.flow(tape, loss)
            return {"loss": loss}

    inputs = keras.Input((2,))
    model = Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd")
    with pytest.raises(Exception, match=r"model\.compile\(\.\.\., run_eagerly=True\)"):
        model.fit(np.ones((4, 2), "float32"), np.ones((4, 1), "float32"), epochs=1, verbose=0)
    model.compile(optimizer="sgd", run_eagerly=True)  # the fix works
    model.fit(np.ones((4, 2), "float32"), np.ones((4, 1), "float32"), epochs=1, verbose=0)


# --------------------------------------------------------------------------- an animation that never runs ahead


def test_step_zero_shows_only_the_seed():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x**2
    view = tv.view(tape, y, step=0)
    fl = view.flow
    assert [t.text for t in view.scene.edge_labels.values() if t.text and t.text[0].isdigit()] == []
    assert all(g.text == "" for n, g in view.scene.grads.items() if n not in fl.target_nodes)
    view.set_step(fl.last_step)
    assert "6.0" in [t.text for t in view.scene.edge_labels.values()]


def test_every_count_agrees():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        y = x * x + x
    fl = tv.flow(tape, y)
    n = len(fl.steps)
    view = tv.view(tape, y)
    assert view.step == fl.last_step == n - 1 and view.n_steps == n
    assert view.scene.title.startswith(f"Step {n - 1}/{n - 1}:")
    view.set_step(0)
    assert view.scene.title.startswith(f"Step 0/{n - 1}:")
    ex = tv.explore(tape, y)
    assert ex.controls["step"].max == n - 1 and ex.controls["step"].value == n - 1
    ex.close()


def test_a_variable_read_twice_shows_its_total_only_after_the_last_read():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        a = x * 3.0
        b = tf.square(x)
        y = a + b
    fl = tv.flow(tape, y)
    x_node = tape.graph.node_of(x)
    reads = [s.index for s in fl.steps if s.node == x_node]
    assert len(reads) == 2
    view = tv.view(tape, y, step=reads[0])
    assert view.scene.grads[x_node].text == "", "half of x's gradient has arrived, not its total"
    view.set_step(reads[1])
    assert view.scene.grads[x_node].text == "∂ 7.0"


@pytest.mark.parametrize("bad", [99, -1])
def test_out_of_range_steps_are_refused_with_the_range(bad):
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x**2
    n = len(tv.flow(tape, y).steps)
    with pytest.raises(ValueError, match=rf"step {bad} is out of range.*steps 0 to {n - 1}"):
        tv.view(tape, y, step=bad)
    view = tv.view(tape, y)
    with pytest.raises(ValueError, match="out of range"):
        view.set_step(bad)


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["99", "-1"])
def test_cli_refuses_out_of_range_steps(tmp_path, bad):
    proc = subprocess.run(
        [sys.executable, "-m", "tapeviz.cli", "export", "basic", "-o", str(tmp_path / "b.png"), "--step", bad],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert f"step {bad} is out of range" in proc.stderr and "steps 0 to 2" in proc.stderr
    assert not (tmp_path / "b.png").exists()


def test_cuts_list_each_cut_once():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    fl = tv.flow(tape, z)
    stop = [c for c in fl.cuts if c.reason == "stop_gradient"]
    assert len(stop) == 1, "one cut, once, however many edges and nodes it leaves without gradient"
    assert len([s for s in fl.stopped if s.reason == "stop_gradient"]) >= 2


def test_every_catalogue_has_every_message():
    from tapeviz import messages

    english = messages.catalogue("en")
    for lang in messages.LANGUAGES:
        assert set(messages.catalogue(lang)) == set(english), lang
    for reason in Reason:
        assert f"legend.{reason.value}" in english
    stop_keys = {k for k in english if k.startswith("stop.")}
    for key in stop_keys:
        _, reason, cause = key.split(".")
        Reason(reason), Cause(cause)  # every key names a real reason and cause


def test_unknown_language_is_refused():
    from tapeviz import messages

    with pytest.raises(ValueError, match="No messages in language 'xx'"):
        messages.say("legend.stop_gradient", "xx")


def test_reasons_compare_as_their_codes_and_print_as_them():
    assert Reason.STOP_GRADIENT == "stop_gradient" and f"{Reason.STOP_GRADIENT}" == "stop_gradient"
    assert str(Reason.OUTSIDE_TF) == "outside_tf"


@pytest.mark.slow
def test_subprocess_tape_in_function_does_not_install_hooks():
    code = textwrap.dedent("""
        import tensorflow as tf, tapeviz as tv
        from tapeviz.record import hooks
        x = tf.Variable(2.0)
        @tf.function
        def f():
            with tv.GradientTape() as t:
                assert not hooks.hooks_installed()
                y = x * x
            return t.gradient(y, x)
        print(float(f()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("4.0")


def test_step_titles_of_a_variable_read_twice_say_part_then_total():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        y = x * 3.0 + tf.square(x)
    fl = tv.flow(tape, y)
    x_node = tape.graph.node_of(x)
    reads = [s.index for s in fl.steps if s.node == x_node]
    first = tv.view(tape, y, step=reads[0]).scene.title
    last = tv.view(tape, y, step=reads[1]).scene.title
    parts = sorted(float(fl.steps[k].grad) for k in reads)
    assert "through one of its 2 reads" in first and "has received" not in first
    assert f"x has received its gradient {float(tape.gradient(y, x)):.1f}" in last, last
    assert parts == [3.0, 4.0]
