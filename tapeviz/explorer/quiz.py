"""Predict, then reveal: the question each backward step asks, and how an answer is judged.

In quiz mode the explorer hides the number a step computes (what the op being processed
sends back along its edge, or the gradient a node receives) until the student has typed a
prediction or pressed "reveal". Everything here is plain data and pure functions of a
flow, a step and what was typed, so the live widget (in the kernel), the exported page (in
its own script, :data:`CHECK_JS`, the same rule written in JavaScript) and the tests judge
an answer the same way. The answers themselves are TensorFlow's numbers, from the flow.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..gradients.flow import GradientFlow
from ..messages import DEFAULT, localize, say
from ..picture.marks import Hidden
from ..record.values import format_value
from . import static_files

__all__ = [
    "TOLERANCE",
    "SPELLED_OUT",
    "Question",
    "Answer",
    "question",
    "numbers",
    "judge",
    "answered",
    "record",
    "score",
    "hidden",
    "question_text",
    "quiz_panel",
    "CHECK_JS",
]

#: An answer is right when every number is within TOLERANCE × max(1, |TF's number|) of
#: TensorFlow's: a student who rounds 1.3363 to 1.34 is right, one who types 1.3 is not.
TOLERANCE = 0.01
#: Tensors up to this many elements are answered element by element; larger ones by their norm.
SPELLED_OUT = 6

OUTCOMES = ("right", "wrong", "revealed")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Question:
    """What one backward step asks: the gradient ``node`` passes to ``to`` along ``edge``
    (an op's step), or the gradient ``node`` receives (the seed, a variable's total)."""

    step: int
    node: Any
    to: Any = None  # the input the gradient is passed to; None: the node's own gradient
    edge: tuple | None = None
    value: Any = None  # TensorFlow's number (numpy), as the picture shows it once revealed
    received: Any = None  # what the op received at this step (shown in the question)

    @property
    def by_norm(self) -> bool:
        """A large tensor is answered by its norm ‖·‖, as the picture writes it."""
        return np.size(self.value) > SPELLED_OUT

    @property
    def expected(self) -> np.ndarray:
        """The numbers a right answer matches (flattened; the norm of a large tensor)."""
        a = np.asarray(self.value, dtype=np.float64).reshape(-1)
        return np.array([np.linalg.norm(a)]) if self.by_norm else a


@dataclass(frozen=True)
class Answer:
    """What happened at one step: right, wrong (with what was typed) or revealed."""

    step: int
    outcome: str  # one of OUTCOMES
    typed: str = ""
    target: str = ""  # the explorer's target the step belongs to (a persistent tape has several)


def question(fl: GradientFlow, step: int) -> Question:
    """The question of ``step`` (0 seeds the target: "what is dy/dy?")."""
    k = fl.check_step(step)
    st = fl.steps[k]
    received = st.grad[0] if isinstance(st.grad, list) else st.grad
    carried = sorted(
        (e for e in st.edges if fl.edge_grad(*e) is not None), key=lambda e: str(fl.graph.display_name(e[0]))
    )
    if k > 0 and carried:
        e = carried[0]
        return Question(k, st.node, to=e[0], edge=tuple(e), value=fl.edge_grad(*e), received=received)
    value = received
    if k > 0 and fl.step_of(st.node) == k and fl.grad(st.node) is not None:
        value = fl.grad(st.node)  # a node read several times: its total, as TF added it up
    return Question(k, st.node, value=value)


def numbers(typed: str) -> list[float]:
    """The numbers in what a student typed: "6", "6.0", "[2, 4, 6, 8]", "−1,5e-1"."""
    text = typed.replace("−", "-").replace("，", ",").replace("。", ".")
    return [float(m) for m in _NUMBER.findall(text)]


def judge(q: Question, typed: str, tolerance: float = TOLERANCE) -> str | None:
    """ "right" or "wrong"; None when ``typed`` holds no number or the wrong count of them.

    One number answers a whole tensor whose elements all equal it (a block of ones)."""
    got = numbers(typed)
    want = q.expected
    if not got or (len(got) != 1 and len(got) != want.size):
        return None
    diff = np.abs(np.asarray(got) - want)
    ok = bool(np.all(diff <= tolerance * np.maximum(1.0, np.abs(want))))
    return "right" if ok else "wrong"


def answered(answers: Iterable[Answer], step: int, target: str = "") -> Answer | None:
    """The answer given at ``step`` of ``target`` (None: the step is still hidden)."""
    return next((a for a in answers if a.step == step and a.target == target), None)


def record(answers: tuple[Answer, ...], answer: Answer) -> tuple[Answer, ...]:
    """``answers`` with this step's answer (a step is answered once: the first answer stays)."""
    if answered(answers, answer.step, answer.target) is not None:
        return answers
    return tuple(sorted((*answers, answer), key=lambda a: (a.target, a.step)))


def score(answers: Iterable[Answer]) -> dict[str, int]:
    """{"right": n, "wrong": n, "revealed": n}."""
    out = dict.fromkeys(OUTCOMES, 0)
    for a in answers:
        out[a.outcome] += 1
    return out


def hidden(fl: GradientFlow, step: int, answered: Iterable[int], lang: str = DEFAULT) -> Hidden | None:
    """What the picture of ``step`` hides: every number a step not answered yet computes (the
    edge being processed, the nodes still to be reached, and what a skipped step sent), so a
    picture never gives away a question still open. None when nothing is hidden."""
    k = fl.check_step(step)
    still_open = set(range(fl.last_step + 1)) - set(answered)
    edges = frozenset(e for e, s in fl.edge_step.items() if s in still_open)
    done = {n: fl.step_of(n) for n in fl.graph.nx.nodes}
    nodes = frozenset(n for n, s in done.items() if s in still_open)
    title = None
    if k in still_open:
        title = say("quiz.title", lang, k=k, n=fl.last_step, node=_name(fl, fl.steps[k].node, lang))
    if title is None and not edges and not nodes:
        return None
    return Hidden(edges, nodes, title)


def _name(fl: GradientFlow, node, lang: str) -> str:
    return localize(fl.graph.display_name(node), lang)


def question_text(fl: GradientFlow, q: Question, lang: str = DEFAULT) -> str:
    """The question in words, with what to type."""
    target = _name(fl, fl.target_nodes[0], lang)
    node = _name(fl, q.node, lang)
    if q.step == 0:
        text = say("quiz.q.seed", lang, target=target)
    elif q.to is not None:
        text = say("quiz.q.edge", lang, node=node, value=format_value(q.received), to=_name(fl, q.to, lang))
    else:
        text = say("quiz.q.node", lang, target=target, node=node)
    if text.startswith("the "):  # "The Pow op received ...", never "X received" for a variable x
        text = "The" + text[3:]
    size = int(np.size(q.value))
    if q.by_norm:
        hint = say("quiz.hint.norm", lang, shape="x".join(map(str, np.shape(q.value))))
    elif size > 1:
        hint = say("quiz.hint.tensor", lang, size=size)
    else:
        hint = say("quiz.hint.number", lang)
    return f"{text} {hint}"


def verdict_text(q: Question, a: Answer, lang: str = DEFAULT) -> str:
    """What the quiz says once a step is answered."""
    shown = format_value(q.value)
    return say(f"quiz.{a.outcome}", lang, typed=a.typed, value=shown)


def quiz_panel(fl: GradientFlow, step: int, answers: tuple[Answer, ...], lang: str = DEFAULT) -> str:
    """The quiz's HTML: the question of ``step``, the verdict once answered, the score per
    step. ``answers``: this target's."""
    q = question(fl, step)
    a = next((a for a in answers if a.step == q.step), None)
    parts = [f"<div class='tv-quiz-question'>{html.escape(question_text(fl, q, lang))}</div>"]
    if a is not None:
        cls = {"right": "tv-quiz-right", "wrong": "tv-quiz-wrong", "revealed": "tv-quiz-revealed"}[a.outcome]
        parts.append(f"<div class='tv-quiz-verdict {cls}'>{html.escape(verdict_text(q, a, lang))}</div>")
    parts.append(f"<div class='tv-quiz-score'>{html.escape(score_text(answers, fl.last_step + 1, lang))}</div>")
    parts.append(f"<div class='tv-quiz-steps'>{steps_strip(answers, fl.last_step + 1)}</div>")
    return "<div class='tv-quiz'>" + "".join(parts) + "</div>"


def score_text(answers: Iterable[Answer], steps: int, lang: str = DEFAULT) -> str:
    s = score(answers)
    return say("quiz.score", lang, right=s["right"], wrong=s["wrong"], revealed=s["revealed"], steps=steps)


_MARKS = {"right": "✓", "wrong": "✗", "revealed": "◎"}


def steps_strip(answers: Iterable[Answer], steps: int) -> str:
    """One cell per step: ✓ right, ✗ wrong, ◎ revealed, · not yet (the per-step score)."""
    by_step = {a.step: a.outcome for a in answers}
    cells = []
    for k in range(steps):
        outcome = by_step.get(k)
        mark = _MARKS.get(outcome, "·") if outcome else "·"
        cells.append(f"<span class='tv-quiz-cell tv-quiz-cell-{outcome or 'open'}' data-step='{k}'>{k} {mark}</span>")
    return " ".join(cells)


#: The same rule as :func:`numbers` and :func:`judge`, for the page's own script
#: (static/quiz.js: ES module exports, which node's tests import).
CHECK_JS = static_files.text("quiz.js")
