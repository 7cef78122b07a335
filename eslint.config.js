// eslint for tapeviz's front end (the files anywidget loads and the exported page inlines)
// and its node tests. `make lint` runs it; versions are pinned in package.json.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/", "docs/_build/", ".venv*/", "build/", "dist/", "tests/artifacts/", "tests/.cache/"] },
  js.configs.recommended,
  {
    files: ["tapeviz/explorer/static/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.browser } },
    rules: { "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }] },
  },
  {
    files: ["tests/js/**/*.js", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
];
