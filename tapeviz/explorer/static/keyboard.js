// Elements whose own keys must stay theirs: typing, menus, code editors.
export const OWN_ALL_KEYS = "input, textarea, select, [contenteditable=''], [contenteditable='true'], .cm-editor";

// What a key press inside `box` does: "next", "prev", "play" (start or pause), or null (not
// ours: outside the box, a modifier held, typing, the arrows of a focused slider, which moves
// itself, space on a focused button, which clicks itself, or the arrows of a focused box of
// the picture, which move between boxes).
export function tvKeyAction(e, box) {
  if (!box || !box.isConnected || !(e.target instanceof Element) || !box.contains(e.target)) return null;
  if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.isComposing) return null;
  const t = e.target;
  if (t.closest(OWN_ALL_KEYS)) return null;
  if (e.key !== " " && t.closest("[data-tv-order]")) return null; // a focused box walks the boxes (box_keys.js)
  const onSlider = t.closest("[role='slider']") !== null;
  const onButton = t.closest("button") !== null;
  if (e.key === "ArrowRight" && !onSlider) return "next";
  if (e.key === "ArrowLeft" && !onSlider) return "prev";
  if (e.key === " " && !onButton) return "play";
  return null;
}

// Whether a click inside `box` should focus it (turning the keys on): not when focus is in it
// already, nor on a part that takes focus itself.
export function tvTakesFocus(e, box) {
  if (!box || box.contains(document.activeElement)) return false;
  return !(e.target instanceof Element && e.target.closest(OWN_ALL_KEYS + ", button, [role='slider']"));
}

// ipywidgets draws a slider's handle (role="slider") with no name and the Play widget's
// buttons as icons alone: name them for screen readers, from the slider's own label and
// `words` ({play, pause, stop, repeat}). Elements named already are left alone.
export function tvNameControls(box, words) {
  if (!box) return;
  for (const handle of box.querySelectorAll("[role='slider']:not([aria-label]):not([aria-labelledby])")) {
    const widget = handle.closest(".widget-slider, .jupyter-widgets");
    const label = widget ? widget.querySelector(".widget-label") : null;
    const text = label ? label.textContent.trim() : "";
    if (text) handle.setAttribute("aria-label", text);
  }
  const roles = ["play", "pause", "stop", "repeat"]; // the Play widget's buttons, in its order
  for (const play of box.querySelectorAll(".widget-play")) {
    play.querySelectorAll(":scope > button").forEach((b, i) => {
      if (!b.hasAttribute("aria-label") && !b.textContent.trim() && words[roles[i]])
        b.setAttribute("aria-label", words[roles[i]]);
    });
  }
}

function render({ model, el }) {
  el.classList.add("tv-keys-hint");
  for (const [cls, trait] of [
    ["tv-keys-off", "hint_off"],
    ["tv-keys-on", "hint_on"],
  ]) {
    const span = document.createElement("span");
    span.className = cls;
    span.textContent = "⌨ " + model.get(trait);
    el.appendChild(span);
  }

  let box = null;
  let names = null; // the observer naming the controls
  let timer = null;
  let tries = 0;

  const clampedStep = (delta) => {
    const lo = model.get("min"),
      hi = model.get("max");
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
    const action = tvKeyAction(e, box);
    if (action === "next") clampedStep(+1);
    else if (action === "prev") clampedStep(-1);
    else if (action === "play") togglePlay();
    else return;
    e.preventDefault(); // no page scroll on space / arrows
    e.stopPropagation(); // and no notebook shortcut for the same key
  };

  // A click on the picture (or any part that takes no focus itself) focuses the explorer.
  const onClick = (e) => {
    if (tvTakesFocus(e, box)) box.focus({ preventScroll: true });
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
    // the controls are drawn by their own views, before or after this one: name them as they come
    tvNameControls(box, model.get("names"));
    let queued = false; // once per frame at most: picture patches change the box's subtree too
    names = new MutationObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        tvNameControls(box, model.get("names"));
      });
    });
    names.observe(box, { childList: true, subtree: true });
    box.setAttribute("aria-keyshortcuts", "ArrowLeft ArrowRight Space");
    box.addEventListener("click", onClick);
    box.setAttribute("data-tv-keys", "on");
  };
  window.addEventListener("keydown", onKeydown, true);
  attach();

  return () => {
    if (timer !== null) clearTimeout(timer);
    if (names) names.disconnect();
    window.removeEventListener("keydown", onKeydown, true);
    if (box) {
      box.removeEventListener("click", onClick);
      box.removeAttribute("data-tv-keys");
    }
  };
}

export default { render };
