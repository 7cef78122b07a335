"""Graph building that grows linearly with the program.

* Linking constants to the exported values they equal ("came back from outside TF") used
  to compare every constant with every exported value: a loop that calls ``float(...)``
  each step and multiplies by a Python number each step cost (steps x steps). The result
  must be exactly what that all-pairs search gave.
"""

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv

# --------------------------------------------------------------------------- outside values


def _reference_links(g):
    """The original all-pairs search: constant node -> first exported value's node."""
    exported = [
        g.tensors[tid]
        for tid in g.capture.exported
        if tid in g.tensors and g.tensors[tid].value is not None and g.tensors[tid].trainable
    ]
    links = {}
    for n, d in g.nx.nodes(data=True):
        if d["kind"] != "constant":
            continue
        c = g.tensors[d["outputs"][0]]
        if c.value is None:
            continue
        for e in exported:
            if e.node != n and e.shape == c.shape and np.array_equal(e.value, c.value.astype(e.value.dtype, copy=False)):
                links[n] = e.node
                break
    return links


def _links(g):
    got = {n: d["came_from"] for n, d in g.nx.nodes(data=True) if "came_from" in d}
    edges = {v: u for u, v, k in g.nx.edges(keys=True) if k == "outside"}
    assert edges == got
    return got


def _exporting_loop(steps: int):
    """Each step exports a value (float / .numpy()) and makes constants (Python numbers)."""
    x = tf.Variable([1.0, -2.0, 0.5])
    with tv.GradientTape() as tape:
        h = x
        for i in range(steps):
            h = tf.tanh(h) * 0.5 + float(i % 3)  # constants 0.5 and 0.0 / 1.0 / 2.0
            logged = float(tf.reduce_sum(h))  # exported, like a loss printed every step
            h = h * tf.constant(logged)  # ... and back as a constant
            tf.reduce_max(h * 0.0 + float(i % 4)).numpy()  # exports equal to later constants
    return tape


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_outside_links_equal_the_all_pairs_search_on_edge_values():
    x = tf.Variable([1.0, 2.0])
    with tv.GradientTape() as tape:
        a = x * 0.0
        neg = -tf.reduce_sum(a)  # -0.0
        nan = tf.reduce_sum(x) * float("nan")
        y = x * 2
        y64 = tf.cast(y, tf.float64)
        exported = [neg.numpy(), nan.numpy(), y.numpy(), y64.numpy(), y.numpy()]  # y twice
        uses = [
            tf.constant(0.0) + neg,  # equals -0.0
            tf.constant(float("nan")) + nan,  # NaN equals nothing
            tf.constant(exported[2]) * x,  # float32 round trip
            tf.constant(exported[2].astype(np.float64)) * 1.0,  # equal after a cast
            tf.constant(exported[2][:1]) * x,  # another shape
            tf.constant([2.0, 4.5]) * x,  # same shape, other values
            tf.constant(np.array([2, 4], np.int32)) * 1,  # ints equal to a float export
            tf.constant(3 + 0j) * 1.0,  # complex, nothing complex was exported
        ]
        own = tf.constant([7.0, 8.0])
        own.numpy()  # a constant exported itself is not its own source
        z = own * x
    g = tape.graph
    want = _reference_links(g)
    assert _links(g) == want
    assert len(want) >= 4  # -0.0, the float32 and float64 round trips, the int constant
    assert g.node_of(neg) in want.values() and g.node_of(y) in want.values()
    assert g.node_of(nan) not in want.values()
    del uses, z


@pytest.mark.parametrize("steps", [5, 40])
def test_outside_links_equal_the_all_pairs_search_in_a_logging_loop(steps):
    g = _exporting_loop(steps).graph
    want = _reference_links(g)
    assert len(want) >= steps  # every logged value, and the step numbers
    assert _links(g) == want


def test_outside_links_compare_each_constant_with_few_exports(monkeypatch):
    """Linear, not (exports x constants): each constant is compared with the exports that
    have its exact contents, not with every export of its shape."""
    tape = _exporting_loop(200)
    calls = []
    real = np.array_equal

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "array_equal", counting)
    g = tape.graph
    monkeypatch.undo()
    n_constants = sum(1 for _, d in g.nx.nodes(data=True) if d["kind"] == "constant")
    n_exported = len(g.capture.exported)
    assert n_exported >= 400 and n_constants >= 600
    assert len(calls) <= n_constants  # the all-pairs search made ~ n_constants * n_exported / 3
    assert _links(g) == _reference_links(g)
