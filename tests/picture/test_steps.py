"""A model called once per step of a loop, opened one step at a time (issue 32 item 3):
picture/steps.py tells the steps apart by the recording order, visibility.open_one_step
draws one of them opened and the others as a box before and a box after it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from gallery_models import actor_critic
from placement_check import check

import tapeviz as tv
from tapeviz.picture.scene import Scene
from tapeviz.picture.steps import Stepped, alike_steps, loop_entries, loop_steps


@pytest.fixture(scope="module")
def episode():
    step = actor_critic(steps=20)
    return step, tv.flow(step.tape, step.loss)


def _titles(scene) -> dict:
    return {t.text.replace("\n", " "): n for n, (t, _, _) in scene.labels.items()}


def test_the_steps_of_a_model_called_in_a_loop(episode):
    step, _ = episode
    g = step.tape.graph
    tree = Scene(g, tv.flow(step.tape, step.loss), options=tv.Options(collapsed=False)).display.tree
    entries = loop_entries(g.nx, tree)
    assert entries["ac"] == 20
    of = loop_steps(g.nx, tree, "ac")
    assert sorted(set(of.values())) == list(range(20))
    assert alike_steps(g.nx, of)
    # the ops of one step are one call: as many per step, in the same order
    assert len({sum(1 for k in of.values() if k == s) for s in range(20)}) == 1
    kernel = next(n for n, d in g.nx.nodes(data=True) if d.get("name") == "ac/torso/kernel")
    assert kernel not in of and loop_steps(g.nx, tree, "ac", shared=True)[kernel] == 0
    stepped = Stepped("ac", 3, 20, of)
    first = next(n for n, k in of.items() if k == 0)
    assert stepped.side(first) == (0, 2) and stepped.side(kernel) is None


def test_opening_the_loop_shows_one_step(episode):
    step, fl = episode
    scene = Scene(step.tape.graph, fl, options=tv.Options(expand=("ac",)))
    titles = _titles(scene)
    assert "ac ×19 (steps 1–19)" in titles and "LogSoftmax ×19" in titles, sorted(titles)
    assert {"torso", "policy", "value"} <= set(titles)
    assert [f.name for f in scene.frames] == ["ac · step 0"]
    assert len(scene.boxes) <= 30 and scene.canvas[1] <= 1600, (len(scene.boxes), scene.canvas)
    check(scene, "episode step 0")
    for v, g in zip(step.variables, step.tape.gradient(step.loss, step.variables), strict=True):
        np.testing.assert_array_equal(fl.grad(v), tf.convert_to_tensor(g).numpy())


def test_repeat_step_chooses_the_step(episode):
    step, fl = episode
    scene = Scene(step.tape.graph, fl, options=tv.Options(expand=("ac",), repeat_step=3))
    titles = _titles(scene)
    assert {"ac ×3 (steps 0–2)", "ac ×16 (steps 4–19)", "LogSoftmax ×16", "LogSoftmax ×3"} <= set(titles)
    assert [f.name for f in scene.frames] == ["ac · step 3"]
    # step 3's own ops are the ones drawn opened: the torso box holds the 4th call's ops
    torso = titles["torso"]
    of = loop_steps(step.tape.graph.nx, scene.display.tree, "ac")
    assert {of[m] for m in scene.display.members[torso] if m in of} == {3}
    last = Scene(step.tape.graph, fl, options=tv.Options(expand=("ac",), repeat_step=19))
    assert "ac ×19 (steps 0–18)" in _titles(last)


def test_a_step_the_loop_did_not_run_is_refused(episode):
    step, fl = episode
    with pytest.raises(ValueError, match=r"repeat_step=25: ac ran 20 steps; pass one of 0–19"):
        Scene(step.tape.graph, fl, options=tv.Options(expand=("ac",), repeat_step=25))
    with pytest.raises(ValueError, match="repeat_step=-1"):
        tv.Options(repeat_step=-1)


def test_collapsed_false_still_draws_every_step(episode):
    step, fl = episode
    scene = Scene(step.tape.graph, fl, options=tv.Options(collapsed=False))
    assert scene.display.stepped is None
    assert not any("steps" in t for t in _titles(scene))


def test_a_box_of_steps_says_which():
    from tapeviz.picture.wording import step_range

    assert step_range((1, 19)) == " ×19 (steps 1–19)"
    assert step_range((0, 0)) == " (step 0)"
    assert step_range((4, 19), "zh") == " ×16（第 4–19 步）"


def test_a_scope_is_the_users_unless_keras_opened_it():
    """A subclassed model's own scope is the user's code; a Keras layer's or loss's (or one
    inside them) is not (record.records.user_scope: which ops get their TF call's name)."""
    from tapeviz.record.records import user_scope

    layers, losses = {"m/d1", "gen/dense"}, {"binary_crossentropy"}
    assert user_scope("m", layers, losses) and user_scope("m/block", layers, losses)
    assert not user_scope("m/d1", layers, losses) and not user_scope("m/d1/inner", layers, losses)
    assert not user_scope("binary_crossentropy", layers, losses)
