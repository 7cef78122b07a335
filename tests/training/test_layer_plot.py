"""hist.plot_layers(step) and hist.compare(a, b): gradient norm by layer at one step, from a
plain tf.GradientTape loop, every bar equal to the norm of the gradients TF computed."""

from __future__ import annotations

import pytest
import tensorflow as tf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from training_runs import sigmoid_run

import tapeviz as tv
from tapeviz.training.layer_plot import BAR, NormTable
from tapeviz.training.plot import FLAG_STYLE

LONG = "encoder_block_with_a_rather_long_descriptive_name_projection"


@pytest.fixture(scope="module")
def run():
    """A deep sigmoid net (its first layers' gradients vanish), one layer with a long
    name, trained 12 steps by the user's own loop; keeps each layer's norm in float64."""
    hist, seen = sigmoid_run([f"d{i}" for i in range(7)] + [LONG, "out"], steps=12, lr=0.5, width=24, seed=2)
    return hist, [s["layer"] for s in seen]


def _bars(ax):
    return [p for p in ax.patches if p.get_width() > 0]


def _inside(fig: Figure, ax) -> None:
    """Every tick label and text of ``ax`` is drawn whole inside the figure."""
    FigureCanvasAgg(fig).draw()
    box = fig.bbox
    for t in [*ax.get_yticklabels(), *ax.texts]:
        if not t.get_text():
            continue
        e = t.get_window_extent()
        assert e.x0 >= box.x0 - 0.5 and e.x1 <= box.x1 + 0.5, f"{t.get_text()!r} cut at the figure's edge"


def test_plot_layers_one_bar_per_layer_with_true_norms_names_log_scale_and_flags(run, tmp_path):
    hist, seen = run
    fig = hist.plot_layers(step=3)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    layers = hist.layers()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [n.removeprefix("net/") for n in layers] and LONG in labels  # whole names, in model order
    assert "net/" in ax.get_ylabel()
    lo = ax.get_xlim()[0]
    bars = ax.patches
    assert len(bars) == len(layers)
    for bar, layer in zip(bars, layers, strict=True):
        norm = bar.get_x() + bar.get_width()
        assert norm == pytest.approx(hist.norms(layer)[3], rel=1e-12)
        assert hist.norms(layer)[3] == pytest.approx(seen[3][layer], rel=1e-6)  # TF's gradients, float64
        assert bar.get_x() == lo
    flagged = hist.flagged(3)
    assert flagged, "the first layers' gradients vanish"
    blue = FLAG_STYLE["vanishing"][1]
    for bar, layer, text in zip(bars, layers, ax.texts, strict=True):
        want = blue if "vanishing" in flagged.get(layer, ()) else BAR
        assert bar.get_facecolor()[:3] == pytest.approx(tuple(int(want[i : i + 2], 16) / 255 for i in (1, 3, 5)))
        assert ("▼ vanishing" in text.get_text()) == ("vanishing" in flagged.get(layer, ()))
    assert "flag: vanishing" in [t.get_text() for t in fig.legends[0].get_texts()]
    _inside(fig, ax)
    fig.savefig(tmp_path / "layers.png", dpi=100)
    assert fig.get_size_inches()[0] <= 10  # a page wide at most
    last = hist.plot_layers()
    assert "at step 11" in last.texts[0].get_text()  # step=None: the last step
    assert "at step 3" in fig.texts[0].get_text()


def test_plot_layers_relative_and_by_variable(run, tmp_path):
    hist, _ = run
    fig = hist.plot_layers(5, relative=True)
    ax_g, ax_r = fig.axes
    assert ax_r.get_xscale() == "log" and "‖w‖" in ax_r.get_xlabel()
    for bar, layer in zip(ax_r.patches, hist.layers(), strict=True):
        assert bar.get_x() + bar.get_width() == pytest.approx(hist.norms(layer, "relative")[5], rel=1e-6)
    fig.savefig(tmp_path / "relative.png", dpi=100)
    fig = hist.plot_layers(5, by="variable")
    (ax,) = fig.axes
    marks = ["flag: vanishing"] if any("vanishing" in k for k in hist.flagged(5).values()) else []
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["kernel", "bias", *marks]  # side by side
    kernels, biases = ax.containers
    zero = 0
    for bar, layer in zip(biases.patches, hist.layers(), strict=True):
        want = hist.norms(layer + "/bias")[5]
        if want == 0:  # a gradient that underflowed to 0: no bar on a log axis, and it says "0"
            zero += 1
            assert bar.get_width() == 0 and any(t.get_text() == "0" for t in ax.texts)
        else:
            assert bar.get_x() + bar.get_width() == pytest.approx(want, rel=1e-12)
    assert zero < len(hist.layers())
    _inside(fig, ax)
    fig.savefig(tmp_path / "by_variable.png", dpi=100)


def test_compare_two_steps_figure_and_table_of_ratios(run, tmp_path):
    hist, _ = run
    fig, table = hist.compare(0, 11)
    assert isinstance(fig, Figure) and isinstance(table, NormTable)
    assert [r.name for r in table.rows] == hist.layers()
    for r in table.rows:
        g = hist.norms(r.name)
        assert (r.grad_a, r.grad_b) == (g[0], g[11])
        assert r.grad_ratio == pytest.approx(g[11] / g[0], rel=1e-12)
        rel = hist.norms(r.name, "relative")
        assert r.relative_ratio == pytest.approx(rel[11] / rel[0], rel=1e-6)  # from float32 norms
    ax_norm, ax_ratio = fig.axes
    assert ax_norm.get_xscale() == ax_ratio.get_xscale() == "log"
    ratios = {t.get_text() for t in ax_ratio.texts}
    assert {f"×{r.grad_ratio:.2g}" for r in table.rows} == ratios
    md = str(table)
    assert md.splitlines()[0].startswith("| layer | ‖g‖ at 0 | ‖g‖ at 11 | ‖g‖ b/a")
    assert len(md.splitlines()) == 2 + len(hist.layers())
    assert "<table" in table._repr_html_() and table["net/d0"].grad_a == hist.norms("net/d0")[0]
    _inside(fig, ax_norm)
    fig.savefig(tmp_path / "compare.png", dpi=100)


def test_bad_input_names_the_cause():
    with pytest.raises(ValueError, match="Nothing to plot yet"):
        tv.History().plot_layers()
    hist = tv.History()
    w = tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    hist.add(4, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    with pytest.raises(KeyError, match="Step 9 was not recorded"):
        hist.plot_layers(9)
    with pytest.raises(ValueError, match="by must be"):
        hist.plot_layers(by="op")
    with pytest.raises(KeyError, match="Step 1 was not recorded"):
        hist.compare(1, 4)


def test_by_variable_marks_a_flagged_layer_on_its_name(run):
    hist, _ = run
    fig = hist.plot_layers(3, by="variable")
    flagged = hist.flagged(3)
    blue = FLAG_STYLE["vanishing"][1]
    for label, layer in zip(fig.axes[0].get_yticklabels(), hist.layers(), strict=True):
        vanishing = "vanishing" in flagged.get(layer, ())
        assert label.get_text().startswith("▼ ") == vanishing
        assert (label.get_color() == blue) == vanishing
    assert any("vanishing" in k for k in flagged.values())
    (mark,) = [h for h in fig.legends[0].legend_handles if h.get_label() == "flag: vanishing"]
    assert mark.get_marker() == "v" and mark.get_color() == blue  # the ▼ on the names, explained
    fig = hist.plot_layers(3, by="variable", lang="zh")
    assert "标记：梯度消失" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_plot_layers_and_compare_speak_chinese(run):
    hist, _ = run
    fig = hist.plot_layers(3, lang="zh")
    words = [fig.texts[0].get_text(), fig.axes[0].get_xlabel(), *[t.get_text() for t in fig.legends[0].get_texts()]]
    assert words[0].startswith("第 3 步各层的梯度范数") and "对数" in words[1] and "标记：梯度消失" in words
    assert any("梯度消失" in t.get_text() for t in fig.axes[0].texts)
    fig, table = hist.compare(0, 11, lang="zh")
    assert "第 0 步对比第 11 步" in fig.texts[0].get_text() and "第 11 步的 ‖g‖" in fig.axes[1].get_xlabel()
    head = "| 层 | 第 0 步 ‖g‖ | 第 11 步 ‖g‖ | ‖g‖ 之比 b/a | 第 0 步 ‖g‖/‖w‖ | 第 11 步 ‖g‖/‖w‖ |"
    assert str(table).startswith(head) and "<th>第 11 步 ‖g‖</th>" in table._repr_html_()
    with pytest.raises(ValueError, match="No messages in language"):
        hist.plot_layers(lang="fr")
