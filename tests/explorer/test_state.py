"""ExplorerState: what an explorer shows is a pure function of plain data.

The widget maps controls to states; these tests use states alone (no widget) and
compare what they show with TensorFlow, then check the widget shows the same."""

import numpy as np
import pytest
import tensorflow as tf
from placement_check import check
from svg_text import CSS_PX_PER_PT, shown_text_pt, shown_width_pt

import tapeviz as tv
from tapeviz.api import _explored
from tapeviz.explorer import state as st
from tapeviz.output.svg import to_svg
from tapeviz.picture import fonts


@pytest.fixture
def persistent():
    x = tf.Variable(3.0)
    y = tf.Variable(4.0)
    with tv.GradientTape(persistent=True) as tape:
        f1 = x**2 + y
        f2 = x * y
    return tape, x, y, {"f1": f1, "f2": f2}


def test_states_are_plain_data(persistent):
    tape, x, y, targets = persistent
    ex = _explored(tape, targets, None)
    s = ex.initial()
    assert s.target == "f1" and s.step == ex.flow("f1").last_step and s.clip_mode == "none"
    t = s.replace(target="f2", clip_mode="by_norm", clip_norm=2.0)
    assert s.target == "f1" and t.target == "f2", "replace makes a new state"
    assert hash(t) == hash(s.replace(target="f2", clip_mode="by_norm", clip_norm=2.0))


def test_picture_of_a_state_is_the_views_svg_at_that_step(persistent):
    tape, x, y, targets = persistent
    ex = _explored(tape, targets, None)
    s = ex.initial().replace(target="f2", step=0)
    svg = st.picture(ex, s)
    from tapeviz.picture.themes import explorer_theme

    view = tv.view(tape, targets["f2"], step=0, theme=explorer_theme("light"))  # the explorer's text size
    expected = to_svg(view, fit=True, frames=True)
    assert svg == expected[expected.find("<svg") :]
    assert st.picture(ex, s) is svg, "a state seen before is not drawn again"


def test_gradients_of_a_state_are_tfs_clip_functions(persistent):
    tape, x, y, targets = persistent
    ex = _explored(tape, targets, None)
    s = ex.initial().replace(clip_mode="by_norm", clip_norm=2.0)
    got = st.gradients(ex, s)
    assert got["x"] == pytest.approx(tf.clip_by_norm(tape.gradient(targets["f1"], x), 2.0).numpy())
    s2 = s.replace(target="f2", clip_mode="by_global_norm", clip_norm=1.0)
    want, _ = tf.clip_by_global_norm([tape.gradient(targets["f2"], x), tape.gradient(targets["f2"], y)], 1.0)
    got2 = st.gradients(ex, s2)
    np.testing.assert_array_equal(got2["x"], want[0].numpy())
    np.testing.assert_array_equal(got2["y"], want[1].numpy())
    assert st.gradients(ex, s2, clipped=False)["x"] == tape.gradient(targets["f2"], x).numpy()


def test_clipped_texts_only_on_the_finished_pass(persistent):
    tape, x, y, targets = persistent
    ex = _explored(tape, targets, None)
    s = ex.initial().replace(clip_mode="by_value", clip_value=(-1.0, 1.0))
    assert st.clipped_texts(ex, s), "the finished picture shows raw → clipped"
    assert st.clipped_texts(ex, s.replace(step=0)) == {}
    assert "→ 1.0" in st.picture(ex, s)


def test_clipped_texts_keep_the_clipped_side_in_a_box_width():
    """Short gradients read as numbers, long ones as norms with the shape once, so the clipped
    side is never cut off; every number is tf.clip_by_norm's."""
    a, b, c = (
        tf.Variable([3.0, 4.0], name="a"),
        tf.Variable(tf.ones((4, 4)), name="b"),
        tf.Variable(tf.ones(5), name="c"),
    )
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(a * a) + tf.reduce_sum(b * 3.0) + tf.reduce_sum(c * tf.range(5.0))
    ex = _explored(tape, {"loss": loss}, None)
    s = ex.initial().replace(clip_mode="by_norm", clip_norm=1.0)
    texts = {ex.graph.nx.nodes[n]["name"]: t for n, t in st.clipped_texts(ex, s).items()}
    texts = {name.split(":")[0].split("/")[-1]: t for name, t in texts.items()}
    grads = tape.gradient(loss, [a, b, c])
    clipped = [tf.clip_by_norm(g, 1.0).numpy() for g in grads]
    np.testing.assert_allclose(clipped[0], [0.6, 0.8], rtol=1e-6)
    assert texts["a"].text == "∂ [6.0, 8.0] → [0.6, 0.8]"
    assert texts["b"].text == f"∂ 4×4 ‖g‖ {float(tf.norm(grads[1])):.3g} → {float(tf.norm(clipped[1])):.3g}"
    assert texts["c"].text == f"∂ 5 ‖g‖ {float(tf.norm(grads[2])):.3g} → {float(tf.norm(clipped[2])):.3g}"
    assert texts["a"].short == f"{float(tf.norm(grads[0])):.3g} → {float(tf.norm(clipped[0])):.3g}"


def test_a_closed_keras_layer_lists_its_clipped_variables_whole():
    """A Dense layer's one box lists its variables' clipped norms by name, each whole or
    not at all: no number cut with "…" (issue 32: "‖g‖ kernel 3×4 ‖g‖ 1.41 → 0.…")."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    rng = np.random.default_rng(0)
    xb = tf.constant(rng.normal(size=(8, 3)).astype("float32"))
    yb = tf.constant((rng.normal(size=(8, 1)) * 3.0).astype("float32"))
    with tv.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    ex = _explored(tape, {"loss": loss}, None)
    s = ex.initial().replace(clip_mode="by_norm", clip_norm=1.0)
    view = ex.view(s)
    layers = {n: g.text for n, g in view.scene.grads.items() if view.display.nx.nodes[n]["kind"] == "layer"}
    assert len(layers) == 2, layers
    grads = tape.gradient(loss, model.trainable_variables)
    kernel = grads[0]
    want = f"kernel {float(tf.norm(kernel)):.3g} → {float(tf.norm(tf.clip_by_norm(kernel, 1.0))):.3g}"
    key = f"layer:{model.name}/{model.layers[0].name}"  # Keras numbers names per process
    first = layers[key]
    assert first.startswith("‖g‖ " + want), first
    assert all("…" not in t for t in layers.values()), layers
    room = view.scene._grad_rooms[key]
    # what does not fit is counted, never cut: the long list is wider than the room
    assert " · +1 more" in first or "bias" in first
    assert fonts.text_width(first, view.scene.grads[key].size) <= room


def test_panel_and_inspector_from_a_state(persistent):
    tape, x, y, targets = persistent
    ex = _explored(tape, targets, None)
    s = ex.initial().replace(clip_mode="by_norm", clip_norm=1.0, node=tape.graph.node_of(x))
    html = st.panel(ex, s)
    assert "tv-global-norm" in html and "6 → " in html  # d f1 / dx = 6, clipped to norm 1
    assert "6.0" in st.inspector(ex, s)
    assert st.inspector(ex, s.replace(node=None)) == ""


def test_widget_shows_what_its_state_shows(persistent):
    tape, x, y, targets = persistent
    w = tv.explore(tape, targets)
    try:
        w.controls["target"].value = "f2"
        w.controls["step"].value = 1
        assert w.state.target == "f2" and w.state.step == 1
        assert w.canvas.value == st.picture(w.graph_targets, w.state)
        w.controls["clip"].value = "by_norm"
        assert w.panel.value == st.panel(w.graph_targets, w.state)
    finally:
        w.close()


def test_show_all_toggle_and_presenter():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x**2  # the exponent folds into a chip by default
    w = tv.explore(tape, y)
    try:
        boxes = w.view.display.nx.number_of_nodes()
        w.controls["show_all"].value = True
        assert w.state.show_all and w.view.display.nx.number_of_nodes() == boxes + 1
    finally:
        w.close()
    p = tv.explore(tape, y, presenter=True)
    try:
        assert p.canvas in p.children and p.panel not in p.children and "tv-presenter" in p._dom_classes
    finally:
        p.close()


def test_export_iterates_states_and_leaves_the_explorer_alone(persistent, tmp_path):
    tape, x, y, targets = persistent
    w = tv.explore(tape, targets)
    try:
        before = (w.state, w.canvas.value)
        page = w.export_html(tmp_path / "p.html", all_targets=True, clip_norms=[0.5, 1.0, 5.0])
        assert (w.state, w.canvas.value) == before
        text = page.read_text(encoding="utf-8")
        assert "class='tv-clip-norm'" in text and "class='tv-target'" in text  # the slider and the menu
    finally:
        w.close()


def test_auto_theme_follows_the_page(persistent):
    tape, x, y, targets = persistent
    w = tv.explore(tape, targets)  # theme="auto" by default
    try:
        assert w.auto_theme and w.state.theme == "light" and w.page_theme in w.children
        light = w.canvas.value
        w.page_theme.dark = True  # what the front end reports in JupyterLab's dark theme
        assert w.state.theme == "dark" and w.canvas.value != light
        from tapeviz.picture.themes import DARK

        assert DARK.background in w.canvas.value
        w.page_theme.dark = False
        assert w.state.theme == "light" and w.canvas.value == light
    finally:
        w.close()
    fixed = tv.explore(tape, targets, theme="projector")
    try:
        assert not fixed.auto_theme and fixed.page_theme is None and fixed.state.theme == "projector"
    finally:
        fixed.close()


@pytest.mark.parametrize("theme", ["light", "dark", "projector"])
def test_the_explorers_picture_has_no_text_below_9_pt_and_fits_the_cell(theme):
    """Issue 20: the explorer's inline SVG, shown at its own size (1 viewBox unit = 0.72 pt)
    or shrunk as far as its style lets a narrow cell squeeze it, writes every text (titles,
    values, edge labels, tags, frames' names, caption, legend) at 9 pt or more, and is laid
    out for a notebook cell (rows.CELL_WIDTH canvas px, ~1,000 CSS px): a Keras model's 14
    boxes in rows of three, as many rows as its picture had at 8 pt."""
    from tapeviz import examples
    from tapeviz.picture.rows import CELL_WIDTH
    from tapeviz.picture.themes import EXPLORER_TEXT

    run = examples.clip_in_training()
    ex = _explored(run.tape, run.target, None)
    s = ex.initial(theme=theme)
    for state in (s, s.replace(step=0), s.replace(show_all=True)):
        svg = st.picture(ex, state)
        sizes = shown_text_pt(svg) + shown_text_pt(svg, shrunk=True)
        assert min(sizes) >= EXPLORER_TEXT - 0.01, (theme, state.step, state.show_all, min(sizes))
        assert shown_width_pt(svg) * CSS_PX_PER_PT <= CELL_WIDTH * 0.96 + 1  # ~1,000 CSS px
        assert 'id="group-' in svg or state.show_all  # its groups' frames are drawn (and named)
    scene = ex.view(s).scene
    check(scene, ("explorer", theme))  # no overlap; frames off the caption, their names clear of lines
    if theme != "projector":  # (the projector's 12 pt text takes two columns a row, as before)
        assert len({round(x) for x, _ in scene.pos.values()}) == 3  # columns in a row
    # the same picture in a file keeps the theme's own sizes (8 pt text, 6.5 pt tags in light)
    file_sizes = shown_text_pt(to_svg(tv.view(run.tape, run.target, theme=theme)))
    assert min(file_sizes) == pytest.approx({"projector": 10.5}.get(theme, 6.5), abs=0.01)
