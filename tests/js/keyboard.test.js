// The keys the explorer and the page take (static/keyboard.js tvKeyAction): ← / → step and
// space plays while focus is inside the box, never from typing, a slider's own arrows, a
// button's own space, a modifier, or outside the box.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import { tvKeyAction, tvNameControls, tvTakesFocus } from "../../tapeviz/explorer/static/keyboard.js";

const { window } = new JSDOM(
  "<!DOCTYPE html><body><div id='box' tabindex='0'><p id='pic'>picture</p><input id='text'>" +
    "<div role='slider' id='slider' tabindex='0'></div><button id='button'>b</button></div><p id='out'>x</p></body>",
);
globalThis.Element = window.Element;
globalThis.document = window.document;
const $ = (id) => window.document.getElementById(id);
const press = (target, key, extra = {}) => {
  const e = new window.KeyboardEvent("keydown", { key, bubbles: true, ...extra });
  Object.defineProperty(e, "target", { value: target });
  return tvKeyAction(e, $("box"));
};

test("arrows step and space plays inside the box", () => {
  assert.equal(press($("pic"), "ArrowRight"), "next");
  assert.equal(press($("box"), "ArrowLeft"), "prev");
  assert.equal(press($("pic"), " "), "play");
  assert.equal(press($("pic"), "a"), null);
});

test("keys that belong to someone else are left alone", () => {
  assert.equal(press($("out"), "ArrowRight"), null); // outside the box
  assert.equal(press($("text"), "ArrowRight"), null); // typing
  assert.equal(press($("text"), " "), null);
  assert.equal(press($("slider"), "ArrowLeft"), null); // the slider moves itself
  assert.equal(press($("slider"), " "), "play");
  assert.equal(press($("button"), " "), null); // the button clicks itself
  assert.equal(press($("button"), "ArrowRight"), "next");
  assert.equal(press($("pic"), "ArrowRight", { shiftKey: true }), null);
  assert.equal(press($("pic"), "ArrowRight", { ctrlKey: true }), null);
});

test("a click on the picture focuses the box, not one on its own controls", () => {
  const click = (target) => tvTakesFocus({ target }, $("box"));
  assert.equal(click($("pic")), true);
  assert.equal(click($("button")), false);
  assert.equal(click($("text")), false);
  $("box").focus();
  assert.equal(click($("pic")), false); // focus is inside already
});

test("the arrows on a focused box of the picture walk the boxes, not the steps; space still plays", () => {
  const svg = window.document.createElementNS("http://www.w3.org/2000/svg", "g");
  svg.setAttribute("data-tv-order", "0");
  $("pic").appendChild(svg);
  assert.equal(press(svg, "ArrowRight"), null);
  assert.equal(press(svg, "ArrowLeft"), null);
  assert.equal(press(svg, " "), "play");
  svg.remove();
});

test("the notebook's unnamed sliders and icon buttons get names; named ones keep theirs", () => {
  const { window: w } = new JSDOM(
    "<!DOCTYPE html><body><div id='box'>" +
      "<div class='jupyter-widgets widget-slider'><label class='widget-label'>step</label>" +
      "<div class='noUi-handle' role='slider' id='h1'></div></div>" +
      "<div class='jupyter-widgets widget-slider'><label class='widget-label'>lr</label>" +
      "<div role='slider' id='h2' aria-label='mine'></div></div>" +
      "<div class='widget-play'><button id='b1'><i></i></button><button id='b2'><i></i></button>" +
      "<button id='b3'>text</button></div></div></body>",
  );
  const get = (id) => w.document.getElementById(id);
  tvNameControls(get("box"), { play: "play", pause: "pause", stop: "stop", repeat: "repeat" });
  assert.equal(get("h1").getAttribute("aria-label"), "step");
  assert.equal(get("h2").getAttribute("aria-label"), "mine");
  assert.equal(get("b1").getAttribute("aria-label"), "play");
  assert.equal(get("b2").getAttribute("aria-label"), "pause");
  assert.equal(get("b3").getAttribute("aria-label"), null); // it has words of its own
  tvNameControls(null, {}); // no box yet: nothing to do
});
