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

#: The class the explorer's outermost box carries; the front end finds its box by it.
SCOPE_CLASS = "tv-explorer"

_ESM = r"""
// Elements whose own keys must stay theirs: typing, menus, code editors.
const OWN_ALL_KEYS = "input, textarea, select, [contenteditable=''], [contenteditable='true'], .cm-editor";

function render({ model, el }) {
  el.classList.add("tv-keys-hint");
  for (const [cls, trait] of [["tv-keys-off", "hint_off"], ["tv-keys-on", "hint_on"]]) {
    const span = document.createElement("span");
    span.className = cls;
    span.textContent = "⌨ " + model.get(trait);
    el.appendChild(span);
  }

  let box = null;
  let timer = null;
  let tries = 0;

  const clampedStep = (delta) => {
    const lo = model.get("min"), hi = model.get("max");
    const next = Math.max(lo, Math.min(hi, model.get("step") + delta));
    if (next !== model.get("step")) {
      model.set("step", next);
      model.save_changes();
    }
  };
  const togglePlay = () => {
    model.set("playing", !model.get("playing"));
    model.save_changes();
  };

  // Capture phase on window: runs before the notebook's own shortcut handling, so the
  // keys reach us even where the front end would use them for something else.
  const onKeydown = (e) => {
    if (!box || !box.isConnected || !(e.target instanceof Element) || !box.contains(e.target)) return;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.isComposing) return;
    const t = e.target;
    if (t.closest(OWN_ALL_KEYS)) return;
    const onSlider = t.closest("[role='slider']") !== null;
    const onButton = t.closest("button") !== null;
    if (e.key === "ArrowRight" && !onSlider) clampedStep(+1);
    else if (e.key === "ArrowLeft" && !onSlider) clampedStep(-1);
    else if (e.key === " " && !onButton) togglePlay();
    else return;
    e.preventDefault();   // no page scroll on space / arrows
    e.stopPropagation();  // and no notebook shortcut for the same key
  };

  // A click on the picture (or any part that takes no focus itself) focuses the explorer.
  const onClick = (e) => {
    if (!box || box.contains(document.activeElement)) return;
    if (e.target instanceof Element && e.target.closest(OWN_ALL_KEYS + ", button, [role='slider']")) return;
    box.focus({ preventScroll: true });
  };

  // The view is rendered before its box puts it on the page: look for the box until then.
  const attach = () => {
    timer = null;
    box = el.closest("." + model.get("scope"));
    if (!box) {
      tries += 1;
      timer = setTimeout(attach, tries < 40 ? 50 : 500);
      return;
    }
    if (!box.hasAttribute("tabindex")) box.tabIndex = 0;
    box.setAttribute("aria-keyshortcuts", "ArrowLeft ArrowRight Space");
    box.addEventListener("click", onClick);
    box.setAttribute("data-tv-keys", "on");
  };
  window.addEventListener("keydown", onKeydown, true);
  attach();

  return () => {
    if (timer !== null) clearTimeout(timer);
    window.removeEventListener("keydown", onKeydown, true);
    if (box) {
      box.removeEventListener("click", onClick);
      box.removeAttribute("data-tv-keys");
    }
  };
}

export default { render };
"""

_CSS = f"""
.{SCOPE_CLASS}[data-tv-keys]:focus {{ outline: 2px solid #93c5fd; outline-offset: -2px; }}
.tv-keys-hint {{ font-size: 11px; color: #64748b; margin: 2px 0 0 4px; }}
.tv-keys-hint .tv-keys-on {{ display: none; color: #1d4ed8; }}
.{SCOPE_CLASS}:focus-within .tv-keys-hint .tv-keys-on {{ display: inline; }}
.{SCOPE_CLASS}:focus-within .tv-keys-hint .tv-keys-off {{ display: none; }}
"""


class KeyStepper(anywidget.AnyWidget):
    """Turns ← / → / space inside an explorer's box into step / play changes.

    Made by :func:`attach_keys`, which also links it; on its own it only shows a hint.
    """

    _esm = _ESM
    _css = _CSS

    step = T.Int(0, help="the step shown; linked to the step slider's value").tag(sync=True)
    min = T.Int(0, help="lowest step (copied from the slider in the browser)").tag(sync=True)
    max = T.Int(0, help="highest step (copied from the slider in the browser)").tag(sync=True)
    playing = T.Bool(False, help="linked to the Play widget's playing").tag(sync=True)
    scope = T.Unicode(SCOPE_CLASS, help="CSS class of the box whose focus turns the keys on").tag(sync=True)
    hint_off = T.Unicode(say("ui.keys.off"), help="the hint while the keys are off").tag(sync=True)
    hint_on = T.Unicode(say("ui.keys.on"), help="the hint while focus is inside the box").tag(sync=True)

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
