// The keys the explorer and the page take (static/keyboard.js tvKeyAction): ← / → step and
// space plays while focus is inside the box, never from typing, a slider's own arrows, a
// button's own space, a modifier, or outside the box.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import { tvKeyAction, tvTakesFocus } from "../../tapeviz/explorer/static/keyboard.js";

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
