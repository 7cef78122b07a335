"""Capture: hooks come and go cleanly, tv.GradientTape is a true drop-in for
tf.GradientTape, and the recorded graph shows what the program did."""

import threading

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import record as tf_record
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.ops import resource_variable_ops

import tapeviz as tv
from tapeviz.record import callsites, hooks


def current_functions():
    return {
        "fast": pywrap_tfe.TFE_Py_FastPathExecute,
        "read": resource_variable_ops.BaseResourceVariable._read_variable_op,
        "accessed": resource_variable_ops.variable_accessed,
        "numpy": tf_ops._EagerTensorBase.numpy,
        "float": tf_ops._EagerTensorBase.__float__,
        "array": tf_ops._EagerTensorBase.__array__,
        "record": tf_record.record_operation,
        "record_bp": tf_record.record_operation_backprop_only,
    }


# TF's own functions, looked up before any tapeviz tape was entered in this process.
ORIGINALS = current_functions()


def assert_clean():
    assert not hooks.hooks_installed()
    assert hooks.callbacks_on_this_thread() == 0
    now = current_functions()
    for k, f in ORIGINALS.items():
        assert now[k] is f, f"{k} is still patched: {now[k]!r}"


def op_types(graph):
    return [d["op_type"] for _, d in graph.nx.nodes(data=True) if d["kind"] == "op"]


def nodes_of_kind(graph, kind):
    return {n: d for n, d in graph.nx.nodes(data=True) if d["kind"] == kind}


# --------------------------------------------------------------------------- hooks


def test_hooks_only_inside_block_normal_exit():
    assert_clean()
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        assert hooks.hooks_installed()
        assert hooks.callbacks_on_this_thread() == 1
        assert pywrap_tfe.TFE_Py_FastPathExecute is not ORIGINALS["fast"]
        y = x * x
    assert_clean()
    assert tape.gradient(y, x).numpy() == 6.0
    assert_clean()
    tv.flow(tape, y)
    assert_clean()


class Boom(Exception):
    pass


def test_hooks_removed_after_exception_and_exception_unchanged():
    x = tf.Variable(3.0)
    err = Boom("inside the block")
    with pytest.raises(Boom) as info:
        with tv.GradientTape() as tape:
            y = x * 2.0
            raise err
    assert info.value is err
    assert_clean()
    # What was recorded before the exception is still available.
    assert "Mul" in op_types(tape.graph)
    assert tv.flow(tape, y).grad(x) == 2.0


def test_hooks_removed_after_tf_error_inside_block():
    x = tf.Variable([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        with tv.GradientTape():
            tf.matmul(tf.reshape(x, [1, 2]), tf.ones([3, 1]))
    assert_clean()


def test_hooks_removed_after_exception_with_tv_record():
    x = tf.Variable(3.0)
    with pytest.raises(Boom):
        with tf.GradientTape() as tape, tv.record(tape) as rec:
            assert hooks.hooks_installed()
            assert hooks.callbacks_on_this_thread() == 1
            y = x * 2.0
            raise Boom()
    assert_clean()
    assert "watch" not in tape.__dict__  # the instance patch of watch() is gone too
    assert tv.flow(rec, y).grad(x) == 2.0


def test_nested_hooks_reference_counted():
    x = tf.Variable(3.0)
    with tv.GradientTape() as outer:
        with tv.GradientTape():
            assert hooks.callbacks_on_this_thread() == 2
            y = x * x
        assert hooks.hooks_installed()
        assert hooks.callbacks_on_this_thread() == 1
        z = y * 2.0
    assert_clean()
    assert tv.flow(outer, z).grad(x) == 12.0


def test_wrappers_looked_up_during_recording_still_work_afterwards():
    # Another thread may fetch a patched function just before the last tape exits and
    # call it just after: it must still reach TensorFlow.
    from tensorflow.python.eager import context

    with tv.GradientTape():
        fast = pywrap_tfe.TFE_Py_FastPathExecute
        to_numpy = tf_ops._EagerTensorBase.numpy
        to_float = tf_ops._EagerTensorBase.__float__
    assert_clean()
    c = tf.constant(2.5)
    assert to_numpy(c) == 2.5
    assert to_float(c) == 2.5
    out = fast(context.context(), "Identity", None, c)
    out = out[0] if isinstance(out, (list, tuple)) else out
    assert out.numpy() == 2.5


# --------------------------------------------------------------------------- drop-in


def _prog_scalar(x, w, b):
    return x**2 + 3.0 * x


def _prog_mlp(x, w, b):
    h = tf.tanh(tf.matmul(x, w) + b)
    return tf.reduce_mean(tf.square(h - 0.5))


def _prog_shared(x, w, b):
    s = tf.reduce_sum(x * x)
    return s * tf.reduce_sum(tf.sigmoid(w)) + tf.reduce_sum(tf.stop_gradient(b) * b)


def _prog_int_and_clip(x, w, b):
    c = tf.clip_by_norm(tf.matmul(x, w), 1.0)
    i = tf.cast(tf.cast(c * 10.0, tf.int32), tf.float32)
    return tf.reduce_sum(c * i) + tf.reduce_sum(tf.clip_by_value(b, -0.1, 0.1))


def _prog_gather(x, w, b):
    return tf.reduce_sum(tf.gather(w, [0, 1, 1], axis=1)) + tf.reduce_sum(tf.nn.bias_add(x @ w, b))


def _prog_tf_function(x, w, b):
    @tf.function
    def f(a, m):
        return tf.sin(a) @ m

    return tf.reduce_sum(f(x, w) * b)


PROGRAMS = [_prog_scalar, _prog_mlp, _prog_shared, _prog_int_and_clip, _prog_gather, _prog_tf_function]


def _make_vars():
    x = tf.Variable([[0.3, -1.2], [2.0, 0.7]], name="x")
    w = tf.Variable([[0.5, -0.25, 1.5], [1.0, 0.75, -2.0]], name="w")
    b = tf.Variable([0.1, -0.2, 0.3], name="b")
    return x, w, b


def _run(tape_cls, prog, **kw):
    x, w, b = _make_vars()
    with tape_cls(**kw) as tape:
        out = prog(x, w, b)
    return tape, out, (x, w, b)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.__name__)
def test_gradient_identical_to_tf(prog):
    t_tf, out_tf, vs_tf = _run(tf.GradientTape, prog)
    t_tv, out_tv, vs_tv = _run(tv.GradientTape, prog)
    np.testing.assert_array_equal(out_tv.numpy(), out_tf.numpy())
    g_tf = t_tf.gradient(out_tf, vs_tf)
    g_tv = t_tv.gradient(out_tv, vs_tv)
    for a, b in zip(g_tv, g_tf, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert type(a) is type(b)
            np.testing.assert_array_equal(tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy())
    assert_clean()


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.__name__)
def test_flow_matches_tape_gradient(prog):
    tape, out, vs = _run(tv.GradientTape, prog, persistent=True)
    fl = tv.flow(tape, out)
    for v in vs:
        want = tape.gradient(out, v)
        got = fl.grad(v)
        if want is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, tf.convert_to_tensor(want).numpy())
            parts = [c for _, c in fl.contributions(v)]
            np.testing.assert_allclose(np.sum(parts, axis=0), got, rtol=1e-6, atol=1e-6)
    del tape


def test_jacobians_identical_to_tf():
    def run(cls):
        x = tf.Variable([1.0, 2.0, 3.0])
        xb = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with cls(persistent=True) as tape:
            tape.watch(xb)
            y = tf.sin(x) * x
            z = xb * xb * tf.reduce_sum(x)
        return tape.jacobian(y, x).numpy(), tape.batch_jacobian(z, xb).numpy(), tape.jacobian(z, x).numpy()

    got, want = run(tv.GradientTape), run(tf.GradientTape)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert_clean()


def test_watch_accessed_variables_false_identical():
    def run(cls):
        x = tf.Variable(2.0)
        w = tf.Variable(3.0)
        with cls(watch_accessed_variables=False) as tape:
            tape.watch(x)
            y = x * w
        return tape.gradient(y, [x, w]), [v.name for v in tape.watched_variables()]

    (gx, gw), names_tv = run(tv.GradientTape)
    (hx, hw), names_tf = run(tf.GradientTape)
    assert gx.numpy() == hx.numpy() == 3.0
    assert gw is None and hw is None
    assert names_tv == names_tf


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


@pytest.mark.parametrize("cls", [tv.GradientTape, tf.GradientTape])
def test_second_gradient_call_error_same_as_tf(cls):
    def second_call(tape_cls):
        x = tf.Variable(3.0)
        with tape_cls() as tape:
            y = x * x
        tape.gradient(y, x)
        return lambda: tape.gradient(y, x)

    want = _error_of(second_call(tf.GradientTape))
    got = _error_of(second_call(cls))
    assert want is not None
    assert got == want


def test_other_gradient_errors_same_as_tf():
    def bad_source(tape_cls):
        x = tf.Variable(3.0)
        with tape_cls() as tape:
            y = x * x
        return lambda: tape.gradient(y, "not a tensor")

    def gradient_inside_block_twice(tape_cls):
        x = tf.Variable(3.0)
        with tape_cls() as tape:
            y = x * x
            tape.gradient(y, x)
        return lambda: tape.gradient(y, x)

    for make in (bad_source, gradient_inside_block_twice):
        want = _error_of(make(tf.GradientTape))
        assert want is not None
        assert _error_of(make(tv.GradientTape)) == want, make.__name__


def test_target_computed_after_the_block_same_as_tf():
    for cls in (tv.GradientTape, tf.GradientTape):
        x = tf.Variable(3.0)
        with cls() as tape:
            pass
        assert tape.gradient(x * 2.0, x) is None


def test_second_derivative_with_nested_tapes():
    x = tf.Variable(3.0)
    with tv.GradientTape() as outer:
        with tv.GradientTape() as inner:
            y = x**3
        dy = inner.gradient(y, x)  # its ops run while the outer tape records
    d2 = outer.gradient(dy, x)
    assert dy.numpy() == 27.0 and d2.numpy() == 18.0
    assert tv.flow(inner, y).grad(x) == 27.0
    assert tv.flow(outer, dy).grad(x) == 18.0


def test_gradient_inside_block_of_non_persistent_tape():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x
        g = tape.gradient(y, x)
        z = y * 2.0  # the tape stopped recording at gradient()
    assert g.numpy() == 6.0
    assert tv.flow(tape, y).grad(x) == 6.0
    assert tv.flow(tape, z).grad(x) is None


def test_several_targets_and_output_gradients():
    x = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        y1 = x * 2.0
        y2 = x * x
    assert tv.flow(tape, [y1, y2]).grad(x) == tape.gradient([y1, y2], x).numpy() == 8.0
    og = [tf.constant(2.0), tf.constant(-1.0)]
    want = tape.gradient([y1, y2], x, output_gradients=og).numpy()
    assert tv.flow(tape, [y1, y2], output_gradients=og).grad(x) == want


@pytest.mark.parametrize("dtype", [tf.float64, tf.float16, tf.complex64])
def test_other_float_dtypes(dtype):
    v = tf.Variable(tf.cast([1.0, 2.0], dtype))
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.abs(v * v + tf.cast(1.0, dtype)))
    want = tape.gradient(y, v).numpy()
    got = tv.flow(tape, y).grad(v)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_tv_tape_is_a_gradient_tape():
    with tv.GradientTape() as tape:
        pass
    assert isinstance(tape, tf.GradientTape)


# --------------------------------------------------------------------------- flow and the tape


def test_flow_before_gradient_on_non_persistent_tape():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x
    fl = tv.flow(tape, y)
    assert fl.grad(x) == 6.0
    # flow did not use up the user's one gradient() call
    assert tape.gradient(y, x).numpy() == 6.0
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)
    assert tv.flow(tape, y).grad(x) == 6.0


def test_flow_after_gradient_on_non_persistent_tape():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x + tf.sin(x)
    g = tape.gradient(y, x)
    fl = tv.flow(tape, y)
    np.testing.assert_array_equal(fl.grad(x), g.numpy())


def test_flow_of_plain_tape_is_a_clear_error():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    with pytest.raises(TypeError, match=r"tv\.GradientTape|tv\.record"):
        tv.flow(tape, y)


def test_flow_of_target_outside_the_block_is_a_clear_error():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x
    with pytest.raises(ValueError, match="inside the"):
        tv.flow(tape, y * 2.0)


def test_graph_before_block_ends_is_a_clear_error():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        x * 2.0
        with pytest.raises(RuntimeError, match="with"):
            tape.graph  # noqa: B018


def test_flow_with_output_gradients_and_sources():
    x = tf.Variable([1.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        y = x * x
    og = tf.constant([10.0, -1.0])
    fl = tv.flow(tape, y, output_gradients=og, sources=[x])
    np.testing.assert_array_equal(fl.grad(x), tape.gradient(y, x, output_gradients=og).numpy())
    np.testing.assert_array_equal(fl.grad(x), [20.0, -4.0])


# --------------------------------------------------------------------------- tv.record


def test_record_on_plain_tape():
    x = tf.Variable(3.0)
    with tf.GradientTape() as t2, tv.record(t2) as rec:
        z = x * 2.0
    assert t2.gradient(z, x).numpy() == 2.0
    fl = tv.flow(rec, z)
    assert fl.grad(x) == 2.0
    assert isinstance(rec.graph, tv.TapeGraph)
    assert op_types(rec.graph) == ["Mul"]
    assert_clean()


def test_record_sees_watch_through_the_plain_tape():
    c = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t2, tv.record(t2) as rec:
        t2.watch(c)
        z = tf.reduce_sum(c * c)
    assert "watch" not in t2.__dict__
    assert nodes_of_kind(rec.graph, "watched")
    np.testing.assert_array_equal(tv.flow(rec, z).grad(c), [2.0, 4.0])


def test_record_outside_a_tape_block_raises():
    tape = tf.GradientTape()
    with pytest.raises(RuntimeError, match="inside the tape's `with` block"):
        with tv.record(tape):
            pass
    assert_clean()


def test_record_after_the_tape_block_raises():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        x * 2.0
    with pytest.raises(RuntimeError, match="inside the tape's `with` block"):
        with tv.record(tape):
            pass
    assert_clean()


@pytest.mark.parametrize("bad", [None, 3, "tape", tf.constant(1.0)])
def test_record_with_non_tape_raises(bad):
    with pytest.raises(TypeError, match="GradientTape"):
        tv.record(bad)
    assert_clean()


def test_reentering_a_recording_replaces_its_graph():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        rec = tv.record(tape)
        with rec:
            a = x * 2.0
        with rec:
            b = x * 5.0
    # The second recording replaced the first; it saw only its own ops.
    assert tv.flow(rec, b).grad(x) == 5.0
    with pytest.raises(ValueError):
        tv.flow(rec, a)


# --------------------------------------------------------------------------- nesting, threads


def test_nested_tv_tapes_each_get_their_own_graph():
    x = tf.Variable(3.0)
    with tv.GradientTape() as outer:
        a = x * 2.0
        with tv.GradientTape() as inner:
            y = x * x
        z = y + a
    assert outer.graph is not inner.graph
    assert op_types(inner.graph) == ["Mul"]
    assert sorted(op_types(outer.graph)) == ["AddV2", "Mul", "Mul"]
    assert tv.flow(inner, y).grad(x) == 6.0
    assert tv.flow(outer, z).grad(x) == 8.0
    with pytest.raises(ValueError):
        tv.flow(inner, z)  # z was made after the inner block


def test_nested_tv_tape_inside_plain_record():
    x = tf.Variable(3.0)
    with tf.GradientTape() as outer, tv.record(outer) as rec:
        with tv.GradientTape() as inner:
            y = x * x
        z = tf.sin(y)
    fl_outer = tv.flow(rec, z)
    np.testing.assert_array_equal(fl_outer.grad(x), outer.gradient(z, x).numpy())
    assert op_types(inner.graph) == ["Mul"]


def test_other_thread_ops_do_not_appear():
    x = tf.Variable(3.0)
    start, done = threading.Event(), threading.Event()
    box = {}

    def other():
        start.wait()
        try:
            v = tf.Variable(0.5)
            a = tf.constant([1.0, 2.0])
            for _ in range(5):
                a = tf.cos(a) * v + tf.stop_gradient(v)  # variable through the fast path
            box["value"] = a.numpy()
            box["is_array"] = isinstance(np.asarray(a), np.ndarray)
        except BaseException as e:  # noqa: BLE001
            box["error"] = e
        finally:
            done.set()

    th = threading.Thread(target=other)
    th.start()
    with tv.GradientTape() as tape:
        start.set()
        y = x * 2.0
        assert done.wait(60)
    th.join()
    assert "error" not in box, box.get("error")
    # The other thread got TF's results (no tapeviz rerouting there).
    want = tf.constant([1.0, 2.0])
    for _ in range(5):
        want = tf.cos(want) * 0.5 + 0.5
    np.testing.assert_allclose(box["value"], want.numpy(), rtol=1e-6)
    g = tape.graph
    assert op_types(g) == ["Mul"]
    assert len(nodes_of_kind(g, "variable")) == 1
    assert tv.flow(tape, y).grad(x) == 2.0


def test_recording_in_two_threads_at_once():
    results = {}
    barrier = threading.Barrier(2, timeout=60)  # a failing thread breaks it instead of hanging

    def work(name, factor):
        try:
            v = tf.Variable(float(factor))
            with tv.GradientTape() as tape:
                barrier.wait()
                y = v * v * factor
                barrier.wait()
            results[name] = (op_types(tape.graph), tv.flow(tape, y).grad(v), tape.gradient(y, v).numpy())
        except BaseException as e:  # noqa: BLE001
            results[name] = e

    threads = [threading.Thread(target=work, args=(n, f)) for n, f in (("a", 2), ("b", 3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, factor in (("a", 2), ("b", 3)):
        r = results[name]
        assert not isinstance(r, BaseException), r
        ops, fg, tg = r
        assert ops == ["Mul", "Mul"]
        assert fg == tg == 2 * factor * factor
    assert_clean()


# --------------------------------------------------------------------------- the graph


def test_x_times_x_gives_two_parallel_edges():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x
    g = tape.graph
    xn = g.node_of(x)
    (mul,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "Mul"]
    assert g.nx.number_of_edges(xn, mul) == 2
    assert set(g.nx[xn][mul]) == {0, 1}
    fl = tv.flow(tape, y)
    contribs = fl.contributions(x)
    assert [c[0] for c in contribs] == [mul, mul]
    assert [float(c[1]) for c in contribs] == [3.0, 3.0]
    assert fl.grad(x) == 6.0


def test_variables_hidden_by_fast_path_appear_with_python_names():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
        w = y * y
    g = tape.graph
    variables = nodes_of_kind(g, "variable")
    assert sorted(d["name"] for d in variables.values()) == ["x", "y"]
    yn = g.node_of(y)
    assert variables[yn]["name"] == "y"
    # no orphan inputs: every op input has a known producer
    assert not nodes_of_kind(g, "input")
    (stop,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "StopGradient"]
    assert list(g.nx.predecessors(stop)) == [yn]
    (sq,) = [n for n, d in g.nx.nodes(data=True) if d.get("name") == "w"]
    assert g.nx.number_of_edges(yn, sq) == 2
    del z, w  # kept to the end: tapeviz names the ops after these locals


def test_bias_add_variable_visible():
    x = tf.Variable([[1.0, 2.0]])
    b = tf.Variable([0.5, -0.5])
    with tv.GradientTape() as tape:
        out = tf.nn.bias_add(tf.matmul(x, tf.ones([2, 2])), b)
    g = tape.graph
    assert {d["name"] for d in nodes_of_kind(g, "variable").values()} == {"x", "b"}
    (ba,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "BiasAdd"]
    assert g.node_of(b) in set(g.nx.predecessors(ba))
    np.testing.assert_array_equal(tv.flow(tape, out).grad(b), [1.0, 1.0])


def _tape_in_helper():
    alpha = tf.Variable(1.5)
    with tv.GradientTape() as tape:
        out = alpha * 2.0
    return tape, out, alpha


def test_names_come_from_the_callers_frame():
    tape, out, alpha_var = _tape_in_helper()
    g = tape.graph
    assert g.nx.nodes[g.node_of(alpha_var)]["name"] == "alpha"
    assert g.nx.nodes[g.node_of(out)]["name"] == "out"


def test_unbound_variable_falls_back_to_its_tf_name():
    vs = [tf.Variable(1.0, name="anonymous")]
    with tv.GradientTape() as tape:
        out = vs[0] * 2.0
    g = tape.graph
    assert g.nx.nodes[g.node_of(vs[0])]["name"] == "anonymous"
    del out


def test_python_number_constants_are_constant_nodes():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * 2.5 + 7
    g = tape.graph
    consts = nodes_of_kind(g, "constant")
    values = sorted(float(g.value_of(n)) for n in consts)
    assert values == [2.5, 7.0]
    assert sorted(d["label"] for d in consts.values()) == ["2.5", "7.0"]
    for n in consts:
        assert list(g.nx.predecessors(n)) == []
        assert g.nx.out_degree(n) == 1
    del y


def test_watched_tensors_are_kind_watched():
    c = tf.constant([1.0, 2.0])
    d = tf.constant(4.0)
    with tv.GradientTape() as tape:
        tape.watch(c)
        y = tf.reduce_sum(c * d)
    g = tape.graph
    cn = g.node_of(c)
    assert g.nx.nodes[cn]["kind"] == "watched"
    assert g.nx.nodes[cn]["name"] == "c"
    dn = g.node_of(d)
    assert g.nx.nodes[dn]["kind"] != "watched"
    fl = tv.flow(tape, y)
    np.testing.assert_array_equal(fl.grad(c), [4.0, 4.0])
    assert fl.grad(d) is None


def test_large_tensors_keep_a_summary_not_a_value():
    big = tf.Variable(tf.reshape(tf.range(10000, dtype=tf.float32), [100, 100]))
    with tv.GradientTape(max_value_bytes=1000) as tape:
        y = tf.reduce_sum(big * 2.0)
    g = tape.graph
    infos = [i for i in g.tensors.values() if i.shape == (100, 100)]
    assert len(infos) == 2
    for info in infos:
        assert info.value is None
        assert info.summary["shape"] == (100, 100)
        assert info.summary["size"] == 10000
    read = g.tensors[g.output_info(g.node_of(big)).id]
    assert read.summary["min"] == 0.0 and read.summary["max"] == 9999.0
    np.testing.assert_allclose(read.summary["mean"], 4999.5)
    # small tensors keep their value
    assert g.tensors[y._id].value == y.numpy()
    # the flow still has exact gradients for the big variable
    np.testing.assert_array_equal(tv.flow(tape, y).grad(big), np.full((100, 100), 2.0, np.float32))


def test_default_keeps_values_of_moderate_tensors():
    m = tf.Variable(tf.ones([64, 64]))
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(m * 3.0)
    g = tape.graph
    for info in g.tensors.values():
        if info.dtype != "resource":
            assert info.value is not None
    del y


def test_values_of_small_tensors_equal_tf():
    x = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
    with tv.GradientTape() as tape:
        h = tf.matmul(x, x)
        s = tf.nn.relu(h - 1.0)
        i = tf.argmax(s, axis=1)
        y = tf.reduce_sum(s) + tf.cast(tf.reduce_sum(i), tf.float32)
    g = tape.graph
    seen = 0
    for info in g.tensors.values():
        if info.dtype == "resource":
            continue
        assert info.value is not None
        np.testing.assert_array_equal(info.value, info.ref.numpy())
        assert info.value.dtype == info.ref.numpy().dtype
        assert info.shape == tuple(info.ref.shape)
        seen += 1
    assert seen >= 8
    np.testing.assert_array_equal(g.tensors[h._id].value, h.numpy())
    np.testing.assert_array_equal(g.tensors[i._id].value, i.numpy())
    np.testing.assert_array_equal(g.value_of(g.node_of(x)), x.numpy())
    # Stored values are copies: later changes to the variable do not alter them.
    before = g.value_of(g.node_of(x)).copy()
    x.assign_add(tf.ones_like(x))
    np.testing.assert_array_equal(g.value_of(g.node_of(x)), before)
    del y


def test_tape_records_nothing_gives_clear_error():
    with tv.GradientTape() as tape:
        pass
    with pytest.raises(ValueError, match="no operations"):
        tv.flow(tape, tf.constant(1.0))


# --------------------------------------------------------------------------- custom gradients


def test_tf_function_inside_tape():
    x = tf.Variable([0.5, -1.0])

    @tf.function
    def f(a):
        return tf.sin(a) * a

    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(f(x) * 2.0)
    fl = tv.flow(tape, y)
    want = tape.gradient(y, x)
    assert want is not None
    np.testing.assert_array_equal(fl.grad(x), want.numpy())
    parts = [c for _, c in fl.contributions(x)]
    np.testing.assert_allclose(np.sum(parts, axis=0), fl.grad(x), rtol=1e-6)
    # One node for the call; the ops traced inside the function are not eager ops.
    types = op_types(tape.graph)
    assert "Sin" not in types
    (call,) = [t for t in types if "f" in t and t not in ("Mul", "Sum")]
    (call_node,) = [n for n, d in tape.graph.nx.nodes(data=True) if d.get("op_type") == call]
    assert tape.graph.nx.has_edge(tape.graph.node_of(x), call_node)


def test_custom_gradient_is_what_the_tape_differentiates():
    x = tf.Variable(3.0)

    @tf.custom_gradient
    def scaled(a):
        def grad(dy):
            return dy * 100.0

        return a * 2.0, grad

    with tv.GradientTape(persistent=True) as tape:
        y = scaled(x) * 2.0
    fl = tv.flow(tape, y)
    assert tape.gradient(y, x).numpy() == 200.0
    assert fl.grad(x) == 200.0
    g = tape.graph
    (node,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "scaled"]
    assert fl.edge_grad(g.node_of(x), node, 0) == 200.0
    # What comes out of the custom function hangs off its node, as on TF's tape.
    (mul,) = [n for n, d in g.nx.nodes(data=True) if d.get("name") == "y"]
    assert node in set(g.nx.predecessors(mul))
    assert g.node_of(y) == mul
    # The ops inside it are not differentiated, and the reason says so.
    (ident,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "Identity"]
    inner = [s for s in fl.stopped if isinstance(s.where, tuple) and s.where[1] == ident]
    assert inner and all("custom_gradient" in s.message and "scaled" in s.message for s in inner)


def test_custom_gradient_with_variables():
    x = tf.Variable(3.0)
    w = tf.Variable(2.0)

    @tf.custom_gradient
    def f(a):
        out = a * w

        def grad(dy, variables=None):
            return dy * 10.0, [dy * 7.0]

        return out, grad

    with tv.GradientTape(persistent=True) as tape:
        y = f(x) + x
    fl = tv.flow(tape, y)
    for v, want in ((x, 11.0), (w, 7.0)):
        assert tape.gradient(y, v).numpy() == want
        assert fl.grad(v) == want
        assert sum(float(c) for _, c in fl.contributions(v)) == want


def test_gradient_reaching_an_untracked_input_is_dropped_like_tf():
    # Select's gradient function returns a value for the constant branch too; TF's tape
    # drops it because the constant is not on the tape. So must the edges.
    w = tf.Variable([1.0, 2.0])
    c = tf.constant([5.0, 6.0])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.where([True, False], w, c)
    fl = tv.flow(tape, y)
    assert tape.gradient(y, c) is None
    assert fl.grad(c) is None
    assert fl.contributions(c) == []
    np.testing.assert_array_equal(fl.grad(w), tape.gradient(y, w).numpy())
    cn = fl.graph.node_of(c)
    reasons = [s for s in fl.stopped if isinstance(s.where, tuple) and s.where[0] == cn]
    assert [s.reason for s in reasons] == ["not_watched"]


def test_clip_by_norm_of_zero_contributions_add_up():
    v = tf.Variable([0.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.clip_by_norm(v, 1.0))
    fl = tv.flow(tape, y)
    np.testing.assert_array_equal(fl.grad(v), tape.gradient(y, v).numpy())
    g = fl.graph
    for n in g.nx.nodes:
        parts = [c for _, c in fl.contributions(n)]
        if fl.grad(n) is None:
            assert parts == [], n
        elif parts:
            np.testing.assert_allclose(np.sum(parts, axis=0), fl.grad(n), rtol=1e-6)


def test_target_gradient_is_the_seed_even_off_the_tape():
    x = tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        y = tf.stop_gradient(x) * 2.0
    fl = tv.flow(tape, y)
    assert tape.gradient(y, y).numpy() == 1.0
    assert fl.grad(y) == 1.0
    assert fl.grad(x) is None


def test_variables_inside_list_arguments_appear():
    # tf.concat / tf.add_n take a list: the C++ fast path would read variables in it unseen.
    a = tf.Variable([1.0, 2.0])
    b = tf.Variable([3.0, 4.0])
    w = tf.Variable(2.0)

    @tf.function
    def f(x):
        return x * w  # w is captured: the call op takes its handle

    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.concat([a, b], 0) ** 2) + tf.reduce_sum(tf.add_n([a, b, a])) + tf.reduce_sum(f(a))
    g = tape.graph
    assert not nodes_of_kind(g, "input")
    assert {d["name"] for d in nodes_of_kind(g, "variable").values()} == {"a", "b", "w"}
    (concat,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "ConcatV2"]
    assert {g.node_of(a), g.node_of(b)} <= set(g.nx.predecessors(concat))
    (add_n,) = [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "AddN"]
    assert g.nx.number_of_edges(g.node_of(a), add_n) == 2
    fl = tv.flow(tape, y)
    for v in (a, b, w):
        np.testing.assert_array_equal(fl.grad(v), tape.gradient(y, v).numpy())
    assert_clean()


def test_keras_code_is_told_by_the_keras_package_folder():
    """A user's own code in a folder called `keras` is user code: a plain tf.Variable it
    reads is looked at once, not again as if Keras code had read it."""
    import os

    import keras  # the Keras variable classes must be loaded

    codes = callsites._keras_variable_codes()
    user = compile("x = 1", os.path.join(os.sep, "home", "me", "keras", "train.py"), "exec")
    assert callsites._code_kind(user, codes) == callsites._OTHER
    ours = keras.layers.Dense.call.__code__
    assert callsites._code_kind(ours, codes) == callsites._KERAS


def test_untaken_branch_named_again_when_the_same_block_reruns():
    """The block's names are read from its bytecode once per code and offsets
    (blockvars memo); each run still binds them in its own frame: the branch not taken
    this time is the one reported unread."""
    v0, v1 = tf.Variable(1.0), tf.Variable(2.0)

    def step(first):
        with tv.GradientTape() as tape:
            result = v0 * 2.0 if first else v1**2
        tape.gradient(result, [v0, v1])
        return tape._tv_capture.settle()

    for first in (True, False, True):
        unread = step(first).unread
        expect = v1 if first else v0
        assert list(unread) == [expect.handle._id]


def test_block_names_of_plain_classes_skip_the_variable_test():
    """A block's tensors, numbers, functions and modules are told apart from variables by
    their class alone (blockvars._NOT_VARIABLES); variables, Keras variables and a
    value of such a class that wraps a variable as a Keras variable does still count."""
    import types

    import keras

    from tapeviz.record import blockvars

    assert not any(issubclass(c, tf.Variable) for c in blockvars._NOT_VARIABLES)
    for value in (tf.constant(1.0), 2, 2.5, "w", None, [1], (1,), {}, len, print, types, lambda: 0):
        assert type(value) in blockvars._NOT_VARIABLES
        assert blockvars._float_variables(value) == []
    v = tf.Variable(1.0)
    assert blockvars._float_variables(v) == [v]
    kv = keras.Variable(2.0)
    assert blockvars._float_variables(kv) == [kv.value]
    shim = types.SimpleNamespace(path="a/b", value=v)  # not in the set: tested as before
    assert blockvars._float_variables(shim) == [v]

    def wrapper():
        return None

    wrapper.path, wrapper.value = "a/fn", v  # a function dressed as a Keras variable
    assert blockvars._float_variables(wrapper) == [v]
