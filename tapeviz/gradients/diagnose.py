"""Why is my gradient None, NaN, Inf or zero? A diagnosis in a few sentences, with the fix.

Builds on GradientFlow's stop reasons: ``why_none`` says *what* cut the path (a reason,
its cause and the facts), this module picks what a person debugging a training loop
needs from those facts: which path, where, and what to change. A gradient that arrives
but is NaN, Inf or exactly zero is looked into by ``nonfinite.find`` (a Finding: the op,
the indices, the values, the pattern). The sentences come from the message catalogues
(``explain.<case>`` / ``fix.<case>``, ``numeric.*``), in any language, from the facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import tensorflow as tf

from ..messages import DEFAULT, check_lang, say
from .flow import GradientFlow
from .nonfinite import find
from .numeric import Finding, Pattern, Problem, index_text, number
from .stop_reasons import Cause, Reason, StopReason


@dataclass(frozen=True)
class Diagnosis:
    """The answer to "why is d target / d source None, NaN, Inf or zero?".

    ``reason`` is a stop reason (None gradients: tapeviz.gradients.stop_reasons.Reason)
    or a Problem (``non_finite``, ``zero``, ``forward``); for those, ``finding`` holds the
    facts (op, element indices, arriving gradient, local derivative, forward value, the
    source line) and ``pattern`` the known pattern. ``text(lang)`` says it in any language.
    """

    reason: Reason | Problem
    message: str  # what happened and where
    fix: str  # what to change
    where: Any = None  # node or edge where the path was cut, or the op where NaN / zero starts
    case: str = ""  # which explanation was given (explain.<case>, or the pattern's code)
    finding: Finding | None = None  # the facts of a NaN, Inf or zero gradient
    lang: str = DEFAULT  # the language of message and fix
    words: dict = field(default_factory=dict, repr=False, compare=False)  # the facts the sentences were written from

    @property
    def pattern(self) -> Pattern | None:
        """The known pattern of a NaN, Inf or zero gradient (None for a None gradient)."""
        return self.finding.pattern if self.finding is not None else None

    @property
    def line(self) -> int:
        """The line of the user's code that ran the op it names (0 when unknown)."""
        return self.finding.line if self.finding is not None else 0

    def in_language(self, lang: str) -> Diagnosis:
        """The same diagnosis, its sentences written in ``lang`` ("en", "zh")."""
        lang = check_lang(lang)
        if lang == self.lang:
            return self
        if self.finding is not None:
            message, fix = _numeric_sentences(self.words, lang)
        else:
            message, fix = say(f"explain.{self.case}", lang, **self.words), say(f"fix.{self.case}", lang, **self.words)
        return replace(self, message=message, fix=fix, lang=lang)

    def text(self, lang: str | None = None) -> str:
        """Message and fix, in ``lang`` (default: the diagnosis's own language)."""
        d = self if lang is None else self.in_language(lang)
        return f"{d.message}{say('numeric.join', d.lang)}{d.fix}"

    def summary(self, lang: str | None = None) -> str:
        """What is wrong and where it starts, without the pattern and the fix (a picture's
        caption); for a None gradient, the message."""
        d = self if lang is None else self.in_language(lang)
        if d.finding is None:
            return d.message
        return say("numeric.join", d.lang).join(_numeric_sentences(d.words, d.lang, short=True))

    def __str__(self) -> str:
        return self.text()


def explain_flow(fl: GradientFlow, source, lang: str = DEFAULT, index: Any = None) -> Diagnosis | None:
    """None when d target / d source is finite and not all zero (or, with ``index``, that
    element or row is not zero); otherwise the diagnosis: why it is None, NaN, Inf or zero."""
    g = fl.graph
    target = g.display_name(fl.target_nodes[0])
    name = _source_name(fl, source, lang)
    node = g.node_of(source) if not (isinstance(source, str) and source in g.nx) else source
    if node is None:
        if isinstance(source, tf.Variable) or isinstance(getattr(source, "path", None), str):
            return _say(Reason.UNCONNECTED, "never_used", lang, None, name=name, target=target)
        if _is_tensor(source) and not source.dtype.is_floating:
            return _say(Reason.INTEGER_DTYPE, "integer", lang, None, name=name, dtype=source.dtype.name, target=target)
        return _say(Reason.UNCONNECTED, "not_seen", lang, None, name=name, target=target)
    why = fl.why_none(source if not isinstance(source, str) else node)
    if why is None:
        if fl.unregistered:  # a gradient reaches source, yet tape.gradient raises for it
            op_node = next(iter(fl.unregistered))
            at = g.nx.nodes[op_node]["op_type"]
            return _say(Reason.NO_GRADIENT, "not_registered_elsewhere", lang, op_node, name=name, target=target, at=at)
        found = find(fl, node, source if not isinstance(source, str) else node, index)
        return None if found is None else _numeric(found, lang)
    return _diagnose(fl, node, name, target, why, lang)


def _say(reason: Reason, case: str, lang: str, where, **facts) -> Diagnosis:
    message, fix = say(f"explain.{case}", lang, **facts), say(f"fix.{case}", lang, **facts)
    return Diagnosis(reason, message, fix, where, case, lang=lang, words=facts)


def _numeric(found: Finding, lang: str) -> Diagnosis:
    words = _numeric_words(found)
    message, fix = _numeric_sentences(words, lang)
    return Diagnosis(found.problem, message, fix, found.node, found.pattern.value, found, lang, words)


def _numeric_words(f: Finding) -> dict:
    """The finding's facts as the sentences say them (numbers as text, indices as [0, 1])."""
    words = {k: v for k, v in f.as_dict().items() if k not in ("extra", "node", "edge", "safe_code")}
    for k in ("arriving", "local_value", "forward", "result"):
        words[k] = number(words[k])
    words["indices"] = index_text(f.indices, f.count)
    words["asked"] = "[" + ", ".join(str(k) for k in f.asked) + "]" if f.asked else ""
    words["op_indices"] = index_text(f.op_indices, len(f.op_indices))
    extra = dict(f.extra)
    for k in ("min", "max", "min_abs"):
        extra[k] = number(extra.get(k))
    extra["ids"] = (
        "["
        + ", ".join(str(i) for i in extra.get("ids", []))
        + ("…" if extra.get("ids_count", 0) > len(extra.get("ids", [])) else "")
        + "]"
    )
    extra.setdefault("ids_count", 0)
    words.update(extra)
    words["problem"], words["pattern"] = f.problem.value, f.pattern.value
    words["found"] = bool(f.op)
    words["op"] = f.label or f.op
    words["make_safe"], words["use_safe"] = f.safe_code or ("", "")
    return words


def _numeric_sentences(words: dict, lang: str, short: bool = False) -> tuple[str, ...]:
    """(message, fix), or with ``short`` the message's first two sentences: what, and where it starts."""
    problem, pattern = words["problem"], words["pattern"]
    parts = [say(f"numeric.lead.{problem}", lang, **words)]
    origin = problem if words["found"] else ("seed" if words["seeded"] else "none")
    parts.append(say(f"numeric.origin.{origin}", lang, **words))
    if short:
        return tuple(parts)
    said = say(f"numeric.pattern.{pattern}", lang, **words) if words["found"] else ""
    if said:
        parts.append(said)
    fix = say(f"numeric.fix.{pattern if words['found'] else origin}", lang, **words)
    return say("numeric.join", lang).join(parts), fix


def _is_tensor(x) -> bool:
    return isinstance(x, tf.Tensor) and not isinstance(x, tf.Variable)


def _source_name(fl: GradientFlow, source, lang: str) -> str:
    g = fl.graph
    if isinstance(source, str) and source in g.nx:
        return g.display_name(source)
    node = g.node_of(source)
    if node is not None and g.nx.nodes[node].get("name"):
        return g.nx.nodes[node]["name"]
    named = g.capture.name_of_object(source)
    if named:
        return named
    return getattr(source, "name", None) or say("word.this_tensor", lang)


def _where_op(fl: GradientFlow, why: StopReason, lang: str) -> str:
    g = fl.graph
    origin = why.origin
    if isinstance(origin, tuple):
        v = origin[1]
        return g.nx.nodes[v].get("op_type") or g.display_name(v)
    if origin is not None and origin in g.nx:
        return g.nx.nodes[origin].get("op_type") or g.display_name(origin)
    return say("word.an_op", lang)


def _diagnose(fl: GradientFlow, node, name: str, target: str, why: StopReason, lang: str) -> Diagnosis:
    g = fl.graph
    d = g.nx.nodes[node]
    r, cause, facts = why.reason, why.cause, why.facts
    at = _where_op(fl, why, lang)
    base = dict(name=name, target=target, at=at)
    if r is Reason.STOP_GRADIENT:
        return _say(r, "stop_gradient", lang, why.origin, **base)
    if r is Reason.NOT_RECORDED:
        case = "paused" if cause is Cause.PAUSED else "before_reset"
        return _say(r, case, lang, why.origin, **base)
    if r is Reason.NOT_WATCHED:
        return _not_watched(fl, node, why, lang, base)
    if r is Reason.INTEGER_DTYPE:
        info = g.output_info(node) if d["kind"] != "op" else None
        if info is not None and not info.trainable:
            return _say(r, "integer", lang, why.origin, dtype=info.dtype, **base)
        return _say(r, "integer_on_path", lang, why.origin, detail=why.text(lang), **base)
    if r is Reason.NO_GRADIENT:
        case = "not_registered" if cause is Cause.NOT_REGISTERED else "no_gradient"
        return _say(r, case, lang, why.origin, **base)
    if r is Reason.STATEFUL:
        return _say(r, "assigned", lang, why.origin, variable=facts.variable or say("word.a_variable", lang), **base)
    if r is Reason.OUTSIDE_TF:
        case = {Cause.LEFT: "left", Cause.LEFT_UNSEEN: "left_unseen"}.get(cause, "round_trip")
        return _say(
            r,
            case,
            lang,
            why.origin,
            source=facts.source,
            via=facts.via,
            expression=facts.expression,
            line=facts.line,
            tf_equivalent=facts.tf_equivalent,
            back=facts.back,
            back_line=facts.back_line,
            **base,
        )
    if cause is Cause.NEVER_USED:
        return _say(Reason.UNCONNECTED, "never_used", lang, why.origin, **base)
    return _say(Reason.UNCONNECTED, "unconnected", lang, why.origin, **base)


def _not_watched(fl: GradientFlow, node, why: StopReason, lang: str, base: dict) -> Diagnosis:
    g = fl.graph
    d = g.nx.nodes[node]
    kind = d["kind"]
    r = Reason.NOT_WATCHED
    if kind == "variable":
        case = "non_trainable" if not d["trainable"] else "unwatched_variable"
        return _say(r, case, lang, node, **base)
    if kind == "input":
        return _say(r, "plain_tensor", lang, node, **base)
    if kind == "constant":
        return _say(r, "constant", lang, node, **base)
    origin = why.origin
    is_node = origin is not None and not isinstance(origin, tuple) and origin in g.nx
    origin_name = g.display_name(origin) if is_node else ""
    return _say(r, "derived", lang, origin, origin=origin_name, **base)
