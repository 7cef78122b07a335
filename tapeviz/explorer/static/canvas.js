import { tvBoxKeys } from "./box_keys.js";

export const TV_SVGNS = "http://www.w3.org/2000/svg";

// Whitespace between elements is not drawn: drop it, so a patched picture and a fresh one
// are the same DOM (patches insert elements, not the newlines around them).
export function tvStrip(svg) {
  for (const box of [svg, ...Array.from(svg.children).filter((c) => c.tagName === "g" && c.id.startsWith("layer-"))]) {
    for (const n of Array.from(box.childNodes)) if (n.nodeType === 3 && !n.data.trim()) n.remove();
  }
  return svg;
}

export function tvFragments(markup) {
  const t = document.createElementNS(TV_SVGNS, "svg");
  t.innerHTML = markup;
  return Array.from(t.children);
}

// Every id'd element of a picture by its id ("": the <svg> itself): what patches address.
export function tvIds(svg) {
  const ids = new Map();
  for (const e of svg.querySelectorAll("[id]")) ids.set(e.id, e);
  ids.set("", svg);
  return ids;
}

// A new element and the id'd elements inside it, in the table.
function tvAdopt(ids, k, e) {
  ids.set(k, e);
  for (const d of e.querySelectorAll("[id]")) ids.set(d.id, d);
}

// An attribute's value as the markup writes it ("a &amp; b") as the DOM holds it ("a & b").
let tvDecoder = null;
export function tvUnescape(v) {
  if (!v.includes("&")) return v;
  if (tvDecoder === null) tvDecoder = document.createElement("textarea");
  tvDecoder.innerHTML = v;
  return tvDecoder.value;
}

// One patch (patches.py): drop, set (in place), text (a text's content), attr (an element's
// own attribute values), put (new / changed / moved, right to left).
// `ids`: the picture's table (tvIds), kept up to date here, so a walk over many patches reads the picture once.
export function tvApply(svg, p, ids = tvIds(svg)) {
  for (const k of p.drop) {
    const e = ids.get(k);
    if (e) e.remove();
    ids.delete(k);
  }
  const keys = Object.keys(p.set);
  if (keys.length) {
    const made = tvFragments(keys.map((k) => p.set[k]).join(""));
    keys.forEach((k, i) => {
      const old = ids.get(k);
      if (old) old.replaceWith(made[i]);
      tvAdopt(ids, k, made[i]);
    });
  }
  for (const [k, t] of Object.entries(p.text || {})) {
    const e = ids.get(k);
    if (e) e.innerHTML = t;
  }
  for (const [k, changes] of Object.entries(p.attr || {})) {
    const e = ids.get(k);
    if (e) for (const [name, v] of Object.entries(changes)) e.setAttribute(name, tvUnescape(v));
  }
  const fresh = tvFragments(
    p.put
      .filter((x) => x[2] !== null)
      .map((x) => x[2])
      .join(""),
  );
  let j = 0;
  for (const [box, k, markup, before] of p.put) {
    const old = ids.get(k);
    const e = markup === null ? old : fresh[j++];
    if (old && old !== e) old.remove();
    ids.get(box).insertBefore(e, before === null ? null : ids.get(before));
    if (e === old) ids.set(k, e);
    else tvAdopt(ids, k, e);
  }
}

// Wheel zooms about the pointer, a drag pans, reset() goes back; the transform sits on
// `content` (not on the SVG), so patches and new pictures keep the view.
export function tvNavigate(viewport, content, onClick) {
  const v = { s: 1, x: 0, y: 0 };
  const show = () => {
    content.style.transform = v.s === 1 && v.x === 0 && v.y === 0 ? "" : `translate(${v.x}px, ${v.y}px) scale(${v.s})`;
    viewport.dataset.tvScale = v.s.toFixed(3);
    viewport.dataset.tvPan = `${Math.round(v.x)},${Math.round(v.y)}`;
  };
  content.style.transformOrigin = "0 0";
  viewport.addEventListener(
    "wheel",
    (e) => {
      if (e.ctrlKey && e.deltaMode !== 0) return;
      e.preventDefault();
      const r = viewport.getBoundingClientRect();
      const mx = e.clientX - r.left + viewport.scrollLeft,
        my = e.clientY - r.top + viewport.scrollTop;
      const f = Math.min(4, Math.max(0.25, Math.exp(-e.deltaY * 0.0015)));
      const s = Math.min(20, Math.max(0.1, v.s * f));
      v.x = mx - (mx - v.x) * (s / v.s);
      v.y = my - (my - v.y) * (s / v.s);
      v.s = s;
      show();
    },
    { passive: false },
  );
  let down = null;
  viewport.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || (e.target instanceof Element && e.target.closest("button"))) return;
    down = { x: e.clientX, y: e.clientY, vx: v.x, vy: v.y, moved: false, id: e.pointerId };
  });
  viewport.addEventListener("pointermove", (e) => {
    if (!down) return;
    const dx = e.clientX - down.x,
      dy = e.clientY - down.y;
    if (!down.moved && Math.hypot(dx, dy) < 4) return;
    if (!down.moved) {
      down.moved = true;
      try {
        viewport.setPointerCapture(down.id);
      } catch (_) {
        /* the pointer is up already */
      }
    }
    v.x = down.vx + dx;
    v.y = down.vy + dy;
    viewport.classList.add("tv-panning");
    show();
  });
  const up = (e) => {
    if (!down) return;
    const was = down;
    down = null;
    viewport.classList.remove("tv-panning");
    if (!was.moved && e.type === "pointerup" && onClick) onClick(e);
  };
  viewport.addEventListener("pointerup", up);
  viewport.addEventListener("pointercancel", up);
  return {
    reset: () => {
      v.s = 1;
      v.x = 0;
      v.y = 0;
      show();
    },
    view: v,
  };
}

// The element a pointer is on: a box (node-…), an open group's frame (group-…), or null.
export function tvItem(target, svg) {
  let e = target instanceof Element ? target : null;
  while (e && e !== svg) {
    if (e.tagName === "g" && e.id && (e.id.startsWith("node-") || e.id.startsWith("group-"))) return e;
    e = e.parentElement;
  }
  return null;
}

// The selected box (the inspector's) gets a class on top of the picture, like the view's
// zoom: after any patch, walk or new picture it is put back on the element with id `want`.
export function tvHighlight(svg, want) {
  for (const e of svg.querySelectorAll(".tv-selected")) {
    if (e.id === want) continue;
    e.classList.remove("tv-selected");
    if (!e.classList.length) e.removeAttribute("class");
  }
  const e = want ? svg.querySelector(`[id="${CSS.escape(want)}"]`) : null;
  if (e) e.classList.add("tv-selected");
}

// Hover tips: text per element id from tips(), else the box's own <title>.
export function tvTips(viewport, tip, svgOf, tips) {
  viewport.addEventListener("pointermove", (e) => {
    const item = tvItem(e.target, svgOf());
    const text = item ? tips()[item.id] || (item.querySelector(":scope > title") || {}).textContent || "" : "";
    if (!text) {
      tip.style.display = "none";
      tip.dataset.for = "";
      return;
    }
    if (tip.dataset.for !== item.id) {
      tip.textContent = text;
      tip.dataset.for = item.id;
    }
    const r = viewport.getBoundingClientRect();
    tip.style.left = `${e.clientX - r.left + viewport.scrollLeft + 14}px`;
    tip.style.top = `${e.clientY - r.top + viewport.scrollTop + 14}px`;
    tip.style.display = "block";
  });
  viewport.addEventListener("pointerleave", () => {
    tip.style.display = "none";
    tip.dataset.for = "";
  });
}

// The chain rule under the picture (chain_line.py): a term's data-tv-refs lists the ids of
// the boxes and arrows it names. tvLinked marks exactly those with tv-linked (none: [] ).
export function tvLinked(svg, refs) {
  if (!svg) return;
  const want = new Set(refs);
  for (const e of svg.querySelectorAll(".tv-linked")) if (!want.has(e.id)) e.classList.remove("tv-linked");
  if (!want.size) return;
  for (const e of svg.querySelectorAll("[id]")) if (want.has(e.id)) e.classList.add("tv-linked");
}

// The ids a term names: the data-tv-refs of the term the event's target is in ([] outside one).
export function tvTermRefs(target) {
  const term = target instanceof Element ? target.closest("[data-tv-refs]") : null;
  return term ? term.dataset.tvRefs.split(" ").filter(Boolean) : [];
}

// Hovering or focusing a term of `box` highlights what it names in the picture svgOf() shows.
export function tvTerms(box, svgOf) {
  const on = (e) => tvLinked(svgOf(), tvTermRefs(e.target));
  const off = () => tvLinked(svgOf(), []);
  box.addEventListener("pointerover", on);
  box.addEventListener("pointerleave", off);
  box.addEventListener("focusin", on);
  box.addEventListener("focusout", off);
}

export function tvFrame(el, resetLabel) {
  el.classList.add("tv-canvas-view");
  const viewport = document.createElement("div");
  viewport.className = "tv-viewport";
  const content = document.createElement("div");
  content.className = "tv-content";
  const tip = document.createElement("div");
  tip.className = "tv-tip";
  const reset = document.createElement("button");
  reset.className = "tv-reset";
  reset.textContent = "⟲";
  reset.title = resetLabel;
  reset.setAttribute("aria-label", resetLabel);
  viewport.append(content, tip, reset);
  el.appendChild(viewport);
  return { viewport, content, tip, reset };
}

const LIVE = new WeakMap(); // model -> its views' state (a second view of one model starts from a live one)

// Merge the patches "ahead" into a view's table (per view: anywidget hands each view its own model proxy).
function merge(t, a) {
  if (!a || a.seq === undefined) return;
  if (t.seq !== a.seq) {
    // a new picture seq: keep what the kernel says did not change
    const carry = a.carry === t.seq;
    const kept = (m, ks) => new Map(carry && ks ? ks.filter((k) => m.has(k)).map((k) => [k, m.get(k)]) : []);
    const keep = a.keep || {};
    t.f = kept(t.f, keep.f);
    t.b = kept(t.b, keep.b);
    t.seq = a.seq;
  }
  for (const [k, p] of Object.entries(a.f)) t.f.set(Number(k), p);
  for (const [k, p] of Object.entries(a.b)) t.b.set(Number(k), p);
}

// The slider's clip_norm and a value the kernel sent ahead: the same number up to rounding.
const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

function render({ model, el }) {
  const { viewport, content, tip, reset } = tvFrame(el, model.get("reset_label"));
  // pending: a clip move the page made by itself ({base seq, step, clip_norm}), until the kernel's frame confirms it
  let keys = null; // the boxes' keys (below), once wired
  const me = { svg: null, seq: -1, step: null, asked: "", timer: 0, pending: null, clipTimer: 0 };
  const table = { seq: -1, f: new Map(), b: new Map() };
  const tableOf = () => table;
  if (!LIVE.has(model)) LIVE.set(model, new Set());
  LIVE.get(model).add(me);
  // the step's sentence and chain rule, under the picture (an aria-live region: chain_line.py)
  const chain = document.createElement("div");
  chain.className = "tv-chain-box";
  el.appendChild(chain);
  const onChain = () => {
    chain.innerHTML = model.get("chain") || "";
  };
  tvTerms(chain, () => me.svg);

  const full = (markup, seq) => {
    content.innerHTML = markup;
    me.svg = content.querySelector("svg");
    if (me.svg) tvStrip(me.svg);
    me.seq = seq;
  };
  // Walk the picture from the step it shows to step `to` with the patches at hand.
  const walk = (to) => {
    const t = tableOf();
    if (me.svg === null || me.step === null || me.step === undefined || t.seq !== me.seq || me.pending) return false;
    const chain = [];
    if (to >= me.step) {
      for (let k = me.step; k < to; k++) {
        const p = t.f.get(k);
        if (!p) return false;
        chain.push(p);
      }
    } else {
      for (let k = me.step; k > to; k--) {
        const p = t.b.get(k);
        if (!p) return false;
        chain.push(p);
      }
    }
    for (const p of chain) tvApply(me.svg, p);
    me.step = to;
    highlight();
    return true;
  };
  // The inspector's box, highlighted again after any patch, walk or new picture.
  const highlight = () => {
    if (me.svg !== null) tvHighlight(me.svg, model.get("selected"));
  };
  const mark = () => {
    highlight();
    if (keys) keys.refocus(); // a patched or new picture: focus back on the box that had it
    el.dataset.tvSeq = String(me.seq);
    el.dataset.tvStep = String(me.step);
    const t = tableOf();
    el.dataset.tvAhead = `${t.seq}:${t.f.size}/${t.b.size}`; // what the page can walk (tests read it)
    el.dataset.tvClip = me.pending ? String(me.pending.value) : "";
  };
  // Show the slider's step: at once when the patches are here, else ask the kernel (once per need).
  const sync = () => {
    const want = model.get("step");
    if (me.svg === null || me.step === null || me.step === undefined || want === me.step || me.pending) return;
    let walked = false;
    try {
      walked = walk(want);
    } catch (err) {
      el.dataset.tvError = String(err);
    }
    mark();
    if (walked) return;
    const key = `${me.seq}:${me.step}:${want}`;
    if (me.asked !== key) {
      me.asked = key;
      model.send({ event: "need", seq: me.seq, step: me.step, want });
    }
    // still not there a moment later (patches lost, or a race with the kernel): the whole picture
    clearTimeout(me.timer);
    me.timer = setTimeout(() => {
      if (me.svg !== null && model.get("step") !== me.step && !walk(model.get("step"))) model.send({ event: "resync" });
      else mark();
    }, 600);
  };
  // The clip_norm slider moved: patch the picture at once when its patch came ahead. The
  // kernel hears of the move too and sends its frame, which says the page was right.
  let clips = { seq: -1, at: null, c: [] };
  const clipTo = () => {
    const v = model.get("clip");
    if (me.pending || me.svg === null || clips.seq !== me.seq || clips.at !== me.step) return;
    const hit = clips.c.find((x) => near(x[0], v));
    if (!hit) return;
    try {
      tvApply(me.svg, hit[1]);
    } catch (err) {
      el.dataset.tvError = String(err);
      model.send({ event: "resync" });
      return;
    }
    me.pending = { base: me.seq, at: me.step, value: hit[0] };
    el.dataset.tvLocalClips = String(Number(el.dataset.tvLocalClips || 0) + 1); // tests read it
    mark();
    clearTimeout(me.clipTimer); // no word from the kernel: the whole picture
    me.clipTimer = setTimeout(() => {
      if (me.pending) {
        me.pending = null;
        model.send({ event: "resync" });
      }
    }, 3000);
  };
  const onFrame = () => {
    const f = model.get("frame");
    if (!f || f.seq === undefined) return;
    const p = me.pending;
    me.pending = null;
    clearTimeout(me.clipTimer);
    if (p && f.kind !== "full") {
      if (f.base === p.base && f.from === p.at && (f.clip_ok || []).some((v) => near(v, p.value))) {
        me.seq = f.seq; // the page is there already
        me.step = f.at;
        mark();
        sync();
      } else {
        model.send({ event: "resync" }); // the kernel went elsewhere: the whole picture
        mark();
      }
      return;
    }
    if (f.kind === "full") {
      full(f.markup, f.seq);
      me.step = f.at;
      tip.style.display = "none";
      tip.dataset.for = "";
    } else if (me.svg && f.base === me.seq && (f.from == null || f.from === me.step || walk(f.from))) {
      tvApply(me.svg, f.patch);
      me.seq = f.seq;
      me.step = f.at;
    } else {
      const twin = [...LIVE.get(model)].find((o) => o !== me && o.svg && o.seq === f.seq);
      if (twin) {
        content.replaceChildren(twin.svg.cloneNode(true));
        me.svg = content.querySelector("svg");
        me.seq = f.seq;
        me.step = twin.step;
      } else model.send({ event: "resync" });
    }
    mark();
    sync();
  };
  const onAhead = () => {
    merge(table, model.get("ahead"));
    sync();
  };
  const onClips = () => {
    const c = model.get("clips");
    if (c && c.seq !== undefined) clips = c;
  };
  model.on("change:frame", onFrame);
  model.on("change:step", sync);
  model.on("change:ahead", onAhead);
  model.on("change:clips", onClips);
  model.on("change:clip", clipTo);
  model.on("change:selected", highlight);
  model.on("change:chain", onChain);
  onChain();
  onFrame();
  merge(table, model.get("ahead"));
  onClips();

  // A click on a box or frame, or Enter on a focused one: the kernel opens, closes or inspects.
  const activate = (item) => {
    if (item.id.startsWith("node-") && !item.id.startsWith("node-layer:")) {
      model.set("selected", item.id); // a box to inspect: highlighted at once, the kernel agrees
      model.save_changes();
    }
    model.send({ event: "click", id: item.id });
  };
  const nav = tvNavigate(viewport, content, (e) => {
    const item = tvItem(e.target, me.svg);
    if (item) activate(item);
  });
  // Tab / arrows walk the boxes, Enter activates, Escape goes to the step slider (box_keys.js).
  keys = tvBoxKeys({
    root: el,
    svgOf: () => me.svg,
    activate,
    capture: true, // before the notebook's own shortcuts (Enter, Escape, arrows move between cells)
    sliderRoot: () => el.closest(".tv-explorer") || el,
  });
  reset.addEventListener("click", () => nav.reset());
  tvTips(
    viewport,
    tip,
    () => me.svg,
    () => model.get("tips"),
  );
  return () => {
    model.off("change:frame", onFrame);
    model.off("change:step", sync);
    model.off("change:ahead", onAhead);
    model.off("change:clips", onClips);
    model.off("change:clip", clipTo);
    model.off("change:selected", highlight);
    model.off("change:chain", onChain);
    clearTimeout(me.timer);
    clearTimeout(me.clipTimer);
    LIVE.get(model).delete(me);
    keys.dispose();
  };
}

export default { render };
