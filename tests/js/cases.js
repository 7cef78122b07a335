// Where the node tests read their cases: TV_JS_CASES (tests/explorer/test_frontend_js.py writes
// fresh ones there, made by the Python implementations), else the committed set.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const folder = process.env.TV_JS_CASES || fileURLToPath(new URL("./cases/", import.meta.url));

export function cases(name) {
  return JSON.parse(readFileSync(path.join(folder, name), "utf-8"));
}
