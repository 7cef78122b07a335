"""Cases for the front end's node tests (tests/js/), made by the Python implementations.

The page applies patches (static/canvas.js ``tvApply``) and judges quiz answers
(static/quiz.js ``tvQuizJudge``) in JavaScript; Python has the same rules
(explorer/patches.py ``diff`` / ``apply``, explorer/quiz.py ``judge``). The cases here
are what Python computes: chains of pictures with the patch between each two, and typed
answers with Python's verdict. ``node --test tests/js/`` checks the JavaScript against
them: tests/explorer/test_frontend_js.py writes fresh ones (more of them, a Keras model's too) and
runs node on them; tests/js/cases/ holds a small set for ``make test``'s plain node run.

Refresh the committed set: ``python tests/support/frontend_cases.py tests/js/cases`` (add ``--full``
for the set the pytest run uses).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import patches, quiz
from tapeviz.explorer import state as st
from tapeviz.messages import catalogue, say

#: What students type: numbers in the forms the quiz reads, and some it cannot.
TYPED = (
    "6",
    "6.0",
    "6.04",
    "6.1",
    "5.94",
    "-6",
    "−6",
    "+6.",
    ".5",
    "1e0",
    "1",
    "2, 4, 6, 8",
    "[[2,4],[6,8.1]]",
    "2，4，6，8",
    "2。5",
    "[2 4 6]",
    "one",
    "",
    "6 7",
    "1.3363",
    "1.34",
    "1.3",
)


def _small_tapes():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as t1:
        z = x**2 + tf.stop_gradient(y)
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tv.GradientTape(persistent=True) as t2:
        h = tf.tanh(w * x)
        loss = tf.reduce_sum(h**2)
        other = tf.reduce_mean(h)
    return [("stop_gradient", t1, {"z": z}), ("persistent", t2, {"loss": loss, "other": other})]


def _keras_tape():
    import keras

    keras.utils.set_random_seed(0)
    block = keras.Sequential(
        [keras.layers.Dense(4, activation="tanh", name="a"), keras.layers.Dense(4, activation="tanh", name="b")],
        name="block",
    )
    model = keras.Sequential([keras.Input((3,)), block, keras.layers.Dense(1, name="head")], name="net")
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype("float32"))
    with tv.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    return [("keras", tape, {"loss": loss})]


def _chain(ex, states, every: int = 1) -> dict:
    """The pictures of ``states`` in order and the patch from each to the next (the picture
    after every ``every``-th patch and after the last; None for the others, to keep the
    committed set small)."""
    pictures = [st.picture(ex.graph_targets, s) for s in states]
    links = []
    for old, new in zip(pictures, pictures[1:], strict=False):
        patch = patches.diff(patches.parse(old), patches.parse(new))
        if patch is None:
            raise AssertionError("two pictures of one layout must have a patch between them")
        if patches.apply(old, patch) != new:  # Python's own rule first: the cases are right
            raise AssertionError("patches.apply does not give the next picture")
        links.append({"patch": patch, "picture": new})
    for i, link in enumerate(links[:-1]):
        if (i + 1) % every:
            link["picture"] = None
    return {"start": pictures[0], "links": links}


def patch_cases(full: bool = False) -> list[dict]:
    """Chains of pictures: every step forward and back, jumps, clip settings, the quiz's
    hidden numbers; ``full`` adds a Keras model with its groups open and keeps every
    picture (else the stop_gradient example, a picture every 6th patch)."""
    out = []
    every = 1 if full else 6
    tapes = (_small_tapes() + _keras_tape()) if full else _small_tapes()[:1]
    for name, tape, targets in tapes:
        for target in targets:
            ex = tv.explore(tape, targets if len(targets) > 1 else targets[target], theme="light")
            try:
                s0 = ex.state.replace(target=target, step=None, collapsed=frozenset())
                last = ex.graph_targets.flow(target).last_step
                walk = [s0.replace(step=k) for k in range(last + 1)]
                walk += [s0.replace(step=k) for k in range(last, -1, -1)]
                walk += [s0.replace(step=k) for k in (last, 0, min(2, last), last)]
                walk += [s0.replace(clip_mode="by_norm", clip_norm=v) for v in (0.1, 0.05, 1.0)]
                walk += [
                    s0.replace(clip_mode="by_value", clip_value=(-0.01, 0.01)),
                    s0.replace(step=1, clip_mode="by_value"),
                ]
                out.append({"name": f"{name}/{target}", **_chain(ex, walk, every)})
                q = s0.replace(quiz=True, answers=())
                quiz_walk = [q.replace(step=k) for k in range(last + 1)]
                answered = (quiz.Answer(1, "revealed", "", target),)
                quiz_walk += [q.replace(step=1, answers=answered), q.replace(step=0, answers=answered)]
                out.append({"name": f"{name}/{target}/quiz", **_chain(ex, quiz_walk, every)})
            finally:
                ex.close()
    return out


def quiz_cases() -> list[dict]:
    """Typed answers to real questions (a scalar, a 2x2 tensor, a large one answered by its
    norm) with Python's verdict, at two tolerances."""
    x = tf.Variable(3.0)
    with tv.GradientTape() as t1:
        y = x**2
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tv.GradientTape() as t2:
        loss = tf.reduce_sum(w**2)
    big = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32), (3, 4)))
    with tv.GradientTape() as t3:
        total = tf.reduce_sum(big * 0.5)
    questions = [quiz.question(tv.flow(t1, y), 1), quiz.question(tv.flow(t2, loss), 2)]
    questions += [quiz.question(tv.flow(t3, total), k) for k in (0, 1, 2)]
    out = []
    for q in questions:
        for tolerance in (quiz.TOLERANCE, 0.1):
            for typed in TYPED:
                out.append(
                    {
                        "expected": q.expected.tolist(),
                        "typed": typed,
                        "tolerance": tolerance,
                        "numbers": quiz.numbers(typed),
                        "outcome": quiz.judge(q, typed, tolerance),
                    }
                )
    return out


def say_cases() -> list[dict]:
    """The quiz's sentences as the page fills them in (its template, the facts) and as
    Python's messages.say does, in both languages."""
    facts = {"typed": "6,0 {x}", "value": "6.0", "right": 1, "wrong": 0, "revealed": 2, "steps": 4}
    out = []
    for lang in ("en", "zh"):
        for key in ("right", "wrong", "revealed", "unreadable", "score"):
            template = catalogue(lang)[f"quiz.{key}"]
            out.append({"template": template, "facts": facts, "text": say(f"quiz.{key}", lang, **facts)})
    return out


def write_cases(folder: Path, full: bool = False) -> Path:
    """Write patches.json, quiz.json and say.json into ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    made = (("patches.json", patch_cases(full)), ("quiz.json", quiz_cases()), ("say.json", say_cases()))
    for name, cases in made:
        (folder / name).write_text(json.dumps(cases, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    return folder


if __name__ == "__main__":
    print(write_cases(Path(sys.argv[1]), full="--full" in sys.argv[2:]))
