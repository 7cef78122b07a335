"""The front end's JavaScript, checked against the Python it mirrors, and kept in files.

The page's patch apply and quiz judge (tapeviz/explorer/static/) are the same rules as
explorer/patches.py and explorer/quiz.py. Python writes the cases (tests/support/frontend_cases.py:
chains of pictures with Python's patches between them, typed answers with Python's
verdict) and ``node --test tests/js/`` runs the JavaScript on them. Without node or the
pinned node packages (``npm ci``) the test is skipped with the reason; under CI it fails.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import is_ci
from frontend_cases import write_cases

from tapeviz.explorer import quiz, static_files

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "tests" / "js"


def _skip_or_fail(reason: str):
    if is_ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        _skip_or_fail("needs node (apt-get install nodejs npm)")
    if not (ROOT / "node_modules" / "jsdom" / "package.json").is_file():
        _skip_or_fail("needs the pinned node packages: run `npm ci` at the top of the checkout (make lint does)")
    return found


def _node_test(node: str, cases: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TV_JS_CASES": str(cases)}
    return subprocess.run(
        [node, "--test", "--test-reporter=tap", str(JS_TESTS)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def test_javascript_applies_patches_and_judges_as_python_does(node, tmp_path):
    cases = write_cases(tmp_path / "cases", full=True)
    chains = json.loads((cases / "patches.json").read_text(encoding="utf-8"))
    assert {c["name"] for c in chains} >= {"keras/loss", "persistent/other/quiz", "stop_gradient/z"}
    run = _node_test(node, cases)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)", run.stdout, re.M).group(1))
    quiz_cases = json.loads((cases / "quiz.json").read_text(encoding="utf-8"))
    assert passed >= len(chains) + len(quiz_cases), run.stdout[-2000:]


def test_node_tests_fail_on_a_wrong_case(node, tmp_path):
    """The comparisons can fail: one verdict and one chain's last picture changed, their tests fail."""
    cases = write_cases(tmp_path / "cases")
    q = json.loads((cases / "quiz.json").read_text(encoding="utf-8"))
    q[0]["outcome"] = {"right": "wrong", "wrong": "right", None: "right"}[q[0]["outcome"]]
    (cases / "quiz.json").write_text(json.dumps(q), encoding="utf-8")
    chains = json.loads((cases / "patches.json").read_text(encoding="utf-8"))
    chains[0]["links"][-1]["picture"] = chains[0]["start"]
    (cases / "patches.json").write_text(json.dumps(chains), encoding="utf-8")
    run = _node_test(node, cases)
    assert run.returncode != 0
    failed = re.findall(r"^not ok \d+ - (.*)$", run.stdout, re.M)
    assert any(chains[0]["name"] in f and "turn each picture" in f for f in failed), failed
    assert any(f.startswith(json.dumps(q[0]["typed"])) for f in failed), failed


def test_quiz_check_js_is_the_static_file():
    assert quiz.CHECK_JS == static_files.text("quiz.js") and "export function tvQuizJudge" in quiz.CHECK_JS


# A line of JavaScript or CSS: a statement, a declaration, a rule or a brace of one.
_CODE_LINE = re.compile(
    r"(^\s*(function\b|const |let |var |return\b|if \(|for \(|export |import |[}{)\]]+;?\s*$))"
    r"|(=>|;\s*$)"
    r"|(^\s*[.#@a-z*][^{}]*\{\s*$)"
    r"|(^\s*[.#@a-z*][^{}]*\{[^{}]*:[^{}]*;[^{}]*\}\s*$)"
    r"|(^\s*[a-z-]+\s*:\s*[^;]+;)",
)


def _code_lines(source: str) -> int:
    """Lines of JavaScript or CSS in the module's string literals (docstrings left out)."""
    tree = ast.parse(source)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            count += sum(1 for line in node.value.splitlines() if line.strip() and _CODE_LINE.search(line))
    return count


def test_no_module_holds_more_than_20_lines_of_javascript_or_css():
    counts = {
        p.relative_to(ROOT).as_posix(): _code_lines(p.read_text("utf-8")) for p in (ROOT / "tapeviz").rglob("*.py")
    }
    assert {k: v for k, v in counts.items() if v > 20} == {}
    # the counter sees code: the front end's own files are full of it
    assert _code_lines("CODE = " + repr(static_files.text("canvas.js"))) > 200


def test_static_files_are_found_and_a_missing_one_says_so():
    names = {p.name for p in static_files.STATIC.iterdir()}
    assert {"canvas.js", "canvas.css", "keyboard.js", "keyboard.css", "panels.css", "quiz.js"} <= names
    with pytest.raises(FileNotFoundError, match="reinstall tapeviz"):
        static_files.path("nothing.js")


def test_the_front_end_fetches_nothing():
    """No file of the front end loads anything: no URL, no dynamic import, no web font; the
    only imports are of sibling files, which the page bundles inline and the canvas's widget
    module holds inline (static_files.module)."""
    for p in static_files.STATIC.iterdir():
        code = p.read_text(encoding="utf-8")
        urls = set(re.findall(r"https?://[^\s\"'`)]+", code)) - {"http://www.w3.org/2000/svg"}
        assert not urls, (p.name, urls)
        assert not re.search(r"\bimport\s*\(|\bfetch\s*\(|XMLHttpRequest|@import|@font-face|url\(", code), p.name
        assert all(
            m in ("./canvas.js", "./keyboard.js", "./quiz.js", "./box_keys.js")
            for m in re.findall(r'from "([^"]+)"', code)
        )
    bundle = static_files.bundle("page.js")
    assert "import " not in bundle and "export " not in bundle
    widget = static_files.module("canvas.js")  # what anywidget runs: one module, its imports inside
    assert not re.search(r"^import ", widget, re.M) and "export default" in widget and "const tv_box_keys" in widget
