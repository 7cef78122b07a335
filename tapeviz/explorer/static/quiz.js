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
