"""Themes: colour-blind-safe roles, JupyterLab's dark colours, a projector theme that is
really bigger, every theme accepted by the API and the CLI; fonts: Chinese renders."""

import io
import itertools
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from matplotlib.figure import Figure
from PIL import Image

import tapeviz as tv
from tapeviz.picture import fonts
from tapeviz.picture.scene import Scene
from tapeviz.picture.themes import LIGHT, ROLES, THEMES, get_theme, rgba

# Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for Simulation of
# Color Vision Deficiency", severity 1.0; applied to linear RGB.
MACHADO = {
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "normal vision": np.eye(3),
}
MIN_DELTA_E = 20.0  # CIEDE2000; ~2.3 is a just-noticeable difference, 20 reads as another colour at a glance


def linear_rgb(color: str) -> np.ndarray:
    c = np.array(rgba(color)[:3])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(lin: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of a linear-RGB colour."""
    m = np.array(
        [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
    )
    t = m @ np.clip(lin, 0.0, 1.0) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1, lab2) -> float:
    """Sharma, Wu & Dalal (2005)'s statement of the CIEDE2000 colour difference."""
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    c_bar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_bar**7 / (c_bar**7 + 25.0**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p, h2p = np.degrees(np.arctan2(b1, a1p)) % 360, np.degrees(np.arctan2(b2, a2p)) % 360
    dLp, dCp = L2 - L1, c2p - c1p
    dhp = 0.0 if c1p * c2p == 0 else (h2p - h1p + 180) % 360 - 180
    dHp = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dhp / 2))
    Lp, Cp = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hp = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hp = (h1p + h2p) / 2
    else:
        hp = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (
        1
        - 0.17 * np.cos(np.radians(hp - 30))
        + 0.24 * np.cos(np.radians(2 * hp))
        + 0.32 * np.cos(np.radians(3 * hp + 6))
        - 0.20 * np.cos(np.radians(4 * hp - 63))
    )
    d_theta = 30 * np.exp(-(((hp - 275) / 25) ** 2))
    rc = 2 * np.sqrt(Cp**7 / (Cp**7 + 25.0**7))
    sl = 1 + 0.015 * (Lp - 50) ** 2 / np.sqrt(20 + (Lp - 50) ** 2)
    sc, sh = 1 + 0.045 * Cp, 1 + 0.015 * Cp * t
    rt = -np.sin(np.radians(2 * d_theta)) * rc
    return float(np.sqrt((dLp / sl) ** 2 + (dCp / sc) ** 2 + (dHp / sh) ** 2 + rt * (dCp / sc) * (dHp / sh)))


def test_ciede2000_matches_published_pairs():
    # Sharma et al. (2005), table 1: pairs 1, 7 and 17
    assert ciede2000((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert ciede2000((50.0, 0.0, 0.0), (50.0, -1.0, 2.0)) == pytest.approx(2.3669, abs=1e-4)
    assert ciede2000((50.0, 2.5, 0.0), (73.0, 25.0, -18.0)) == pytest.approx(27.1492, abs=1e-4)


@pytest.mark.parametrize("name", sorted(THEMES))
@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_colour_roles_stay_apart_for_colour_blind_readers(name, vision):
    theme = THEMES[name]
    m = MACHADO[vision]
    seen = {role: lab(m @ linear_rgb(theme.role(role))) for role in ROLES}
    for (r1, c1), (r2, c2) in itertools.combinations(seen.items(), 2):
        assert ciede2000(c1, c2) >= MIN_DELTA_E, (name, vision, r1, r2, ciede2000(c1, c2))
    bg = lab(m @ linear_rgb(theme.background))
    for role, c in seen.items():  # and every role stands out from the paper
        assert ciede2000(c, bg) >= MIN_DELTA_E, (name, vision, role)


def test_dark_theme_is_jupyterlabs():
    dark = THEMES["dark"]
    assert dark.background == "#111111" and dark.text == "#ffffff"  # --jp-layout-color0, --jp-content-font-color1


def _tape():
    x = tf.Variable(2.0, name="x")
    with tv.GradientTape() as tape:
        y = x * x + 3.0
    return tape, y


def test_projector_text_and_lines_are_bigger():
    tape, y = _tape()
    fl = tv.flow(tape, y)
    light, big = Scene(tape.graph, fl), Scene(tape.graph, fl, theme="projector")

    def texts(s):
        yield from (t for trio in s.labels.values() for t in trio)
        yield from s.grads.values()
        yield from s.edge_labels.values()
        yield from (sw.label for sw in s.legend)
        yield s.title_label
        yield s.caption_label

    assert min(t.size for t in texts(big)) >= 1.4 * min(t.size for t in texts(light))
    for a, b in zip(texts(light), texts(big), strict=True):
        assert b.size >= 1.4 * a.size
    for e in light.arrows:
        assert big.arrows[e].lw >= 1.8 * light.arrows[e].lw
    for n in light.boxes:
        assert big.boxes[n].lw >= 1.8 * light.boxes[n].lw


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_api_accepts_every_theme(theme, tmp_path):
    tape, y = _tape()
    svg = tv.save(tape, y, tmp_path / "t.svg", theme=theme).read_text(encoding="utf-8")
    assert THEMES[theme].background in svg and THEMES[theme].flowing in svg
    assert tv.view(tape, y, theme=theme).theme is THEMES[theme]
    fig = tv.draw(tape, y, theme=theme)
    assert fig.get_facecolor()[:3] == pytest.approx(rgba(THEMES[theme].background)[:3])


def test_bad_theme_and_language_are_refused_with_the_choices():
    tape, y = _tape()
    with pytest.raises(ValueError, match="'light', 'dark', 'projector'"):
        tv.view(tape, y, theme="neon")
    with pytest.raises(ValueError, match="No messages in language 'xx'"):
        tv.view(tape, y, lang="xx")
    assert get_theme(None) is LIGHT


# --------------------------------------------------------------------------- fonts


def test_svg_names_cjk_fallback_fonts():
    tape, y = _tape()
    svg = tv.view(tape, y)._repr_svg_()
    for family in ("DejaVu Sans", "Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei", "PingFang SC"):
        assert family in svg
    assert "sans-serif" in svg


def _ink(text: str) -> np.ndarray:
    fig = Figure(figsize=(0.6, 0.6), dpi=100)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=28, fontfamily=list(fonts.matplotlib_families()))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    with Image.open(buf) as im:
        return np.asarray(im.convert("L"), float)


def test_chinese_renders_with_real_glyphs_in_matplotlib(cjk_font):
    """Two different characters give two different pictures (the missing-glyph box would
    give the same one twice), and each one inks the canvas."""
    zhong, wen = _ink("中"), _ink("文")
    assert (zhong < 128).sum() > 30 and (wen < 128).sum() > 30
    assert np.abs(zhong - wen).mean() > 5
    assert fonts.has_glyph(cjk_font, "梯")


def test_chinese_title_is_measured_as_wide_characters_and_renders_in_a_png():
    assert fonts.text_width("梯度", 10) == pytest.approx(20.0, abs=0.5)  # CJK glyphs are one em wide
    assert fonts.text_width("ab", 10) < 15
    tape, y = _tape()
    view = tv.view(tape, y, title="反向传播：梯度从 y 流回 x", caption="中文说明")
    assert view.scene.title_label.text == "反向传播：梯度从 y 流回 x"
    with Image.open(io.BytesIO(view.png(dpi=60))) as im:
        assert im.format == "PNG"
    svg = view._repr_svg_()
    assert "反向传播" in svg and "中文说明" in svg


def test_cli_export_takes_theme_show_all_and_lang(tmp_path, capsys):
    from tapeviz import cli

    out = tmp_path / "dark.svg"
    assert cli.main(["export", "stop_gradient", "-o", str(out), "--theme", "dark", "--lang", "en"]) == 0
    assert THEMES["dark"].background in out.read_text(encoding="utf-8")
    few, every = tmp_path / "few.svg", tmp_path / "all.svg"
    assert cli.main(["export", "basic", "-o", str(few)]) == 0
    assert cli.main(["export", "basic", "-o", str(every), "--show-all"]) == 0
    assert every.read_text(encoding="utf-8").count('id="node-') > few.read_text(encoding="utf-8").count('id="node-')
    with pytest.raises(SystemExit):
        cli.main(["export", "basic", "-o", str(few), "--theme", "neon"])
    assert "invalid choice" in capsys.readouterr().err


@pytest.fixture
def no_cjk_font(monkeypatch):
    """This machine as one without a CJK font: tapeviz's text metrics find none (the advance
    tables are emptied so that nothing measured with the font is reused)."""
    monkeypatch.setattr(fonts, "cjk_font_path", lambda: None)
    monkeypatch.setattr(fonts, "_TABLES", {})
    monkeypatch.setattr(fonts, "_BY_ARGS", {})


def _zh_sentences() -> list[str]:
    from tapeviz.messages import zh

    texts = [v for v in zh.MESSAGES.values() if isinstance(v, str)]
    wide = [s for s in texts if any(unicodedata.east_asian_width(c) in ("W", "F") for c in s)]
    assert len(wide) > 20
    return wide


def test_without_a_cjk_font_chinese_is_measured_one_em_per_glyph(no_cjk_font):
    assert fonts.text_width("梯度", 10) == 20.0
    assert fonts.text_width("反向传播：", 12) == 60.0  # the full-width colon too
    assert fonts.text_width("梯度 x", 10) == 20.0 + fonts.text_width(" x", 10)  # Latin from the Latin font


def test_one_em_per_glyph_is_never_narrower_than_the_cjk_font(cjk_font, monkeypatch):
    """A picture measured without the font keeps at least the room the font takes in a
    browser that has it, for every Chinese sentence tapeviz writes."""
    with_font = {s: fonts.text_width(s, 10) for s in _zh_sentences()}
    monkeypatch.setattr(fonts, "cjk_font_path", lambda: None)
    monkeypatch.setattr(fonts, "_TABLES", {})
    monkeypatch.setattr(fonts, "_BY_ARGS", {})
    narrower = {s: (fonts.text_width(s, 10), w) for s, w in with_font.items() if fonts.text_width(s, 10) < w - 0.01}
    assert not narrower, list(narrower.items())[:3]


def test_a_chinese_picture_made_without_the_font_has_no_overlaps(no_cjk_font):
    from placement_check import check

    tape, y = _tape()
    view = tv.view(tape, y, lang="zh", title="反向传播：梯度从 y 流回 x", caption="中文说明：每条边上的数是梯度")
    assert view.scene.title_label.text == "反向传播：梯度从 y 流回 x"
    check(view.scene, "zh without a CJK font")
    assert "反向传播" in view._repr_svg_()


def test_explorer_theme_has_no_text_below_9_pt_and_narrower_columns_than_its_text():
    """The explorer's theme (issue 20): every text at least 9 pt, the smaller ones raised
    more than the titles (a flatter scale), columns grown less than the text, so that a
    file's three columns per row still fit a notebook cell; files keep their themes."""
    from tapeviz.picture.rows import CELL_WIDTH
    from tapeviz.picture.style import DPI, INCH_X, MARGIN
    from tapeviz.picture.themes import BELOW, EXPLORER_TEXT, explorer_theme

    for name in ("light", "dark"):
        base, big = THEMES[name], explorer_theme(name)
        sizes = {role: big.size(role) for role in BELOW}
        assert min(sizes.values()) == big.smallest == EXPLORER_TEXT < big.font, sizes
        assert base.smallest < EXPLORER_TEXT and {r: base.size(r) for r in BELOW} == {
            r: base.font - b for r, b in BELOW.items()
        }  # files: the old offsets, nothing floored
        grow_text = big.font / base.font
        grow_rows, grow_columns = big.scale / base.scale, big.scale * big.column / (base.scale * base.column)
        assert grow_columns < grow_text <= grow_rows, (grow_text, grow_rows, grow_columns)
        assert {**big.__dict__, "font": 0, "scale": 0, "column": 0, "least": 0} == {
            **base.__dict__,
            "font": 0,
            "scale": 0,
            "column": 0,
            "least": 0,
        }  # same colours, name, lines
        # three columns, the gap left of the first, return lanes right of the last and the
        # margins fit the cell: 3.16 columns (0.73 + 2 + 0.43) and 2 margins
        column_px = INCH_X * big.scale * big.column * DPI
        assert 3.16 * column_px + 2 * MARGIN * big.scale * DPI / 72 <= CELL_WIDTH < 4 * column_px
    assert explorer_theme("projector") is THEMES["projector"]  # its tags are 10.5 pt already
    assert THEMES["light"].font == 8.0 and THEMES["light"].least == 0.0  # files keep their look


@pytest.mark.parametrize("name", sorted(THEMES))
@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_a_comparisons_shrunk_and_grown_stay_apart_for_colour_blind_readers(name, vision):
    """tv.compare's diverging colours: shrunk, unchanged and grown are three colours for
    every reader, and each stands out from the paper (lost edges are dashed as well)."""
    theme = THEMES[name]
    m = MACHADO[vision]
    seen = {role: lab(m @ linear_rgb(getattr(theme, role))) for role in ("shrunk", "unchanged", "grown")}
    for (r1, c1), (r2, c2) in itertools.combinations(seen.items(), 2):
        assert ciede2000(c1, c2) >= MIN_DELTA_E, (name, vision, r1, r2, ciede2000(c1, c2))
    bg = lab(m @ linear_rgb(theme.background))
    for role, c in seen.items():
        assert ciede2000(c, bg) >= MIN_DELTA_E, (name, vision, role)
