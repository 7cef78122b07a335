"""The explorer's canvas without a browser: patches (explorer/patches.py) turn any picture
into the next one exactly, clicks map to state fields, tips carry TF's numbers, open
groups are framed, and the HTML fallback says why once. The browser side is in
test_browser_canvas.py (JupyterLab, Voilà) and test_export_html.py (the exported page)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import tensorflow as tf
from front_end import send_from_page

import tapeviz as tv
from tapeviz.explorer import canvas as cv
from tapeviz.explorer import patches
from tapeviz.explorer import state as st
from tapeviz.record.values import GRAD_NORM, format_value


def _nested_model_tape():
    import keras

    keras.utils.set_random_seed(0)
    block = keras.Sequential(
        [keras.layers.Dense(4, activation="tanh", name="a"), keras.layers.Dense(4, activation="tanh", name="b")],
        name="block",
    )
    model = keras.Sequential([keras.Input((3,)), block, keras.layers.Dense(1, name="head")], name="net")
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype("float32"))
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    return tape, loss, model


@pytest.fixture(scope="module")
def nested():
    tape, loss, model = _nested_model_tape()
    ex = tv.explore(tape, loss, theme="light", depth=1)
    yield ex, tape, loss, model
    ex.close()


def test_patches_turn_every_step_and_clip_setting_into_the_fresh_picture(nested):
    ex, *_ = nested
    model, s0 = ex.graph_targets, ex.state.replace(collapsed=frozenset())  # everything open: the most elements
    last = model.flow(s0.target).last_step
    states = [s0.replace(step=k) for k in [last, 0, 3, last - 1, 1, last]]
    states += [s0.replace(clip_mode="by_norm", clip_norm=v) for v in (0.1, 0.05, 1.0)]
    states += [s0.replace(clip_mode="by_value", clip_value=(-0.01, 0.01)), s0.replace(step=2, clip_mode="by_value")]
    prev = st.picture(model, states[0])
    for s in states[1:]:
        new = st.picture(model, s)
        patch = patches.diff(patches.parse(prev), patches.parse(new))
        assert patch is not None, s
        assert patches.apply(prev, patch) == new, s
        prev = new


class _Page:
    """What canvas.py's front end does with frames and the patches "ahead", in Python."""

    def __init__(self, c):
        self.c, self.table = c, {"f": {}, "b": {}, "seq": -1}
        self.markup, self.seq, self.at = c.frame["markup"], c.frame["seq"], c.frame["at"]
        self.merge()

    def merge(self):
        a = self.c.ahead
        if a.get("seq") != self.seq:
            return
        if self.table.get("seq") != a["seq"]:  # a new seq: keep what the kernel says did not change
            keep = a.get("keep", {}) if a.get("carry") == self.table.get("seq") else {}
            self.table = {d: {k: self.table[d][k] for k in keep.get(d, ()) if k in self.table[d]} for d in "fb"}
            self.table["seq"] = a["seq"]
        for d in "fb":
            self.table[d].update({int(k): p for k, p in a[d].items()})

    def walk(self, to) -> bool:
        d, ks = ("f", range(self.at, to)) if to >= self.at else ("b", range(self.at, to, -1))
        if self.table["seq"] != self.seq or self.pending or any(k not in self.table[d] for k in ks):
            return False
        for k in ks:
            self.markup = patches.apply(self.markup, self.table[d][k])
        self.at = to
        return True

    def clip_to(self, v) -> bool:
        """The clip_norm slider moved to ``v`` in the browser: patch at once if its patch came ahead."""
        got = self.c.clips
        if self.pending or got.get("seq") != self.seq or got.get("at") != self.at:
            return False
        hit = next((p for x, p in got["c"] if abs(x - v) <= 1e-9 * max(1, abs(v))), None)
        if hit is None:
            return False
        self.markup = patches.apply(self.markup, hit)
        self.pending = (self.seq, self.at, v)
        return True

    pending: tuple | None = None

    def receive(self, frame):
        if self.pending:  # the page patched a clip move by itself: the kernel's frame must say so
            base, at, v = self.pending
            self.pending = None
            ok = frame["kind"] == "patch" and frame["base"] == base and frame["from"] == at
            assert ok and any(abs(x - v) < 1e-9 for x in frame["clip_ok"]), "the page went where the kernel did not"
            self.seq, self.at = frame["seq"], frame["at"]
            return
        if frame["kind"] == "full":
            self.markup = frame["markup"]
        else:
            assert frame["base"] == self.seq and (self.at == frame["from"] or self.walk(frame["from"]))
            self.markup = patches.apply(self.markup, frame["patch"])
        self.seq, self.at = frame["seq"], frame["at"]


def test_the_page_steps_by_itself_and_the_kernel_sends_nothing_it_can_do(nested):
    _, tape, loss, _ = nested
    ex = tv.explore(tape, loss, theme="light", depth=1)
    c = ex.canvas
    send_from_page(c, {"event": "click", "id": "node-layer:net"})  # a new layout: a whole picture
    page = _Page(c)
    last = c._at
    seen = []
    for to in [last - 1, last - 2, last - 1, 2, 1, 0, last]:
        local = page.walk(to)  # the slider moved in the browser: the page goes first
        before = c.frame
        ex.controls["step"].value = to  # then the kernel hears of it
        if c.frame is not before:
            assert not local, "the kernel sent a picture the page had made itself"
            page.receive(c.frame)
        page.merge()
        seen.append(local)
        assert page.at == to and page.markup == c.value == st.picture(ex.graph_targets, ex.state)
    assert seen[:3] == [True, True, True] and seen[4:6] == [True, True]
    # other settings with the same picture at this step: a new seq, so old step patches are not used
    ex.controls["step"].value = last - 1
    page.walk(last - 1) or page.receive(c.frame)
    page.merge()
    before = c.frame
    ex.controls["clip"].value = "by_value"  # clipped texts show on the last step only
    assert c.frame is not before and c.frame["kind"] == "patch"
    assert c.frame["patch"]["set"] == c.frame["patch"]["text"] == {}
    page.receive(c.frame)
    page.merge()
    assert page.walk(last) and page.markup == st.picture(ex.graph_targets, ex.state.replace(step=last))
    ex.close()


def test_a_clip_move_is_patched_by_the_page_and_confirmed_by_the_kernel(nested, monkeypatch):
    _, tape, loss, _ = nested
    # as many neighbouring clips as fit 30 ms: all four on a quiet machine; a loaded one
    # must not change what this test sees
    monkeypatch.setattr(cv.Canvas, "CLIP_BUDGET", 60.0)
    monkeypatch.setattr(cv.Canvas, "AHEAD_BUDGET", 60.0)
    ex = tv.explore(tape, loss, theme="light", collapsed=False)  # every variable's clipped gradient drawn
    c, s = ex.canvas, ex.controls["clip_norm"]
    ex.controls["clip"].value = "by_norm"
    s.value = 0.2  # below the head bias's gradient norm (0.2869): it is clipped
    send_from_page(c, {"event": "resync"})  # the page starts from a whole picture
    page = _Page(c)
    assert [v for v, _ in c.clips["c"]] == [0.19, 0.21, 0.18, 0.22]  # one and two slider steps either way
    for v in [0.19, 0.18, 0.19, 0.2, 0.05, 0.06]:
        local = page.clip_to(v)  # the slider moved in the browser: the page goes first
        before = c.frame
        s.value = v  # then the kernel hears of it, clips with TF and sends its frame
        assert c.frame is not before
        page.receive(c.frame)
        page.merge()
        assert local == (v != 0.05), v  # 0.05: no patch came ahead for it (a drag): the kernel's frame
        assert page.markup == c.value == st.picture(ex.graph_targets, ex.state), v
        assert f"∂ [-0.2869] → [{-v:.4g}]<" in page.markup  # the head's bias clipped (by TF: see test_clipping)
        want = st.picture(ex.graph_targets, ex.state.replace(clip_norm=round(v - 0.01, 10)))
        assert patches.apply(page.markup, c.clips["c"][0][1]) == want  # and the next value's patch is there
    # the step patches the clip moves left alone stay on the page: only those touching the finished pass go again
    last, kept = c._at, c.ahead["keep"]
    assert len(kept["b"]) >= 2 and last not in kept["b"] and c.ahead["b"].keys() == {str(last)}
    assert page.walk(last - 3)
    ex.controls["step"].value = last - 3
    assert page.markup == c.value
    # away from the finished pass the clipped texts are not drawn: nothing is sent ahead for clip moves
    ex.controls["step"].value = 2
    assert c.clips["at"] != 2 or c.clips["c"] == []
    ex.close()


def test_a_new_layout_gives_no_patch_and_bad_documents_none():
    assert patches.parse("<div>not svg</div>") is None
    assert patches.parse('<svg a="1">\n<g id="x">\n<rect/>\n</g>\n</svg>\n') is None  # a line without an id
    a = patches.parse('<svg w="1">\n<g id="layer-nodes">\n<g id="node-a">A</g>\n</g>\n</svg>\n')
    b = patches.parse('<svg w="2">\n<g id="layer-nodes">\n<g id="node-a">A</g>\n</g>\n</svg>\n')
    assert a is not None and b is not None
    assert patches.diff(a, b) is None  # another size: the whole picture


def test_a_text_whose_words_change_is_sent_as_its_words():
    def doc(grad: str, x: str = "1", title: str = "Step 1") -> str:
        box = f'<g id="node-a"><rect/><text id="grad-a" x="{x}">{grad}</text></g>'
        title = f'<text id="title">{title}</text>'
        return "\n".join(['<svg w="1">', '<g id="layer-nodes">', box, title, "</g>", "</svg>"])

    a = doc("∂ 0.5 → 0.4")
    for b, want in [
        (doc("∂ 0.5 → 0.3", title="Step 2"), {"set": {}, "text": {"grad-a": "∂ 0.5 → 0.3", "title": "Step 2"}}),
        (doc("∂ 0.5 → 0.3", x="2"), {"set": {"grad-a": '<text id="grad-a" x="2">∂ 0.5 → 0.3</text>'}, "text": {}}),
        (doc("a &lt; b &amp; it&#x27;s"), {"set": {}, "text": {"grad-a": "a &lt; b &amp; it&#x27;s"}}),
    ]:
        patch = patches.diff(patches.parse(a), patches.parse(b))
        assert patch is not None and {k: patch[k] for k in ("set", "text")} == want
        assert patches.apply(a, patch) == b + "\n"


def test_a_box_whose_spoken_name_changes_sends_its_attribute_and_words():
    def doc(label: str, grad: str, role: str = "img", rect: str = "<rect/>") -> str:
        box = f'<g id="node-a" role="{role}" aria-label="{label}">{rect}<text id="grad-a" x="1">{grad}</text></g>'
        return "\n".join(['<svg w="1">', '<g id="layer-nodes">', box, "</g>", "</svg>"])

    a = doc("x, gradient not arrived yet", "")
    b = doc("x, gradient 4.0 &amp; it&#x27;s", "∂ 4.0")
    patch = patches.diff(patches.parse(a), patches.parse(b))
    assert patch["set"] == {} and patch["text"] == {"grad-a": "∂ 4.0"}
    assert patch["attr"] == {"node-a": {"aria-label": "x, gradient 4.0 &amp; it&#x27;s"}}  # as written
    assert patches.apply(a, patch) == b + "\n"
    # another attribute set, or more than the words changed inside: the whole element
    other = doc("x", "∂ 4.0", rect="<rect x='2'/>")
    whole = patches.diff(patches.parse(a), patches.parse(other))
    assert "attr" not in whole and list(whole["set"]) == ["node-a"]
    assert patches.apply(a, whole) == other + "\n"
    same = patches.diff(patches.parse(a), patches.parse(a))
    assert "attr" not in same and same["set"] == {} and same["text"] == {}


def test_moves_reorder_with_few_puts():
    rows = [f'<g id="e{i}">{i}</g>' for i in range(50)]

    def doc(order):
        return "\n".join(['<svg x="1">', '<g id="layer-edges">', *order, "</g>", "</svg>"]) + "\n"

    old = doc(rows)
    moved = rows[:10] + rows[11:40] + [rows[10]] + rows[40:]  # one edge drawn later (thicker now)
    new = doc([r.replace(">12<", ">twelve<") for r in moved] + ['<g id="e99">new</g>'])
    patch = patches.diff(patches.parse(old), patches.parse(new))
    assert patches.apply(old, patch) == new
    assert len(patch["put"]) == 2 and patch["set"] == {"e12": '<g id="e12">twelve</g>'} and patch["drop"] == []


def test_canvas_value_is_the_whole_picture_and_steps_send_patches(nested):
    ex, *_ = nested
    c = ex.canvas
    assert isinstance(c, cv.Canvas)
    assert c.value == st.picture(ex.graph_targets, ex.state)
    assert c.frame["kind"] == "full" and c.frame["markup"] == c.value
    before, frame, last = c.value, c.frame, c._at
    assert ("b", last) in c._sent  # the patch to the step before went ahead with the picture
    ex.controls["step"].value = last - 1
    # the page does it alone: no picture sent, at most more step patches ahead (how many the time
    # budget allows: on a busy machine fewer went with the picture, so more may go now)
    assert c.frame is frame and c.sent_bytes in (0, len(json.dumps(c.ahead)))
    assert patches.apply(before, c._sent["b", last]) == c.value == st.picture(ex.graph_targets, ex.state)
    ex.controls["step"].value = 0  # out of reach of the patches sent: a patch of the page's picture
    assert c.frame["kind"] == "patch" and c.frame["from"] == last - 1 and c.frame["at"] == 0
    assert c.get_state()["frame"] == {"kind": "full", "seq": c._seq, "at": c._at, "markup": c.value}  # a reload
    ex.controls["step"].value = ex.controls["step"].max


def test_clicks_open_close_and_select(nested):
    ex, tape, loss, model = nested
    c = ex.canvas
    assert "node-layer:net" in c.tips
    send_from_page(c, {"event": "click", "id": "node-layer:net"})
    closed = ex.graph_targets.collapsed(ex.state)
    assert "net" not in closed and {"net/block", "net/head"} <= closed  # one level opens
    assert c.frame["kind"] == "full" and 'id="group-net"' in c.value and ">net</text>" in c.value
    send_from_page(c, {"event": "click", "id": "node-layer:net/block"})
    assert 'id="group-net/block"' in c.value and 'id="node-layer:net/block/a"' in c.value
    send_from_page(c, {"event": "click", "id": "group-net/block"})
    assert "net/block" in ex.graph_targets.collapsed(ex.state) and 'id="group-net/block"' not in c.value
    assert 'id="node-layer:net/block"' in c.value
    # select: open the head, click its kernel; the inspector shows the variable
    send_from_page(c, {"event": "click", "id": "node-layer:net/head"})
    kernel = next(k for k, t in c.tips.items() if t.startswith("net/head/kernel"))
    send_from_page(c, {"event": "click", "id": kernel})
    assert ex.state.node == kernel[len("node-") :]
    assert "net/head/kernel" in ex.inspector.value
    send_from_page(c, {"event": "click", "id": "legend"})  # nothing happens
    send_from_page(c, {"event": "click", "id": "group-net"})
    assert "net" in ex.graph_targets.collapsed(ex.state)


def test_a_click_on_a_box_of_alike_blocks_opens_the_first(nested):
    import keras

    keras.utils.set_random_seed(0)

    def block(i):
        dense = keras.layers.Dense
        return keras.Sequential([dense(4, activation="tanh", name=f"a{i}"), dense(4, name=f"b{i}")], name=f"block{i}")

    model = keras.Sequential([keras.Input((4,)), block(1), block(2), block(3), keras.layers.Dense(1, name="head")])
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 4)).astype("float32"))
    with tv.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    ex = tv.explore(tape, loss, depth=2)
    run = next(k for k in st.tips(ex.graph_targets, ex.state) if "–" in k)  # "node-layer:<model>/block1–3"
    ex._on_canvas_click(run)
    assert "group-" + run.removeprefix("node-layer:").replace("block1–3", "block1") in ex.canvas.value
    assert 'id="node-layer:' in ex.canvas.value and "block2–3" in ex.canvas.value  # the other two: one box
    ex.close()


def test_a_click_opens_a_loop_one_step_at_a_time():
    """The model called once per step of an episode: a click on its box opens step 0
    in a frame (the other steps one box), a click on that box opens its first step; the
    numbers stay TensorFlow's."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "support"))
    from gallery_models import actor_critic

    step = actor_critic(steps=6)
    ex = tv.explore(step.tape, step.loss)
    tips = st.tips(ex.graph_targets, ex.state)
    # the explorer opens on the file's default: the loop folded (ac ×6), as tv.save draws it
    assert len(ex.graph_targets.view(ex.state).scene.boxes) == len(tv.view(step.tape, step.loss).scene.boxes)
    folded = next(k for k, t in tips.items() if t.split("\n")[0] == "ac ×6 (steps 0–5)")
    ex._on_canvas_click(folded)
    assert "ac · step 0" in ex.canvas.value and "ac ×5 (steps 1–5)" in ex.canvas.value
    tips = st.tips(ex.graph_targets, ex.state)
    rest = next(k for k, t in tips.items() if t.startswith("ac ×5"))
    assert "click: open step 1" in tips[rest]
    ex._on_canvas_click(rest)
    assert ex.state.repeat_step == 1
    assert (
        "ac · step 1" in ex.canvas.value and "ac (step 0)" in ex.canvas.value and "ac ×4 (steps 2–5)" in ex.canvas.value
    )
    view = ex.graph_targets.view(ex.state)
    for v, g in zip(step.variables, step.tape.gradient(step.loss, step.variables), strict=True):
        np.testing.assert_array_equal(view.flow.grad(v), tf.convert_to_tensor(g).numpy())
    ex.close()


def test_tips_show_tensorflow_s_gradient(nested):
    ex, tape, loss, model = nested
    s = ex.state.replace(collapsed=frozenset())
    tips = st.tips(ex.graph_targets, s)
    var = model.get_layer("head").kernel
    g = tape.gradient(loss, var).numpy()
    tip = next(t for t in tips.values() if t.startswith("net/head/kernel"))
    assert format_value(g, norm=GRAD_NORM) in tip
    assert "float32 (4, 1)" in tip
    assert all(b.gid in tips for b in ex.graph_targets.view(s).scene.boxes.values())


def test_frames_hold_their_groups_boxes(nested):
    ex, *_ = nested
    s = ex.state.replace(collapsed=frozenset({"net/head"}))
    scene = ex.graph_targets.view(s).scene
    from tapeviz.picture.frames import group_frames

    frames = {f.gid: f for f in group_frames(scene)}
    assert set(frames) == {"net", "net/block", "net/block/a", "net/block/b"}
    for f in frames.values():
        pieces = f.parts or ((f.x, f.y, f.w, f.h),)
        for n, b in scene.boxes.items():
            path = scene.display.tree.paths.get(n, ())
            if f.gid in path:  # each of its boxes is inside a piece of the frame
                assert any(x <= b.x and b.x + b.w <= x + w and y <= b.y and b.y + b.h <= y + h for x, y, w, h in pieces)
    # the frames' names (9 pt) and lines clear of every text, the caption and each other's names,
    # with the groups as opened here and with all three levels open
    from placement_check import check

    assert scene.frames and {f.gid for f in scene.frames} == set(frames)
    check(scene, "nested frames")
    check(ex.graph_targets.view(ex.state.replace(collapsed=frozenset())).scene, "nested frames, all open")


def test_fallback_to_html_says_so_once(monkeypatch):
    import ipywidgets as W

    monkeypatch.setenv("TAPEVIZ_CANVAS", "html")
    monkeypatch.setattr(cv, "_warned", False)
    tape, loss, _ = _nested_model_tape()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        a = tv.explore(tape, loss)
        b = tv.explore(tape, loss)
    assert type(a.canvas) is W.HTML and a.canvas.value.startswith("<svg")
    assert len([w for w in seen if "anywidget" in str(w.message)]) == 1
    a.close()
    b.close()


def test_canvas_available_finds_anywidget_s_front_end():
    assert cv.canvas_available()  # the test environment installs anywidget's lab extension
