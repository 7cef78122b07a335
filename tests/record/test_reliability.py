"""Never disturb the user's run: hooks always removed, threads isolated, no leaks,
gradients and errors identical to plain TensorFlow, and names escaped in outputs."""

import gc
import threading
import weakref
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python import pywrap_tfe

import tapeviz as tv
from tapeviz.record import hooks

ORIGINAL_FAST_PATH = pywrap_tfe.TFE_Py_FastPathExecute
ORIGINAL_NUMPY = tf.constant(1.0).__class__.numpy


def assert_no_hooks():
    assert not hooks.hooks_installed()
    assert hooks.callbacks_on_this_thread() == 0
    assert pywrap_tfe.TFE_Py_FastPathExecute is ORIGINAL_FAST_PATH
    assert tf.constant(1.0).__class__.numpy is ORIGINAL_NUMPY


def test_keyboard_interrupt_removes_hooks():
    x = tf.Variable(1.0)
    with pytest.raises(KeyboardInterrupt):
        with tv.GradientTape() as tape:
            y = x * 2
            raise KeyboardInterrupt
    assert_no_hooks()
    assert tape.gradient(y, x).numpy() == 2.0  # the tape still works like TF's


def test_generator_leaving_the_block_early_removes_hooks():
    x = tf.Variable(1.0)

    def steps():
        with tv.GradientTape():
            yield x * 2
            yield x * 3  # never reached

    gen = steps()
    next(gen)
    assert hooks.hooks_installed()
    gen.close()
    assert_no_hooks()


def test_record_removes_hooks_and_instance_patch_on_exception():
    x = tf.Variable(1.0)
    with pytest.raises(ZeroDivisionError):
        with tf.GradientTape() as tape, tv.record(tape):
            _ = x * 2
            raise ZeroDivisionError("raised inside the recorded block")
    assert_no_hooks()
    assert "watch" not in tape.__dict__


def test_two_threads_recording_at_once_get_only_their_own_ops():
    barrier = threading.Barrier(2)
    graphs = {}
    errors = []

    def work(name, factor, n):
        try:
            v = tf.Variable(1.0)
            with tv.GradientTape() as tape:
                y = v
                for _ in range(n):
                    barrier.wait(timeout=20)
                    y = y * factor
            graphs[name] = (tape.graph, tape.gradient(y, v).numpy(), tv.flow(tape, y).grad(v))
        except BaseException as e:  # noqa: BLE001 - anything a worker thread raises is surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=("a", 2.0, 5)), threading.Thread(target=work, args=("b", 3.0, 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for name, factor in (("a", 2.0), ("b", 3.0)):
        graph, tf_grad, tv_grad = graphs[name]
        muls = [d for _, d in graph.nx.nodes(data=True) if d["kind"] == "op"]
        assert len(muls) == 5 and all(d["op_type"] == "Mul" for d in muls)
        consts = [graph.tensors[d["outputs"][0]].value for _, d in graph.nx.nodes(data=True) if d["kind"] == "constant"]
        assert all(c == factor for c in consts), "only this thread's constants"
        assert tv_grad == tf_grad == factor**5
    assert_no_hooks()


def test_other_thread_ops_during_recording_are_not_captured():
    x = tf.Variable(1.0)
    done = threading.Event()

    def noise():
        while not done.is_set():
            tf.constant(5.0) * tf.constant(7.0)

    t = threading.Thread(target=noise)
    with tv.GradientTape() as tape:
        t.start()
        y = x * 2.0
        for _ in range(50):
            y = y + 1.0
    done.set()
    t.join()
    assert all(d["op_type"] in ("Mul", "AddV2") for _, d in tape.graph.nx.nodes(data=True) if d["kind"] == "op")
    assert len(tape.graph.capture.ops) == 52  # 1 read + 1 Mul + 50 AddV2


def test_nested_tapes_and_higher_order_gradients():
    x = tf.Variable(3.0)
    with tv.GradientTape() as outer:
        with tv.GradientTape() as inner:
            y = x**3
        dy = inner.gradient(y, x)  # 3 x^2, recorded by the outer tape
    d2y = outer.gradient(dy, x)
    assert dy.numpy() == 27.0 and d2y.numpy() == 18.0
    assert tv.flow(inner, y).grad(x) == 27.0
    assert tv.flow(outer, dy).grad(x) == 18.0
    assert inner.graph is not outer.graph
    assert len(outer.graph.capture.ops) > len(inner.graph.capture.ops)


def test_flow_inside_another_tape_does_not_touch_it():
    x = tf.Variable(2.0)
    with tv.GradientTape() as first:
        y = x * x
    with tf.GradientTape(persistent=True) as other:
        z = x * 5.0
        fl = tv.flow(first, y)  # replayed off-thread: `other` must not see it
        w = z * 2.0
    assert fl.grad(x) == 4.0
    assert other.gradient(w, x).numpy() == 10.0
    assert other.gradient(z, x).numpy() == 5.0


def test_jacobian_and_unconnected_zero_unchanged():
    def program(T):
        x = tf.Variable([1.0, 2.0, 3.0])
        u = tf.Variable(1.0)
        with T(persistent=True) as tape:
            y = x * x
        zero = tf.UnconnectedGradients.ZERO
        return tape.jacobian(y, x).numpy(), tape.gradient(y, u, unconnected_gradients=zero).numpy()

    jt, zt = program(tf.GradientTape)
    jv, zv = program(tv.GradientTape)
    np.testing.assert_array_equal(jt, jv)
    np.testing.assert_array_equal(zt, zv)


def test_second_gradient_on_non_persistent_tape_raises_the_same():
    messages = []
    for T in (tf.GradientTape, tv.GradientTape):
        x = tf.Variable(1.0)
        with T() as tape:
            y = x * x
        tape.gradient(y, x)
        with pytest.raises(RuntimeError) as err:
            tape.gradient(y, x)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@pytest.mark.slow
def test_no_leaks_over_many_captures_and_explorers():
    import psutil

    proc = psutil.Process()
    figures = []

    def once():
        x = tf.Variable([1.0, 2.0])
        with tv.GradientTape() as tape:
            y = tf.reduce_sum(x * x)
        ex = tv.explore(tape, y)
        ex.controls["clip"].value = "by_norm"
        figures.append(weakref.ref(ex.view.figure))
        ex.close()

    for _ in range(20):  # warm up caches (fonts, TF kernels) before measuring
        once()
    gc.collect()
    start = proc.memory_info().rss
    for _ in range(200):
        once()
    gc.collect()
    grown = (proc.memory_info().rss - start) / 2**20
    alive = sum(1 for f in figures if f() is not None)
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []
    assert alive <= 5, f"{alive} explorer figures still alive"
    assert grown < 150, f"RSS grew by {grown:.0f} MiB over 200 captures + explorers"


def test_script_names_are_escaped_in_svg_and_html(tmp_path):
    evil = "<script>alert(1)</script>"
    holder = {"v": tf.Variable(2.0, name=evil)}
    with tv.GradientTape() as tape:
        y = holder["v"] * 3.0
    node = tape.graph.node_of(holder["v"])
    assert tape.graph.nx.nodes[node]["name"] == evil
    path = tv.save(tape, y, tmp_path / "x.svg")
    root = ET.parse(path).getroot()  # well-formed XML: nothing leaked as markup
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("<script>" in t or "</script>" in t for t in texts), "the name is shown, as text"
    ex = tv.explore(tape, y)
    ex.controls["node"].value = node
    ex.controls["clip"].value = "by_norm"
    for html in (ex.inspector.value, ex.panel.value, ex.canvas.value):
        assert "<script>" not in html
    assert "&lt;script&gt;" in ex.inspector.value and "&lt;script&gt;" in ex.panel.value


def test_nan_gradients_are_red_not_hidden():
    x = tf.Variable(0.0)
    with tv.GradientTape(persistent=True) as tape:
        y = tf.sqrt(x) * 0.0 + tf.math.log(x)
    fl = tv.flow(tape, y)
    g = fl.grad(x)
    assert not np.isfinite(g)
    np.testing.assert_array_equal(g, tape.gradient(y, x).numpy())  # TF's NaN/Inf, not a cleaned number
    view = tv.view(tape, y)
    from tapeviz.picture.style import C_BAD

    assert view.artists.grads[tape.graph.node_of(x)].get_color() == C_BAD
    ex = tv.explore(tape, y)
    ex.controls["clip"].value = "by_norm"
    assert "tv-bad" in ex.panel.value
