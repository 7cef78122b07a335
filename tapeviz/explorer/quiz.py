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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gradients import formulas
from ..gradients.chain_rule import ChainRule, symbols
from ..gradients.chain_steps import Link
from ..gradients.flow import GradientFlow
from ..messages import DEFAULT, localize, say
from ..picture.marks import Hidden
from ..record.values import format_value
from . import static_files

__all__ = [
    "ASKS",
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
#: What a quiz asks at an op's step: the gradient it passes (today's question), the local
#: derivative of one input (∂p/∂x at the input's value), the missing factor of the chain
#: rule's product ("1.0 × ? = 4.0"), or by turns all three ("chain"). A step with no scalar
#: link whose local derivative TF computed (a tensor step, the seed, a variable's total)
#: asks for the gradient.
ASKS = ("gradient", "local", "product", "chain")
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
    kind: str = "gradient"  # one of ASKS but "chain": what is asked
    link: Link | None = field(default=None, repr=False, compare=False)  # "local" / "product": the chain rule's link

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


def check_ask(ask: str) -> str:
    """``ask`` if it is one of :data:`ASKS`, else a ValueError naming them."""
    if ask not in ASKS:
        raise ValueError(f"quiz={ask!r}: a quiz asks one of {', '.join(map(repr, ASKS))} (or quiz=True: the gradient).")
    return ask


def question(fl: GradientFlow, step: int, ask: str = "gradient", rule: ChainRule | None = None) -> Question:
    """The question of ``step`` (0 seeds the target: "what is dy/dy?"). ``ask``: one of
    :data:`ASKS`; ``rule``: the flow's chain rule (made here when not given). The answer of
    a chain-rule question is TF's local derivative (the op's registered gradient function
    called with ones: the ChainStep's ``local``), never the table's formula evaluated."""
    k = fl.check_step(step)
    kind = check_ask(ask)
    if kind == "chain":
        kind = ("local", "product", "gradient")[(k - 1) % 3]
    if kind != "gradient" and k > 0:
        rule = rule if rule is not None else ChainRule(fl)
        links = [lk for lk in rule[k].links if lk.scalar and lk.local is not None]
        if links:
            lk = links[0]
            st = fl.steps[k]
            received = st.grad[0] if isinstance(st.grad, list) else st.grad
            return Question(
                k, st.node, to=lk.edge[0], edge=tuple(lk.edge), value=lk.local.value,  # type: ignore[union-attr]
                received=received, kind=kind, link=lk,
            )  # fmt: skip
    return _gradient_question(fl, k)


def _gradient_question(fl: GradientFlow, k: int) -> Question:
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
    if q.link is not None:
        text = _chain_text(fl, q, lang)
    elif q.step == 0:
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


def _chain_text(fl: GradientFlow, q: Question, lang: str) -> str:
    """A chain-rule question: the local derivative at the inputs' values, or the missing
    factor of the product; every number in it is TF's (the ChainStep's)."""
    lk = q.link
    assert lk is not None and lk.arriving is not None and lk.result is not None
    names = symbols(fl)  # as the chain rule's lines call them
    p, x = names[q.node], lk.input
    d = f"∂{p}/∂{x}"
    if q.kind == "local":
        formula = (
            formulas.render(lk.formula, lang) if lk.formula is not None else say("quiz.q.registered", lang, op=lk.op)
        )
        # the inputs the formula names (not a constant put in, as Pow's exponent)
        at = ", ".join(f"{lk.names[arg]} = {a.text}" for arg, a in lk.values.items() if a.scalar and arg in lk.names)
        return say("quiz.q.local", lang, d=d, formula=formula, at=at or "—")
    target = names[fl.target_nodes[0]]
    return say(
        "quiz.q.product",
        lang,
        d=d,
        left=f"∂{target}/∂{x}",
        dp=f"∂{target}/∂{p}",
        g=lk.arriving.text,
        result=lk.result.text,
    )


def verdict_text(q: Question, a: Answer, lang: str = DEFAULT) -> str:
    """What the quiz says once a step is answered."""
    shown = format_value(q.value)
    return say(f"quiz.{a.outcome}", lang, typed=a.typed, value=shown)


def quiz_panel(
    fl: GradientFlow,
    step: int,
    answers: tuple[Answer, ...],
    lang: str = DEFAULT,
    ask: str = "gradient",
    rule: ChainRule | None = None,
) -> str:
    """The quiz's HTML: the question of ``step``, the verdict once answered, the score per
    step. ``answers``: this target's; ``ask``, ``rule``: as :func:`question` takes them."""
    q = question(fl, step, ask, rule)
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
