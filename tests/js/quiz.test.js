// The page's quiz judge (static/quiz.js) against Python's (explorer/quiz.py numbers and
// judge): the same numbers read from what was typed, the same verdict.
import { test } from "node:test";
import assert from "node:assert/strict";
import { tvQuizJudge, tvQuizNumbers, tvQuizSay } from "../../tapeviz/explorer/static/quiz.js";
import { cases } from "./cases.js";

const all = cases("quiz.json");

test("the cases hold every verdict", () => {
  const seen = new Set(all.map((c) => String(c.outcome)));
  assert.deepEqual([...seen].sort(), ["null", "right", "wrong"]);
});

for (const c of all) {
  test(`${JSON.stringify(c.typed)} against ${JSON.stringify(c.expected)} at ${c.tolerance}`, () => {
    assert.deepEqual(tvQuizNumbers(c.typed), c.numbers);
    assert.equal(tvQuizJudge(c.expected, c.typed, c.tolerance), c.outcome);
  });
}

for (const c of cases("say.json")) {
  test(`the page fills in ${JSON.stringify(c.template)} as Python does`, () => {
    assert.equal(tvQuizSay(c.template, c.facts), c.text);
  });
}
