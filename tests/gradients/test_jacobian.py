"""tv.jacobian / tv.batch_jacobian: each row is a backward pass seeded with one target
element; the stacked rows must be what tape.jacobian / tape.batch_jacobian return."""

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv


def _square():
    x = tf.constant([1.0, -2.0, 3.0])
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    return tape, y, x


def _tanh_matvec():
    W = tf.Variable([[0.5, -1.0, 0.25], [2.0, 0.1, -0.3]])
    x = tf.constant([[1.0], [2.0], [-1.0]])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.tanh(tf.matmul(W, x)) + tf.reduce_sum(W)
    return tape, y, W


def _softmax():  # a dense Jacobian: every output depends on every input
    z = tf.Variable([0.3, -1.2, 2.0, 0.7])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.nn.softmax(z * 2.0)
    return tape, y, z


def _keras_dense():
    tf.keras.utils.set_random_seed(3)
    layer = tf.keras.layers.Dense(4, activation="tanh", name="enc")
    x = tf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    layer.build(x.shape)
    with tv.GradientTape(persistent=True) as tape:
        y = layer(x)
    return tape, y, layer.kernel


def _while_loop():
    x = tf.Variable([0.5, 1.5])

    def body(i, v):
        return i + 1, tf.sin(v) * x + v[::-1]

    with tv.GradientTape(persistent=True) as tape:
        _, y = tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x * 1.0])
    return tape, y, x


FUNCTIONS = {"square": _square, "tanh_matvec": _tanh_matvec, "softmax": _softmax, "keras_dense": _keras_dense}
FUNCTIONS["while_loop"] = _while_loop


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_matrix_is_tape_jacobian(name):
    tape, y, x = FUNCTIONS[name]()
    jac = tv.jacobian(tape, y, x)
    expected = tape.jacobian(y, x).numpy()
    assert jac.matrix.shape == expected.shape == tuple(y.shape) + tuple(x.shape)
    np.testing.assert_allclose(jac.matrix, expected, rtol=1e-6, atol=1e-7)
    # the loop form of tape.jacobian (one tape.gradient per element) is bit-for-bit the rows
    np.testing.assert_array_equal(jac.matrix, tape.jacobian(y, x, experimental_use_pfor=False).numpy())
    assert np.abs(expected).max() > 0  # a Jacobian of zeros would prove nothing


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_flow_of_row_i_is_row_i(name):
    tape, y, x = FUNCTIONS[name]()
    jac = tv.jacobian(tape, y, x)
    rows = tape.jacobian(y, x, experimental_use_pfor=False).numpy().reshape(jac.rows, -1)
    for i in range(jac.rows):
        fl = jac.flow(i)
        np.testing.assert_array_equal(np.asarray(fl.grad(x)).reshape(-1), rows[i])
        seed = np.asarray(fl.steps[0].grad).reshape(-1)  # the pass is seeded with element i
        assert seed[i] == 1 and np.count_nonzero(seed) == 1


def test_batch_jacobian_of_a_keras_model():
    tf.keras.utils.set_random_seed(5)
    model = tf.keras.Sequential(
        [tf.keras.Input((3,)), tf.keras.layers.Dense(5, activation="relu"), tf.keras.layers.Dense(2)]
    )
    x = tf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 1.0, -2.0]])
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = model(x)
    bj = tv.batch_jacobian(tape, y, x)
    expected = tape.batch_jacobian(y, x).numpy()
    assert bj.matrix.shape == expected.shape == (3, 2, 3) and bj.rows == 2
    np.testing.assert_allclose(bj.matrix, expected, rtol=1e-6, atol=1e-7)
    for i in range(bj.rows):  # row i of every example from one backward pass
        np.testing.assert_allclose(bj.flow(i).grad(x), expected[:, i, :], rtol=1e-6, atol=1e-7)
    assert bj.row_labels() == ["y[b, 0]", "y[b, 1]"]


def test_batch_jacobian_of_a_while_loop():
    x = tf.constant([[0.2, 0.4], [1.0, -0.5]])
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.while_loop(lambda v: tf.reduce_max(v) < 4.0, lambda v: (v * v + 1.0,), (x,))[0]
    np.testing.assert_allclose(tv.batch_jacobian(tape, y, x).matrix, tape.batch_jacobian(y, x), rtol=1e-6)


def test_unconnected_source_gives_none_as_tf():
    x, w = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        y = x * 2.0
        z = w + 1.0  # noqa: F841  (read, so w is on the tape)
    assert tape.jacobian(y, w) is None
    assert tv.jacobian(tape, y, w).matrix is None


@pytest.mark.parametrize("user_first", [True, False])
def test_never_disturbs_the_users_jacobian(user_first):
    """A non-persistent tape: tape.jacobian works once; tv.jacobian must not use it up,
    whichever is called first, and the user's result is what plain TF gives."""
    x = tf.Variable([1.0, 2.0, 3.0])

    def run(tape_type):
        with tape_type() as tape:
            y = tf.sin(x) * x
        return tape, y

    plain_tape, plain_y = run(tf.GradientTape)
    plain = plain_tape.jacobian(plain_y, x).numpy()
    tape, y = run(tv.GradientTape)
    if user_first:
        mine = tape.jacobian(y, x).numpy()
        jac = tv.jacobian(tape, y, x).matrix
    else:
        jac = tv.jacobian(tape, y, x).matrix
        mine = tape.jacobian(y, x).numpy()
    np.testing.assert_array_equal(mine, plain)
    np.testing.assert_allclose(jac, plain, rtol=1e-6)
    with pytest.raises(RuntimeError, match="non-persistent"):  # TF's own error, unchanged
        tape.jacobian(y, x)


def test_heatmap_labels_and_values():
    tape, y, kernel = _keras_dense()
    jac = tv.jacobian(tape, y, kernel)
    fig = jac.figure(row=2)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"[{i}, {j}]" for i in range(2) for j in range(4)]
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"[{i}, {j}]" for i in range(3) for j in range(4)]
    assert ax.get_ylabel() == "y (target)" and ax.get_xlabel() == "enc/kernel (source)"
    assert jac.row_labels()[5] == "y[1, 1]" and jac.column_labels()[0] == "enc/kernel[0, 0]"
    printed = [t.get_text() for t in ax.texts]
    assert len(printed) == 8 * 12  # every value printed: the matrix is small
    m = jac.matrix2d()
    assert printed[13] == f"{m[1, 1]:.3g}" and printed[1] == "0"
    outline = [p for p in ax.patches if p.get_height() == 1]
    assert len(outline) == 1 and outline[0].get_y() == 1.5  # row 2 outlined
    fig.canvas.draw()  # tick labels must not overlap one another
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    assert all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:], strict=False))


def test_big_heatmap_thins_labels_and_prints_no_values():
    x = tf.Variable(tf.linspace(-1.0, 1.0, 60))
    with tv.GradientTape(persistent=True) as tape:
        y = tf.nn.softmax(x)
    fig = tv.jacobian(tape, y, x).figure()
    ax = fig.axes[0]
    assert not ax.texts
    assert 10 <= len(ax.get_xticklabels()) <= 24 and ax.get_xticklabels()[1].get_text() == "[3]"


def test_explore_a_jacobian_picks_rows():
    tape, y, x = _softmax()
    jac = tv.jacobian(tape, y, x)
    ex = tv.explore(jac)
    assert ex.controls["row"] is ex.explorer.controls["target"]
    assert list(ex.controls["row"].options) == ["y[0]", "y[1]", "y[2]", "y[3]"]
    first = ex.picker.src
    ex.picker.row = 2  # what a click on the heatmap's third row sends
    assert ex.row == 2 and ex.controls["row"].value == "y[2]"
    assert ex.picker.src != first  # the outline moved
    np.testing.assert_array_equal(ex.explorer.flow.grad(x), jac.matrix[2])
    ex.controls["row"].value = "y[3]"
    assert ex.picker.row == 3
    np.testing.assert_array_equal(ex.explorer.flow.grad(x), jac.matrix[3])
    assert 0 < ex.picker.top < ex.picker.bottom < 1


def test_bad_input_is_named():
    x = tf.constant([1.0, -2.0, 3.0])
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        y2 = y[:2]
    with pytest.raises(IndexError, match="rows 0 to 2"):
        tv.jacobian(tape, y, x).flow(3)
    with pytest.raises(ValueError, match="not produced while this tape recorded"):
        tv.jacobian(tape, tf.constant([1.0]), x)
    with pytest.raises(TypeError, match="one target tensor"):
        tv.jacobian(tape, [y, y], x)
    with pytest.raises(ValueError, match="same first"):
        tv.batch_jacobian(tape, y2, x)
