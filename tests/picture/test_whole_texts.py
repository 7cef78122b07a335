"""Texts on boxes keep their words and numbers whole (issue 32, "pictures 2").

- A box's title breaks between words (``stack of 20`` / ``log_probs``, not ``log_`` /
  ``probs``); an identifier breaks only when it alone is wider than the box.
- A value on a box, under it or on an edge never shows a number cut in two
  (``[[-0.2618, -2.202, -2.1…``): its first numbers whole, "…", every bracket closed, else
  its shape and norm. Each number is the one format_value writes for that element of
  TensorFlow's value.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.picture import fonts
from tapeviz.picture.names import name_lines
from tapeviz.picture.value_text import fit_value
from tapeviz.picture.wording import box_names, node_value
from tapeviz.record.values import GRAD_NORM, VALUE_NORM, format_value, listed_items, value_head

ELLIPSIS = "…"
#: The explorer's box: 113 pt wide, 92% of it text, titles at 9.5 pt bold.
EXPLORER_INNER, EXPLORER_TITLE = 113 * 0.92, 9.5


# ----------------------------------------------------------------------------- titles
def _word_breaks(title: str, lines: list[str], size: float, weight: str, width: float) -> list[str]:
    """The places where ``lines`` break ``title`` inside a word that alone fits ``width``:
    ``"log_|probs"``. A line may end only where the title has a space (or inside a word too
    wide for a line alone)."""
    bad = []
    pos = 0
    for line in lines[:-1]:
        pos = title.index(line, pos) + len(line)
        if pos < len(title) and title[pos] != " " and title[pos - 1] != " ":
            start = title.rfind(" ", 0, pos) + 1
            end = title.find(" ", pos)
            word = title[start : end if end >= 0 else len(title)]
            if fonts.text_width(word, size, weight) <= width:
                bad.append(title[start:pos] + "|" + title[pos : end if end >= 0 else len(title)])
    return bad


def test_a_title_breaks_between_words():
    lines = name_lines("stack of 20 log_probs", EXPLORER_INNER, EXPLORER_TITLE, "bold")
    assert lines == ["stack of 20", "log_probs"]
    assert name_lines("ac ×20 (steps 0–19)", EXPLORER_INNER, EXPLORER_TITLE, "bold") == ["ac ×20", "(steps 0–19)"]
    # a bracketed note stays whole even where its first word would still fit on the line
    assert name_lines("conv2_block2–3 (2 alike)", 100.0, 8.0, "bold") == ["conv2_block2–3", "(2 alike)"]
    for title in ("stack of 20 log_probs", "Σ 20 log-probs of the policy", "gradient_penalty()/critic"):
        for width in (70.0, 90.0, EXPLORER_INNER, 130.0):
            lines = name_lines(title, width, EXPLORER_TITLE, "bold")
            assert all(fonts.text_width(x, EXPLORER_TITLE, "bold") <= width for x in lines), (title, width, lines)
            if ELLIPSIS not in lines[-1]:
                assert " ".join(lines).replace(" ", "") == title.replace(" ", ""), lines
                assert _word_breaks(title, lines, EXPLORER_TITLE, "bold", width) == [], (width, lines)


def test_an_identifier_too_wide_alone_breaks_at_its_parts():
    width = fonts.text_width("SparseSoftmaxCross", 8.0, "bold") + 1
    assert name_lines("SparseSoftmaxCrossEntropyWithLogits", width, 8.0, "bold") == [
        "SparseSoftmaxCross",
        "EntropyWithLogits",
    ]
    # a number stays with the name it counts (Keras' layer_normalization_1)
    width = fonts.text_width("layer_normalization_", EXPLORER_TITLE, "bold") + 1
    assert fonts.text_width("layer_normalization_1", EXPLORER_TITLE, "bold") > width
    assert name_lines("layer_normalization_1", width, EXPLORER_TITLE, "bold") == ["layer_", "normalization_1"]
    width = fonts.text_width("x a_long_", 8.0, "bold") + 1
    assert fonts.text_width("a_long_name", 8.0, "bold") > width
    # a word too wide alone breaks after its "_", starting on the line it reached
    assert name_lines("x a_long_name", width, 8.0, "bold") == ["x a_long_", "name"]


# ----------------------------------------------------------------------------- values
def _element_texts(a: np.ndarray) -> list[str]:
    """Each element of ``a`` as format_value writes a scalar (TF's number, 4 significant digits)."""
    return [format_value(np.asarray(x)) for x in a.reshape(-1)]


def _numbers_whole(text: str, value, summary=None, norm: str = VALUE_NORM) -> str | None:
    """Why ``text`` does not show ``value`` with every number whole (None: it does). A list
    is parsed: balanced brackets, each number the element's own text in order, at most one
    "…" and only at a list's end; a norm is the value's norm to 3 digits."""
    if not text:
        return None
    if re.search(r"[\d.]" + ELLIPSIS, text):
        return f"a number cut: {text!r}"
    body = text.split("∂ ", 1)[-1].lstrip("⚠ ")
    if body.startswith("["):
        if body.count("[") != body.count("]") or not body.endswith("]"):
            return f"brackets not closed: {text!r}"
        tokens = [t for t in re.split(r"[\[\], ]+", body) if t]
        if tokens and tokens[-1] == ELLIPSIS:
            tokens = tokens[:-1]
        if ELLIPSIS in tokens:
            return f"an ellipsis inside: {text!r}"
        a = np.asarray(value)
        if tokens != _element_texts(a)[: len(tokens)] or not tokens:
            return f"numbers {tokens} are not the value's first {_element_texts(a)[: len(tokens)]}"
        return None
    if norm in body:
        got = body.split(norm, 1)[1].strip()
        a = None if value is None else np.asarray(value, np.float64)
        want = summary["norm"] if a is None else float(np.sqrt(np.sum(a * a)))
        if got != f"{want:.3g}":
            return f"norm {got} is not {want:.3g}: {text!r}"
    return None


def test_value_head_keeps_whole_numbers_and_closes_brackets():
    a = tf.nn.log_softmax(tf.constant([[0.3, -1.64, -1.56]])).numpy()
    whole = format_value(a)
    first = _element_texts(a)
    assert whole == f"[[{first[0]}, {first[1]}, {first[2]}]]"
    assert listed_items(a) == 3 and listed_items(a[0, 0]) == 0 and listed_items(np.zeros(40)) == 0
    assert value_head(a, 2) == f"[[{first[0]}, {first[1]}, …]]"
    assert value_head(a, 1) == f"[[{first[0]}, …]]"
    b = np.arange(6.0).reshape(2, 3)
    assert value_head(b, 3) == "[[0.0, 1.0, 2.0], …]"
    assert value_head(b, 4) == "[[0.0, 1.0, 2.0], [3.0, …]]"
    assert value_head(b, 6) == format_value(b)


def test_fit_value_summarises_by_whole_elements_then_shape_and_norm():
    a = tf.nn.log_softmax(tf.constant([[0.3, -1.64, -1.56]])).numpy()
    size = 8.0
    whole = format_value(a)
    full = fonts.text_width(whole, size)
    assert fit_value(a, full, size) == whole
    two = value_head(a, 2)
    assert fit_value(a, fonts.text_width(two, size) + 0.5, size) == two
    for room in np.linspace(10.0, full, 25):
        text = fit_value(a, float(room), size)
        assert fonts.text_width(text, size) <= room
        assert _numbers_whole(text, a) is None, text
    # narrower than one number: the shape and norm (TF's norm), or nothing; never a cut number
    norm_text = f"1×3 {VALUE_NORM} {float(np.linalg.norm(a.astype(np.float64))):.3g}"
    assert fit_value(a, fonts.text_width(norm_text, size) + 0.5, size) == norm_text
    g = np.array([0.5, -0.25])
    text = fit_value(g, fonts.text_width("∂ [0.5, …]", size) + 0.5, size, norm=GRAD_NORM, prefix="∂ ")
    assert text == "∂ [0.5, …]"
    # a gradient says how big it is first: shape and norm before its first numbers
    g3 = np.array([0.5, -0.25, 0.125])
    norm = f"{float(np.linalg.norm(g3)):.3g}"
    room = fonts.text_width(f"∂ 3 ‖g‖ {norm}", size) + 0.5
    assert room < fonts.text_width("∂ " + format_value(g3), size)
    assert fit_value(g3, room, size, norm=GRAD_NORM, prefix="∂ ", norm_first=True) == f"∂ 3 ‖g‖ {norm}"
    assert fit_value(g3, room, size, norm=GRAD_NORM, prefix="∂ ").endswith(", …]")  # values: first numbers first
    assert fit_value(g3, 1.0, size, norm=GRAD_NORM, prefix="∂ ", norm_first=True) == ""  # nothing, never a cut number


# ----------------------------------------------------------------------------- real pictures
def _texts_checked(scene) -> list[str]:
    """Every title broken inside a fitting word, and every value, gradient and edge text of
    ``scene`` (at its current step) that cuts a number, as messages."""
    bad = []
    graph, disp = scene.graph, scene.display
    names = box_names(graph, disp, scene.lang, scene.unframed)
    for n, (title, _, value) in scene.labels.items():
        lines = title.text.split("\n")
        whole = names[n][0]
        inner = scene.boxes[n].w * scene.unit[0] * 0.92  # the points of text a box holds (placement.py)
        if ELLIPSIS not in title.text:
            assert "".join(lines).replace(" ", "") == whole.replace(" ", ""), (lines, whole)
        # a break inside a word only where that word alone is wider than the box
        bad += [f"title {whole!r} breaks at {w!r}" for w in _word_breaks(whole, lines, title.size, "bold", inner)]
        got = node_value(graph, n, disp)
        if got is not None and (why := _numbers_whole(value.text, *got)):
            bad.append(f"box {whole!r}: {why}")
    for label in [*scene.grads.values(), *scene.edge_labels.values()]:
        if re.search(r"[\d.]" + ELLIPSIS, label.text) or label.text.count("[") != label.text.count("]"):
            bad.append(f"gradient text cut: {label.text!r}")
    return bad


def _explorer_scene(step):
    return tv.explore(step.tape, step.loss).view.scene


@pytest.mark.parametrize("name", ["actor-critic", "Transformer", "GAN", "VAE", "WGAN-GP", "seq2seq LSTM"])
def test_gallery_pictures_keep_words_and_numbers_whole(recorded, name):
    """The default file picture and the explorer's (larger text in a narrower box), at the
    first, a middle and the last step."""
    step, fl, scene = recorded(name)
    explorer = _explorer_scene(step)
    for sc in (scene, explorer):
        for k in (0, fl.last_step // 2, fl.last_step):
            sc.set_step(k)
            assert _texts_checked(sc) == [], (name, k)


def test_the_actor_critic_explorer_picture_reads_whole(recorded):
    """The issue's picture: 'stack of 20' / 'log_probs' and the LogSoftmax ×20 box's value
    as its first numbers whole, '…' and closed brackets."""
    step, _, _ = recorded("actor-critic")
    scene = _explorer_scene(step)
    trios = {t.text: (n, v.text) for n, (t, _, v) in scene.labels.items()}
    assert "stack of 20\nlog_probs" in trios, list(trios)
    n, shown = trios["LogSoftmax ×20"]
    value, _ = node_value(scene.graph, n, scene.display)
    first = _element_texts(np.asarray(value))
    assert shown.startswith(f"[[{first[0]}, ") and shown.endswith(", …]]"), shown
    assert _numbers_whole(shown, value) is None
    # every writer shows the scene's text: the explorer's SVG and the matplotlib drawing (PNG)
    from tapeviz.explorer.state import picture
    from tapeviz.output.svg import to_svg

    explorer = tv.explore(step.tape, step.loss)
    assert f">{shown}</text>" in picture(explorer.graph_targets, explorer.state)
    view = explorer.view
    assert f">{shown}</text>" in to_svg(view)
    drawn = [t.get_text() for t in view.artists.labels[n]]
    assert shown in drawn and "stack of 20\nlog_probs" in [
        t.get_text() for trio in view.artists.labels.values() for t in trio
    ]


def test_a_folded_constant_tag_too_narrow_keeps_its_numbers_whole():
    """A 4-number constant folded into its op is a tag on the box; in a file's 6.5 pt tags
    and the explorer's 9 pt ones it is too wide for the box: its first numbers whole, "…"."""
    from tapeviz.picture.scene import Scene

    x = tf.Variable([1.0, 2.0, 3.0, 4.0])
    c = np.array([-0.1234567, -0.2345678, -0.3456789, -0.4567891], np.float32)
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(x * tf.constant(c))  # made inside, unnamed: folded into * as a tag
    for scene in (Scene(tape.graph, tv.flow(tape, y)), tv.explore(tape, y).view.scene):
        tags = [t.text for tags in scene.chips.values() for t in tags]
        shown = [t for t in tags if t.startswith("[")]
        assert len(shown) == 1 and shown[0].endswith(", …]"), tags
        assert _numbers_whole(shown[0], c) is None, shown
        assert "axis [0]" in tags


def test_a_stopped_bundle_too_narrow_for_its_count_keeps_its_reason_whole(recorded):
    """WGAN-GP in the explorer: two unwatched inputs of gradient_penalty() run in one bundle
    whose label "not_watched (2)" does not fit its gap; the count goes, the reason stays
    whole (it read "not_watche…")."""
    step, _, _ = recorded("WGAN-GP")
    scene = tv.explore(step.tape, step.loss).view.scene
    labels = scene.edge_labels.items()
    stopped = [lbl.text for e, lbl in labels if len(scene.arrows[e].members) > 1 and lbl.style == "italic"]
    assert "not_watched" in stopped
    assert not [t for lbl in scene.edge_labels.values() if fonts.ELLIPSIS in (t := lbl.text)]
