"""PNG and GIF drawn from the SVG (tapeviz.output.raster, tapeviz.output.gif, export.save_view): the pixels
show what the SVG says, frames follow the picture's steps within a budget, long saves show
progress, Ctrl+C leaves no file behind, and big pictures stay under the pixel caps."""

import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tapeviz as tv
from tapeviz import examples
from tapeviz.output import export, raster
from tapeviz.output.export import Frame, plan_frames, save_view
from tapeviz.output.gif import GifStream, Palette
from tapeviz.output.raster import FrameRenderer, png_bytes
from tapeviz.output.svg import to_svg
from tapeviz.output.svg_elements import cjk_font_files, parse_svg
from tapeviz.picture.style import C_GRAD

SVG_NS = "{http://www.w3.org/2000/svg}"


def rgb(hex_color: str) -> np.ndarray:
    return np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)])


def gif_frames(path) -> list[np.ndarray]:
    with Image.open(path) as im:
        assert im.format == "GIF"
        out = []
        for i in range(im.n_frames):
            im.seek(i)
            out.append(np.asarray(im.convert("RGB")).astype(int))
        return out


@pytest.fixture(scope="module")
def stop_run():
    return examples.stop_gradient()


@pytest.fixture
def stop_view(stop_run):
    """A fresh view each time: a test that draws it with matplotlib changes how it saves."""
    return stop_run, tv.view(stop_run.tape, stop_run.target)


@pytest.fixture(scope="module")
def keras_tape():
    """A small Keras model: its layers collapse into boxes whose ops are one step each."""
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((3,)),
            tf.keras.layers.Dense(4, activation="relu", name="hidden"),
            tf.keras.layers.Dense(2, name="out"),
        ]
    )
    x = tf.constant(np.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    with tv.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x)))
    return tape, loss


# --------------------------------------------------------------------------- PNG pixels


def test_png_shows_what_the_svg_draws_where_it_draws_it(stop_view, tmp_path):
    run, view = stop_view
    svg = to_svg(view)
    root = ET.fromstring(svg)
    png = save_view(view, tmp_path / "a.png")
    with Image.open(png) as im:
        assert im.format == "PNG"
        pixels = np.asarray(im.convert("RGB")).astype(int)
    vb = [float(v) for v in root.get("viewBox").split()]
    scale = pixels.shape[1] / vb[2]
    assert pixels.shape[0] == pytest.approx(vb[3] * scale, abs=1)

    # an orange arrow head (a gradient flowing) is orange at its centre in the PNG
    heads = [p for p in root.iter(SVG_NS + "path") if f"fill:{C_GRAD}" in p.get("style", "")]
    assert heads
    for head in heads:
        pts = np.array([float(v) for v in re.findall(r"-?\d+\.?\d*", head.get("d"))]).reshape(-1, 2)
        cx, cy = (pts.mean(axis=0) * scale).astype(int)
        near = pixels[cy - 1 : cy + 2, cx - 1 : cx + 2].reshape(-1, 3)  # a small head: its centre pixel or a neighbour
        assert np.abs(near - rgb(C_GRAD)).max(axis=1).min() < 40, (cx, cy, near)

    # the title's text is drawn where its <text> sits, and the area far above it is blank
    title = root.find(f".//{SVG_NS}g[@id='title']/{SVG_NS}text")
    x, y, size = (float(title.get(k)) * scale for k in ("x", "y", "font-size"))
    band = pixels[int(y - size) : int(y + 0.3 * size), int(x - 5 * size) : int(x + 5 * size)]
    assert (band.sum(axis=2) < 200).sum() > 20  # dark glyph pixels
    assert (pixels[: max(1, int(y - 1.5 * size))] == 255).all()


def test_png_lines_up_with_matplotlibs(stop_view, tmp_path):
    _, view = stop_view
    ours = np.asarray(Image.open(save_view(view, tmp_path / "a.png", engine="tapeviz")).convert("RGB")).astype(int)
    theirs = np.asarray(Image.open(save_view(view, tmp_path / "b.png", engine="matplotlib")).convert("RGB")).astype(int)
    assert abs(ours.shape[0] - theirs.shape[0]) <= 1 and abs(ours.shape[1] - theirs.shape[1]) <= 1
    h, w = min(ours.shape[0], theirs.shape[0]), min(ours.shape[1], theirs.shape[1])
    ink_ours, ink_theirs = ours[:h, :w].sum(axis=2) < 600, theirs[:h, :w].sum(axis=2) < 600
    assert 0.7 < ink_ours.sum() / ink_theirs.sum() < 1.3  # about as much drawn
    # and in the same places: most inked pixels of one are near inked pixels of the other
    near = np.zeros_like(ink_theirs)
    for dy in (-2, 0, 2):
        for dx in (-2, 0, 2):
            near |= np.roll(np.roll(ink_theirs, dy, axis=0), dx, axis=1)
    assert (ink_ours & near).sum() / ink_ours.sum() > 0.8


def test_graphview_png_and_tv_save_png_agree(stop_view, tmp_path):
    run, view = stop_view
    path = tv.save(run.tape, run.target, tmp_path / "s.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(path).size == Image.open(io.BytesIO(png_bytes(to_svg(view)))).size


def test_drawn_views_keep_matplotlibs_png(tmp_path, monkeypatch):
    run = examples.basic()
    view = tv.view(run.tape, run.target)
    view.artists.boxes[next(iter(view.artists.boxes))].set_facecolor("#00ff00")  # a user restyles an artist

    def refuse(*a, **k):
        raise AssertionError("a drawn view must be saved by matplotlib")

    monkeypatch.setattr(raster, "png_bytes", refuse)
    pixels = np.asarray(Image.open(save_view(view, tmp_path / "a.png")).convert("RGB")).astype(int)
    assert (np.abs(pixels - rgb("#00ff00")).max(axis=2) < 10).sum() > 100  # the restyled box shows


def test_chinese_text_is_drawn_with_a_cjk_font(cjk_font):
    assert cjk_font_files()
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40" viewBox="0 0 200 40">'
        '<rect width="100%" height="100%" fill="#ffffff"/>'
        '<text x="10" y="28" font-size="20" font-family="DejaVu Sans">梯度 grad</text></svg>'
    )
    doc = parse_svg(svg)
    assert any("CJK" in str(f) for f in doc.fonts[0])
    pixels = np.asarray(Image.open(io.BytesIO(png_bytes(svg))).convert("L")).astype(int)
    assert (pixels[8:32, 10:52] < 128).sum() > 60  # the two ideographs are ink, not blank boxes


# --------------------------------------------------------------------------- the incremental renderer


@pytest.mark.slow
@pytest.mark.parametrize("dpi", [100, 60])
def test_frames_redrawn_in_parts_equal_whole_redraws(keras_tape, dpi):
    tape, loss = keras_tape
    view = tv.view(tape, loss, collapsed=False)
    parts, whole = FrameRenderer(dpi=dpi), FrameRenderer(dpi=dpi, full_every=True)
    worst = 0
    for k in range(view.flow.last_step + 1):
        view.set_step(k)
        svg = to_svg(view)
        a, rects = parts.render(svg)
        b, _ = whole.render(svg)
        diff = np.abs(a.astype(int) - b.astype(int)).max(axis=2)
        worst = max(worst, diff.max())
        # a part drawn alone is the same drawing shifted by whole pixels; at a fractional
        # scale resvg's antialiasing may still differ a little in a few pixels
        assert (diff > 2).sum() <= 0.0005 * diff.size and diff.max() <= 96, (k, diff.max(), (diff > 2).sum())
    if dpi == 100:
        assert worst <= 2
    assert parts.partial_redraws >= view.flow.last_step - 1  # and it did redraw in parts
    assert whole.full_redraws == view.flow.last_step + 1


def test_an_element_it_cannot_bound_forces_a_whole_redraw():
    def doc(color):
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50" viewBox="0 0 100 50">'
            '<rect width="100%" height="100%" fill="#ffffff"/>'
            f'<g id="blur" filter="url(#f)"><rect x="10" y="10" width="20" height="20" fill="{color}"/></g>'
            '<g id="box"><rect x="60" y="10" width="20" height="20" fill="#000000"/></g></svg>'
        )

    r = FrameRenderer(dpi=72)
    r.render(doc("#ff0000"))
    r.render(doc("#0000ff"))
    assert r.full_redraws == 2 and r.partial_redraws == 0
    assert parse_svg(doc("#ff0000")).units[1].parts is None  # the filtered group
    assert parse_svg(doc("#ff0000")).units[2].parts == [(57.0, 7.0, 83.0, 33.0)]  # its box, stroke margin added


def test_bounds_follow_transforms_and_path_segments():
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200" viewBox="0 0 200 200">'
        '<g id="moved" transform="translate(100 50)"><path d="M0 0 L10 0 l0 40" style="stroke-width:2"/></g>'
        '<g id="turned" transform="rotate(90)"><rect x="10" y="-30" width="50" height="20"/></g>'
        "</svg>"
    )
    moved, turned = parse_svg(svg).units
    pad = 2 * 2 + 1  # a mitred corner reaches twice the half width; and a unit for rounding
    assert moved.parts[1:] == [
        (100 - pad, 50 - pad, 110 + pad, 50 + pad),  # one box per segment after the move
        (110 - pad, 50 - pad, 110 + pad, 90 + pad),
    ]
    ((x0, y0, x1, y1),) = turned.parts
    assert (x0, y0, x1, y1) == pytest.approx((10 - 3, 10 - 3, 30 + 3, 60 + 3))


# --------------------------------------------------------------------------- frames


def test_frames_follow_the_collapsed_view(keras_tape, tmp_path):
    tape, loss = keras_tape
    view = tv.view(tape, loss, collapsed=True)
    fl = view.flow
    frames = plan_frames(view)
    assert frames[0] == Frame(0, 0) and frames[-1].step == fl.last_step
    # every step is in exactly one frame, in order, and a frame's steps share one box
    covered = [k for f in frames for k in range(f.first, f.step + 1)]
    assert covered == list(range(fl.last_step + 1))
    for f in frames[1:]:
        boxes = {view.display.of.get(fl.steps[k].node) for k in range(f.first, f.step + 1)} - {None}
        assert len(boxes) <= 1
    assert len(frames) < len(fl.steps)  # a layer's ops are one frame
    gif = save_view(view, tmp_path / "k.gif")
    assert len(gif_frames(gif)) == len(frames)


def test_every_step_gives_each_step_a_frame(keras_tape, tmp_path):
    tape, loss = keras_tape
    gif = tv.save(tape, loss, tmp_path / "k.gif", collapsed=True, every_step=True)
    assert len(gif_frames(gif)) == len(tv.flow(tape, loss).steps)


def test_the_frame_budget_merges_evenly_and_says_so(keras_tape, tmp_path):
    tape, loss = keras_tape
    view = tv.view(tape, loss, collapsed=False)
    last = view.flow.last_step
    frames = plan_frames(view, max_frames=4)
    assert len(frames) == 4 and frames[0] == Frame(0, 0) and frames[-1].step == last
    assert [k for f in frames for k in range(f.first, f.step + 1)] == list(range(last + 1))
    sizes = [f.step - f.first + 1 for f in frames[1:]]
    assert max(sizes) - min(sizes) <= max(3, last // 3)  # even shares of the steps
    merged = [f for f in frames if f.merged]
    assert merged and all(f.note == f"steps {f.first}–{f.step} shown as one frame" for f in merged)
    with pytest.raises(ValueError, match="at least 2"):
        plan_frames(view, max_frames=1)

    gif = save_view(view, tmp_path / "b.gif", max_frames=4)
    shown = gif_frames(gif)
    assert len(shown) == 4
    # the note sits in a strip above the picture: amber text on merged frames, blank on frame 0
    strip = [f[: export._note_height(1.0)] for f in shown]
    amber = [int(((s[..., 0] > 120) & (s[..., 2] < 90) & (s[..., 0] - s[..., 2] > 60)).sum()) for s in strip]
    assert amber[0] == 0 and all(a > 30 for a, f in zip(amber, frames, strict=True) if f.merged)


def test_gif_frames_are_the_svgs_pixels(stop_view, tmp_path):
    _, view = stop_view
    gif = save_view(view, tmp_path / "s.gif", dpi=80)
    shown = gif_frames(gif)
    frames = plan_frames(view)
    assert len(shown) == len(frames)
    for f, pixels in zip(frames, shown, strict=True):
        view.set_step(f.step)
        want = np.asarray(Image.open(io.BytesIO(png_bytes(to_svg(view), dpi=80))).convert("RGB")).astype(int)
        assert pixels.shape == want.shape
        diff = np.abs(pixels - want).max(axis=2)
        assert diff.mean() < 1.5 and np.percentile(diff, 99.5) < 40, (f, diff.mean())  # one palette: rounding only
    view.set_step(None)
    with Image.open(gif) as im:
        durations = []
        for i in range(im.n_frames):
            im.seek(i)
            durations.append(im.info["duration"])
    assert durations[-1] >= 2000 > durations[0]  # the finished pass is held longer


def test_gif_stream_writes_only_what_changed():
    pal = Palette(np.array([[255, 255, 255], [200, 0, 0], [0, 0, 200]], np.uint8))
    frames = [np.zeros((60, 80), np.uint8) for _ in range(3)]
    frames[1][10:20, 30:50] = 1
    frames[2] = frames[1].copy()
    frames[2][40:42, 5:9] = 2
    buf = io.BytesIO()
    stream = GifStream(buf, (80, 60), pal)
    for f in frames + [frames[2]]:  # the last one repeats: it lengthens the frame before
        stream.add(f, 0.5)
    stream.close(last_delay=3.0)
    with Image.open(io.BytesIO(buf.getvalue())) as im:
        assert im.n_frames == 3
        for i, f in enumerate(frames):
            im.seek(i)
            assert (np.asarray(im.convert("RGB")) == pal.table[f]).all()
            assert im.info["duration"] == (3000 if i == 2 else 500)
    data = buf.getvalue()
    assert b"\x2c\x1e\x00\x0a\x00\x14\x00\x0a\x00" in data  # frame 1: only the 20 x 10 block at (30, 10)


def test_palette_keeps_white_and_maps_to_the_nearest_colour():
    frame = np.full((10, 10, 3), 255, np.uint8)
    frame[2:5, 2:5] = (234, 88, 12)
    frame[6, 6] = (230, 90, 15)
    pal = Palette.from_frames(frame)
    idx = pal.indices(frame)
    assert (pal.table[idx[0, 0]] == 255).all()
    assert (pal.table[idx[3, 3]] == (234, 88, 12)).all()  # few colours: kept exactly
    assert idx.max() < 255  # 255 is transparency


# --------------------------------------------------------------------------- progress, Ctrl+C, pixel caps


def test_a_slow_save_shows_progress_and_a_fast_one_does_not(stop_view, tmp_path, monkeypatch, capsys):
    _, view = stop_view
    monkeypatch.setattr(export, "PROGRESS_AFTER", 1e6)  # "fast": finished long before the bar is due
    save_view(view, tmp_path / "fast.gif")
    assert "fast.gif" not in capsys.readouterr().err
    monkeypatch.setattr(export, "PROGRESS_AFTER", 0.0)  # "slow": past the threshold at once
    save_view(view, tmp_path / "slow.gif")
    err = capsys.readouterr().err
    assert "writing slow.gif" in err and "100%" in err
    save_view(view, tmp_path / "quiet.gif", progress=False)
    assert "quiet.gif" not in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".gif", ".png", ".svg"])
def test_ctrl_c_leaves_no_file_behind(stop_view, tmp_path, monkeypatch, suffix):
    _, view = stop_view
    view.set_step(1)
    before = view.step
    dest = tmp_path / f"out{suffix}"
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3 or suffix != ".gif":
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    original = export.to_svg
    monkeypatch.setattr(export, "to_svg", interrupted)  # the user presses Ctrl+C while frames are drawn
    with pytest.raises(KeyboardInterrupt):
        save_view(view, dest)
    assert list(tmp_path.iterdir()) == []  # neither the file nor a temporary one

    dest.write_bytes(b"an older picture")  # a file already there stays as it was
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        save_view(view, dest)
    assert dest.read_bytes() == b"an older picture" and list(tmp_path.iterdir()) == [dest]
    assert view.step == before  # the view is left at the step it showed


def test_pixel_caps_hold(stop_view, tmp_path, monkeypatch):
    _, view = stop_view
    full = Image.open(save_view(view, tmp_path / "full.png")).size
    monkeypatch.setattr(raster, "MAX_PNG_PIXELS", 60_000)
    w, h = Image.open(save_view(view, tmp_path / "small.png")).size
    assert w * h <= 60_000 and w < full[0]
    assert w / h == pytest.approx(full[0] / full[1], rel=0.02)
    monkeypatch.setattr(raster, "MAX_GIF_PIXELS", 40_000)
    gw, gh = Image.open(save_view(view, tmp_path / "small.gif")).size
    assert gw * gh <= 40_000


@pytest.mark.slow
def test_matplotlib_engine_gif_follows_the_same_frames(keras_tape, tmp_path):
    tape, loss = keras_tape
    view = tv.view(tape, loss, collapsed=True)
    frames = plan_frames(view)
    gif = save_view(view, tmp_path / "m.gif", engine="matplotlib", dpi=40)
    with Image.open(gif) as im:
        assert im.n_frames == len(frames)  # the held last frame is one frame, shown longer
        first = im.info["duration"]
        im.seek(im.n_frames - 1)
        assert im.info["duration"] >= 2.5 * first


def test_cli_export_interrupted_exits_130_without_a_file(tmp_path, monkeypatch, capsys):
    from tapeviz import cli

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "export_example", interrupted)
    assert cli.main(["export", "basic", "-o", str(tmp_path / "b.gif")]) == 130
    assert "interrupted" in capsys.readouterr().err and not (tmp_path / "b.gif").exists()


@pytest.mark.slow
def test_big_pngs_are_drawn_in_strips_with_progress(stop_view, tmp_path, monkeypatch, capsys):
    _, view = stop_view
    svg = to_svg(view)
    whole = np.asarray(Image.open(io.BytesIO(png_bytes(svg))).convert("RGBA")).astype(int)
    monkeypatch.setattr(raster, "STRIP_PIXELS", 60_000)  # a "big" picture: drawn strip by strip
    parts = []
    striped = png_bytes(svg, on_part=lambda done, total: parts.append((done, total)))
    pixels = np.asarray(Image.open(io.BytesIO(striped)).convert("RGBA")).astype(int)
    assert pixels.shape == whole.shape
    assert len(parts) > 3 and parts[-1][0] == parts[-1][1] == len(parts)
    diff = np.abs(pixels - whole).max(axis=2)
    assert diff.max() <= 32 and (diff > 2).sum() <= 0.001 * diff.size
    monkeypatch.setattr(export, "PROGRESS_AFTER", 0.0)
    save_view(view, tmp_path / "big.png")
    err = capsys.readouterr().err
    assert "writing big.png" in err and f"{len(parts)}/{len(parts)}" in err


def test_a_frame_that_changes_nothing_lengthens_the_one_before(stop_view, tmp_path, monkeypatch):
    _, view = stop_view
    svg = to_svg(view)
    r = FrameRenderer(dpi=50)
    r.render(svg)
    assert r.render(svg)[1] == []  # the same document again: nothing to redraw
    frames = [Frame(0, 0), Frame(1, 1), Frame(1, 1), Frame(view.flow.last_step, 2)]
    monkeypatch.setattr(export, "plan_frames", lambda *a, **k: frames)
    gif = save_view(view, tmp_path / "held.gif", dpi=50)
    with Image.open(gif) as im:
        assert im.n_frames == 3
        im.seek(1)
        assert im.info["duration"] == 2 * round(100 / 1.5) * 10
