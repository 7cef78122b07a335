"""tapeviz.picture.scene: the picture as plain records, styled by the flow, before any drawing."""

import matplotlib
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.output.artists import arrow_artist, box_artist, text_artist
from tapeviz.output.view import GraphView
from tapeviz.picture import placement, style, wording
from tapeviz.picture import scene as sc
from tapeviz.record.values import format_value


@pytest.fixture()
def chain():
    """w -> a = w*w -> b = a + w -> loss = b * 2, plus a stopped branch."""
    w = tf.Variable(3.0, name="w")
    c = tf.constant(5.0)
    with tv.GradientTape() as tape:
        a = w * w
        b = a + w + tf.stop_gradient(c * w)
        loss = b * 2.0
    return tape, w, loss


def test_scene_numbers_are_tensorflows_and_no_figure_is_made(chain, monkeypatch):
    tape, w, loss = chain
    made = []
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "__init__",
        lambda self, *a, **k: made.append(1) or pytest.fail("a scene made a Figure"),
    )
    s = sc.Scene(tape.graph, tv.flow(tape, loss))
    w_node = tape.graph.node_of(w)
    assert s.grads[w_node].text == wording.grad_text(tape.gradient(loss, w).numpy())
    assert s.labels[w_node][0].text == "w" and s.labels[w_node][2].text == format_value(w.numpy())
    assert set(s.boxes) == set(s.display.nx.nodes) and set(s.arrows) == set(s.display.nx.edges(keys=True))
    assert s.title.startswith(f"Step {len(s.flow.steps) - 1}/") and s.title.endswith("(backward pass of loss done)")
    assert not made


def test_set_step_restyles_records_in_place(chain):
    tape, w, loss = chain
    fl = tv.flow(tape, loss)
    s = sc.Scene(tape.graph, fl)
    w_node, loss_node = tape.graph.node_of(w), tape.graph.node_of(loss)
    records = dict(s.grads), dict(s.arrows)
    s.set_step(0)
    assert s.title.startswith("Step 0/")
    assert s.boxes[loss_node].ec == style.C_ACTIVE and s.boxes[loss_node].lw == style.LW_ACTIVE
    assert s.grads[w_node].text == ""  # nothing has reached w yet
    stopped = [a for a in s.arrows.values() if a.color == style.C_STOP]
    assert {fl.edge_reason[a.members[0]].reason for a in stopped} == {"stop_gradient", "not_watched"}  # c is a constant
    assert all(a.linestyle == style.REASON_STYLE[fl.edge_reason[a.members[0]].reason] for a in stopped)
    s.set_step(None)
    assert s.grads[w_node].text == wording.grad_text(tape.gradient(loss, w).numpy())
    assert all(s.grads[n] is r for n, r in records[0].items()) and all(s.arrows[e] is r for e, r in records[1].items())
    s.set_grad_overrides({w_node: "∂ 9 → 1"})
    assert s.grads[w_node].text == "∂ 9 → 1"


def test_record_functions_cover_every_node_and_edge(chain):
    tape, w, loss = chain
    g = tape.graph
    view = GraphView(g, tv.flow(tape, loss))
    pos, disp = view.pos, view.display
    target = g.node_of(loss)
    boxes = placement.box_specs(g, pos, targets={target}, display=disp)
    assert boxes[target].ec == style.C_TARGET and boxes[g.node_of(w)].fc == style.KIND_STYLE["variable"]["fc"]
    assert np.isclose(boxes[target].x + boxes[target].w / 2, pos[target][0])
    labels = placement.label_specs(g, pos, display=disp)
    assert labels[target][1].text == "Mul" or labels[target][0].text == "Mul"
    assert all(t.text == "" for t in placement.grad_specs(g, pos, display=disp).values())
    arrows = placement.arrow_specs(g, pos, routes=view.routes, display=disp)
    assert set(arrows) == set(disp.nx.edges(keys=True)) and all(a.members for a in arrows.values())
    edge_labels = placement.edge_label_specs(g, pos, routes=view.routes, display=disp)
    assert set(edge_labels) == set(arrows) and all(t.boxed for t in edge_labels.values())
    assert wording.node_title(g, g.node_of(w), disp) == "w"
    assert wording.node_subtitle(g, g.node_of(w), disp) == ""
    assert wording.node_value_text(g, g.node_of(w), disp) == "3.0"
    w_in, h_in = placement.figure_size(pos, routes=view.routes)
    assert 4.5 <= w_in <= 60 and 3.2 <= h_in <= 60
    assert wording.grad_text(None) == "∂ None"


def test_artists_made_from_records_carry_their_style(chain):
    from matplotlib.figure import Figure

    tape, w, loss = chain
    s = sc.Scene(tape.graph, tv.flow(tape, loss))
    ax = Figure().add_subplot()
    n = tape.graph.node_of(w)
    box = box_artist(ax, s.boxes[n])
    assert matplotlib.colors.to_hex(box.get_facecolor()) == s.boxes[n].fc and box.get_gid() == f"node-{n}"
    text = text_artist(ax, s.grads[n])
    assert text.get_text() == s.grads[n].text and text.get_va() == "top"
    e, rec = next((e, a) for e, a in s.arrows.items() if a.color == style.C_STOP)
    arrow = arrow_artist(ax, rec)
    assert matplotlib.colors.to_hex(arrow.get_edgecolor()) == style.C_STOP and arrow.get_linestyle() == rec.linestyle
    label = text_artist(ax, s.edge_labels[e])
    assert label.get_bbox_patch() is not None and label.get_text() == "stop_gradient"


def test_views_draw_on_first_use(chain):
    tape, w, loss = chain
    view = tv.view(tape, loss, step=1)
    assert not view.drawn
    title = view.artists.title.get_text()
    assert view.drawn and title == view.scene.title and title.startswith("Step 1/")
    view.set_step(None)
    n = tape.graph.node_of(w)
    assert (
        view.artists.grads[n].get_text()
        == view.scene.grads[n].text
        == wording.grad_text(tape.gradient(loss, w).numpy())
    )


def test_views_show_in_notebooks_as_svg_without_drawing(chain):
    tape, w, loss = chain
    view = tv.view(tape, loss)
    svg = view._repr_svg_()
    assert svg.startswith("<svg") and "backward pass of loss done" in svg and not view.drawn
    assert wording.grad_text(tape.gradient(loss, w).numpy()) in svg


def test_a_step_inside_a_collapsed_box_names_the_box_it_is_drawn_in():
    """tf.clip_by_norm's ops collapse into one box: a step title naming one of them (the
    Mul) says it is in that box, since the reader sees no Mul."""
    x = tf.Variable([10.0, 20.0, 30.0])
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(tf.clip_by_norm(x, 5.0) * [1.0, 2.0, 3.0])
    fl = tv.flow(tape, y)
    view = tv.view(tape, y)
    inside = [s.index for s in fl.steps[1:] if view.display.of[s.node] != s.node]
    assert inside, "the test needs a step whose op is inside the collapsed box"
    for lang, words in (("en", "(in clip_by_norm)"), ("zh", "（在 clip_by_norm 中）")):
        for k in inside:
            assert words in tv.view(tape, y, step=k, lang=lang).scene.title
    drawn = [s.index for s in fl.steps[1:] if view.display.of[s.node] == s.node]
    assert drawn and all("(in " not in tv.view(tape, y, step=k).scene.title for k in drawn)
    assert "(in " not in tv.view(tape, y, show_all=True).scene.title
