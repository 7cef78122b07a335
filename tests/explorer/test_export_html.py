"""tv.export_html / Explorer.export_html / html_page.page_fragment: one HTML file that steps
through the backward pass with no kernel and no network.

Here without a browser: what the page holds (its first picture and per-step patches rebuild
every step's picture exactly, in Python), that nothing in it asks for another address, the
escaping, the options and errors. In Chromium (file://, every other request refused):
test_browser_page.py.
"""

from __future__ import annotations

import html
import re

import pytest
import tensorflow as tf
from page_check import page_data, pictures, walk

import tapeviz as tv
from tapeviz.api import export_html
from tapeviz.explorer import html_page, quiz
from tapeviz.explorer import state as st

EVIL = "<script>alert(1)</script>"


def stop_gradient_example():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    return tape, x, y, z


def assert_asks_for_nothing(page: str) -> None:
    """No script, style, font, image or frame from anywhere: everything is in the file."""
    assert not re.search(
        r"<(script|img|iframe|link|source|embed|object)\b[^>]*\b(src|href)=",
        page.replace('<link rel="icon" href="data:,">', ""),
        re.I,
    )
    assert not re.search(r"@import|@font-face|url\(\s*['\"]?(https?:|//)", page, re.I)
    assert "require" not in page.lower().replace("required", "") and "cdn" not in page.lower()
    # the only http address is SVG's namespace (a name, never fetched)
    assert set(re.findall(r"https?://[^\s\"'<>)\\]+", page)) <= {"http://www.w3.org/2000/svg"}


# --------------------------------------------------------------------------- no browser


def test_page_holds_the_first_picture_and_patches_that_make_every_step(tmp_path):
    tape, x, y, z = stop_gradient_example()
    ex = tv.explore(tape, z)
    n = len(ex.flow.steps)
    step = ex.controls["step"]
    shown, canvas = step.value, ex.canvas.value

    path = ex.export_html(tmp_path / "page.html")

    assert (step.value, ex.canvas.value) == (shown, canvas), "export_html changed the live explorer"
    page = path.read_text(encoding="utf-8")
    assert_asks_for_nothing(page)
    ((data,),) = [d["targets"] for d in page_data(page)]
    assert data["steps"] == n and data["start"] == shown == n - 1
    assert len(data["f"]) == len(data["b"]) == n - 1
    assert page.count("<svg xmlns") == 1, "one picture, then patches (not one picture per step)"
    frames = pictures(data)
    for k, svg in enumerate(frames):  # the same pictures the canvas shows at each step
        step.value = k
        assert svg == ex.canvas.value, f"step {k}: the page's picture differs from the explorer's"
    assert all(f"Step {k}/{n - 1}" in frames[k] for k in range(n))
    assert "backward pass of z done" in frames[-1] and "backward pass of z done" not in frames[-2]
    assert "tv-panel" in data["panels"][0] and "global norm" in data["panels"][0]
    assert set(data["tips"]) == {k for k, v in st.tips(ex.graph_targets, ex.state).items()}
    x_node = ex.graph_targets.graph.node_of(x)
    x_box = f"node-{x_node}"
    assert data["tips"][x_box].startswith("x\n") and "click: open" not in "".join(data["tips"].values())
    # the inspector's text for a box a click selects: the notebook's inspector of that node
    assert data["inspect"][x_box] == st.inspector(ex.graph_targets, ex.state.replace(node=x_node))
    assert "tvApply" in page and "tvKeyAction" in page and "tvQuizJudge" in page  # the canvas's own code
    ex.close()


def test_the_page_is_one_fragment_in_a_document_and_fragments_share_a_page(tmp_path):
    tape, x, y, z = stop_gradient_example()
    ex = tv.explore(tape, z)
    frag = html_page.page_fragment(ex.graph_targets, ex.state, title="one")
    assert frag.startswith("<div class='tv-page") and frag.rstrip().endswith("</div>")
    assert not re.search(r"<(html|head|body)\b", frag) and "<style>" in frag and "<script>" in frag
    assert "document.currentScript.parentElement" in frag, "the script finds its own fragment, no id needed"
    assert not re.search(r"\bid=['\"]", frag.split("<script type='application/json'")[0]), "no id to clash"
    # every rule of the fragment's own style sheet is scoped by its tv- classes
    css = frag.split("<style>")[1].split("</style>")[0]
    selectors = re.findall(r"(?:^|})\s*([^{}@]+)\{", css)
    assert selectors and all(".tv-" in s for s in selectors), [s for s in selectors if ".tv-" not in s]
    page = ex.export_html(tmp_path / "page.html").read_text(encoding="utf-8")
    body = page.split("<body>\n")[1].split("</body>")[0]
    assert body == html_page.page_fragment(ex.graph_targets, ex.state, interval=ex.controls["play"].interval)
    ex.close()


def test_names_appear_only_escaped(tmp_path):
    holder = {"v": tf.Variable(2.0, name=EVIL)}
    with tv.GradientTape() as tape:
        y = holder["v"] * 3.0
    ex = tv.explore(tape, {EVIL: y})
    ex.controls["clip"].value = "by_norm"
    page = ex.export_html(tmp_path / "evil.html").read_text(encoding="utf-8")
    ex.close()

    assert "alert(1)" in page, "the name is on the page, as text"
    assert not re.search(r"<script>\s*alert", page, re.I)
    assert not re.search(r"alert\(1\)</script", page, re.I)
    assert len(re.findall(r"<script\b", page, re.I)) == 3  # the data, the page's own script, the steps' patches
    assert f"<title>tapeviz: backward pass of {html.escape(EVIL)}</title>" in page
    (data,) = page_data(page)
    assert data["targets"][0]["name"] == EVIL  # the data holds it as a string, read by JSON.parse
    assert html.escape(EVIL) in data["targets"][0]["panels"][0]


def test_options_and_errors(tmp_path):
    tape, x, y, z = stop_gradient_example()
    page = export_html(tape, {"loss": z}, tmp_path / "a.html").read_text(encoding="utf-8")
    assert "tapeviz: backward pass of loss" in page
    for removed in ("embed_url", "requirejs", "requirejs_url", "cors"):
        with pytest.raises(TypeError, match=rf"no longer takes {removed}: the page is one self-contained file"):
            export_html(tape, z, tmp_path / "c.html", **{removed: "x"})
    ex = tv.explore(tape, z)
    with pytest.raises(TypeError, match="no longer takes embed_url, cors"):
        ex.export_html(tmp_path / "c.html", embed_url="x", cors=False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        ex.export_html(tmp_path / "c.html", colour="red")
    ex.close()
    with pytest.raises(ValueError, match=r"\.html"):
        export_html(tape, z, tmp_path / "c.svg")
    with pytest.raises(FileNotFoundError):
        export_html(tape, z, tmp_path / "missing" / "c.html")
    assert not list(tmp_path.glob("c.*"))
    x2 = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as both:
        f1 = x2**2
        f2 = x2 * 4.0
    two = export_html(both, {"a": f1, "b": f2}, tmp_path / "two.html").read_text(encoding="utf-8")
    assert "<select class='tv-target'><option value='0'>a</option><option value='1'>b</option></select>" in two
    (data,) = page_data(two)
    assert [t["name"] for t in data["targets"]] == ["a", "b"]  # every target of the tape, a menu picks one
    for t in data["targets"]:
        fl = tv.flow(both, {"a": f1, "b": f2}[t["name"]])
        assert t["steps"] == len(fl.steps) and len(pictures(t)) == t["steps"]


def test_clip_norms_hold_each_positions_panel_and_clipped_picture(tmp_path):
    tape, x, y, z = stop_gradient_example()
    ex = tv.explore(tape, z)
    page = ex.export_html(tmp_path / "clip.html", clip_norms=[0.5, 2.0, 10.0]).read_text(encoding="utf-8")
    (data,) = page_data(page)
    assert data["clip"] == {"start": 0, "labels": ["0.5", "2", "10"]}  # the state's clip_norm 1.0 is nearest 0.5
    (t,) = data["targets"]
    assert [p.count("tv-clipped-norm") for p in t["panels"]] == [1, 1, 1]
    assert "4 → <b class='tv-clipped-norm'>0.5</b>" in t["panels"][0]  # tf.clip_by_norm's number
    base = pictures(t)
    last = t["steps"] - 1
    assert base[last] == st.picture(ex.graph_targets, ex.state.replace(clip_mode="by_norm", clip_norm=0.5, step=last))
    for i, v in ((1, 2.0), (2, 10.0)):
        (k, (to, back)), *rest = t["overlays"][f"clip{i}"].items()
        assert int(k) == last and rest == [], "a clip_norm changes the finished pass's picture only"
        want = st.picture(ex.graph_targets, ex.state.replace(clip_mode="by_norm", clip_norm=v, step=last))
        assert walk(base[last], to) == want and walk(want, back) == base[last]
    ex.close()


def test_quiz_page_holds_questions_answers_and_revealed_pictures(tmp_path):
    tape, x, y, z = stop_gradient_example()
    page = export_html(tape, z, tmp_path / "quiz.html", quiz=True).read_text(encoding="utf-8")
    (data,) = page_data(page)
    assert data["quiz"] is True and data["tolerance"] == 0.01
    (t,) = data["targets"]
    fl = tv.flow(tape, z)
    for k, q in enumerate(t["quiz"]):  # TF's numbers, for the page's judge; the question in words
        asked = quiz.question(fl, k)
        assert q["e"] == asked.expected.tolist() and q["q"] == quiz.question_text(fl, asked)
    assert len(t["quiz"]) == t["steps"] == len(fl.steps)
    assert "?" in t["first"] and set(t["overlays"]["reveal"]) == {str(k) for k in range(t["steps"])}
    assert "<details class='tv-quiz-table'>" in t["panels"][0]
    tips = "".join(t["tips"].values())
    assert "value 2.0" in tips and "gradient" not in tips  # a hover does not give the answer away
    assert_asks_for_nothing(page)


def test_command_line_writes_the_page(tmp_path):
    from tapeviz import cli

    assert cli.main(["export", "stop_gradient", "-o", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert_asks_for_nothing(page)
    (data,) = page_data(page)
    assert data["targets"][0]["steps"] == len(pictures(data["targets"][0])) > 1
