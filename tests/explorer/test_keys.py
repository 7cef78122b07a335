"""tapeviz.explorer.keyboard on the Python side: what attach_keys links, where the widget goes, that closing
releases it, and the errors for wrong arguments. The key handling itself runs in the browser and
is tested there (tests/browser/test_browser_frontends.py)."""

import ipywidgets as W
import pytest
from ipywidgets.widgets import widget as widget_module

import tapeviz as tv
from tapeviz import examples
from tapeviz.explorer.keyboard import SCOPE_CLASS, KeyStepper, attach_keys


def _controls():
    box = W.VBox([W.HTML("picture")])
    step = W.IntSlider(value=3, min=0, max=5)
    play = W.Play(value=3, min=0, max=5)
    return box, step, play


def test_attach_keys_links_step_range_and_play_in_the_browser():
    box, step, play = _controls()
    keys = attach_keys(box, step, play)
    assert isinstance(keys, KeyStepper)
    assert box.children[-1] is keys and SCOPE_CLASS in box._dom_classes
    # Starts where the slider is, so nothing jumps before the browser links take over.
    assert (keys.step, keys.min, keys.max, keys.playing) == (3, 0, 5, False)
    pairs = {
        (type(link).__name__, link.source[0], link.source[1], link.target[0], link.target[1]) for link in keys.links
    }
    assert pairs == {
        ("Link", step, "value", keys, "step"),  # the slider is the source: on load it sets the stepper
        ("DirectionalLink", step, "min", keys, "min"),
        ("DirectionalLink", step, "max", keys, "max"),
        ("Link", play, "playing", keys, "playing"),
    }
    # The front-end module is sent with the widget (anywidget: no lab extension of ours).
    state = keys.get_state()
    assert "export default" in state["_esm"] and "keydown" in state["_esm"]
    assert state["scope"] == SCOPE_CLASS


def test_explorer_has_keys_linked_to_its_own_step_and_play():
    run = examples.basic()
    ex = tv.explore(run.tape, run.target)
    keys = ex.key_stepper
    assert keys in ex.children and "tv-explorer" in ex._dom_classes
    linked = {(link.source[0], link.source[1]) for link in keys.links}
    assert linked == {
        (ex.controls["step"], "value"),
        (ex.controls["step"], "min"),
        (ex.controls["step"], "max"),
        (ex.controls["play"], "playing"),
    }
    # The range the keys clamp to is the slider's, in the kernel too (the explorer sets max
    # once it knows the number of steps); the step itself is linked in the browser only.
    assert (keys.min, keys.max) == (0, len(ex.flow.steps) - 1) == (ex.controls["step"].min, ex.controls["step"].max)
    ex.close()


def test_closing_the_explorer_closes_the_key_widget_and_its_links():
    run = examples.basic()
    before = set(widget_module._instances)
    ex = tv.explore(run.tape, run.target)
    made = [ex.key_stepper, *ex.key_stepper.links]
    assert all(w.model_id in widget_module._instances for w in made)
    ex.close()
    assert not any(w.comm for w in made)
    assert set(widget_module._instances) <= before, "the explorer left widgets registered"


@pytest.mark.parametrize(
    "which, bad, message",
    [
        ("box", W.HTML("x"), "explorer_box must be an ipywidgets Box"),
        ("step", W.FloatSlider(), "step_slider must be an ipywidgets IntSlider"),
        ("play", W.IntSlider(), "play must be an ipywidgets Play"),
    ],
)
def test_wrong_widgets_are_named(which, bad, message):
    box, step, play = _controls()
    args = {"box": box, "step": step, "play": play}
    args[which] = bad
    with pytest.raises(TypeError, match=message):
        attach_keys(args["box"], args["step"], args["play"])


def test_the_hint_speaks_the_explorers_language():
    from tapeviz.messages import say

    box, step, play = _controls()
    keys = attach_keys(box, step, play, lang="zh")
    assert (keys.hint_off, keys.hint_on) == (say("ui.keys.off", "zh"), say("ui.keys.on", "zh"))
    assert keys.hint_off != say("ui.keys.off", "en")
    assert "hint_off" in keys.get_state() and "model.get(trait)" in keys.get_state()["_esm"]
    with pytest.raises(ValueError, match="language 'fr'"):
        attach_keys(*_controls(), lang="fr")
    run = examples.stop_gradient()
    zh = tv.explore(run.tape, run.target, lang="zh")
    assert zh.key_stepper.hint_off == say("ui.keys.off", "zh")


def test_the_play_buttons_get_names_in_the_explorers_language():
    from tapeviz.explorer.keyboard import control_names
    from tapeviz.messages import say

    keys = attach_keys(*_controls(), lang="zh")
    assert keys.names == control_names("zh") == {k: say(f"ui.control.{k}", "zh") for k in keys.names}
    assert list(keys.names) == ["play", "pause", "stop", "repeat"]  # the Play widget's buttons, in order
    assert control_names("en")["pause"] == "pause" and control_names("zh")["pause"] == "暂停"
    assert "tvNameControls" in keys.get_state()["_esm"]
    with pytest.raises(ValueError, match="language 'fr'"):
        control_names("fr")
