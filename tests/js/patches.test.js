// The page's patch apply (static/canvas.js tvApply) against Python's: each chain starts
// from a picture and applies Python's patches (explorer/patches.py diff) one after the
// other to one SVG, as the page walks steps; after each, the SVG must equal a fresh parse
// of Python's next picture (whitespace between elements dropped, as the page does).
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import { tvApply, tvIds, tvStrip } from "../../tapeviz/explorer/static/canvas.js";
import { cases } from "./cases.js";

const { window } = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.document = window.document;

function fresh(markup) {
  const div = window.document.createElement("div");
  div.innerHTML = markup;
  return tvStrip(div.querySelector("svg"));
}

const chains = cases("patches.json");

test("there are chains to check", () => {
  assert.ok(chains.length >= 2);
  assert.ok(chains.every((c) => c.links.length > 0));
});

for (const chain of chains) {
  test(`patches of ${chain.name} turn each picture into the next`, () => {
    const svg = fresh(chain.start);
    chain.links.forEach((link, i) => {
      tvApply(svg, link.patch);
      if (link.picture !== null) {
        assert.equal(svg.outerHTML, fresh(link.picture).outerHTML, `after patch ${i} of ${chain.name}`);
      }
    });
  });
}

for (const chain of chains) {
  test(`one table of ids kept over the walk of ${chain.name} (as the page walks)`, () => {
    const svg = fresh(chain.start);
    const ids = tvIds(svg);
    chain.links.forEach((link, i) => {
      tvApply(svg, link.patch, ids);
      if (link.picture !== null) {
        assert.equal(svg.outerHTML, fresh(link.picture).outerHTML, `after patch ${i} of ${chain.name}`);
      }
    });
    const again = tvIds(svg);
    for (const [k, e] of again) assert.equal(ids.get(k), e, `the table is the picture's: ${k}`);
  });
}

test("a chain's last picture differs from its first (the check can fail)", () => {
  for (const chain of chains) {
    assert.notEqual(fresh(chain.start).outerHTML, fresh(chain.links.at(-1).picture).outerHTML, chain.name);
  }
});
