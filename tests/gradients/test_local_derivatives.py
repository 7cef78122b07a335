"""The local-derivative table is checked against TensorFlow: every entry, on random inputs,
gives what TF's registered gradient gives (tape.gradient with a random arriving gradient).

The table is there to say *why* a gradient is what it is; these tests make sure what it
says is true. Every op of the table has a case here (a test fails on one without)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tapeviz.gradients import formulas as f
from tapeviz.gradients.local_derivatives import TABLE, lookup, unbroadcast

F32 = np.float32


def _r(rng, *shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape).astype(F32)


def _pos(rng, *shape):
    return rng.uniform(0.5, 2.0, size=shape).astype(F32)


def _away(rng, *shape):
    """Values away from 0 and 6 (kinks of Relu, Relu6, Abs ...), where the derivative is defined."""
    v = _r(rng, *shape, low=-5.0, high=7.0)
    return np.where(np.abs(v) < 0.1, F32(0.5), np.where(np.abs(v - 6) < 0.1, F32(5.5), v)).astype(F32)


def _binary(rng):
    return [_r(rng, 2, 3), _pos(rng, 3)]  # broadcasting: y is summed back over the batch axis


# op -> (inputs by position from a seeded generator, attrs)
CASES = {
    "Add": lambda r: (_binary(r), {}),
    "AddV2": lambda r: (_binary(r), {}),
    "AddN": lambda r: ([_r(r, 2, 3), _r(r, 2, 3), _r(r, 2, 3)], {}),
    "Sub": lambda r: (_binary(r), {}),
    "Mul": lambda r: (_binary(r), {}),
    "RealDiv": lambda r: (_binary(r), {}),
    "DivNoNan": lambda r: ([_r(r, 2, 3), np.array([1.5, 0.0, -0.7], F32)], {}),
    "Pow": lambda r: ([_pos(r, 2, 3), _r(r, 3)], {}),
    "SquaredDifference": lambda r: (_binary(r), {}),
    "Maximum": lambda r: (_binary(r), {}),
    "Minimum": lambda r: (_binary(r), {}),
    "BiasAdd": lambda r: ([_r(r, 4, 3), _r(r, 3)], {}),
    "Square": lambda r: ([_r(r, 2, 3)], {}),
    "Sqrt": lambda r: ([_pos(r, 2, 3)], {}),
    "Rsqrt": lambda r: ([_pos(r, 2, 3)], {}),
    "Reciprocal": lambda r: ([_pos(r, 2, 3)], {}),
    "Exp": lambda r: ([_r(r, 2, 3)], {}),
    "Expm1": lambda r: ([_r(r, 2, 3)], {}),
    "Log": lambda r: ([_pos(r, 2, 3)], {}),
    "Log1p": lambda r: ([_pos(r, 2, 3)], {}),
    "Neg": lambda r: ([_r(r, 2, 3)], {}),
    "Abs": lambda r: ([_away(r, 2, 3)], {}),
    "Sin": lambda r: ([_r(r, 2, 3)], {}),
    "Cos": lambda r: ([_r(r, 2, 3)], {}),
    "Tanh": lambda r: ([_r(r, 2, 3)], {}),
    "Sigmoid": lambda r: ([_r(r, 2, 3)], {}),
    "Softplus": lambda r: ([_r(r, 2, 3)], {}),
    "Relu": lambda r: ([_away(r, 2, 3)], {}),
    "Relu6": lambda r: ([_away(r, 3, 4)], {}),
    "Elu": lambda r: ([_away(r, 2, 3)], {}),
    "Selu": lambda r: ([_away(r, 2, 3)], {}),
    "LeakyRelu": lambda r: ([_away(r, 2, 3)], {"alpha": 0.2}),
    "Cast": lambda r: ([_r(r, 2, 3)], {"DstT": tf.float64}),
    "Identity": lambda r: ([_r(r, 2, 3)], {}),
    "ReadVariableOp": None,  # checked apart: its input is a variable's handle
    "L2Loss": lambda r: ([_r(r, 2, 3)], {}),
    "ClipByValue": lambda r: ([_r(r, 2, 3), np.array(-0.5, F32), np.array(0.7, F32)], {}),
    "Select": lambda r: ([_r(r, 2, 3) > 0, _r(r, 2, 3), _r(r, 2, 3)], {}),
    "SelectV2": lambda r: ([_r(r, 3) > 0, _r(r, 2, 3), _r(r, 2, 3)], {}),
    "StopGradient": lambda r: ([_r(r, 2, 3)], {}),
    "MatMul": lambda r: ([_r(r, 2, 4), _r(r, 4, 3)], {}),
    "BatchMatMulV2": lambda r: ([_r(r, 2, 2, 4), _r(r, 4, 3)], {}),
    "Sum": lambda r: ([_r(r, 2, 3, 4), np.array([0, 2], np.int32)], {"keep_dims": False}),
    "Mean": lambda r: ([_r(r, 2, 3, 4), np.array([1], np.int32)], {"keep_dims": True}),
    "Max": lambda r: (
        [np.array([[1.0, 3.0, 3.0], [2.0, -1.0, 0.5]], F32), np.array(1, np.int32)],
        {"keep_dims": False},
    ),
    "Min": lambda r: ([_r(r, 3, 4), np.array(0, np.int32)], {"keep_dims": False}),
    "Prod": lambda r: (
        [np.where(np.arange(12).reshape(3, 4) == 5, F32(0), _r(r, 3, 4)), np.array([1], np.int32)],
        {"keep_dims": False},
    ),
    "Pack": lambda r: ([_r(r, 2, 3), _r(r, 2, 3), _r(r, 2, 3)], {"axis": 1}),
    "MaxPool": lambda r: ([_r(r, 2, 5, 6, 3)], {"ksize": [1, 2, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}),
    "AvgPool": lambda r: ([_r(r, 2, 5, 6, 3)], {"ksize": [1, 3, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}),
    "Einsum": lambda r: ([_r(r, 2, 3, 4), _r(r, 4, 3, 5)], {"equation": "bij,jik->bk"}),
    "Reshape": lambda r: ([_r(r, 2, 6), np.array([3, 4], np.int32)], {}),
    "ExpandDims": lambda r: ([_r(r, 2, 3), np.array(1, np.int32)], {}),
    "Squeeze": lambda r: ([_r(r, 2, 1, 3)], {"axis": [1]}),
    "Transpose": lambda r: ([_r(r, 2, 3, 4), np.array([2, 0, 1], np.int32)], {}),
    "ConcatV2": lambda r: ([_r(r, 2, 3), _r(r, 2, 1), _r(r, 2, 2), np.array(1, np.int32)], {}),
    "GatherV2": lambda r: ([_r(r, 5, 3), np.array([[0, 2], [2, 4]], np.int32), np.array(0, np.int32)], {}),
    "Tile": lambda r: ([_r(r, 2, 3), np.array([2, 3], np.int32)], {}),
    "Pad": lambda r: ([_r(r, 2, 3), np.array([[1, 0], [2, 1]], np.int32)], {}),
    "Slice": lambda r: ([_r(r, 4, 5), np.array([1, 2], np.int32), np.array([2, -1], np.int32)], {}),
    "StridedSlice": lambda r: (
        [_r(r, 4, 5), np.array([1, 0], np.int32), np.array([4, 5], np.int32), np.array([2, 2], np.int32)],
        {"begin_mask": 2},
    ),
    "Softmax": lambda r: ([_r(r, 2, 4)], {}),
    "LogSoftmax": lambda r: ([_r(r, 2, 4)], {}),
    "SoftmaxCrossEntropyWithLogits": lambda r: ([_r(r, 3, 4), tf.nn.softmax(_r(r, 3, 4)).numpy()], {}),
    "SparseSoftmaxCrossEntropyWithLogits": lambda r: ([_r(r, 3, 4), np.array([0, 3, 1], np.int32)], {}),
    "Conv2D": lambda r: ([_r(r, 2, 5, 6, 3), _r(r, 3, 2, 3, 4)], {"strides": [1, 2, 1, 1], "padding": "SAME"}),
}
MATMUL_FORMS = [(ta, tb) for ta in (False, True) for tb in (False, True)]


def _differentiable(entry, inputs, attrs):
    return [k for k in range(len(inputs)) if entry.partial(k, len(inputs), attrs) is not None]


def _tf_gradient(entry, inputs, attrs, g_seed):
    """TF's registered gradient of the op at ``inputs`` for a random arriving gradient, per input."""
    tensors = [tf.constant(x) for x in inputs]
    with tf.GradientTape(persistent=True) as tape:
        for t in tensors:
            if t.dtype.is_floating:
                tape.watch(t)
        if entry.variadic:
            fixed = len(entry.inputs) - 1
            n = len(tensors) - fixed
            named = {entry.inputs[0]: tensors[:n], **dict(zip(entry.inputs[1:], tensors[n:], strict=True))}
        else:
            named = dict(zip(entry.inputs, tensors, strict=True))
        out = getattr(tf.raw_ops, entry.op)(**named, **attrs)
        out = out[0] if isinstance(out, (list, tuple)) else out
    g = np.random.default_rng(g_seed).uniform(-1, 1, size=out.shape).astype(out.dtype.as_numpy_dtype)
    grads = tape.gradient(out, tensors, output_gradients=tf.constant(g))
    return g, grads


def _attrs_as_recorded(attrs):
    """Attributes as a recorded op holds them (a dtype by name, a string as bytes)."""
    return {
        k: (v.name if isinstance(v, tf.DType) else v.encode() if isinstance(v, str) else v) for k, v in attrs.items()
    }


@pytest.mark.parametrize("op", sorted(TABLE))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_entry_matches_tensorflows_registered_gradient(op, seed):
    assert op in CASES, f"add a case for {op}: every entry of the table is checked against TF"
    if CASES[op] is None:
        pytest.skip("checked by its own test")
    entry = TABLE[op]
    inputs, attrs = CASES[op](np.random.default_rng(seed))
    g, grads = _tf_gradient(entry, inputs, attrs, seed + 100)
    if entry.stops:
        assert all(x is None for x in grads)
        return
    checked = _differentiable(entry, inputs, attrs)
    assert checked, op
    for k in checked:
        want = tf.convert_to_tensor(grads[k]).numpy()
        got = entry.expected(g, inputs, _attrs_as_recorded(attrs), k)
        assert got.shape == want.shape, (op, k)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5, err_msg=f"{op} input {k}")
    for k in set(range(len(inputs))) - set(checked):  # no partial: TF passes nothing there either
        assert grads[k] is None or not np.asarray(inputs[k]).dtype.kind == "f", (op, k)


@pytest.mark.parametrize("ta,tb", MATMUL_FORMS)
@pytest.mark.parametrize(
    "op,names", [("MatMul", ("transpose_a", "transpose_b")), ("BatchMatMulV2", ("adj_x", "adj_y"))]
)
def test_matmul_forms_match_tensorflow(op, names, ta, tb):
    rng = np.random.default_rng(3)
    a = _r(rng, 4, 2) if ta else _r(rng, 2, 4)
    b = _r(rng, 3, 4) if tb else _r(rng, 4, 3)
    attrs = {names[0]: ta, names[1]: tb}
    entry = TABLE[op]
    g, grads = _tf_gradient(entry, [a, b], attrs, 7)
    for k in (0, 1):
        np.testing.assert_allclose(entry.expected(g, [a, b], attrs, k), grads[k].numpy(), rtol=1e-4, atol=1e-5)
        assert entry.partial(k, 2, attrs).when == ((names[0], ta), (names[1], tb))


def test_read_variable_passes_the_gradient_unchanged():
    v = tf.Variable([[1.0, 2.0]])
    g = np.array([[0.3, -0.4]], F32)
    with tf.GradientTape() as tape:
        out = v.read_value()  # a ReadVariableOp
    want = tape.gradient(out, v, output_gradients=tf.constant(g)).numpy()
    np.testing.assert_allclose(TABLE["ReadVariableOp"].expected(g, [v.numpy()], {}, 0), want)


def test_the_table_covers_the_ops_the_issue_names():
    named = """Add Sub Mul RealDiv Pow Square Sqrt Exp Log Neg Tanh Sigmoid Relu Softmax MatMul BiasAdd Sum Mean
    Reshape Transpose ConcatV2 GatherV2 Conv2D Maximum Minimum ClipByValue Cast Identity AddV2 AddN Abs Rsqrt
    Reciprocal Softplus Elu LeakyRelu Relu6 Selu Log1p Expm1 Sin Cos SquaredDifference Max Min BatchMatMulV2
    ReadVariableOp StopGradient L2Loss SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits
    LogSoftmax Select SelectV2 Tile ExpandDims Squeeze Pad StridedSlice Slice Prod MaxPool AvgPool Pack""".split()
    assert set(named) <= set(TABLE) and len(TABLE) >= 40
    assert lookup("FusedBatchNormV3") is None  # no honest short formula: TF's registered gradient is named instead


def test_formulas_are_written_and_folded():
    pow_x = TABLE["Pow"].partial(0, 2).local
    assert f.render(pow_x) == "y·x^(y − 1)"
    assert f.render(f.bind(pow_x, {"y": 2.0})) == "2·x"
    assert f.render(f.bind(pow_x, {"y": 3.0}, {"x": "w"})) == "3·w²"
    assert f.render(TABLE["Tanh"].partial(0, 1).local) == "1 − tanh(x)²"
    assert f.render(TABLE["Sigmoid"].partial(0, 1).local) == "σ(x)·(1 − σ(x))"
    relu = TABLE["Relu"].partial(0, 1).local
    assert f.render(relu, "en") == "(1 if features > 0 else 0)"
    assert f.render(relu, "zh") == "(features > 0 时为 1，否则为 0)"
    assert f.render(TABLE["RealDiv"].partial(1, 2).local) == "−(x/y²)"
    assert f.names(TABLE["LeakyRelu"].partial(0, 1).local) == {"features", "alpha"}
    assert f.render(f.bind(TABLE["LeakyRelu"].partial(0, 1).local, {"alpha": 0.2})) == "(1 if features > 0 else 0.2)"


def test_unbroadcast_sums_over_broadcast_axes():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(unbroadcast(a, (3,)), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(unbroadcast(a, (2, 1)), [[3.0], [12.0]])
    np.testing.assert_array_equal(unbroadcast(a, (2, 3)), a)


def test_a_formula_naming_an_unknown_input_is_a_clear_error():
    with pytest.raises(KeyError, match="names 'q'"):
        f.evaluate(f.Var("q"), {"x": 1.0})


@pytest.mark.parametrize(
    "equation,shapes",
    [
        ("ab,bc->ac", [(2, 3), (3, 4)]),
        ("ij,jk->k", [(2, 3), (3, 4)]),  # i only in the first operand, summed away: broadcast back
        ("bqhd,bkhd->bhqk", [(2, 3, 2, 4), (2, 5, 2, 4)]),  # attention's scores
        ("bhqk,bkhd->bqhd", [(2, 2, 3, 5), (2, 5, 2, 4)]),
    ],
)
def test_einsum_forms_match_tensorflow(equation, shapes):
    rng = np.random.default_rng(5)
    inputs = [_r(rng, *s) for s in shapes]
    entry = TABLE["Einsum"]
    g, grads = _tf_gradient(entry, inputs, {"equation": equation}, 9)
    for k in (0, 1):
        got = entry.expected(g, inputs, {"equation": equation.encode()}, k)
        np.testing.assert_allclose(got, grads[k].numpy(), rtol=1e-4, atol=1e-5)
