"""While the backward pass plays, the picture shows the gradient moving backward; edges merged
into a collapsed group show the sum TensorFlow forms of their contributions."""

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.output.svg import to_svg
from tapeviz.picture.scene import Scene
from tapeviz.record.values import format_value


def test_edges_of_the_step_carry_markers_pointing_to_the_producer():
    x = tf.Variable(2.0, name="x")
    with tv.GradientTape() as tape:
        y = tf.sin(x) * x
    fl = tv.flow(tape, y)
    s = Scene(tape.graph, fl)
    for k in range(fl.last_step + 1):
        s.set_step(k)
        active = s.display.display_edges_of(fl.steps[k].edges)
        for e, arrow in s.arrows.items():
            if e not in active:
                assert not arrow.marks, (k, e)
                continue
            assert arrow.marks and arrow.mark_color == s.theme.active and arrow.color == s.theme.active
            ((mx, my, dx, dy),) = arrow.marks
            producer_x, consumer_x = s.pos[e[0]][0], s.pos[e[1]][0]
            assert producer_x < mx < consumer_x  # on the edge, between its boxes
            assert dx < 0  # pointing back, towards the producer
    s.set_step(1)
    svg = to_svg(s)
    assert 'id="marks"' in svg and s.theme.active in svg.split('id="marks"')[1].split("</g>")[0]
    legend = [sw.label.text for sw in s.legend]
    assert any("backward" in t for t in legend) and any("forward" in t for t in legend)


def test_merged_edges_show_tfs_sum_once_every_part_arrived():
    g = tf.constant([10.0, 20.0, 30.0])
    with tv.GradientTape() as tape:
        tape.watch(g)
        clipped = tf.clip_by_norm(g, 5.0)  # a TF API call: collapsed into one box, its inputs merged
        loss = tf.reduce_sum(clipped * clipped)
    fl = tv.flow(tape, loss)
    s = Scene(tape.graph, fl)
    merged = [(e, a) for e, a in s.arrows.items() if len(a.members) > 1 and all(fl.carries(m) for m in a.members)]
    assert merged
    e, arrow = merged[0]
    s.set_step(None)
    total = fl.total_along(arrow.members)
    want = tf.math.add_n([tf.convert_to_tensor(fl.edge_grad(*m)) for m in arrow.members]).numpy()
    np.testing.assert_array_equal(total, want)
    text = s.edge_labels[e].text
    assert text.startswith("Σ ") and "gradients" not in text
    short = format_value(want, max_items=1, norm="‖g‖")
    assert text in ("Σ " + format_value(want, norm="‖g‖"), "Σ " + short, "Σ " + short[short.index("‖g‖") :])
    first = min(k for k in range(fl.last_step + 1) if any(fl.arrived(m, k) for m in arrow.members))
    if not all(fl.arrived(m, first) for m in arrow.members):
        s.set_step(first)
        assert "of" in s.edge_labels[e].text and "arrived" in s.edge_labels[e].text


def test_restyled_arrows_and_titles_reach_the_svg():
    x = tf.Variable(2.0, name="x")
    with tv.GradientTape() as tape:
        y = x * 3.0
    view = tv.view(tape, y)
    e = next(iter(view.artists.arrows))
    view.artists.arrows[e].set_color("#123456")
    view.artists.arrows[e].set_linestyle("--")
    view.artists.title.set_text("my own title")
    svg = to_svg(view)
    group = svg.split(f'id="edge-{e[0]}-{e[1]}-{e[2]}"')[1].split("</g>")[0]
    assert "#123456" in group and "stroke-dasharray" in group
    assert "my own title" in svg


def test_at_the_finished_pass_a_merged_edge_shows_the_sum_of_the_uses_that_sent_a_part():
    """Keras's binary cross-entropy on logits uses them several times, some without a
    gradient (a comparison); once the pass is over those never send one, and the edge shows
    TF's gradient of the logits (what tape.gradient gives), not "4 of 6 arrived"."""
    import keras

    keras.utils.set_random_seed(0)
    w = tf.Variable(tf.fill([3, 1], 0.5), name="w")
    x = tf.constant([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]])
    y = tf.constant([[1.0], [0.0]])
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    with tv.GradientTape(persistent=True) as tape:
        p = x @ w
        loss = bce(y, p)
    fl = tv.flow(tape, loss)
    s = Scene(tape.graph, fl)
    s.set_step(None)
    partial = [
        (e, a) for e, a in s.arrows.items() if 0 < sum(fl.arrived(m, fl.last_step) for m in a.members) < len(a.members)
    ]
    assert partial, "no merged edge with uses that send no gradient: the test would check nothing"
    (e, arrow), *_ = partial
    want = tape.gradient(loss, p).numpy()
    np.testing.assert_allclose(fl.total_along(arrow.members), want, rtol=1e-6)
    text = s.edge_labels[e].text
    assert text.startswith("Σ ") and "arrived" not in text
    first = min(k for k in range(fl.last_step + 1) if any(fl.arrived(m, k) for m in arrow.members))
    s.set_step(first)  # mid-pass, part of the uses have sent: it says how many
    assert "arrived" in s.edge_labels[e].text
