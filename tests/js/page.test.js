// The exported page's "Go to step k, where it starts" button (static/page.js tvJumpButton):
// shown and labelled for a target whose gradient turns NaN, Inf or zero, hidden for one with
// none; a native button, so Tab reaches it and Enter / Space press it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";

const { window } = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.document = window.document;
globalThis.Element = window.Element;

const { tvJumpButton } = await import("../../tapeviz/explorer/static/page.js");

function button() {
  const b = window.document.createElement("button");
  b.type = "button";
  b.className = "tv-jump";
  b.hidden = true;
  window.document.body.appendChild(b);
  return b;
}

test("a target with a bad gradient shows the button with its step's words", () => {
  const b = button();
  tvJumpButton(b, { step: 3, id: "node-op2", label: "Go to step 3, where it starts" });
  assert.equal(b.hidden, false);
  assert.equal(b.textContent, "Go to step 3, where it starts");
  assert.equal(b.dataset.tvStep, "3");
  assert.equal(b.tabIndex, 0, "reached by Tab like any button");
});

test("another target's words replace the first's; a target with none hides it", () => {
  const b = button();
  tvJumpButton(b, { step: 3, id: "node-op2", label: "Go to step 3, where it starts" });
  tvJumpButton(b, { step: 5, id: "node-op7", label: "跳到第 5 步，问题从这里开始" });
  assert.equal(b.textContent, "跳到第 5 步，问题从这里开始");
  assert.equal(b.dataset.tvStep, "5");
  tvJumpButton(b, null);
  assert.equal(b.hidden, true);
  tvJumpButton(b, undefined);
  assert.equal(b.hidden, true);
  tvJumpButton(null, { step: 1, id: "node-x", label: "x" }); // a page without the button: nothing to do
});
