export function tvQuizNumbers(typed) {
  const text = typed
    .replace(/\u2212/g, "-")
    .replace(/\uff0c/g, ",")
    .replace(/\u3002/g, ".");
  return (text.match(/[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?/g) || []).map(Number);
}
export function tvQuizJudge(expected, typed, tolerance) {
  const got = tvQuizNumbers(typed);
  if (!got.length || (got.length !== 1 && got.length !== expected.length)) return null;
  const ok = expected.every((want, i) => {
    const g = got.length === 1 ? got[0] : got[i];
    return Math.abs(g - want) <= tolerance * Math.max(1, Math.abs(want));
  });
  return ok ? "right" : "wrong";
}

// A catalogue sentence filled in: "{typed}" and the like replaced by facts[typed] (Python's
// str.format for the quiz's templates, which hold plain {name} fields only).
export function tvQuizSay(template, facts) {
  return template.replace(/\{(\w+)\}/g, (m, k) => (k in facts ? String(facts[k]) : m));
}

// The per-step strip of the score: "k ✓" right, "k ✗" wrong, "k ◎" revealed, "k ·" open.
export const TV_QUIZ_MARKS = { right: "\u2713", wrong: "\u2717", revealed: "\u25ce" };
