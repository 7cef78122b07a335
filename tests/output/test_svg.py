"""tapeviz.output.svg: the SVG written straight from a GraphView (its scene, or its artists once drawn)
shows what the view shows."""

import io
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import tensorflow as tf
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.path import Path as MplPath

import tapeviz as tv
from tapeviz.examples import EXAMPLES
from tapeviz.output.export import save_view
from tapeviz.output.svg import draws_whole_figure, head_and_line, to_svg
from tapeviz.output.view import GraphView
from tapeviz.picture.style import BOX_W, C_GRAD, C_STOP

NS = "{http://www.w3.org/2000/svg}"
NUM = re.compile(r"-?\d+(?:\.\d+)?")


# --------------------------------------------------------------------------- helpers


def small_view(**kw):
    """x**2 + stop_gradient(y): one stopped edge, gradient flowing into x."""
    x = tf.Variable(2.0, name="x")
    y = tf.constant(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    kw.setdefault("show_all", True)  # the writer is tested on every recorded node (no hide/fold note)
    return tv.view(tape, z, **kw), dict(x=x, y=y, z=z, tape=tape)


def skip_view():
    """w -> a = w*w -> b = a + w -> c = b * 2: the w -> AddV2 edge is routed."""
    w = tf.Variable(3.0, name="w")
    with tv.GradientTape() as tape:
        a = w * w
        b = a + w
        c = b * 2.0
    return tv.view(tape, c)


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == NS + "svg"
    return root


def by_id(root) -> dict:
    return {e.get("id"): e for e in root.iter() if e.get("id")}


def text_of(e) -> str:
    return "".join(e.itertext())


def style(e) -> dict:
    return dict(kv.split(":", 1) for kv in e.get("style", "").split(";") if kv)


def numbers(d: str) -> np.ndarray:
    return np.array([float(v) for v in NUM.findall(d)]).reshape(-1, 2)


def display(view, pt):
    """Data point -> SVG user units (display pixels, y down)."""
    x, y = view.ax.transData.transform(pt)
    return np.array([x, view.figure.bbox.height - y])


# --------------------------------------------------------------------------- document


def test_svg_parses_with_ids_for_every_node_edge_and_gradient():
    view, _ = small_view()
    ids = by_id(parse(to_svg(view)))
    for n in view.artists.boxes:
        assert ids[f"node-{n}"].tag == NS + "g"
        assert ids[f"grad-{n}"].tag == NS + "text"
    for u, v, k in view.artists.arrows:
        group = ids[f"edge-{u}-{v}-{k}"]
        assert group.tag == NS + "g"
        assert [p.tag for p in group] == [NS + "path", NS + "path"]  # the line, then its filled head
    assert {"title", "legend", "layer-edges", "layer-nodes", "layer-labels"} <= set(ids)
    assert "caption" not in ids  # no caption: nothing drawn, as in matplotlib


def test_every_text_is_the_artists_text():
    view, _ = small_view(caption="first line\nsecond line")
    ids = by_id(parse(to_svg(view)))
    a = view.artists
    for n, trio in a.labels.items():
        shown = [text_of(t) for t in ids[f"node-{n}"].iter(NS + "text") if t.get("id") != f"grad-{n}"]
        assert shown == [t.get_text() for t in trio if t.get_text()]
        assert text_of(ids[f"grad-{n}"]) == a.grads[n].get_text()
    for (u, v, k), t in a.edge_labels.items():
        if t.get_text():
            assert text_of(ids[f"label-{u}-{v}-{k}"]) == t.get_text()
        else:
            assert f"label-{u}-{v}-{k}" not in ids
    assert text_of(ids["title"]) == a.title.get_text()
    assert [text_of(t) for t in ids["caption"].iter(NS + "text")] == ["first line", "second line"]
    legend = [text_of(t) for t in ids["legend"].iter(NS + "text")]
    assert legend == [t.get_text() for t in a.legend.get_texts()]
    assert any("∂ 4.0" == text_of(ids[f"grad-{n}"]) for n in a.grads)  # d(x**2)/dx at x = 2


def test_edge_colours_and_dashes_are_the_arrows():
    view, env = small_view()
    ids = by_id(parse(to_svg(view)))
    px = view.figure.dpi / 72
    stopped = flowing = 0
    for (u, v, k), arrow in view.artists.arrows.items():
        line, head = ids[f"edge-{u}-{v}-{k}"]
        st = style(line)
        assert st["stroke"] == to_hex(arrow.get_edgecolor())
        assert float(st["stroke-width"]) == pytest.approx(arrow.get_linewidth() * px, abs=0.01)
        assert style(head)["fill"] == to_hex(arrow.get_facecolor())
        dashes = arrow._dash_pattern[1]  # matplotlib's own, scaled by the linewidth
        if dashes is None:
            assert "stroke-dasharray" not in st
        else:
            got = [float(s) for s in st["stroke-dasharray"].split(",")]
            assert got == pytest.approx([d * px for d in dashes], abs=0.01)
        if st["stroke"] == C_STOP:
            stopped += 1
            assert "stroke-dasharray" in st
        if st["stroke"] == C_GRAD:
            flowing += 1
            assert "stroke-dasharray" not in st
    assert stopped >= 2 and flowing >= 2
    y_node = env["tape"].graph.node_of(env["y"])
    assert any(style(ids[f"edge-{u}-{v}-{k}"][0])["stroke"] == C_STOP for u, v, k in view.artists.arrows if u == y_node)


def test_boxes_are_where_matplotlib_draws_them_in_their_colours():
    view, _ = small_view()
    ids = by_id(parse(to_svg(view)))
    H = view.figure.bbox.height
    for n, box in view.artists.boxes.items():
        rect = ids[f"node-{n}"].find(NS + "rect")
        ext = box.get_window_extent()
        got = [float(rect.get(k)) for k in ("x", "y", "width", "height")]
        assert got == pytest.approx([ext.x0, H - ext.y1, ext.width, ext.height], abs=0.02)
        st = style(rect)
        assert st["fill"] == to_hex(box.get_facecolor()) and st["stroke"] == to_hex(box.get_edgecolor())
        assert float(st["stroke-width"]) == pytest.approx(box.get_linewidth() * view.figure.dpi / 72, abs=0.01)


def test_texts_sit_where_matplotlibs_svg_puts_them():
    """Same anchor, baseline, alignment, size and weight as savefig's SVG (in points there)."""
    view, _ = small_view()
    mine = parse(to_svg(view))
    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none"}):
        view.figure.savefig(buf, format="svg")
    theirs = parse(buf.getvalue())
    scale = view.figure.dpi / 72
    ref = {}
    for t in theirs.iter(NS + "text"):
        ref.setdefault(text_of(t), []).append(t)
    checked = 0
    for node_group in by_id(mine)["layer-nodes"]:
        for t in node_group.iter(NS + "text"):
            s = text_of(t)
            if not s or len(ref.get(s, [])) != 1:
                continue  # empty, or not unique enough to pair up
            (r,) = ref[s]
            assert float(t.get("x")) == pytest.approx(float(r.get("x")) * scale, abs=0.3), s
            assert float(t.get("y")) == pytest.approx(float(r.get("y")) * scale, abs=0.3), s
            assert t.get("text-anchor") in r.get("style")
            size = float(re.search(r"font-size: ([\d.]+)px", r.get("style")).group(1))
            assert float(t.get("font-size")) == pytest.approx(size * scale, abs=0.01)
            assert (t.get("font-weight") == "700") == ("font-weight: 700" in r.get("style"))
            checked += 1
    assert checked >= 6


def test_arrow_heads_are_matplotlibs():
    """The line and head written here equal matplotlib's mutated arrow path at this dpi."""
    view = skip_view()
    FigureCanvasAgg(view.figure).draw()  # sets each arrow's dpi correction, as savefig does
    px = view.figure.dpi / 72
    for e, arrow in view.artists.arrows.items():
        rec = view.scene.arrows[e]
        pts = [tuple(p) for p in view.ax.transData.transform(np.asarray(rec.path.vertices, float))]
        line, head = head_and_line(pts, arrow.get_mutation_scale() * px, arrow.get_linewidth() * px)
        theirs, fills = arrow._get_path_in_displaycoord()
        generic, _ = arrow.get_arrowstyle()(
            MplPath(pts, rec.path.codes), arrow.get_mutation_scale() * px, arrow.get_linewidth() * px
        )
        assert list(fills) == [False, True]
        for reference in (theirs, generic):
            np.testing.assert_allclose(np.asarray(line), reference[0].vertices, atol=1e-6)
            q = reference[1]
            drawn = q.codes != q.CLOSEPOLY  # CLOSEPOLY's vertex is ignored when drawing
            np.testing.assert_allclose(np.asarray([*head, head[0]])[drawn], q.vertices[drawn], atol=1e-6)


def test_routed_edges_are_curved_paths_from_producer_to_consumer():
    view = skip_view()
    assert view.routes
    ids = by_id(parse(to_svg(view)))
    routed = [e for e in view.artists.arrows if e[:2] in view.routes]
    assert routed
    for u, v, k in routed:
        line, head = ids[f"edge-{u}-{v}-{k}"]
        d = line.get("d")
        assert d.startswith("M") and d.count("C") >= 2 and "L" in d  # S-curves and a straight run
        pts = numbers(d)
        start = display(view, (view.pos[u][0] + BOX_W / 2, view.pos[u][1]))
        np.testing.assert_allclose(pts[0], start, atol=0.01)
        bends_y = [display(view, b)[1] for b in view.routes[(u, v)]]
        assert any(np.isclose(pts[:, 1], y, atol=0.01).any() for y in bends_y)  # runs at its bend height
        tip = numbers(head.get("d"))[1]
        end = display(view, (view.pos[v][0] - BOX_W / 2, view.pos[v][1]))
        # the head ends at the consumer's left side (its stroked tip, 0.5 lw / sin(head angle) further)
        assert np.linalg.norm(tip - end) < 4.0


def test_names_are_escaped_as_text():
    evil = "<script>alert(1)</script>"
    holder = {"v": tf.Variable(2.0, name=evil)}
    with tv.GradientTape() as tape:
        y = holder["v"] * 3.0
    view = tv.view(tape, y, title=f'{evil} & "quotes"', caption=evil + "\x01")
    svg = to_svg(view)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    root = parse(svg)
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    texts = [text_of(t) for t in root.iter(NS + "text")]
    assert f'{evil} & "quotes"' in texts  # the title, verbatim
    assert any("</script>" in t for t in texts)
    assert evil + "\ufffd" in texts  # a control character XML cannot hold is replaced, not fatal


def test_step_changes_the_svg_and_finished_state_comes_back():
    view, _ = small_view()
    done = to_svg(view)
    assert to_svg(view) == done  # deterministic
    view.set_step(1)
    early = to_svg(view)
    assert early != done
    ids = by_id(parse(early))
    assert text_of(ids["title"]) == view.artists.title.get_text() and text_of(ids["title"]).startswith("Step 1/")
    for n, t in view.artists.grads.items():
        assert text_of(ids[f"grad-{n}"]) == t.get_text()
    orange = [style(ids[f"edge-{u}-{v}-{k}"][0]) for u, v, k in view.artists.arrows]
    assert any(float(s["stroke-width"]) > 3.5 for s in orange)  # the active edge is drawn thick
    view.set_step(None)
    assert to_svg(view) == done


def _tf_program(n_ops):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from bench_scale import tf_program
    finally:
        sys.path.pop(0)
    return tf_program(n_ops)


@pytest.mark.slow
def test_a_1000_op_graph_exports_every_box(tmp_path):
    run, variables = _tf_program(1000)
    with tv.GradientTape() as tape:
        loss = run()
    view = tv.view(tape, loss, collapsed=False)
    assert len(view.artists.boxes) > 1000
    path = save_view(view, tmp_path / "big.svg")
    svg = path.read_text(encoding="utf-8")
    assert 200_000 < len(svg) < 5_000_000
    ids = by_id(parse(svg))
    assert sum(1 for i in ids if i.startswith("node-")) == len(view.artists.boxes)
    assert sum(1 for i in ids if i.startswith("edge-")) == len(view.artists.arrows)
    assert sum(1 for i in ids if i.startswith("grad-")) == len(view.artists.grads)
    assert "<metadata>" not in svg  # written by tapeviz, not savefig


# --------------------------------------------------------------------------- save_view engines


def test_save_view_engines(tmp_path):
    view, _ = small_view()
    ours = save_view(view, tmp_path / "a.svg").read_text(encoding="utf-8")
    assert ours == to_svg(view)
    theirs = save_view(view, tmp_path / "b.svg", engine="matplotlib").read_text(encoding="utf-8")
    assert "matplotlib" in theirs and parse(theirs) is not None
    with pytest.raises(ValueError, match="engine"):
        save_view(view, tmp_path / "c.svg", engine="cairo")


def test_views_drawn_into_other_figures_fall_back_to_matplotlib(tmp_path):
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        y = x * 3.0
    fig, (left, right) = plt.subplots(1, 2)
    try:
        right.plot([0, 1], [1, 0])
        view = tv.view(tape, y, ax=left)
        assert not draws_whole_figure(view)
        svg = save_view(view, tmp_path / "shared.svg").read_text(encoding="utf-8")
        assert "matplotlib" in svg  # the other axes are in the file too
    finally:
        plt.close(fig)
    own, _ = small_view()
    assert draws_whole_figure(own)


# --------------------------------------------------------------------------- scene and artists


def _states(view):
    """Steps worth comparing: the start, one step in, the middle, finished, and
    finished with clipped-gradient overrides on the variables."""
    n = view.n_steps
    yield from ((0, None), (1, None), (n // 2, None), (None, None))
    variables = [m for m, d in view.graph.nx.nodes(data=True) if d["kind"] == "variable"]
    yield None, {m: "∂ 1.5 → 0.75" for m in variables[:2]}


def _same_document(make_view):
    fresh, drawn = make_view(), make_view()
    drawn.artists  # noqa: B018  (makes the matplotlib artists: to_svg reads them from now on)
    assert not fresh.drawn and drawn.drawn
    for step, overrides in _states(fresh):
        for v in (fresh, drawn):
            v.set_grad_overrides(overrides or {})
            v.set_step(step)
        assert to_svg(fresh) == to_svg(drawn), (step, overrides)
    assert not fresh.drawn  # writing SVG never made artists


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_scene_and_artists_write_the_same_document_for_every_seed_example(name):
    run = EXAMPLES[name].run()
    target = run.target if not isinstance(run.target, dict) else next(iter(run.target.values()))
    _same_document(lambda: tv.view(run.tape, target))


@pytest.mark.slow
def test_scene_and_artists_write_the_same_document_for_large_collapsed_expanded_and_nan_graphs():
    run, _ = _tf_program(300)
    with tv.GradientTape() as tape:
        loss = run()
    _same_document(lambda: tv.view(tape, loss))  # layers collapsed: norms on layer boxes
    _same_document(lambda: tv.view(tape, loss, collapsed=False))  # routed edges, parallel edges
    x = tf.Variable([1.0, 0.0], name="x")
    with tv.GradientTape() as tape2:
        y = tf.reduce_sum(tf.sqrt(x) * tf.stop_gradient(x))  # d sqrt / dx at 0 is inf: red
    _same_document(lambda: tv.view(tape2, y))
    skip = skip_view()  # one tape, two views: node names are the tape's
    _same_document(lambda: GraphView(skip.graph, skip.flow))


def test_restyled_artists_show_in_the_svg_and_scene_writes_do_not_draw(tmp_path):
    view, objs = small_view()
    save_view(view, tmp_path / "a.svg")
    assert not view.drawn  # a file export made no matplotlib artist
    x_node = objs["tape"].graph.node_of(objs["x"])
    view.artists.boxes[x_node].set_facecolor("#123456")
    view.artists.grads[x_node].set_text("restyled by the user")
    svg = save_view(view, tmp_path / "b.svg").read_text(encoding="utf-8")
    ids = by_id(parse(svg))
    assert "#123456" in ET.tostring(ids[f"node-{x_node}"], encoding="unicode")
    assert text_of(ids[f"grad-{x_node}"]) == "restyled by the user"


def test_the_canvas_may_shrink_a_projector_picture_to_the_page_but_keeps_its_text_readable():
    import re

    from tapeviz import examples
    from tapeviz.output.svg import MIN_FIT_TEXT, to_svg
    from tapeviz.picture.themes import PROJECTOR

    run = examples.basic()
    projector = tv.view(run.tape, run.target, theme="projector")
    root = re.search(r"<svg [^>]*>", to_svg(projector, fit=True)).group(0)
    width = float(re.search(r'width="([0-9.]+)pt"', root).group(1))
    floor = float(re.search(r"min-width:([0-9.]+)pt", root).group(1))
    assert PROJECTOR.smallest == PROJECTOR.font - 1.5  # its tags, 10.5 pt: shrunk to 9 pt, no further
    assert "max-width:100%" in root and floor == pytest.approx(width * MIN_FIT_TEXT / PROJECTOR.smallest, abs=0.01)
    assert "max-width" not in re.search(r"<svg [^>]*>", to_svg(projector)).group(0)  # files keep their size
    light = tv.view(run.tape, run.target)  # 6.5 pt tags: no room to shrink
    assert "max-width" not in re.search(r"<svg [^>]*>", to_svg(light, fit=True)).group(0)
