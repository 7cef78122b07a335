// Keys on the picture's boxes: Tab / Shift+Tab and the arrows walk the boxes in the order
// Python wrote on them (data-tv-order: the backward pass's order, picture/access.py), Home /
// End go to the first / last, Enter does what a click does (open or close a group, inspect
// a box), Escape goes back to the step slider. The canvas and the exported page both use it.

// Boxes and frames a key can reach, in their order.
export function tvBoxes(svg) {
  if (!svg) return [];
  return Array.from(svg.querySelectorAll("[data-tv-order]")).sort((a, b) => a.dataset.tvOrder - b.dataset.tvOrder);
}

// The box (or frame) a key event comes from, or null.
export function tvBoxOf(target, svg) {
  if (!svg || !(target instanceof Element) || !svg.contains(target)) return null;
  return target.closest("[data-tv-order]");
}

// What a key pressed on a box does: "next", "prev", "first", "last", "activate", "slider",
// or null (not ours: a modifier held, or a key the box leaves to the page, e.g. space plays).
export function tvBoxAction(e) {
  if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return null;
  if (e.key === "Tab") return e.shiftKey ? "prev" : "next";
  if (e.shiftKey) return null;
  if (e.key === "ArrowRight" || e.key === "ArrowDown") return "next";
  if (e.key === "ArrowLeft" || e.key === "ArrowUp") return "prev";
  if (e.key === "Home") return "first";
  if (e.key === "End") return "last";
  if (e.key === "Enter") return "activate";
  if (e.key === "Escape") return "slider";
  return null;
}

// Where a move goes from `box` among `boxes`: the element to focus, or null for "leave it
// to the browser" (Tab past the last box, Shift+Tab before the first: focus leaves the
// picture). The arrows stop at the ends.
export function tvBoxStep(boxes, box, action, tab = false) {
  const i = boxes.indexOf(box);
  if (i < 0 || boxes.length === 0) return null;
  if (action === "first") return boxes[0];
  if (action === "last") return boxes[boxes.length - 1];
  const j = action === "next" ? i + 1 : action === "prev" ? i - 1 : i;
  if (j < 0 || j >= boxes.length) return tab ? null : box;
  return boxes[j];
}

// The step slider of the explorer around `root` (the page's range input, or the focusable
// handle of the notebook's slider widget).
export function tvSliderOf(root) {
  const s = root ? root.querySelector(".tv-step") : null;
  if (!s) return null;
  if (s.matches("input, [role='slider']")) return s;
  return s.querySelector("input, [role='slider'], [tabindex]") || null;
}

// What a box that had focus is: its id, and its group (data-tv-group) for a box or frame
// that a click opens or closes, so that focus can go to what replaces it.
export function tvFocusMark(box) {
  return box ? { id: box.id, group: box.dataset.tvGroup || "" } : null;
}

// The element of a new (or patched) picture that stands for a box that had focus: the same
// id, else the group's frame (it was opened) or its closed box (it was closed).
export function tvFocusTarget(svg, mark) {
  if (!svg || !mark) return null;
  const by = (sel) => svg.querySelector(sel);
  const esc = (s) => CSS.escape(s);
  return (
    by(`[id="${esc(mark.id)}"][data-tv-order]`) ||
    (mark.group &&
      (by(`[id="${esc("group-" + mark.group)}"][data-tv-order]`) ||
        by(`[data-tv-group="${esc(mark.group)}"][data-tv-order]`))) ||
    null
  );
}

// Wire the keys and focus keeping on a picture. `svgOf()`: the picture shown now;
// `activate(box)`: what Enter does (the click's path); `root`: the explorer (its step
// slider takes focus on Escape; `sliderRoot()`: where that slider is, when not inside `root`). `capture`: listen on window before the page's own
// shortcuts (the notebook's), else on `root`. Returns { refocus, dispose }: call refocus()
// after each change of the picture (a patched box is a new element: focus goes back to it).
export function tvBoxKeys({ root, svgOf, activate, capture = false, sliderRoot = () => root }) {
  let mark = null;
  const onKeydown = (e) => {
    const svg = svgOf();
    const box = tvBoxOf(e.target, svg);
    if (!box) return;
    const action = tvBoxAction(e);
    if (action === null) return;
    if (action === "activate") activate(box);
    else if (action === "slider") {
      const slider = tvSliderOf(sliderRoot());
      if (!slider) return;
      mark = null;
      slider.focus();
    } else {
      const to = tvBoxStep(tvBoxes(svg), box, action, e.key === "Tab");
      if (to === null) {
        const first = tvBoxes(svg)[0]; // the picture's Tab stop: the browser moves on from it
        if (first && first !== box && !e.shiftKey) first.focus({ preventScroll: true });
        mark = null;
        return;
      }
      to.focus();
    }
    e.preventDefault();
    e.stopPropagation();
  };
  const onFocusIn = (e) => {
    const box = tvBoxOf(e.target, svgOf());
    if (box) mark = tvFocusMark(box);
  };
  const onFocusOut = (e) => {
    const t = e.target;
    // a box taken off the page (a patch, a new picture) keeps its mark; one left by the user does not
    queueMicrotask(() => {
      if (t.isConnected && mark && mark.id === t.id && !tvBoxOf(document.activeElement, svgOf())) mark = null;
    });
  };
  const target = capture ? window : root;
  target.addEventListener("keydown", onKeydown, capture);
  root.addEventListener("focusin", onFocusIn);
  root.addEventListener("focusout", onFocusOut);
  const refocus = () => {
    if (!mark) return;
    const active = document.activeElement;
    if (active && active !== document.body) return; // focus is somewhere: not lost with a box
    const to = tvFocusTarget(svgOf(), mark);
    if (to) to.focus({ preventScroll: true });
  };
  return {
    refocus,
    dispose: () => {
      target.removeEventListener("keydown", onKeydown, capture);
      root.removeEventListener("focusin", onFocusIn);
      root.removeEventListener("focusout", onFocusOut);
    },
  };
}
