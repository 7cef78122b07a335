"""tv.compare(a, b)'s files and notebook outputs: written by the same writers as every picture."""

from __future__ import annotations

import base64
import re
import struct

import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.compare import Comparison
from tapeviz.output.compare_picture import ComparePicture


def _comparison() -> ComparePicture:
    w = tf.Variable([[1.0, -2.0], [0.5, 3.0]], name="w")
    x = tf.constant([[1.0, 2.0]])
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(tf.tanh(x @ w) ** 2)
    fl = tv.flow(tape, loss)
    return tv.compare(fl, fl, clip="by_norm", clip_norm=0.1)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_compare_returns_a_comparison_that_draws_itself(tmp_path):
    c = _comparison()
    assert isinstance(c, ComparePicture) and isinstance(c, Comparison)
    assert ComparePicture.of(c).nodes == c.nodes and repr(c).startswith("Comparison(")
    png = c.save(tmp_path / "cmp.png")
    width, height = _png_size(png.read_bytes())
    assert 0 < width <= 1600 and height > 0  # a page's width at most
    svg = c.save(tmp_path / "cmp.svg", theme="dark", lang="zh").read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "裁剪" in svg  # the options as tv.save takes them
    assert c.save(tmp_path / "opts.svg", options=tv.Options(theme="projector")).exists()
    with pytest.raises(ValueError, match=r"ending in \.png or \.svg"):
        c.save(tmp_path / "cmp.gif")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        c.save(tmp_path / "no" / "cmp.png")


def test_a_notebook_shows_the_picture_and_the_table_offline():
    c = _comparison()
    html = c._repr_html_()
    src = re.search(r'<img src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert src and "<table>" in html and html.index("<img") < html.index("<table>")
    svg = base64.b64decode(src.group(1)).decode("utf-8")
    # nothing is loaded from the network: the only URL is the SVG namespace
    assert set(re.findall(r"https?://[^\s\"']+", html + svg)) <= {"http://www.w3.org/2000/svg"}
    assert "×0." in svg
    assert _png_size(c._repr_png_())[0] <= 1600
    assert c.svg() == svg and c.png()[:4] == b"\x89PNG"


def test_shown_draws_the_notebook_output_with_other_options():
    c = _comparison()
    zh = c.shown(lang="zh", names=("原始", "裁剪后"))
    assert isinstance(zh, ComparePicture) and zh.nodes == c.nodes
    assert "裁剪后" in _picture(zh) and "梯度从 a 到 b 的变化" in _picture(zh)
    assert "How the gradient changed" in _picture(c)


def _picture(c: ComparePicture) -> str:
    return base64.b64decode(re.search(r"base64,([^\"]+)", c._repr_html_()).group(1)).decode("utf-8")
