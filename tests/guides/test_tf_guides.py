"""TensorFlow's GradientTape guides, section by section (tests/support/guide_programs.py), run under
tf.GradientTape and tv.GradientTape: the printed results are identical, the flow gives TF's
own numbers (or TF's own error), every None is explained with the expected reason in en
and zh, and the picture exports as SVG and PNG with the target and the sources drawn."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from guide_programs import PROGRAMS, Run

import tapeviz as tv
from tapeviz.record import hooks


def _numbers(x):
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return [_numbers(v) for v in x]
    if isinstance(x, tf.IndexedSlices):
        x = tf.convert_to_tensor(x)
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def _assert_same(a, b, where: str = "results") -> None:
    a, b = _numbers(a), _numbers(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{k}]")
        return
    if a is None or isinstance(a, str):
        assert a == b, where
        return
    np.testing.assert_array_equal(a, b, err_msg=where)


def _name(source) -> str:
    return getattr(source, "name", None) or type(source).__name__


def _flow_and_explain(run: Run, fl) -> None:
    if run.raises is not None:
        for source, _ in run.reasons:
            with pytest.raises(run.raises):
                fl.grad(source)
    for source, expected in run.checks:
        got = fl.grad(source)
        if expected is None:
            assert got is None, f"TF gives None for {_name(source)}, the flow {got}"
            continue
        np.testing.assert_allclose(got, _numbers(expected), rtol=1e-6, atol=1e-7, err_msg=_name(source))
    for source, code in run.reasons:
        d = tv.explain(run.tape, run.target, source)
        assert d is not None and d.reason == code, f"{_name(source)}: {d}"
        zh = tv.explain(run.tape, run.target, source, lang="zh")
        assert zh is not None and zh.reason == code and zh.message != d.message


def _pictures(run: Run, fl, tmp_path) -> None:
    svg = tv.save(run.tape, run.target, tmp_path / "guide.svg", progress=False)
    png = tv.save(run.tape, run.target, tmp_path / "guide.png", progress=False)
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg")) and png.read_bytes()[:4] == b"\x89PNG"
    scene = tv.view(run.tape, run.target).scene
    assert scene.targets and scene.targets <= set(scene.boxes), "the target must be drawn"
    graph = fl.graph
    for source, _ in [*run.checks, *run.reasons]:
        node = graph.node_of(source)
        if node is not None and graph.nx.nodes[node]["kind"] == "variable":
            assert node in scene.display.of, f"the variable {_name(source)} is not drawn"


def _compiled(run: Run, tmp_path) -> None:
    """A @tf.function step: its tapes record a graph (refused with the message naming
    tv.record_step); tv.record_step records one call and leaves every variable as it was."""
    before = [np.array(v.numpy(), copy=True) for v in run.state]
    steps = tv.record_step(run.compiled, *run.compiled_args)
    _assert_same(before, [v.numpy() for v in run.state], "variables after record_step")
    rec = steps[0]
    loss, grads = steps.result  # TF's own gradients from that eager call, on the same weights
    fl = tv.flow(rec, rec.target)
    for v, g in zip(run.state, grads, strict=False):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())
    _pictures(Run(None, rec, rec.target), fl, tmp_path)


@pytest.mark.parametrize("section", list(PROGRAMS))
def test_guide_section_runs_the_same_and_is_drawn_and_explained(section, tmp_path):
    ref = PROGRAMS[section](tf.GradientTape)
    run = PROGRAMS[section](tv.GradientTape)
    _assert_same(ref.results, run.results)
    assert not hooks.hooks_installed()
    if run.compiled is not None:
        _compiled(run, tmp_path)
        return
    fl = tv.flow(run.tape, run.target)
    _flow_and_explain(run, fl)
    _pictures(run, fl, tmp_path)


def test_every_guide_section_is_covered():
    sections = {name.split(":")[0] for name in PROGRAMS}
    assert sections == {"autodiff", "advanced", "training"}
    assert len(PROGRAMS) >= 28
