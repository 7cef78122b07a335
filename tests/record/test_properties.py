"""Property tests: random small programs over 1-3 variables / watched tensors.

For every program, tapeviz's flow must reproduce what TensorFlow's tape computes, for
every leaf and every recorded float intermediate, and the per-edge contributions of
every node must add up to that node's total gradient.

Besides element-wise ops, reductions and matmuls, the programs use the op families that
once broke capture or flow on real models: multi-output ops (tf.unstack, tf.split,
tf.math.top_k) with some outputs unused, eager tf.while_loop / tf.cond, Keras recurrent
cells stepped in a Python loop, and tf.py_function."""

import numpy as np
import pytest
import tensorflow as tf
from diagnosis_check import check_no_false_diagnosis
from hypothesis import HealthCheck, given, settings
from random_programs import NEW_FAMILIES, PY_FUNCTION, build, programs

import tapeviz as tv


def _np(g):
    if g is None:
        return None
    return tf.convert_to_tensor(g).numpy()


def _same_none(got, want, what):
    assert (got is None) == (want is None), f"{what}: tapeviz {got!r} vs TF {want!r}"


SETTINGS = dict(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(programs())
def test_flow_equals_tape_gradient_and_contributions_add_up(prog):
    check_program(prog)


@settings(max_examples=40, **SETTINGS)
@given(
    programs(
        ops=["add", "mul", "matmul", "tanh", "reduce_sum", "stop_gradient", "gather"] + NEW_FAMILIES, must=NEW_FAMILIES
    )
)
@pytest.mark.slow
def test_multi_output_ops_control_flow_and_recurrent_cells(prog):
    """Every program has at least one step of the families that broke on real models."""
    check_program(prog)


def check_program(prog):
    ls, steps, extra_targets, use_tv_tape = prog
    leaf_objs = [tf.Variable(v) if kind == "variable" else tf.constant(v) for kind, _, v in ls]
    leaves_ = [(kind, obj) for (kind, _, _), obj in zip(ls, leaf_objs, strict=True)]

    if use_tv_tape:
        with tv.GradientTape(persistent=True) as tape:
            target = build(tape, leaves_, steps, extra_targets)
        fl = tv.flow(tape, target)
    else:
        with tf.GradientTape(persistent=True) as tape, tv.record(tape) as rec:
            target = build(tape, leaves_, steps, extra_targets)
        fl = tv.flow(rec, target)
    g = fl.graph

    # Leaves: exactly TF's numbers.
    want_leaves = tape.gradient(target, leaf_objs)
    for k, (lo, want) in enumerate(zip(leaf_objs, want_leaves, strict=True)):
        got = fl.grad(lo)
        want = _np(want)
        _same_none(got, want, f"leaf {k}")
        if want is not None:
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"leaf {k}")
            assert fl.why_none(lo) is None
            check_no_false_diagnosis(fl, lo, want, f"leaf {k}")
        else:
            assert fl.why_none(lo) is not None

    # Every float tensor an op produced in the block (recorded or not).
    inter = [
        info
        for info in g.tensors.values()
        if info.trainable and info.dtype not in ("resource", "variant") and g.nx.nodes[info.node]["kind"] == "op"
    ]
    assert target._id in g.tensors
    want_inter = tape.gradient(target, [info.ref for info in inter])
    for info, want in zip(inter, want_inter, strict=True):
        got = fl.grad(info.ref)
        want = _np(want)
        what = f"{g.nx.nodes[info.node].get('op_type')} output {info.index}"
        _same_none(got, want, what)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)
    del tape

    # Contributions of every node add up to its gradient.
    for n, d in g.nx.nodes(data=True):
        if d["kind"] == "variable":
            objs = [d["variable"]]
        else:  # ops, watched tensors, constants: each output tensor of the node
            objs = [g.tensors[t].ref for t in d["outputs"] if g.tensors[t].node == n]
        for obj in objs:
            total = fl.grad(obj)
            parts = fl.contributions(obj)
            for consumer, c in parts:
                assert g.nx.has_edge(n, consumer)
                assert c is not None
            if obj is target:
                continue
            if total is None:
                assert parts == [], (n, parts)
                continue
            assert parts, f"{n} has a gradient but no edge carries it"
            s = np.sum([c for _, c in parts], axis=0)
            assert s.shape == total.shape
            np.testing.assert_allclose(s, total, rtol=1e-6, atol=1e-6, err_msg=str(n))

    # Stopped list: each edge without gradient is explained exactly once.
    wheres = [s.where for s in fl.stopped]
    assert len(wheres) == len(set(wheres))
    for u, v, k in g.nx.edges(keys=True):
        carried = fl.edge_grad(u, v, k) is not None
        assert carried != ((u, v, k) in wheres), (u, v, k)

    # Steps are numbered in order and start at the target.
    assert [s.index for s in fl.steps] == list(range(len(fl.steps)))
    assert fl.steps[0].node == g.node_of(target)


def _inputs(ls):
    leaf_objs = [tf.Variable(v) if kind == "variable" else tf.constant(v) for kind, _, v in ls]
    return leaf_objs, [(kind, obj) for (kind, _, _), obj in zip(ls, leaf_objs, strict=True)]


@pytest.mark.slow
@pytest.mark.parametrize("order", ["flow first", "gradient first"])
@settings(max_examples=8, **SETTINGS)
@given(prog=programs(must=[PY_FUNCTION]))
def test_programs_with_py_function(order, prog):
    """A non-persistent tape (the usual training step): one tape.gradient call over the
    leaves and every float intermediate, and tv.flow before or after it. The user's call
    must give what a plain tape gives, and the flow what the user's call gives."""
    ls, steps, extra_targets, use_tv_tape = prog
    leaf_objs, leaves_ = _inputs(ls)
    with tf.GradientTape() as plain:
        target = build(plain, leaves_, steps, extra_targets)
    want_leaves = [_np(g) for g in plain.gradient(target, leaf_objs)]

    leaf_objs, leaves_ = _inputs(ls)
    if use_tv_tape:
        with tv.GradientTape() as tape:
            target = build(tape, leaves_, steps, extra_targets)
        rec = tape
    else:
        with tf.GradientTape() as tape, tv.record(tape) as rec:
            target = build(tape, leaves_, steps, extra_targets)
    g = rec.graph
    inter = [
        info.ref
        for info in g.tensors.values()
        if info.trainable and info.dtype not in ("resource", "variant") and g.nx.nodes[info.node]["kind"] == "op"
    ]
    if order == "flow first":
        fl = tv.flow(rec, target)
        got = tape.gradient(target, leaf_objs + inter)
    else:
        got = tape.gradient(target, leaf_objs + inter)
        fl = tv.flow(rec, target)
    got = [_np(x) for x in got]
    for k, (lo, user, want) in enumerate(zip(leaf_objs, got[: len(leaf_objs)], want_leaves, strict=True)):
        _same_none(user, want, f"user's gradient, leaf {k}")
        if want is not None:
            np.testing.assert_array_equal(user, want, err_msg=f"leaf {k}")  # undisturbed
        flowed = fl.grad(lo)
        _same_none(flowed, user, f"leaf {k}")
        if user is not None:
            np.testing.assert_array_equal(flowed, user, err_msg=f"leaf {k}")
    for t, user in zip(inter, got[len(leaf_objs) :], strict=True):
        flowed = fl.grad(t)
        _same_none(flowed, user, "intermediate")
        if user is not None:
            np.testing.assert_allclose(flowed, user, rtol=1e-6, atol=1e-6)
