"""The README's Python examples are the documented API: they must run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_starts_with_the_two_setup_commands():
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert text.index("make demo") < 400


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = BLOCKS[index].replace("/tmp/z.svg", str(tmp_path / "z.svg"))
    exec(compile(code, f"README block {index}", "exec"), {})


def test_readme_numbers_are_tensorflows(capsys):
    # the flow block prints 5.0 / 1.0 and a contributions list summing to 5.0
    import numpy as np
    import tensorflow as tf

    import tapeviz as tv

    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        a = x * x
        z = a + x + tf.stop_gradient(y)
    fl = tv.flow(tape, z)
    assert fl.grad(x) == tape.gradient(z, x).numpy() == 5.0
    assert fl.grad(a) == tape.gradient(z, a).numpy() == 1.0
    parts = [c for _, c in fl.contributions(x)]
    assert sorted(float(p) for p in parts) == [1.0, 2.0, 2.0]
    assert np.sum(parts) == 5.0
    assert fl.why_none(y).reason == "stop_gradient"
