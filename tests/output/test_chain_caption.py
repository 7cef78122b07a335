"""caption="chain": each GIF frame carries its step's chain rule in a strip under the
picture (the chain rule's own lines, TF's numbers), and a still picture its step's line as
its caption; off by default."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tapeviz as tv
from tapeviz.output.chain_caption import chain_lines, is_chain
from tapeviz.output.export import _chain_captions, plan_frames


@pytest.fixture
def square():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        z = x**2 + tf.stop_gradient(y)
    return tape, x, z


def _frames(path) -> list[np.ndarray]:
    out = []
    with Image.open(path) as im:
        for i in range(im.n_frames):
            im.seek(i)
            out.append(np.asarray(im.convert("RGB")))
    return out


def test_each_frame_carries_its_steps_chain_rule(square, tmp_path):
    tape, x, z = square
    plain = _frames(tv.save(tape, z, tmp_path / "plain.gif", progress=False))
    captioned = _frames(tv.save(tape, z, tmp_path / "chain.gif", caption="chain", progress=False))
    assert len(plain) == len(captioned) == 4
    h = plain[0].shape[0]
    assert captioned[0].shape[0] > h and captioned[0].shape[1] == plain[0].shape[1]
    for a, b in zip(plain, captioned, strict=True):  # the picture above the strip is the same
        np.testing.assert_array_equal(a, b[:h])
    strips = [f[h:] for f in captioned]
    assert all((s < 128).any() for s in strips)  # text in every strip
    assert not np.array_equal(strips[1], strips[2])  # each step its own line
    v = tv.view(tape, z)
    captions = _chain_captions(v, plan_frames(v))
    assert captions[2] == ["∂z/∂x = ∂z/∂Pow · ∂Pow/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0"]
    assert float(tape.gradient(z, x)) == 4.0
    assert captions == [tv.chain_rule(tape, z)[k].lines() for k in range(4)]


def test_a_collapsed_blocks_frame_carries_the_blocks_line(tmp_path):
    g = tf.constant([10.0, 20.0, 30.0])
    with tv.GradientTape() as tape:
        tape.watch(g)
        clipped = tf.clip_by_norm(g, clip_norm=5.0)
    v = tv.view(tape, clipped)
    frames = plan_frames(v)
    last = chain_lines(v, frames[-1].step)
    with tf.GradientTape() as t:
        t.watch(g)
        want = t.gradient(tf.clip_by_norm(g, clip_norm=5.0), g)
    assert last[0].startswith("clip_by_norm takes in ‖g‖ 1.73")
    assert f"passes out ‖g‖ {float(tf.norm(want)):.3g}" in last[0]
    tv.save(tape, clipped, tmp_path / "clip.gif", caption="chain", progress=False, lang="zh")


def test_a_still_picture_takes_its_steps_line_as_caption(square, tmp_path):
    tape, _, z = square
    svg = tv.save(tape, z, tmp_path / "a.svg", step=2, caption="chain").read_text(encoding="utf-8")
    assert "1.0 × (2·x) = 1.0 × 4.0 = 4.0" in svg
    assert "1.0 × 4.0" not in tv.save(tape, z, tmp_path / "b.svg", step=2).read_text(encoding="utf-8")


def test_chain_needs_a_target(square, tmp_path):
    tape, _, _ = square
    with pytest.raises(ValueError, match=r"give tv\.save a target"):
        tv.save(tape, None, tmp_path / "a.gif", caption="chain")
    assert is_chain("chain") and not is_chain("Chain rule, by hand") and not is_chain(None)
