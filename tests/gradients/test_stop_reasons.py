"""One small program per stop-reason code: fl.why_none(...) names the reason and the
variable or op in plain words, agrees with tape.gradient returning None, and the cut
edges show up in fl.stopped with the same reason."""

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.flow import REASONS, StopReason


def check_none(fl, tape, target, obj, reason, *words):
    """TF gives no gradient for obj, and tapeviz says why, naming `words`."""
    if tape is not None:
        assert tape.gradient(target, obj) is None
    assert fl.grad(obj) is None
    r = fl.why_none(obj)
    assert isinstance(r, StopReason), r
    assert r.reason == reason, str(r)
    assert r.reason in REASONS
    for w in words:
        assert w in r.message, f"{w!r} not in {r.message!r}"
    return r


def out_edge_reasons(fl, obj):
    """{reason} of the stopped edges leaving obj's node."""
    node = fl.graph.node_of(obj) if not isinstance(obj, str) else obj
    assert node is not None
    return {s.reason for s in fl.stopped if isinstance(s.where, tuple) and s.where[0] == node}


def node_reason(fl, obj):
    node = fl.graph.node_of(obj) if not isinstance(obj, str) else obj
    found = [s for s in fl.stopped if s.where == node]
    assert len(found) == 1, found
    return found[0]


def assert_stopped_consistent(fl):
    """Every edge or node without gradient has exactly one entry, with a known reason,
    and nothing that carries gradient is listed."""
    g = fl.graph
    wheres = [s.where for s in fl.stopped]
    assert len(wheres) == len(set(wheres))
    for s in fl.stopped:
        assert s.reason in REASONS, s
        assert s.message and isinstance(s.message, str)
        if isinstance(s.where, tuple):
            u, v, k = s.where
            assert g.nx.has_edge(u, v, k)
            assert fl.edge_grad(u, v, k) is None
        else:
            assert s.where in g.nx
            assert fl.grad(s.where) is None
    for u, v, k in g.nx.edges(keys=True):
        if fl.edge_grad(u, v, k) is None:
            assert (u, v, k) in wheres, (u, v, k)


# --------------------------------------------------------------------------- stop_gradient


def test_stop_gradient():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        z = x**2 + tf.stop_gradient(y) * x
    fl = tv.flow(tape, z)
    check_none(fl, tape, z, y, "stop_gradient", "y", "stop_gradient")
    assert fl.grad(x) == tape.gradient(z, x).numpy() == 7.0
    assert fl.why_none(x) is None
    assert out_edge_reasons(fl, y) == {"stop_gradient"}
    assert node_reason(fl, y).reason == "stop_gradient"
    assert_stopped_consistent(fl)


def test_stop_gradient_on_intermediate():
    x = tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        h = x * 3.0
        frozen = tf.stop_gradient(h)
        z = frozen * frozen
    fl = tv.flow(tape, z)
    check_none(fl, tape, z, x, "stop_gradient", "stop_gradient")
    check_none(fl, tape, z, h, "stop_gradient", "h")
    assert out_edge_reasons(fl, h) == {"stop_gradient"}
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- not_recorded


def test_not_recorded_stop_recording():
    x = tf.Variable(2.0)
    w = tf.Variable(5.0)
    with tv.GradientTape(persistent=True) as tape:
        with tape.stop_recording():
            a = x * 2.0
        y = a * w
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, x, "not_recorded", "stop_recording", "a")
    check_none(fl, tape, y, a, "not_recorded", "stop_recording", "a")
    assert fl.grad(w) == 4.0
    assert out_edge_reasons(fl, x) == {"not_recorded"}
    assert_stopped_consistent(fl)


def test_not_recorded_reset():
    x = tf.Variable(2.0)
    w = tf.Variable(5.0)
    with tv.GradientTape(persistent=True) as tape:
        b = w * 2.0
        tape.reset()
        y = x * 3.0 + b
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, w, "not_recorded", "reset", "b")
    check_none(fl, tape, y, b, "not_recorded", "reset", "b")
    assert fl.grad(x) == tape.gradient(y, x).numpy() == 3.0
    assert out_edge_reasons(fl, w) == {"not_recorded"}
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- not_watched


def test_not_watched_constant():
    x = tf.Variable(2.0)
    c = tf.constant(4.0)
    with tv.GradientTape(persistent=True) as tape:
        d = c * 2.0
        y = x * d
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, c, "not_watched", "c", "tape.watch")
    check_none(fl, tape, y, d, "not_watched", "c")  # the cause upstream is named
    assert fl.grad(x) == 8.0
    assert out_edge_reasons(fl, c) == {"not_watched"}
    assert_stopped_consistent(fl)


def test_not_watched_non_trainable_variable():
    x = tf.Variable(2.0)
    nt = tf.Variable(3.0, trainable=False)
    with tv.GradientTape(persistent=True) as tape:
        y = x * nt
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, nt, "not_watched", "nt", "trainable=False")
    assert fl.grad(x) == 3.0
    assert out_edge_reasons(fl, nt) == {"not_watched"}
    assert_stopped_consistent(fl)


def test_not_watched_watch_accessed_variables_false():
    x = tf.Variable(2.0)
    w = tf.Variable(3.0)
    with tv.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = x * w
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, w, "not_watched", "w", "watch_accessed_variables=False")
    assert fl.grad(x) == 3.0
    assert out_edge_reasons(fl, w) == {"not_watched"}
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- integer_dtype


def test_integer_dtype_cast_round_trip():
    x = tf.Variable(2.7)
    with tv.GradientTape(persistent=True) as tape:
        i = tf.cast(x, tf.int32)
        y = tf.cast(i, tf.float32) * 2.0
    fl = tv.flow(tape, y)
    r = check_none(fl, tape, y, x, "integer_dtype", "i", "int32")
    assert "float" in r.message
    check_none(fl, None, y, i, "integer_dtype", "i", "int32")
    assert out_edge_reasons(fl, i) == {"integer_dtype"}
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- no_gradient


def test_no_gradient_round():
    x = tf.Variable(2.7)
    with tv.GradientTape(persistent=True) as tape:
        r = tf.round(x)
        y = r * 2.0
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, x, "no_gradient", "Round", "x")
    # r itself is on the tape and gets a gradient; the cut is at Round.
    assert fl.grad(r) == 2.0
    assert out_edge_reasons(fl, x) == {"no_gradient"}
    assert_stopped_consistent(fl)


def test_no_gradient_argmax():
    v = tf.Variable([1.0, 5.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        best = tf.argmax(v)
        y = tf.cast(best, tf.float32) * 2.0
    fl = tv.flow(tape, y)
    # Casting the index to float does not help: ArgMax itself has no gradient.
    check_none(fl, tape, y, v, "no_gradient", "ArgMax")
    assert out_edge_reasons(fl, v) == {"no_gradient"}
    # Asked about the integer index itself, its dtype is the answer.
    check_none(fl, None, y, best, "integer_dtype", "best", "int64")
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- stateful


def test_stateful_assign_add():
    x = tf.Variable(2.0)
    v = tf.Variable(1.0)
    with tv.GradientTape(persistent=True) as tape:
        v.assign_add(x * 2)
        y = v * 3.0
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, x, "stateful", "v", "AssignAddVariableOp")
    assert fl.grad(v) == tape.gradient(y, v).numpy() == 3.0
    assert y.numpy() == 15.0
    assign = [n for n, d in fl.graph.nx.nodes(data=True) if d.get("op_type") == "AssignAddVariableOp"]
    assert len(assign) == 1
    stateful_edges = [s for s in fl.stopped if isinstance(s.where, tuple) and s.where[1] == assign[0]]
    assert {s.reason for s in stateful_edges} >= {"stateful"}
    assert_stopped_consistent(fl)


def test_stateful_assign():
    x = tf.Variable(2.0)
    v = tf.Variable(0.0)
    with tv.GradientTape(persistent=True) as tape:
        h = x * x
        v.assign(h)
        y = v + 1.0
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, x, "stateful", "v", "AssignVariableOp")
    check_none(fl, tape, y, h, "stateful", "h", "v")
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- outside_tf


def test_outside_tf_numpy_round_trip():
    x = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        y = x * 2
        z = tf.constant(y.numpy()) * 3
    fl = tv.flow(tape, z)
    check_none(fl, tape, z, x, "outside_tf", "y", ".numpy()")
    check_none(fl, tape, z, y, "outside_tf", "y", ".numpy()")
    outside = [s for s in fl.stopped if isinstance(s.where, tuple) and s.where[2] == "outside"]
    assert len(outside) == 1 and outside[0].reason == "outside_tf"
    assert outside[0].where[0] == fl.graph.node_of(y)
    assert_stopped_consistent(fl)


def test_outside_tf_float_round_trip():
    x = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        y = x * 2
        z = tf.constant(float(y)) * 3
    fl = tv.flow(tape, z)
    check_none(fl, tape, z, x, "outside_tf", "y")
    assert_stopped_consistent(fl)


# --------------------------------------------------------------------------- unconnected


def test_unconnected_variable():
    x = tf.Variable(2.0)
    u = tf.Variable(1.0)
    with tv.GradientTape(persistent=True) as tape:
        q = u * 2.0
        y = x * 3.0
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, u, "unconnected", "u", "y")
    check_none(fl, tape, y, q, "unconnected", "q", "y")
    assert fl.grad(x) == 3.0
    assert out_edge_reasons(fl, u) == {"unconnected"}
    assert_stopped_consistent(fl)


def test_unconnected_never_used_variable():
    x = tf.Variable(2.0)
    unused = tf.Variable(1.0)
    with tv.GradientTape(persistent=True) as tape:
        y = x * 3.0
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, unused, "unconnected", "unused")


def test_every_reason_code_is_covered_by_this_module():
    covered = {
        "stop_gradient",
        "not_recorded",
        "not_watched",
        "integer_dtype",
        "no_gradient",
        "stateful",
        "outside_tf",
        "unconnected",
    }
    assert covered == set(REASONS)


@pytest.mark.parametrize("plain", [False, True])
def test_reasons_same_with_tv_record(plain):
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    if plain:
        with tf.GradientTape() as tape, tv.record(tape) as rec:
            z = x**2 + tf.stop_gradient(y)
        src = rec
    else:
        with tv.GradientTape() as tape:
            z = x**2 + tf.stop_gradient(y)
        src = tape
    fl = tv.flow(src, z)
    assert fl.why_none(y).reason == "stop_gradient"
    assert "y" in fl.why_none(y).message
    np.testing.assert_array_equal(fl.grad(x), 4.0)


# --------------------------------------------------------------------------- timing of watch / reset


def test_not_watched_tensor_watched_after_use():
    c = tf.constant(1.5)
    with tv.GradientTape(persistent=True) as tape:
        early = c * 2.0  # before the watch: not recorded
        tape.watch(c)
        late = c * 3.0
        total = early + late
    fl = tv.flow(tape, total)
    assert fl.grad(c) == tape.gradient(total, c).numpy() == 3.0
    check_none(fl, tape, total, early, "not_watched", "early", "tape.watch(c)")
    assert_stopped_consistent(fl)


def test_not_watched_variable_watched_after_use():
    x = tf.Variable(2.0)
    with tv.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        a = x * 2.0
        tape.watch(x)
        b = x * 3.0
        total = a + b
    fl = tv.flow(tape, total)
    assert fl.grad(x) == tape.gradient(total, x).numpy() == 3.0
    check_none(fl, tape, total, a, "not_watched", "a", "tape.watch(x)")
    assert_stopped_consistent(fl)


def test_late_watch_still_collects_from_ops_recorded_for_other_reasons():
    # TF keeps what reaches a tensor the tape knows at gradient time, even through an op
    # recorded before the watch (recorded because of x).
    x = tf.Variable(2.0)
    c = tf.constant(1.5)
    with tv.GradientTape(persistent=True) as tape:
        a = x * c
        tape.watch(c)
        b = c * 3.0
        s = a + b
    fl = tv.flow(tape, s)
    assert fl.grad(c) == tape.gradient(s, c).numpy() == 5.0
    assert sorted(float(v) for _, v in fl.contributions(c)) == [2.0, 3.0]


def test_not_recorded_watch_erased_by_reset():
    x = tf.Variable(2.0)
    e = tf.constant(2.0)
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(e)
        tape.reset()
        y = e * 4.0 + x
    fl = tv.flow(tape, y)
    check_none(fl, tape, y, e, "not_recorded", "reset", "e")
    assert fl.grad(x) == 1.0
    assert_stopped_consistent(fl)


@pytest.mark.parametrize("plain", [False, True])
def test_not_recorded_reset_after_last_op(plain):
    x = tf.Variable(2.0)
    if plain:
        with tf.GradientTape(persistent=True) as tape, tv.record(tape) as rec:
            y = x * 2.0
            tape.reset()
        fl = tv.flow(rec, y)
    else:
        with tv.GradientTape(persistent=True) as tape:
            y = x * 2.0
            tape.reset()
        fl = tv.flow(tape, y)
    check_none(fl, tape, y, x, "not_recorded", "reset")
    assert_stopped_consistent(fl)
