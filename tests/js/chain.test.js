// The chain rule's terms under the picture (static/canvas.js tvLinked, tvTermRefs, tvTerms):
// a term names box and arrow ids (data-tv-refs, written by explorer/chain_line.py); hovering
// or focusing it marks exactly those elements of the picture with tv-linked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import { tvLinked, tvTermRefs, tvTerms } from "../../tapeviz/explorer/static/canvas.js";

const { window } = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.document = window.document;
globalThis.Element = window.Element;
const document = window.document;

function picture() {
  const div = document.createElement("div");
  div.innerHTML =
    '<svg><g id="node-var3"><rect/></g><g id="node-op1"><rect/></g><g id="edge-var3-op1-0"><path/></g></svg>';
  document.body.appendChild(div);
  return div.querySelector("svg");
}

function line() {
  const box = document.createElement("div");
  box.innerHTML =
    "<div class='tv-chain' aria-live='polite'><div class='tv-chain-line'>∂<span class='tv-term' tabindex='0' " +
    "data-tv-refs='node-op1'>z</span>/∂<span class='tv-term' tabindex='0' data-tv-refs='node-var3 edge-var3-op1-0'>" +
    "x</span> = 4.0</div></div>";
  document.body.appendChild(box);
  return box;
}

const linked = (svg) => Array.from(svg.querySelectorAll(".tv-linked"), (e) => e.id).sort();

test("tvLinked marks exactly the ids given, and clears the others", () => {
  const svg = picture();
  tvLinked(svg, ["node-var3", "edge-var3-op1-0", "no-such-id"]);
  assert.deepEqual(linked(svg), ["edge-var3-op1-0", "node-var3"]);
  tvLinked(svg, ["node-op1"]);
  assert.deepEqual(linked(svg), ["node-op1"]);
  tvLinked(svg, []);
  assert.deepEqual(linked(svg), []);
  tvLinked(null, ["node-op1"]); // no picture yet: nothing to do
});

test("tvTermRefs reads the term an event's target is in", () => {
  const box = line();
  const [z, x] = box.querySelectorAll(".tv-term");
  assert.deepEqual(tvTermRefs(z), ["node-op1"]);
  assert.deepEqual(tvTermRefs(x.firstChild.parentElement), ["node-var3", "edge-var3-op1-0"]);
  assert.deepEqual(tvTermRefs(box.querySelector(".tv-chain-line")), []);
  assert.deepEqual(tvTermRefs(null), []);
});

test("tvTerms: hover and focus highlight what a term names, leaving clears it", () => {
  const svg = picture();
  const box = line();
  tvTerms(box, () => svg);
  const x = box.querySelectorAll(".tv-term")[1];
  x.dispatchEvent(new window.Event("pointerover", { bubbles: true }));
  assert.deepEqual(linked(svg), ["edge-var3-op1-0", "node-var3"]);
  box.dispatchEvent(new window.Event("pointerleave"));
  assert.deepEqual(linked(svg), []);
  x.dispatchEvent(new window.FocusEvent("focusin", { bubbles: true }));
  assert.deepEqual(linked(svg), ["edge-var3-op1-0", "node-var3"]);
  x.dispatchEvent(new window.FocusEvent("focusout", { bubbles: true }));
  assert.deepEqual(linked(svg), []);
});
