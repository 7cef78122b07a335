"""Why is my gradient None? A diagnosis in one or two sentences, with the fix.

Builds on GradientFlow's stop reasons: ``why_none`` says *what* cut the path, this module
says it the way a person debugging a training loop needs it: which path, where, and
what to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from .flow import GradientFlow, StopReason


@dataclass(frozen=True)
class Diagnosis:
    """The answer to "why is d target / d source None?"."""

    reason: str  # a stop reason code (see tapeviz.flow.REASONS)
    message: str  # what happened and where
    fix: str  # what to change
    where: Any = None  # node or edge where the path was cut

    def __str__(self) -> str:
        return f"{self.message} {self.fix}"


def explain_flow(fl: GradientFlow, source) -> Diagnosis | None:
    """None when a gradient reaches source; otherwise the diagnosis."""
    g = fl.graph
    target = g.display_name(fl.target_nodes[0])
    name = _source_name(fl, source)
    node = g.node_of(source) if not (isinstance(source, str) and source in g.nx) else source
    if node is None:
        if isinstance(source, tf.Variable):
            return Diagnosis(
                "unconnected",
                f"{name} was never used while the tape was recording, so {target} does not depend on it.",
                "Check the code path: an if/else or loop may have skipped it, or it was used outside the `with` block.",
            )
        if _is_tensor(source) and not source.dtype.is_floating:
            return _integer(name, source.dtype.name, target)
        return Diagnosis(
            "unconnected",
            f"{name} is not something the tape saw: it was not used inside the `with` block.",
            "Compute with it inside the block (and tape.watch it if it is a plain tensor).",
        )
    why = fl.why_none(source if not isinstance(source, str) else node)
    if why is None:
        return None
    return _diagnose(fl, node, name, target, why)


def _is_tensor(x) -> bool:
    return isinstance(x, tf.Tensor) and not isinstance(x, tf.Variable)


def _source_name(fl: GradientFlow, source) -> str:
    g = fl.graph
    if isinstance(source, str) and source in g.nx:
        return g.display_name(source)
    node = g.node_of(source)
    if node is not None and g.nx.nodes[node].get("name"):
        return g.nx.nodes[node]["name"]
    named = g.capture.names.get(id(source))
    if named:
        return named
    return getattr(source, "name", None) or "this tensor"


def _integer(name: str, dtype: str, target: str) -> Diagnosis:
    return Diagnosis(
        "integer_dtype",
        f"{name} is {'an' if dtype[:1] in 'aeiou' else 'a'} {dtype} tensor; gradients only exist for floating-point tensors.",
        f"Cast it to float32 before the tape (tf.cast({name}, tf.float32)) and compute {target} from that.",
    )


def _assigned_name(fl: GradientFlow, origin) -> str:
    g = fl.graph
    if isinstance(origin, tuple):
        for u, _, _, d in g.data_edges(origin[1], out=False):
            if g.nx.nodes[u]["kind"] == "variable" and g.tensors[d["tensor"]].dtype == "resource":
                return g.display_name(u)
    return "a variable"


def _where_op(fl: GradientFlow, why: StopReason) -> str:
    g = fl.graph
    origin = why.origin
    if isinstance(origin, tuple):
        v = origin[1]
        return g.nx.nodes[v].get("op_type") or g.display_name(v)
    if origin is not None and origin in g.nx:
        return g.nx.nodes[origin].get("op_type") or g.display_name(origin)
    return "an op"


def _diagnose(fl: GradientFlow, node, name: str, target: str, why: StopReason) -> Diagnosis:
    g = fl.graph
    d = g.nx.nodes[node]
    r = why.reason
    at = _where_op(fl, why)
    if r == "stop_gradient":
        return Diagnosis(r, f"{name} is read through tf.stop_gradient on its way to {target}, so the tape sends no gradient back to it.",
                         f"Remove tf.stop_gradient there to get d{target}/d{name}.", why.origin)
    if r == "not_recorded":
        if "reset" in why.message:
            return Diagnosis(r, f"The ops between {name} and {target} ran before tape.reset(), which erased them.",
                             f"Compute {target} after the reset, or drop the reset.", why.origin)
        return Diagnosis(r, f"The path from {name} to {target} ran inside tape.stop_recording() ({at} was not recorded).",
                         "Move that computation out of the stop_recording() block.", why.origin)
    if r == "not_watched":
        return _not_watched(fl, node, name, target, why)
    if r == "integer_dtype":
        if d["kind"] != "op" and g.output_info(node) is not None and not g.output_info(node).trainable:
            return _integer(name, g.output_info(node).dtype, target)
        return Diagnosis(r, f"On the way from {name} to {target} the value becomes an integer ({why.message})",
                         "Keep the computation in floating point (e.g. tf.round instead of casting to int).", why.origin)
    if r == "no_gradient":
        return Diagnosis(r, f"The path from {name} to {target} goes through {at}, which has no gradient in TensorFlow.",
                         f"Replace {at} with a differentiable op (or a straight-through trick) on that path.", why.origin)
    if r == "stateful":
        var = _assigned_name(fl, why.origin)
        return Diagnosis(r, f"{name} reaches {target} only through a variable update: {at} writes it into {var}.",
                         "The tape does not differentiate through assign/assign_add: use the tensor itself in the computation.",
                         why.origin)
    if r == "outside_tf":
        return Diagnosis(r, f"{name} left TensorFlow through .numpy() and came back as a constant, so the tape lost the path to {target}.",
                         "Keep the computation in TensorFlow ops instead of going through NumPy or Python numbers.", why.origin)
    return Diagnosis("unconnected", f"{target} does not depend on {name}: no recorded path leads from {name} to {target}.",
                     f"Check that {target} is computed from {name} inside the block (a branch or loop may have skipped it).",
                     why.origin)


def _not_watched(fl: GradientFlow, node, name: str, target: str, why: StopReason) -> Diagnosis:
    g = fl.graph
    d = g.nx.nodes[node]
    kind = d["kind"]
    if kind == "variable":
        if not d["trainable"]:
            return Diagnosis("not_watched", f"{name} is a non-trainable variable (trainable=False), so the tape does not watch it.",
                             f"Create it with trainable=True, or call tape.watch({name}) inside the block.", node)
        return Diagnosis("not_watched", f"The tape was created with watch_accessed_variables=False, so it ignores {name} unless told.",
                         f"Call tape.watch({name}) inside the block.", node)
    if kind == "input":
        return Diagnosis("not_watched",
                         f"{name} is a plain tf.Tensor made before the tape, not a tf.Variable, and the tape only tracks "
                         "tensors it was told to watch.",
                         f"Call tape.watch({name}) inside the block. If {name} used to be a variable, `{name} = {name} + 1` "
                         f"replaced it by a tensor: update it in place with {name}.assign_add(1) instead.",
                         node)
    if kind == "constant":
        return Diagnosis("not_watched", f"{name} is a constant created inside the block, and the tape does not watch constants.",
                         f"Make it a tf.Variable or call tape.watch({name}) right after creating it.", node)
    origin = why.origin
    origin_name = g.display_name(origin) if origin is not None and not isinstance(origin, tuple) and origin in g.nx else None
    return Diagnosis("not_watched",
                     f"{name} was computed only from values the tape does not watch"
                     f"{' (starting at ' + origin_name + ')' if origin_name else ''}, so it is not on the tape.",
                     "Watch the inputs it comes from (tape.watch) or make them tf.Variables.", origin)
