// The picture's box keys (static/box_keys.js): the order Python wrote is walked as written,
// each key maps to one action, and focus finds what replaced a box that had it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import {
  tvBoxAction,
  tvBoxes,
  tvBoxOf,
  tvBoxStep,
  tvFocusMark,
  tvFocusTarget,
  tvSliderOf,
} from "../../tapeviz/explorer/static/box_keys.js";

const { window } = new JSDOM(
  "<!DOCTYPE html><body><div id='root'><div class='tv-step'><div role='slider' id='handle' tabindex='0'></div></div>" +
    "<svg id='pic'><g id='node-a' data-tv-order='2'><rect id='in-a'/></g><g id='node-b' data-tv-order='0'/>" +
    "<g id='node-layer:g' data-tv-order='1' data-tv-group='g'/><g id='plain'/></svg></div>" +
    "<input class='tv-step' id='page-slider'></body>",
);
globalThis.Element = window.Element;
globalThis.CSS = { escape: (s) => s.replace(/([:/])/g, "\\$1") };
const $ = (id) => window.document.getElementById(id);
const key = (k, extra = {}) => ({ key: k, altKey: false, ctrlKey: false, metaKey: false, shiftKey: false, ...extra });

test("boxes are walked in the order written on them, not the document's", () => {
  const boxes = tvBoxes($("pic"));
  assert.deepEqual(
    boxes.map((b) => b.id),
    ["node-b", "node-layer:g", "node-a"],
  );
  assert.equal(tvBoxStep(boxes, $("node-b"), "next").id, "node-layer:g");
  assert.equal(tvBoxStep(boxes, $("node-a"), "prev").id, "node-layer:g");
  assert.equal(tvBoxStep(boxes, $("node-a"), "first").id, "node-b");
  assert.equal(tvBoxStep(boxes, $("node-b"), "last").id, "node-a");
  // the arrows stop at the ends; Tab leaves the picture there
  assert.equal(tvBoxStep(boxes, $("node-a"), "next").id, "node-a");
  assert.equal(tvBoxStep(boxes, $("node-b"), "prev").id, "node-b");
  assert.equal(tvBoxStep(boxes, $("node-a"), "next", true), null);
  assert.equal(tvBoxStep(boxes, $("node-b"), "prev", true), null);
  assert.equal(tvBoxStep(boxes, $("plain"), "next"), null);
  assert.deepEqual(tvBoxes(null), []);
});

test("each key is one action; modifiers and space are left to the page", () => {
  assert.equal(tvBoxAction(key("Tab")), "next");
  assert.equal(tvBoxAction(key("Tab", { shiftKey: true })), "prev");
  assert.equal(tvBoxAction(key("ArrowRight")), "next");
  assert.equal(tvBoxAction(key("ArrowDown")), "next");
  assert.equal(tvBoxAction(key("ArrowLeft")), "prev");
  assert.equal(tvBoxAction(key("ArrowUp")), "prev");
  assert.equal(tvBoxAction(key("Home")), "first");
  assert.equal(tvBoxAction(key("End")), "last");
  assert.equal(tvBoxAction(key("Enter")), "activate");
  assert.equal(tvBoxAction(key("Escape")), "slider");
  assert.equal(tvBoxAction(key(" ")), null); // space plays (keyboard.js)
  assert.equal(tvBoxAction(key("ArrowRight", { ctrlKey: true })), null);
  assert.equal(tvBoxAction(key("ArrowRight", { shiftKey: true })), null);
  assert.equal(tvBoxAction(key("a")), null);
});

test("a key from inside a box is the box's; from outside the picture, nobody's", () => {
  assert.equal(tvBoxOf($("in-a"), $("pic")).id, "node-a");
  assert.equal(tvBoxOf($("plain"), $("pic")), null);
  assert.equal(tvBoxOf($("handle"), $("pic")), null);
  assert.equal(tvBoxOf($("in-a"), null), null);
});

test("escape finds the step slider: the notebook widget's handle or the page's input", () => {
  assert.equal(tvSliderOf($("root")).id, "handle");
  assert.equal(tvSliderOf(window.document.body).id, "handle"); // the first one in the document
  const page = window.document.createElement("div");
  page.appendChild($("page-slider").cloneNode());
  assert.equal(tvSliderOf(page).className, "tv-step");
  assert.equal(tvSliderOf(window.document.createElement("div")), null);
});

test("focus goes to the same box, or to what opened or closed its group", () => {
  const svg = $("pic");
  assert.equal(tvFocusTarget(svg, tvFocusMark($("node-a"))).id, "node-a");
  // a closed group's box that opened: its frame stands for it
  const frame = window.document.createElementNS("http://www.w3.org/2000/svg", "g");
  frame.id = "group-g";
  frame.dataset.tvOrder = "3";
  frame.dataset.tvGroup = "g";
  const mark = tvFocusMark($("node-layer:g"));
  assert.deepEqual(mark, { id: "node-layer:g", group: "g" });
  $("node-layer:g").remove();
  svg.appendChild(frame);
  assert.equal(tvFocusTarget(svg, mark).id, "group-g");
  // and a frame that closed: the group's box again
  const box = window.document.createElementNS("http://www.w3.org/2000/svg", "g");
  box.id = "node-layer:g";
  box.dataset.tvOrder = "1";
  box.dataset.tvGroup = "g";
  const back = tvFocusMark(frame);
  frame.remove();
  svg.appendChild(box);
  assert.equal(tvFocusTarget(svg, back).id, "node-layer:g");
  assert.equal(tvFocusTarget(svg, { id: "node-gone", group: "" }), null);
  assert.equal(tvFocusTarget(svg, null), null);
});

test("the page's groups say they stay as drawn; an attribute's written value is read as the DOM holds it", async () => {
  const { tvStaticGroups } = await import("../../tapeviz/explorer/static/page.js");
  const { tvUnescape } = await import("../../tapeviz/explorer/static/canvas.js");
  const svg = window.document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.innerHTML =
    "<g id='node-layer:g' aria-expanded='false'></g><g id='group-h' aria-expanded='true'></g><g id='node-x'></g>";
  tvStaticGroups(svg);
  assert.deepEqual(
    Array.from(svg.querySelectorAll("[aria-disabled='true']")).map((e) => e.id),
    ["node-layer:g", "group-h"],
  );
  assert.equal(svg.querySelector("#node-x").hasAttribute("aria-disabled"), false);
  tvStaticGroups(null); // no picture yet
  globalThis.document = window.document;
  assert.equal(tvUnescape("x, gradient 4.0 &amp; it&#x27;s &lt;b&gt;"), "x, gradient 4.0 & it's <b>");
  assert.equal(tvUnescape("plain"), "plain");
});
