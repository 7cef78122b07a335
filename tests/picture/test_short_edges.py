"""Issue 32, item 4 on the gallery's pictures (tests/support/gallery_models.py): edges take the
short way. An edge past whole rows goes down the right margin to one lane instead of across
every row between; an edge into a box under another one comes down beside their column
when that is shorter; no edge leaves the picture, and an edge between neighbouring rows
stays between them."""

from __future__ import annotations

import numpy as np
import pytest
from gallery_models import recorder

from tapeviz.picture.style import BOX_H, BOX_W, PORT_WINDOW

PICTURES = ["WGAN-GP", "U-Net", "VAE", "actor-critic", "Transformer"]


@pytest.fixture(scope="module")
def recorded():
    return recorder()


def edges_between(scene, source: str, target: str) -> list:
    """(u, v, key, path vertices in data units) of the edges drawn from the box titled
    ``source`` to the one titled ``target``."""
    titles = {n: t.text for n, (t, _, _) in scene.labels.items()}
    return [
        (u, v, k, np.asarray(a.path.vertices, float))
        for (u, v, k), a in scene.arrows.items()
        if a.visible and titles.get(u) == source and titles.get(v) == target
    ]


def px_length(scene, verts) -> float:
    pts = np.asarray([scene.data_to_px(x, y) for x, y in verts])
    return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())


def px_distance(scene, a, b) -> float:
    return float(np.linalg.norm(np.subtract(scene.data_to_px(*a), scene.data_to_px(*b))))


def test_wgan_gp_critic_to_gradient_penalty_comes_down_beside_critic_loss(recorded):
    """The edge went right, down, left along the whole row, down the picture's left side and
    back (1,376 px, 1.98x the distance between the boxes); it comes down the gap right of
    critic_loss() and into gradient_penalty()'s top under it."""
    _, _, scene = recorded("WGAN-GP")
    [(u, v, _, verts)] = edges_between(scene, "critic", "gradient_penalty()")
    (xu, yu), (xv, yv) = scene.pos[u], scene.pos[v]
    assert px_length(scene, verts) <= 1.6 * px_distance(scene, (xu, yu), (xv, yv))
    assert verts[-1][1] == pytest.approx(yv + BOX_H / 2)  # into its top ...
    assert xv - BOX_W / 2 < verts[-1][0] < xv + BOX_W / 2
    assert verts[:, 0].min() > xv  # ... never left of its middle: not around the left side
    above = [n for n, (x, y) in scene.pos.items() if abs(x - xv) < 0.3 and yv < y < yu]
    assert above, "the example must be one with a box above the target"


def test_an_edge_past_a_whole_row_runs_back_along_one_lane(recorded):
    """VAE: x -> binary_crossentropy two rows down, U-Net: the skip connection down1_conv ->
    ConcatV2. Each went back under every row it passed (5.5x and 13x the distance between
    the boxes); it runs back along one lane, under the row above its target."""
    for name, source, target, most in (
        ("VAE", "x", "binary_crossentropy", 3.0),
        ("U-Net", "down1_conv", "ConcatV2", 7.0),
    ):
        _, _, scene = recorded(name)
        [(u, v, _, verts)] = edges_between(scene, source, target)
        assert scene.lanes[(u, v)][0].passed >= 1, name  # down the right margin, past whole rows
        back = [(a, b) for a, b in zip(verts, verts[1:], strict=False) if b[0] < a[0] - 1.0 and abs(a[1] - b[1]) < 1e-9]
        assert len(back) == 1, (name, back)
        assert px_length(scene, verts) <= most * px_distance(scene, scene.pos[u], scene.pos[v]), name


@pytest.mark.parametrize("name", PICTURES)
def test_no_edge_leaves_the_picture(recorded, name):
    _, _, scene = recorded(name)
    (x0, x1), (y0, y1) = scene.limits
    for e, a in scene.arrows.items():
        if a.visible:
            verts = np.asarray(a.path.vertices, float)
            assert (verts[:, 0] >= x0).all() and (verts[:, 0] <= x1).all(), e
            assert (verts[:, 1] >= y0).all() and (verts[:, 1] <= y1).all(), e


@pytest.mark.parametrize("name", PICTURES)
def test_an_edge_between_neighbouring_rows_stays_between_them(recorded, name):
    """No point above its source's box, none below the lowest port of its target's box."""
    _, _, scene = recorded(name)
    checked = 0
    for (u, v, k), a in scene.arrows.items():
        lane = scene.lanes.get((u, v))
        if not a.visible or not lane or lane[0].passed:
            continue
        verts = np.asarray(a.path.vertices, float)
        assert verts[:, 1].max() <= scene.pos[u][1] + BOX_H / 2 + 1e-9, (u, v, k)
        assert verts[:, 1].min() >= scene.pos[v][1] - PORT_WINDOW - 1e-9, (u, v, k)
        checked += 1
    assert checked, "the picture must have edges between rows"
