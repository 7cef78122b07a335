"""The public functions' one argument order, tv.explore's dispatch, clipping taken alike by
tv.explore and tv.export_html, tv.interact's options apart from its inputs; and the spellings
of tapeviz 0.1, which still work for one release with a DeprecationWarning naming the new one.

Every number compared comes from TensorFlow (tape.gradient, tf.clip_by_norm)."""

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz import api
from tapeviz.explorer import html_page
from tapeviz.explorer.jacobian_explorer import JacobianExplorer
from tapeviz.explorer.widget import Explorer


def _tape():
    x = tf.Variable([3.0, 4.0], name="x")
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(x * x)
    return tape, x, y


def _jacobian():
    x = tf.Variable([3.0, 4.0], name="x")
    with tv.GradientTape(persistent=True) as tape:
        v = x * 2.0
    return tv.jacobian(tape, v, x)


def _deprecated(new: str):
    """pytest.warns for a tapeviz deprecation whose message names the new spelling."""
    return pytest.warns(DeprecationWarning, match=r"deprecated in tapeviz.*write " + new)


# --------------------------------------------------------------------------- tv.save


def test_save_takes_the_target_then_the_path(tmp_path):
    tape, _, y = _tape()
    new = tv.save(tape, y, tmp_path / "new.svg")
    named = tv.save(tape, target=y, path=tmp_path / "named.svg")
    assert new == tmp_path / "new.svg" and named == tmp_path / "named.svg"
    assert new.read_bytes() == named.read_bytes()
    assert "∂" in new.read_text(encoding="utf-8")  # the backward pass of y is drawn


def test_save_with_no_target_draws_the_graph(tmp_path):
    tape, _, y = _tape()
    by_name = tv.save(tape, path=tmp_path / "a.svg").read_bytes()
    assert by_name == tv.save(tape, None, tmp_path / "b.svg").read_bytes()
    assert by_name != tv.save(tape, y, tmp_path / "c.svg").read_bytes()


def test_save_in_the_old_order_still_works_and_warns(tmp_path):
    tape, _, y = _tape()
    with _deprecated(r"tv\.save\(tape, target, path\)") as caught:
        old = tv.save(tape, tmp_path / "old.svg", target=y)
    assert caught[0].filename == __file__, "the warning points at the caller's line"
    assert old.read_bytes() == tv.save(tape, y, tmp_path / "new.svg").read_bytes()
    with _deprecated(r"tv\.save\(tape, path=path\)"):
        graph_only = tv.save(tape, str(tmp_path / "old_graph.svg"))
    assert graph_only.read_bytes() == tv.save(tape, path=tmp_path / "graph.svg").read_bytes()


def test_save_says_what_is_wrong_with_its_arguments(tmp_path):
    tape, _, y = _tape()
    with pytest.raises(TypeError, match=r"needs a path: tv\.save\(tape, target, 'picture\.png'\)"):
        tv.save(tape, y)
    with pytest.raises(TypeError, match="the target comes before the path"):
        tv.save(tape, tmp_path / "a.svg", y)
    with pytest.raises(TypeError, match="two targets"):
        tv.save(tape, y, tmp_path / "a.svg", target=y)
    with pytest.raises(TypeError, match="two paths"):
        tv.save(tape, y, tmp_path / "a.svg", path=tmp_path / "b.svg")
    assert not list(tmp_path.iterdir())


# --------------------------------------------------------------------------- tv.explore


def test_explore_dispatches_on_its_first_argument():
    from tapeviz.output.jacobian_heatmap import Jacobian
    from tapeviz.training.history import History

    assert tv.explore.dispatch(History) is api.explore_history
    assert tv.explore.dispatch(Jacobian) is api.explore_jacobian
    assert tv.explore.dispatch(tv.GradientTape) is tv.explore.dispatch(object)
    tape, _, y = _tape()
    assert type(tv.explore(tape, y)) is Explorer
    assert isinstance(tv.explore(_jacobian()), JacobianExplorer)
    assert api.explore_history.__annotations__["return"] == "TrainingExplorer"


def test_explore_targets_keyword_still_works_and_warns():
    tape, _, y = _tape()
    with _deprecated(r"tv\.explore\(tape, target\)") as caught:
        old = tv.explore(tape, targets={"loss": y})
    assert caught[0].filename == __file__
    assert old.state == tv.explore(tape, {"loss": y}).state
    with pytest.raises(TypeError, match="target and targets"):
        tv.explore(tape, y, targets=y)


def test_keywords_an_explorer_kind_ignored_warn():
    with _deprecated(r"tv\.explore\(history, \.\.\.\) without it"), pytest.raises(ValueError, match="no step"):
        tv.explore(tv.History(), quiz=True)
    jac = _jacobian()
    with _deprecated(r"tv\.explore\(jacobian, \.\.\.\) without it"):
        ex = tv.explore(jac, output_gradients=None)
    assert isinstance(ex, JacobianExplorer)
    with pytest.raises(TypeError, match="Unknown option 'quiet'"):
        tv.explore(jac, quiet=True)


# --------------------------------------------------------------------------- clipping, alike


def test_explore_opens_with_the_clipping_given_and_tf_does_it():
    tape, x, y = _tape()
    ex = tv.explore(tape, y, clip="by_norm", clip_norm=2.0)
    assert (ex.state.clip_mode, ex.state.clip_norm) == ("by_norm", 2.0)
    assert (ex.controls["clip"].value, ex.controls["clip_norm"].value) == ("by_norm", 2.0)
    want = tf.clip_by_norm(tape.gradient(y, x), 2.0).numpy()  # [6, 8] has norm 10: scaled to norm 2
    (got,) = ex.gradients(clipped=True).values()
    np.testing.assert_array_equal(got, want)
    by_value = tv.explore(tape, y, clip="by_value", clip_value=(-7.0, 7.0))
    (got,) = by_value.gradients(clipped=True).values()
    np.testing.assert_array_equal(got, tf.clip_by_value(tape.gradient(y, x), -7.0, 7.0).numpy())
    assert tuple(by_value.controls["clip_value"].value) == (-7.0, 7.0)


def test_a_clip_norm_beyond_the_slider_widens_it():
    tape, _, y = _tape()
    ex = tv.explore(tape, y, clip="by_global_norm", clip_norm=25.0, clip_value=(-20.0, 30.0))
    assert ex.controls["clip_norm"].value == 25.0 == ex.state.clip_norm
    assert tuple(ex.controls["clip_value"].value) == (-20.0, 30.0)


def test_export_html_takes_the_same_clipping(tmp_path, monkeypatch):
    tape, _, y = _tape()
    states = []
    monkeypatch.setattr(html_page, "write_page", lambda ex, state, path, **kw: states.append(state) or path)
    tv.export_html(tape, y, tmp_path / "p.html", clip="by_value", clip_value=(-7.0, 7.0))
    ex = tv.explore(tape, y, clip="by_value", clip_value=(-7.0, 7.0))
    page, live = states[-1], ex.state
    assert (page.clip_mode, page.clip_value) == (live.clip_mode, live.clip_value) == ("by_value", (-7.0, 7.0))


def test_jacobian_explorer_and_interact_take_the_clipping_too():
    jac = tv.explore(_jacobian(), clip="by_norm", clip_norm=0.5)
    assert (jac.explorer.state.clip_mode, jac.explorer.state.clip_norm) == ("by_norm", 0.5)
    ex = tv.interact.options(clip="by_norm", clip_norm=0.5)(lambda x: x * 3.0, x=(0.0, 2.0))
    assert (ex.state.clip_mode, ex.state.clip_norm) == ("by_norm", 0.5)


BAD_CLIPPING = [
    (dict(clip="by_nrom"), ValueError, "Unknown clip mode 'by_nrom'"),
    (dict(clip=1), TypeError, "clip=1: use one of"),
    (dict(clip="by_norm", clip_norm=0.0), ValueError, "clip_norm must be a positive number"),
    (dict(clip="by_norm", clip_norm="1"), TypeError, "clip_norm='1': give a positive number"),
    (dict(clip="by_value", clip_value=(1.0, -1.0)), ValueError, "min 1.0 is greater than max -1.0"),
    (dict(clip="by_value", clip_value=1.0), TypeError, r"clip_value=1.0: give \(min, max\)"),
    (dict(clip="by_value", clip_value=("a", 1.0)), TypeError, "give two numbers"),
]


@pytest.mark.parametrize("settings, error, match", BAD_CLIPPING)
def test_bad_clipping_is_refused_alike_everywhere(tmp_path, settings, error, match):
    tape, _, y = _tape()
    with pytest.raises(error, match=match):
        tv.explore(tape, y, **settings)
    with pytest.raises(error, match=match):
        tv.export_html(tape, y, tmp_path / "p.html", **settings)
    with pytest.raises(error, match=match):
        tv.explore(_jacobian(), **settings)
    with pytest.raises(error, match=match):
        tv.interact.options(**settings)
    assert not list(tmp_path.iterdir()), "refused before any work"


# --------------------------------------------------------------------------- tv.interact


def _square(x=1.0):
    return x * x


def test_interact_options_are_apart_from_the_inputs():
    ex = tv.interact.options(theme="dark", lang="zh", presenter=True)(_square, x=(-2.0, 2.0))
    assert (ex.state.theme, ex.state.lang) == ("dark", "zh") and "tv-presenter" in ex._dom_classes
    assert list(ex.inputs) == ["x"] and ex.inputs["x"].value == 1.0
    dark = tv.interact.options(tv.Options(theme="dark"))
    both = dark.options(lang="zh")  # each call keeps what the one before it set
    assert (both(_square, x=(-2.0, 2.0)).state.theme, both(_square, x=(-2.0, 2.0)).state.lang) == ("dark", "zh")
    assert dark(_square, x=(-2.0, 2.0)).state.lang == "en", "options() makes a new interact; this one is unchanged"
    assert tv.interact(_square, x=(-2.0, 2.0)).state.theme == "light", "tv.interact itself keeps the defaults"
    with pytest.raises(TypeError, match="Unknown option 'them'"):
        tv.interact.options(them="dark")


def test_an_input_may_take_any_name():
    """Inputs named like an explorer control (step, lr, target) or an option (theme) are the
    function's inputs: sliders in ex.inputs, the explorer's own controls untouched."""

    def f(step=1.0, lr=0.5, theme=2.0, target=1.5):
        return step * lr * theme + target

    ex = tv.interact(f, step=(0.0, 2.0), lr=(0.0, 1.0), theme=(0.0, 3.0), target=(0.0, 2.0))
    assert list(ex.inputs) == ["step", "lr", "theme", "target"]
    assert ex.inputs["step"] is not ex.controls["step"] and ex.controls["step"].max == ex.state.step
    assert ex.state.theme == "light" and list(ex.graph_targets.targets) == ["f"]
    ex.inputs["lr"].value = 0.25
    variables = {k: tf.Variable(v) for k, v in ex.values.items()}
    with tf.GradientTape() as tape:
        out = f(**variables)
    want = dict(zip(variables, tape.gradient(out, list(variables.values())), strict=True))
    got = ex.gradients(clipped=False)
    for name, g in want.items():
        np.testing.assert_allclose(got[name], g.numpy(), rtol=1e-6)
    assert ex.controls["lr"].value == ex.state.lr == 0.01, "the SGD preview's lr is not the input lr"


def test_a_function_named_target_with_inputs_y_and_target_still_names_its_target():
    def target(y=1.0, target=2.0):
        return y * target

    ex = tv.interact(target, y=(0.0, 2.0), target=(0.0, 3.0))
    assert list(ex.graph_targets.targets) == ["target2"]
    assert float(ex.targets["target2"]) == 2.0


def test_options_among_the_inputs_still_work_and_warn():
    with _deprecated(r"tv\.interact\.options\(theme=\.\.\., lang=\.\.\.\)\(fn, \.\.\.\)") as caught:
        ex = tv.interact(_square, x=(-2.0, 2.0), theme="dark", lang="zh")
    assert caught[0].filename == __file__
    assert (ex.state.theme, ex.state.lang) == ("dark", "zh") and list(ex.inputs) == ["x"]
    with _deprecated(r"tv\.interact\.options\(presenter=\.\.\.\)"):
        assert "tv-presenter" in tv.interact(_square, x=(-2.0, 2.0), presenter=True)._dom_classes
    with _deprecated(r"tv\.interact\.options\(options=\.\.\.\)"):
        assert tv.interact(_square, x=(-2.0, 2.0), options=tv.Options(lang="zh")).state.lang == "zh"


def test_an_inputs_slider_asked_of_controls_still_works_and_warns():
    ex = tv.interact(_square, x=(-2.0, 2.0))
    with _deprecated(r"ex\.inputs\['x'\]") as caught:
        slider = ex.controls["x"]
    assert caught[0].filename == __file__
    assert slider is ex.inputs["x"] and "x" not in ex.controls
    with pytest.raises(KeyError):
        ex.controls["nope"]
