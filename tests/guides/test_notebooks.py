"""The teaching notebooks: two lesson sets, notebooks/en and notebooks/zh, written from one
bilingual source per lesson (notebooks/source, by notebooks/build.py). Both sets are up to
date with their sources, have the same cells and the same code, are committed without
outputs, run headless from top to bottom, print the tutorial's numbers (the same numbers in
both languages) and end with a live Explorer; the Chinese set's pictures have no English
words but op and variable names.

Each notebook is executed with nbclient in a temp copy (the repo's files are never written).
"""

from __future__ import annotations

import importlib.util
import io
import re
import shutil
import subprocess
import time
import tokenize
from pathlib import Path

import nbformat
import numpy as np
import pytest
from picture_text import english_words

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
LANGS = ("en", "zh")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")

EXPECTED = [
    "01_basics",
    "02_scalar_over_tensor",
    "03_tensor_over_tensor",
    "04_persistent_tape",
    "05_stop_gradient",
    "06_clip_by_norm",
    "07_clip_by_value",
    "08_clipping_in_training",
    "09_why_is_my_gradient_none",
    "10_what_if",
    "11_watching_training",
    "12_higher_order",
]

# What the lessons must print (computed by TensorFlow in the kernel): the tutorial's own
# print statements (its words in zh, the same in English in en) and the numbers its comments
# promise (梯度 6.0; 2*w; [[2.], [2.]]; 6.0 and 4.0; 4.0 and None; norm 5; [-1, 1, 1]).
PRINTED = {
    "en": {
        "01_basics": ["gradient: 6.0", "tapeviz: 6.0   TensorFlow: 6.0"],
        "02_scalar_over_tensor": ["the gradient of the loss with respect to w:", "[[2. 4.]\n [6. 8.]]", "equal: True"],
        "03_tensor_over_tensor": ["the gradient of z with respect to x:", "[[2.]\n [2.]]", "gradient(y, x): [2. 2.]"],
        "04_persistent_tape": [
            "the gradient of f1 with respect to x: 6.0",
            "the gradient of f2 with respect to x: 4.0",
            "second call: RuntimeError",
        ],
        "05_stop_gradient": [
            "the gradient of z with respect to x: 4.0",
            "the gradient of z with respect to y: None",
            "why_none(y): stop_gradient",
        ],
        "06_clip_by_norm": ["clipped gradient: [1.3363062 2.6726124 4.008919 ]", "norm after: 5.0"],
        "07_clip_by_value": ["clipped gradient: [-1.  1.  1.]"],
        "08_clipping_in_training": ["SGD step matches: True", "global norm after: 1.0", "per-variable scale: [0.4367"],
        "09_why_is_my_gradient_none": [
            "why_none      -> stop_gradient",
            "why_none      -> integer_dtype",
            "why_none      -> not_watched: c is a plain tensor",
            "why_none      -> not_watched: w is a non-trainable variable",
            "why_none      -> outside_tf",
            "why_none      -> not_recorded",
            "why_none -> not_watched: x is a plain tensor",
            "tape.gradient -> LookupError: AdjustContrastv2",
            "why_none      -> no_gradient: AdjustContrastv2 has no gradient registered",
            "TensorFlow: [nan  1.]",
            "non_finite where_trap -> Log ((0,),)",
            "0 × ∞ = NaN. This is the tf.where trap",
            "TensorFlow: [0. 1.]",
            "tv.explain: None",
        ],
        "10_what_if": [
            "x =  2.5   dy/dx =  5.0   2x =  5.0",
            "tape.gradient: 5.0",
            "y = 5.0   z =  9.0   dz/dx = 4.0   dz/dy = None",
            "x = 1.3   norm = 4.864   unchanged   d sum(clipped)/dx = 6",
            "x = 2.0   norm = 7.483   clipped",
        ],
        "11_watching_training": [
            "step  0  vanishing  sig/d0",
            "matches tf.norm: True",
            "within 1e-6 of tf.norm in float64: True",
            "| layer | ‖g‖ at 0 | ‖g‖ at 29 | ‖g‖ b/a",
            "step  6  exploding  seq/rnn/simple_rnn_cell",
            "step  7  nan        loss",
            "so the update stayed bounded",
            "vanishing flags with ReLU + He initialisation: 0",
            "steps with a picture: [0, 10, 20]",
        ],
        "12_higher_order": [
            "first derivative dy/dx: 6.0",
            "second derivative d2y/dx2: 2.0",
            "tapeviz d(dy_dx)/dx: 2.0",
            "tapeviz == tape.gradient, bit for bit: True",
            "inner gradients: ['du = ∂u/∂pts', 'u_xx = ∂²u/∂pts²']",
            "row 0 = flow(0).grad(v): [2. 1.]",
            "equal to outer_h.jacobian: True",
        ],
    },
    "zh": {
        "01_basics": ["梯度: 6.0", "tapeviz: 6.0   TensorFlow: 6.0"],
        "02_scalar_over_tensor": ["损失函数对w的梯度:", "[[2. 4.]\n [6. 8.]]", "数值相等: True"],
        "03_tensor_over_tensor": ["z对x的梯度:", "[[2.]\n [2.]]", "gradient(y, x): [2. 2.]"],
        "04_persistent_tape": ["f1对x的梯度: 6.0", "f2对x的梯度: 4.0", "第二次求导: RuntimeError"],
        "05_stop_gradient": ["z对x的梯度: 4.0", "z对y的梯度: None", "why_none(y): stop_gradient"],
        "06_clip_by_norm": ["裁剪后的梯度: [1.3363062 2.6726124 4.008919 ]", "裁剪后的范数: 5.0"],
        "07_clip_by_value": ["裁剪后的梯度: [-1.  1.  1.]"],
        "08_clipping_in_training": ["SGD 更新一致: True", "裁剪后的全局范数: 1.0", "每个变量的缩放比例: [0.4367"],
        "09_why_is_my_gradient_none": [
            "why_none      -> stop_gradient",
            "why_none      -> integer_dtype",
            "why_none      -> not_watched: ",
            "why_none      -> outside_tf",
            "why_none      -> not_recorded",
            "why_none -> not_watched: ",
            "tape.gradient -> LookupError: AdjustContrastv2",
            "why_none      -> no_gradient: ",
            "TensorFlow: [nan  1.]",
            "non_finite where_trap -> Log ((0,),)",
            "0 × ∞ = NaN。这就是 tf.where 陷阱",
            "TensorFlow: [0. 1.]",
            "tv.explain: None",
        ],
        "10_what_if": [
            "x =  2.5   dy/dx =  5.0   2x =  5.0",
            "tape.gradient: 5.0",
            "y = 5.0   z =  9.0   dz/dx = 4.0   dz/dy = None",
            "x = 1.3   norm = 4.864   未改变",
            "x = 2.0   norm = 7.483   已裁剪",
        ],
        "11_watching_training": [
            "step  0  vanishing  sig/d0",
            "与 tf.norm 一致: True",
            "与 float64 的 tf.norm 相差不到 1e-6: True",
            "| 层 | 第 0 步 ‖g‖ | 第 29 步 ‖g‖ | ‖g‖ 之比 b/a",
            "step  6  exploding  seq/rnn/simple_rnn_cell",
            "step  7  nan        loss",
            "ReLU + He 初始化时梯度消失的标记数: 0",
            "有图的步骤: [0, 10, 20]",
        ],
        "12_higher_order": [
            "一阶导数 dy/dx: 6.0",
            "二阶导数 d2y/dx2: 2.0",
            "tapeviz d(dy_dx)/dx: 2.0",
            "tapeviz 与 tape.gradient 逐位相同: True",
            "内层梯度: ['du = ∂u/∂pts', 'u_xx = ∂²u/∂pts²']",
            "第 0 行 = flow(0).grad(v): [2. 1.]",
            "与 outer_h.jacobian 相同: True",
        ],
    },
}
# The tutorial's own terms, each in the zh lesson that teaches it.
TERMS = {
    "01_basics": ["梯度"],
    "04_persistent_tape": ["持久化梯度磁带"],
    "05_stop_gradient": ["梯度停止"],
    "06_clip_by_norm": ["梯度裁剪"],
    "07_clip_by_value": ["梯度裁剪"],
    "11_watching_training": ["梯度消失", "梯度爆炸", "梯度裁剪"],
}


def _build():
    spec = importlib.util.spec_from_file_location("lesson_build", NOTEBOOKS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(lang: str, name: str):
    return nbformat.read(str(NOTEBOOKS / lang / f"{name}.ipynb"), as_version=4)


def _repo_notebooks() -> list[Path]:
    """Every .ipynb the repository holds or would take in: git's tracked and untracked
    files minus the ignored ones (the venv, the docs build's executed copies, caches)."""
    git = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.ipynb"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if git.returncode != 0:  # not a checkout (an unpacked sdist): its notebooks folders are all there is
        return sorted(NOTEBOOKS.glob("*/*.ipynb"))
    return sorted(REPO / p for p in git.stdout.split() if (REPO / p).exists())


def _stream_text(nb) -> str:
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "stream" and o.get("name") == "stdout"
    )


def _code_without_words(source: str) -> list[str]:
    """A code cell's tokens without its comments and strings (the words a language changes)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]  # IPython magics
    tokens = tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
    skip = {tokenize.COMMENT, tokenize.STRING, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip |= {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, n)}
    return [t.string for t in tokens if t.type not in skip]


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


# --------------------------------------------------------------------------- the sets and their source


def test_every_tutorial_section_has_a_lesson_in_both_languages():
    assert [p.stem for p in _build().lessons()] == EXPECTED
    for lang in LANGS:
        assert sorted(p.stem for p in (NOTEBOOKS / lang).glob("*.ipynb")) == EXPECTED


def test_both_sets_are_up_to_date_with_their_source():
    stale = _build().stale()
    assert not stale, f"edited by hand or not rebuilt: {stale}; run python notebooks/build.py"


def test_the_build_writes_exactly_the_committed_files(tmp_path):
    build = _build()
    shutil.copytree(NOTEBOOKS / "source", tmp_path / "source")
    written = build.build(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == sorted(
        f"{lang}/{name}.ipynb" for lang in LANGS for name in EXPECTED
    )
    for p in written:
        assert p.read_bytes() == (NOTEBOOKS / p.relative_to(tmp_path)).read_bytes()
    # a lesson added as a source appears in both sets; one removed leaves both
    (tmp_path / "source" / "12_new.txt").write_text(
        "%% markdown\n# 12\n%% zh\n# 第 12 课\n%% code\nx = 1  # «one|一»\n"
    )
    (tmp_path / "source" / "03_tensor_over_tensor.txt").unlink()
    changed = {p.relative_to(tmp_path).as_posix() for p in build.build(tmp_path)}
    assert changed == {
        "en/12_new.ipynb",
        "zh/12_new.ipynb",
        "en/03_tensor_over_tensor.ipynb",
        "zh/03_tensor_over_tensor.ipynb",
    }
    assert not (tmp_path / "en" / "03_tensor_over_tensor.ipynb").exists()
    assert nbformat.read(str(tmp_path / "zh" / "12_new.ipynb"), as_version=4).cells[1].source == "x = 1  # 一"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("%% markdown\n# en only\n%% code\nx = 1\n", "has no '%% zh' text"),
        ("%% code\nx = 1\n%% zh\n# zh\n", "must follow the English text"),
        ("stray\n%% code\nx = 1\n", "text before the first"),
        ("%% code\nprint('«a|b')\n", "unclosed"),
    ],
)
def test_a_broken_source_says_where_and_what(text, problem):
    build = _build()
    with pytest.raises(build.SourceError, match=re.escape(problem)):
        build.parse(text, "x.txt")


@pytest.mark.parametrize("name", EXPECTED)
def test_both_sets_have_the_same_cells_and_code(name):
    en, zh = _read("en", name), _read("zh", name)
    assert [c.cell_type for c in en.cells] == [c.cell_type for c in zh.cells]
    for a, b in zip(en.cells, zh.cells, strict=True):
        if a.cell_type == "code":
            assert _code_without_words(a.source) == _code_without_words(b.source), a.source


@pytest.mark.parametrize("name", EXPECTED)
def test_the_english_set_is_wholly_english(name):
    nb = _read("en", name)
    chinese = [c.source for c in nb.cells if CJK.search(c.source)]
    assert not chinese, f"{name}: Chinese in the English set: {chinese[0][:200]!r}"


@pytest.mark.parametrize("name", EXPECTED)
def test_the_chinese_set_speaks_chinese(name):
    nb = _read("zh", name)
    for c in nb.cells:
        if c.cell_type == "markdown":
            assert CJK.search(c.source), f"{name}: an English markdown cell in the Chinese set: {c.source[:120]!r}"
            continue
        tokens = tokenize.generate_tokens(io.StringIO(c.source.replace("%matplotlib inline", "") + "\n").readline)
        for t in tokens:
            if t.type == tokenize.COMMENT and re.search(r"[A-Za-z]{4,}", t.string) and not CJK.search(t.string):
                raise AssertionError(f"{name}: an English comment in the Chinese set: {t.string!r}")
    for term in TERMS.get(name, []):
        assert any(term in c.source for c in nb.cells), f"{name}: the tutorial's term {term} is missing"
    assert 'LANG = "zh"' in nb.cells[1].source


@pytest.mark.parametrize("path", _repo_notebooks(), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_without_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state in the metadata"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", EXPECTED)
def test_last_cell_displays_the_explorer_once(name, lang):
    last = [c for c in _read(lang, name).cells if c.cell_type == "code"][-1]
    lines = [ln.strip() for ln in last.source.strip().splitlines()]
    assert lines[-1] == "ex", "the last line shows the explorer (and nothing else)"
    assert any(ln.startswith(("ex = tv.explore(", "ex = tv.interact(", "ex = tv.interact.options(")) for ln in lines)
    assert any("lang=LANG" in ln for ln in lines), "the explorer speaks the lesson's language"
    assert not any(ln.endswith(")") and ".add_class(" in ln for ln in lines), "add_class() would display a second copy"


def _chain_notebook(printed: str, text: str):
    """A lesson as the chain-rule check sees it: a chain_rule cell with ``printed`` as its
    output, then a markdown cell ``text``."""
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("print(tv.chain_rule(tape, y))")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb.cells = [code, nbformat.v4.new_markdown_cell(text)]
    return nb


def test_the_chain_passage_check_catches_a_text_or_a_total_that_is_not_printed():
    printed = (
        "[0] start at y = 9.0: ∂y/∂y = 1.0\n"
        "[1] ∂y/∂x = ∂y/∂y · ∂y/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0\n"
        "[2] ∂y/∂x = 6.0\n\ntape.gradient(y, x): 6.0\n"
    )
    good = "Read `∂y/∂x = ∂y/∂y · ∂y/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0`; no `∂y/∂w = …`; `dy/dx = 2x = 6` is calculus."
    assert chain_quotes(good) == (["∂y/∂x = ∂y/∂y · ∂y/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0"], ["∂y/∂w = …"])
    assert check_chain_passage(_chain_notebook(printed, good), "ok") == 1
    with pytest.raises(AssertionError, match="the text quotes"):  # a number the cell did not print
        check_chain_passage(_chain_notebook(printed, "`∂y/∂x = 1.0 × 4.0 = 4.0`"), "wrong number")
    with pytest.raises(AssertionError, match="is not printed"):  # a line said absent that is there
        check_chain_passage(_chain_notebook(printed, "`∂y/∂x = 6.0` and no `∂y/∂x = …`"), "absent")
    with pytest.raises(AssertionError, match="quotes none"):
        check_chain_passage(_chain_notebook(printed, "no quote"), "silent")
    with pytest.raises(AssertionError, match=r"Mismatched|Not equal"):  # the chain's total is not TF's
        check_chain_passage(_chain_notebook(printed.replace("): 6.0", "): 4.0"), good), "total")
    with pytest.raises(AssertionError, match="is None but"):
        check_chain_passage(_chain_notebook(printed.replace("): 6.0", "): None"), good), "none")
    with pytest.raises(AssertionError, match=r"no tape\.gradient"):
        check_chain_passage(_chain_notebook(printed.split("tape.")[0], good), "no tf")


def test_the_picture_check_catches_english():
    nb = _read("zh", "01_basics")
    allowed, lesson = allowed_words(nb), names_of_lesson(nb)
    shown = "<svg><text>第 1/2 步：Pow 运算 x show_all=True dy/dx AddV2 seque…tial 2x2 dense_1 1e5 6.3e-08</text></svg>"
    assert english_words(shown, allowed, lesson) == set()
    wrong = "<svg><text>Step 1/2: Pow passes gradient</text><text>exponent 2.0</text></svg>"
    found = english_words(wrong, allowed, lesson)
    assert found == {"Step", "passes", "gradient", "exponent"}


# --------------------------------------------------------------------------- running them


def _execute(path: Path, tmp: Path):
    from nbclient import NotebookClient

    work = tmp / path.parent.name / path.name
    work.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, work)
    nb = nbformat.read(str(work), as_version=4)
    t0 = time.monotonic()
    client = NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(work.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    return nb, time.monotonic() - t0


def _widget_states(nb) -> dict:
    return nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})


def pictures(nb) -> list[str]:
    """Every SVG picture an executed notebook shows: cell outputs and the explorers' canvases."""
    out = [
        "".join(o["data"]["image/svg+xml"])
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/svg+xml" in o.get("data", {})
    ]
    for m in _widget_states(nb).values():
        state = m.get("state", {})
        frame = state.get("frame")  # the explorer's canvas: its last whole picture
        for value in (state.get("value"), frame.get("markup") if isinstance(frame, dict) else None):
            if isinstance(value, str) and "<svg" in value:
                out.append(value)
    return out


def code_names(nb) -> set[str]:
    """The names a lesson's code gives things: its variables, functions, parameters and the
    strings it names layers and targets with (not attributes like .gradient, not keywords)."""
    import builtins
    import keyword

    names: set[str] = set()
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        source = "\n".join(ln for ln in c.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
        previous = None
        for t in tokenize.generate_tokens(io.StringIO(source + "\n").readline):
            if t.type == tokenize.NAME and previous != "." and not keyword.iskeyword(t.string):
                if not hasattr(builtins, t.string):
                    names.add(t.string)
            elif t.type == tokenize.STRING and not t.string.startswith(("f", '"""')):
                names |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t.string.strip("\"'")))
            previous = t.string
        # what the lesson calls from TensorFlow (tf.stop_gradient, tf.nn.sigmoid_cross_entropy_with_logits)
        for chain in re.findall(r"\btf(?:\.\w+)+", source):
            names |= set(chain.split(".")[1:])
    return names


def allowed_words(nb) -> set[str]:
    """Words a Chinese picture may show: the lesson's own names (:func:`code_names`), Keras'
    default layer names, TensorFlow's op names (every raw op), the values Python prints (None,
    True, NaN, inf), the module's and library's names (tf, TensorFlow) and show_all (the
    caption says which argument shows every op)."""
    import tensorflow as tf

    return (
        names_of_lesson(nb)
        | set(dir(tf.raw_ops))
        | {"None", "True", "False", "NaN", "Inf", "inf", "nan", "tf"}
        | {
            "TensorFlow",
            "show_all",
            "sum",  # sum(clipped): a non-scalar target's slope is its sum's (the Sum op), written as code
            "strided_slice",  # the name scope TF gives x[:, 0:1] (lesson 12's explorer draws it as a group)
        }
    )


def names_of_lesson(nb) -> set[str]:
    keras = {"sequential", "dense", "kernel", "bias", "simple_rnn_cell", "recurrent_kernel"}
    return code_names(nb) | keras


def _strip_comments(source: str) -> str:
    return "\n".join(ln.split("  # ")[0] for ln in source.splitlines() if not ln.lstrip().startswith("#"))


# The lessons that read the chain rule (issue 33): a cell prints tv.chain_rule and what
# tape.gradient returned, and the text after it quotes the printed lines.
CHAIN_LESSONS = EXPECTED[:5]
_SPAN = re.compile(r"`([^`\n]+)`")
# what the cell printed of tape.gradient: "tape.gradient(z, x): 4.0", several on a line 3 spaces apart
_TAPE_GRADIENT = re.compile(r"tape\.gradient\((\w+), (\w+)\): (.+?)(?=\s{3}|$)", re.M)


def chain_quotes(markdown: str) -> tuple[list[str], list[str]]:
    """The chain-rule lines a lesson's text quotes (a `code span` that opens with ∂ or g_ and
    says what it equals), and the ones it says are absent (such a span ending in "= …")."""
    quoted, absent = [], []
    for span in _SPAN.findall(markdown):
        if span.startswith(("∂", "g_")) and " = " in span:
            (absent if span.endswith("= …") else quoted).append(span)
    return quoted, absent


def _final_numbers(line: str) -> list[float]:
    """The numbers after a chain line's last " = " (a scalar, or a small tensor's entries)."""
    return [float(n) for n in NUMBER.findall(line.rsplit(" = ", 1)[1])]


def check_chain_passage(nb, where: str) -> int:
    """A lesson's chain-rule passage tells the truth: every chain line its text quotes is
    printed by a tv.chain_rule cell above the text (in this language), every line it says is
    absent is not, and each variable's total in the printed chain (its last ``∂t/∂s = ...``
    or ``g_s = ...`` line) is what the cell's ``tape.gradient(t, s)`` printed: the same
    numbers, or None and no total at all. Returns how many quoted lines it checked."""
    printed = ""
    checked = 0
    for c in nb.cells:
        if c.cell_type == "code" and "tv.chain_rule(" in c.source:
            out = "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
            printed += out
            grads = _TAPE_GRADIENT.findall(out)
            assert grads, f"{where}: the chain-rule cell prints no tape.gradient(target, source) to compare with"
            for target, source, value in grads:
                totals = [
                    ln for ln in out.splitlines() if re.match(rf"\[\d+\] (∂{target}/∂{source}|g_{source}) = [^=]*$", ln)
                ]
                if value == "None":
                    assert not totals, f"{where}: tape.gradient({target}, {source}) is None but the chain says {totals}"
                    assert "= None" in out, f"{where}: the chain does not say where {source}'s path stops"
                    continue
                assert totals, f"{where}: no total for {source} in the chain rule of {target}:\n{out}"
                np.testing.assert_allclose(
                    _final_numbers(totals[-1]), [float(n) for n in NUMBER.findall(value)], rtol=1e-6, err_msg=where
                )
        elif c.cell_type == "markdown" and printed:
            quoted, absent = chain_quotes(c.source)
            for line in quoted:
                assert line in printed, f"{where}: the text quotes {line!r}, the cell printed:\n{printed}"
                checked += 1
            for line in absent:
                assert line[: -len("…")].strip() not in printed, f"{where}: the text says {line!r} is not printed"
    assert printed, f"{where}: no cell prints tv.chain_rule"
    assert checked, f"{where}: the text after the chain-rule cell quotes none of its lines"
    return checked


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
def test_lesson_runs_in_both_languages_with_the_same_numbers(name, tmp_path):
    runs = {}
    for lang in LANGS:
        nb, elapsed = _execute(NOTEBOOKS / lang / f"{name}.ipynb", tmp_path)
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, errors

        code = [c for c in nb.cells if c.cell_type == "code"]
        views = [o for o in code[-1].outputs if WIDGET_MIME in o.get("data", {})]
        assert len(views) == 1, f"last cell should show exactly one widget view, got {code[-1].outputs}"
        model_id = views[0]["data"][WIDGET_MIME]["model_id"]
        state = _widget_states(nb)
        assert model_id in state, "the explorer's widget state was not stored"
        # an explorer, or tv.explore(jacobian): its heatmap above an explorer
        assert {"tv-explorer", "tv-jacobian"} & set(state[model_id]["state"].get("_dom_classes", []))

        text = _stream_text(nb)
        for expected in PRINTED[lang][name]:
            assert expected in text, f"{lang}/{name}: {expected!r} not printed; stdout was:\n{text}"
        if name in CHAIN_LESSONS:
            check_chain_passage(nb, f"{lang}/{name}")
        runs[lang] = nb, text
        print(f"\n{lang}/{name}: executed in {elapsed:.1f} s")

    # the same numbers, line by line, whatever the words around them (a translated sentence may
    # name them in another order); TensorFlow's own log lines (tf.function retracing warnings
    # name memory addresses) aside
    en_numbers, zh_numbers = (
        [sorted(NUMBER.findall(ln)) for ln in runs[lang][1].splitlines() if not ln.startswith("WARNING:")]
        for lang in LANGS
    )
    assert en_numbers == zh_numbers, f"{name}: en printed {en_numbers}\nzh printed {zh_numbers}"
    assert len(pictures(runs["zh"][0])) >= 1

    # the Chinese set's pictures: no English words but op and variable names
    zh = runs["zh"][0]
    allowed, lesson = allowed_words(zh), names_of_lesson(zh)
    for svg in pictures(zh):
        english = english_words(svg, allowed, lesson)
        assert not english, f"zh/{name}: English words in a picture: {sorted(english)}"
