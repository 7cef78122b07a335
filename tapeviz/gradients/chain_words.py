"""The chain rule at a step, written: ChainStep and GroupStep values as lines of text.

Every number comes from the step's values (TensorFlow's), every word from the message
catalogues (``chain.*``); nothing here computes a gradient or reads a sentence back.
"""

from __future__ import annotations

import string

from ..messages import describe, say
from ..record.values import shape_text
from . import formulas
from .chain_steps import Amount, ChainStep, GroupStep, Link, Term

__all__ = ["step_lines", "group_lines", "link_line"]


def _d(top: str, bottom: str) -> str:
    return f"∂{top}/∂{bottom}"


def _g(name: str) -> str:
    return f"g_{name}"


def step_lines(step: ChainStep, lang: str) -> list[str]:
    """The step's chain rule: the seed, or the sum that arrived, what each input gets, and
    why the inputs nothing reaches get nothing."""
    z = step.target
    if step.index == 0:
        seed = step.arriving.text if step.arriving is not None else "None"
        if step.value is not None:
            return [say("chain.seed_value", lang, target=z, value=step.value.text, seed=seed)]
        return [say("chain.seed", lang, target=z, seed=seed)]
    lines = []
    if len(step.terms) > 1:
        lines.append(_sum_line(z, step.name, step.terms, step.arriving, lang))
    if step.read is not None and (read := _read_line(step, lang)):
        lines.append(read)
    twice = {link.input for link in step.links if sum(other.input == link.input for other in step.links) > 1}
    for link in step.links:
        lines.append(link_line(link, z, step.name, lang, by_arg=link.input in twice))
    for link in step.stopped:
        assert link.stop is not None
        lines.append(say("chain.stopped", lang, d=_d(z, link.input), reason=describe(link.stop, lang)))
    passed = {link.edge for link in step.links}
    for name, total, terms in step.completed:
        if len(terms) == 1 and terms[0].edge in passed:
            continue  # the one path it has was just written as a link
        if len(terms) > 1:
            lines.append(_sum_line(z, name, terms, total, lang))
        else:
            lines.append(say("chain.total", lang, d=_d(z, name) if total.scalar else _g(name), value=total.text))
    return lines


def _sum_line(z: str, name: str, terms: tuple[Term, ...], total: Amount | None, lang: str) -> str:
    scalar = all(t.amount.scalar for t in terms)
    left = _d(z, name) if scalar else _g(name)
    parts = " + ".join(t.amount.text for t in terms)
    consumers = ", ".join(t.consumer for t in terms)
    result = "" if total is None else total.text
    return say("chain.sum", lang, left=left, parts=parts, total=result, n=len(terms), consumers=consumers)


def _read_line(step: ChainStep, lang: str) -> str:
    assert step.read is not None
    i, n = step.read
    z, x = step.target, step.name
    value = step.arriving.text if step.arriving is not None else "None"
    if n == 1:
        if len(step.terms) > 1:
            return ""  # the sum line above said it
        return say("chain.total", lang, d=_d(z, x) if _scalar(step.arriving) else _g(x), value=value)
    line = say("chain.read_part", lang, d=_d(z, x) if _scalar(step.arriving) else _g(x), i=i, n=n, value=value)
    if step.total is not None:
        d = _d(z, x) if step.total.scalar else _g(x)
        line += "; " + say("chain.read_total", lang, d=d, n=n, value=step.total.text)
    return line


def _shape(shape: tuple, lang: str) -> str:
    """A shape as the line writes it: 2×3, or the catalogue's word for a scalar (标量 in zh)."""
    return shape_text(shape) if len(shape) else say("chain.scalar", lang)


def _scalar(a: Amount | None) -> bool:
    return a is not None and a.scalar


def link_line(link: Link, z: str, p: str, lang: str, by_arg: bool = False) -> str:
    """One input's gradient by the chain rule: with numbers when all are scalars
    (``∂z/∂x = ∂z/∂p · ∂p/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0``), else as a
    vector–Jacobian product with shapes and norm (``g_x = g_y·Wᵀ: (2×4)·(4×3) → 2×3, ‖g_x‖ 0.88``).
    ``by_arg``: the input comes in twice (``x * x``): each line says which argument it is."""
    assert link.result is not None
    line = _scalar_line(link, z, p, lang) if link.scalar else _tensor_line(link, p, lang)
    return say("chain.as_arg", lang, arg=link.arg, line=line) if by_arg else line


def _scalar_line(link: Link, z: str, p: str, lang: str) -> str:
    x = link.input
    assert link.arriving is not None and link.result is not None
    g, result = link.arriving.text, link.result.text
    chain = [_d(z, x), f"{_d(z, p)} · {_d(p, x)}"]
    if link.formula is not None and not isinstance(link.formula, formulas.Num):
        chain.append(f"{g} × {_bracketed(link.formula, lang)}")
    if link.local is not None:
        chain.append(f"{g} × {link.local.text}")
    elif isinstance(link.formula, formulas.Num):
        chain.append(f"{g} × {formulas.render(link.formula, lang)}")
    chain.append(result)
    line = " = ".join(chain)
    if link.partial is None:
        key = "chain.custom" if link.via else "chain.registered"
        line += " " + say(key, lang, op=link.op, via=link.via)
    return line


def _tensor_line(link: Link, p: str, lang: str) -> str:
    x = link.input
    assert link.result is not None
    gp = _g(p)
    arriving = link.arriving.shape if link.arriving is not None else ()
    partial = link.partial
    if partial is not None and partial.local is not None:
        assert link.formula is not None
        if link.formula == formulas.Num(1.0):
            product, shapes = gp, f"({_shape(arriving, lang)})"
        else:
            product = f"{gp} ⊙ {_bracketed(link.formula, lang)}"
            shapes = f"({_shape(arriving, lang)}) ⊙ ({_shape(arriving, lang)})"
    elif partial is not None:
        names = {**link.names, "g": gp}
        fields = {**{arg: arg for arg in _fields(partial.vjp)}, **names}
        product = partial.vjp.format(**fields)
        shapes = partial.joiner.join(
            f"({_shape(_operand_shape(link, arg, t, arriving), lang)})" for arg, t in partial.operands
        )
    else:
        key = "chain.custom_of" if link.via else "chain.registered_of"
        product = say(key, lang, op=link.op, g=gp, via=link.via)
        shapes = f"({_shape(arriving, lang)})"
    result = link.result
    line = say(
        "chain.vjp",
        lang,
        g=_g(x),
        product=product,
        shapes=shapes,
        shape=_shape(result.shape, lang),
        norm=f"{result.norm:.3g}",
        values=f" = {result.text}" if result.value.size <= 6 else "",  # few numbers: them too
    )
    if partial is not None and partial.local is not None and tuple(result.shape) != tuple(arriving):
        line += " " + say("chain.unbroadcast", lang)
    return line


def _bracketed(formula: formulas.Expr, lang: str) -> str:
    """A factor in a product: ``(2·x)``; a conditional writes its own brackets."""
    text = formulas.render(formula, lang)
    return text if isinstance(formula, formulas.Call) and formula.fn == "where" else f"({text})"


def _operand_shape(link: Link, arg: str, transposed: bool, arriving: tuple) -> tuple:
    shape = arriving if arg == "g" else link.shapes.get(arg, ())
    return (*shape[:-2], shape[-1], shape[-2]) if transposed and len(shape) >= 2 else shape


def _fields(template: str) -> list[str]:
    """The names a vjp template's fields hold ("{g}·{b}ᵀ" -> g, b): the table writes them."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def group_lines(group: GroupStep, lang: str) -> list[str]:
    """A collapsed group's line: the gradient in at its outputs and out to its inputs."""
    outs = ", ".join(name for name, _ in group.inputs)
    ins = ", ".join(name for name, _ in group.outputs)
    # nothing passed out (yet): say so, not "passes out ‖g‖ 0 to its inputs ()"
    key = "chain.group"
    if not group.inputs:
        key = "chain.group_nothing_in"
    elif not group.outputs:
        key = "chain.group_nothing_out_yet" if group.later else "chain.group_nothing_out"
    lines = [
        say(
            key,
            lang,
            name=group.name,
            norm_in=f"{group.norm_in:.3g}",
            norm_out=f"{group.norm_out:.3g}",
            outputs=outs,
            inputs=ins,
        )
    ]
    for name, a in group.outputs:
        lines.append(f"  {_g(name)}: {a.text}")
    return lines
