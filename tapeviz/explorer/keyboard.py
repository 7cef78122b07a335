"""Keyboard stepping for the explorer: ← / → step, space plays, while focus is inside it.

ipywidgets gives a box no key events, and a JupyterLab extension of our own would need a
JavaScript build and would still not load in Voilà. anywidget ships one generic front end
(a prebuilt lab extension, so it runs in JupyterLab, Notebook 7 and Voilà alike) that runs
the small ES module below, sent from Python as a string.

The widget does not talk to the kernel to step: its ``step``/``playing`` traits are linked
in the browser (``jslink``) to the explorer's step slider and Play widget, and it reads the
slider's ``min``/``max`` through ``jsdlink`` to clamp. A key press moves the slider in the
browser; the kernel hears about it the way it hears about a dragged slider.

Keys are taken only while focus is inside *that* explorer (its box gets ``tabindex=0``, and
a click on its picture focuses it), never from text inputs, menus or code editors, and not
the arrows from a focused slider (the slider moves itself) or space from a focused button
(the button clicks itself).
"""

from __future__ import annotations

import anywidget
import ipywidgets as W
import traitlets as T

from ..messages import DEFAULT, check_lang, say
from . import static_files

#: The class the explorer's outermost box carries; the front end finds its box by it.
SCOPE_CLASS = "tv-explorer"


class KeyStepper(anywidget.AnyWidget):
    """Turns ← / → / space inside an explorer's box into step / play changes.

    Made by :func:`attach_keys`, which also links it; on its own it only shows a hint.
    """

    _esm = static_files.path("keyboard.js")
    _css = static_files.path("keyboard.css")

    step = T.Int(0, help="the step shown; linked to the step slider's value").tag(sync=True)
    min = T.Int(0, help="lowest step (copied from the slider in the browser)").tag(sync=True)
    max = T.Int(0, help="highest step (copied from the slider in the browser)").tag(sync=True)
    playing = T.Bool(False, help="linked to the Play widget's playing").tag(sync=True)
    scope = T.Unicode(SCOPE_CLASS, help="CSS class of the box whose focus turns the keys on").tag(sync=True)
    hint_off = T.Unicode(say("ui.keys.off"), help="the hint while the keys are off").tag(sync=True)
    hint_on = T.Unicode(say("ui.keys.on"), help="the hint while focus is inside the box").tag(sync=True)
    names = T.Dict(help="screen-reader names of the Play widget's icon buttons").tag(sync=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.links: list[W.Widget] = []  # browser-side: what the keys act through
        self._mirrors: list[T.directional_link] = []  # kernel-side copies, see attach_keys

    def close(self) -> None:
        """Close the links too (ipywidgets keeps every widget registered until closed)."""
        for mirror in self._mirrors:
            mirror.unlink()
        for link in self.links:
            link.close()
        self.links, self._mirrors = [], []
        super().close()


def control_names(lang: str = DEFAULT) -> dict[str, str]:
    """Names of the Play widget's buttons, which ipywidgets draws as icons alone (the front
    end gives them to screen readers, with each slider's own label as its name)."""
    return {k: say(f"ui.control.{k}", check_lang(lang)) for k in ("play", "pause", "stop", "repeat")}


def attach_keys(explorer_box: W.Box, step_slider: W.IntSlider, play: W.Play, *, lang: str = DEFAULT) -> KeyStepper:
    """Give ``explorer_box`` keyboard stepping: ← / → move ``step_slider`` by one within its
    min / max, space starts or pauses ``play``, while focus is inside the box. ``lang``: the
    language of its one-line hint.

    The returned :class:`KeyStepper` is appended to the box's children (it must be inside
    the box to find it on the page; it shows a one-line hint) and is linked in the
    browser, so stepping needs no kernel round trip. Closing it closes its links.
    """
    if not isinstance(explorer_box, W.Box):
        raise TypeError(
            f"attach_keys: explorer_box must be an ipywidgets Box (VBox/HBox), got "
            f"{type(explorer_box).__name__}; pass the explorer itself."
        )
    if not isinstance(step_slider, W.IntSlider):
        raise TypeError(
            f"attach_keys: step_slider must be an ipywidgets IntSlider, got "
            f"{type(step_slider).__name__}; pass explorer.controls['step']."
        )
    if not isinstance(play, W.Play):
        raise TypeError(
            f"attach_keys: play must be an ipywidgets Play, got {type(play).__name__}; pass explorer.controls['play']."
        )
    keys = KeyStepper(
        step=step_slider.value,
        playing=play.playing,  # where the page starts
        hint_off=say("ui.keys.off", check_lang(lang)),
        hint_on=say("ui.keys.on", lang),
        names=control_names(lang),
    )
    keys.links = [
        W.jslink((step_slider, "value"), (keys, "step")),  # slider first: on load it sets the stepper
        W.jsdlink((step_slider, "min"), (keys, "min")),
        W.jsdlink((step_slider, "max"), (keys, "max")),
        W.jslink((play, "playing"), (keys, "playing")),
    ]
    # The range is copied in the kernel too, so the Python object tells the clamp the page
    # uses before a browser has shown it. Not the step or playing: the browser changes those,
    # and a kernel-side copy would send each value back to the page while a slider is
    # dragged, pulling the handle back to where it was (seen in Notebook 7).
    keys._mirrors = [T.dlink((step_slider, "min"), (keys, "min")), T.dlink((step_slider, "max"), (keys, "max"))]
    explorer_box.add_class(keys.scope)
    explorer_box.children = (*explorer_box.children, keys)
    return keys
