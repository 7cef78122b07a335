// The exported page's own script: the explorer with no kernel and no network. Each target's
// pictures are its first SVG plus a patch per step each way (patches.py's format), applied
// by the canvas's own tvApply; hover tips, zoom, pan, the selected box and the keys are the
// canvas's and the keyboard's code too. html_page.py inlines this file and what it imports.
import { tvApply, tvFrame, tvHighlight, tvIds, tvItem, tvNavigate, tvStrip, tvTerms, tvTips } from "./canvas.js";
import { tvKeyAction, tvTakesFocus } from "./keyboard.js";
import { tvBoxKeys } from "./box_keys.js";
import { TV_QUIZ_MARKS, tvQuizJudge, tvQuizSay } from "./quiz.js";

// A target's picture on the page: where it is in its steps, and which overlay (the revealed
// numbers of an answered quiz step, another clip_norm) is patched on top of it.
function tvTrack(t) {
  return { t, holder: null, svg: null, ids: null, step: t.start, want: t.start, overlay: "" };
}

// Show `markup` as the track's picture (the first one, or a step whose layout differs).
function tvPicture(tr, markup, content) {
  if (tr.holder === null) {
    tr.holder = document.createElement("div");
    tr.holder.className = "tv-page-picture";
    content.appendChild(tr.holder);
  }
  tr.holder.innerHTML = markup;
  tr.svg = tvStrip(tr.holder.querySelector("svg"));
  tr.ids = tvIds(tr.svg);
}

// Move a track's picture to step `k` with `overlay` ("" for none): take the overlay off,
// walk the steps patch by patch, put the new overlay on (where that step has one).
export function tvGo(tr, k, overlay, content) {
  const patch = (p) => (p.whole !== undefined ? tvPicture(tr, p.whole, content) : tvApply(tr.svg, p, tr.ids));
  if (tr.svg === null) tvPicture(tr, tr.t.first, content);
  if (tr.overlay && (tr.overlay !== overlay || tr.step !== k)) {
    patch(tr.t.overlays[tr.overlay][tr.step][1]);
    tr.overlay = "";
  }
  while (tr.step < k) patch(tr.t.f[tr.step++]);
  while (tr.step > k) patch(tr.t.b[--tr.step]);
  const on = overlay && tr.t.overlays[overlay] ? tr.t.overlays[overlay][k] : undefined;
  if (on && !tr.overlay) {
    patch(on[0]);
    tr.overlay = overlay;
  }
}

// The page's pictures are fixed: a group there cannot open or close, so its box and frame
// say so (aria-disabled) on top of the picture, like the selected box's class.
export function tvStaticGroups(svg) {
  if (!svg) return;
  for (const e of svg.querySelectorAll("[aria-expanded]:not([aria-disabled])")) e.setAttribute("aria-disabled", "true");
}

// The "Go to step k, where it starts" button (the live explorer's jump_to_origin): shown,
// labelled, for a target whose gradient turns NaN, Inf or zero (`jump`: {step, id, label}),
// hidden for one with none. A native button: Tab reaches it, Enter and Space press it.
export function tvJumpButton(button, jump) {
  if (!button) return;
  button.hidden = !jump;
  if (!jump) return;
  if (button.textContent !== jump.label) button.textContent = jump.label;
  button.dataset.tvStep = String(jump.step);
}

export function tvPage(root, data) {
  const $ = (sel) => root.querySelector(sel);
  const words = data.words;
  const { viewport, content, tip, reset } = tvFrame($(".tv-canvas"), words.reset);
  const tracks = data.targets.map(tvTrack);
  const ui = { t: 0, clip: data.clip ? data.clip.start : 0, selected: "", timer: 0 };
  const answers = new Map(); // "target:step" -> { outcome, typed }
  let keys = null; // the boxes' keys (below)
  const slider = $(".tv-step");
  const play = $(".tv-play");
  const track = () => tracks[ui.t];
  const put = (el, html) => {
    if (el && el.dataset.tvShown !== html) {
      el.innerHTML = html;
      el.dataset.tvShown = html;
    }
  };

  const overlayAt = (k) => {
    if (data.quiz && answers.has(`${ui.t}:${k}`)) return "reveal";
    if (data.clip && ui.clip !== data.clip.start) return `clip${ui.clip}`;
    return "";
  };

  const quizShow = () => {
    const tr = track();
    const key = `${ui.t}:${tr.want}`;
    const q = tr.t.quiz[tr.want];
    const got = answers.get(key);
    const input = $(".tv-quiz-input");
    const verdict = $(".tv-quiz-verdict");
    $(".tv-quiz-question").textContent = q.q;
    for (const el of [input, $(".tv-quiz-check"), $(".tv-quiz-reveal")]) el.disabled = got !== undefined;
    if (got) {
      verdict.className = `tv-quiz-verdict tv-quiz-${got.outcome}`;
      verdict.textContent = tvQuizSay(words.quiz[got.outcome], { typed: got.typed, value: q.v });
    } else if (verdict.dataset.for !== key) {
      verdict.className = "tv-quiz-verdict";
      verdict.textContent = "";
      input.value = "";
    }
    verdict.dataset.for = key;
    const counts = { right: 0, wrong: 0, revealed: 0 };
    let steps = 0;
    tracks.forEach((other, i) => {
      steps += other.t.steps;
      for (let k = 0; k < other.t.steps; k++) {
        const a = answers.get(`${i}:${k}`);
        if (a) counts[a.outcome] += 1;
      }
    });
    const cells = [];
    for (let k = 0; k < tr.t.steps; k++) {
      const a = answers.get(`${ui.t}:${k}`);
      cells.push(`${k} ${a ? TV_QUIZ_MARKS[a.outcome] : "\u00b7"}`);
    }
    $(".tv-quiz-score").textContent = tvQuizSay(words.quiz.score, { ...counts, steps });
    $(".tv-quiz-steps").textContent = cells.join("  ");
  };

  // The steps' patches sit after this script in the page (the first picture is drawn before
  // the browser has read them): read them at the first move.
  let steps = null;
  const stepsHere = () => {
    if (steps === null) {
      const el = root.querySelector(":scope > script.tv-page-steps");
      if (!el) return false;
      steps = JSON.parse(el.textContent);
      steps.forEach((more, i) => Object.assign(tracks[i].t, more));
    }
    return true;
  };

  const show = () => {
    const tr = track();
    const k = tr.want;
    const overlay = overlayAt(k);
    if ((k !== tr.step || overlay !== tr.overlay) && !stepsHere()) {
      document.addEventListener("DOMContentLoaded", show, { once: true });
      return;
    }
    try {
      tvGo(tr, k, overlay, content);
    } catch (err) {
      root.dataset.tvError = String(err);
    }
    for (const other of tracks) if (other.holder) other.holder.hidden = other !== tr;
    tvHighlight(tr.svg, ui.selected);
    slider.max = String(tr.t.steps - 1);
    slider.value = String(k);
    $(".tv-step-value").textContent = `${k} / ${tr.t.steps - 1}`;
    if (data.quiz) quizShow();
    put($(".tv-clip-panel"), tr.t.panels[ui.clip] || tr.t.panels[0]);
    const chain = data.quiz && answers.has(`${ui.t}:${k}`) ? tr.t.chainAnswered : tr.t.chain;
    put($(".tv-chain-box"), chain[k] || "");
    const pending = data.quiz && !answers.has(`${ui.t}:${tr.t.steps - 1}`);
    put($(".tv-inspect"), pending ? "" : tr.t.inspect[ui.selected] || "");
    root.dataset.tvStep = String(k);
    root.dataset.tvTarget = String(ui.t);
    root.dataset.tvOverlay = tr.overlay;
    tvJumpButton($(".tv-jump"), data.quiz ? null : tr.t.jump);
    tvStaticGroups(tr.svg);
    if (keys) keys.refocus(); // a patched box is a new element: focus goes back to it
  };

  const setStep = (k) => {
    const tr = track();
    const to = Math.max(0, Math.min(tr.t.steps - 1, k));
    if (to === tr.want) return;
    tr.want = to;
    show();
  };
  const stop = () => {
    clearInterval(ui.timer);
    ui.timer = 0;
    play.textContent = words.playIcon;
    play.setAttribute("aria-pressed", "false");
  };
  const start = () => {
    if (track().want >= track().t.steps - 1) setStep(0);
    ui.timer = setInterval(() => {
      if (track().want >= track().t.steps - 1) stop();
      else setStep(track().want + 1);
    }, data.interval);
    play.textContent = words.pauseIcon;
    play.setAttribute("aria-pressed", "true");
  };
  const toggle = () => (ui.timer ? stop() : start());

  slider.addEventListener("input", () => setStep(Number(slider.value)));
  $(".tv-prev").addEventListener("click", () => setStep(track().want - 1));
  $(".tv-next").addEventListener("click", () => setStep(track().want + 1));
  play.addEventListener("click", toggle);
  root.addEventListener("keydown", (e) => {
    const action = tvKeyAction(e, root);
    if (action === "next") setStep(track().want + 1);
    else if (action === "prev") setStep(track().want - 1);
    else if (action === "play") toggle();
    else return;
    e.preventDefault(); // no page scroll on space / arrows
    e.stopPropagation();
  });
  root.addEventListener("click", (e) => {
    if (tvTakesFocus(e, root)) root.focus({ preventScroll: true });
  });

  // A click on a box, or Enter on a focused one: the inspector shows it (groups stay as drawn).
  const activate = (item) => {
    if (!item || !item.id.startsWith("node-") || item.id.startsWith("node-layer:")) return;
    ui.selected = item.id;
    show();
  };
  const jump = $(".tv-jump");
  if (jump) {
    jump.addEventListener("click", () => {
      const to = track().t.jump;
      if (!to) return;
      stop(); // playing on would leave the step at once
      ui.selected = to.id; // its op in the inspector, highlighted on the picture
      track().want = Math.max(0, Math.min(track().t.steps - 1, to.step));
      show();
    });
  }
  const nav = tvNavigate(viewport, content, (e) => activate(tvItem(e.target, track().svg)));
  keys = tvBoxKeys({ root, svgOf: () => track().svg, activate });
  reset.addEventListener("click", () => nav.reset());
  tvTerms($(".tv-chain-box"), () => track().svg);
  tvTips(
    viewport,
    tip,
    () => track().svg,
    () => track().t.tips,
  );

  const menu = $(".tv-target");
  if (menu) {
    menu.addEventListener("change", () => {
      ui.t = Number(menu.value);
      tip.style.display = "none"; // another picture: the tip under the pointer is another box's
      tip.dataset.for = "";
      show();
    });
  }
  const clip = $(".tv-clip-norm");
  if (clip) {
    clip.addEventListener("input", () => {
      ui.clip = Number(clip.value);
      $(".tv-clip-value").textContent = data.clip.labels[ui.clip];
      show();
    });
  }
  if (data.quiz) {
    const answer = (outcome, typed) => {
      const key = `${ui.t}:${track().want}`;
      if (!answers.has(key)) answers.set(key, { outcome, typed });
      show();
    };
    $(".tv-quiz-check").addEventListener("click", () => {
      const q = track().t.quiz[track().want];
      const typed = $(".tv-quiz-input").value.trim();
      const outcome = tvQuizJudge(q.e, typed, data.tolerance);
      if (outcome === null) $(".tv-quiz-verdict").textContent = words.quiz.unreadable;
      else answer(outcome, typed);
    });
    $(".tv-quiz-reveal").addEventListener("click", () => answer("revealed", ""));
    $(".tv-quiz-input").addEventListener("keydown", (e) => {
      if (e.key === "Enter") $(".tv-quiz-check").click();
    });
    $(".tv-quiz-reset").addEventListener("click", () => {
      answers.clear();
      show();
    });
  }
  show();
  root.dataset.tvReady = "1";
  root.dataset.tvReadyMs = performance.now().toFixed(1); // since the page began loading (the bench reads it)
}
