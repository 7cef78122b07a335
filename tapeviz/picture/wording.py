"""Wording: the texts a picture writes on boxes and edges (titles, values, gradients).

Every number comes from the records and the flow; every sentence from the message catalogue."""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from ..messages import DEFAULT, say
from ..record.graph import TapeGraph
from ..record.records import user_scope
from ..record.values import GRAD_NORM, format_value
from .frames import frame_of
from .names import OPERATORS, call_title, short_names
from .visibility import Shown


def is_bad(value) -> bool:
    """NaN or Inf anywhere in a float value (those are drawn in the theme's ``bad`` colour)."""
    if value is None:
        return False
    a = np.asarray(value)
    if a.dtype.kind not in "fc":
        return False
    if a.size == 1:
        return not math.isfinite(abs(a.item()))
    return not np.isfinite(a).all()


def node_title(graph: TapeGraph, node, display: Shown | None = None, lang: str = DEFAULT) -> str:
    """First line of a box: the user's name for it, else what it is."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        dd = display.nx.nodes[node]
        if dd.get("group_kind") == "api":
            return call_title(dd["name"], "")
        if dd.get("group_kind") == "repeat":  # one op of every step of a loop
            first = display.members[node][0]
            return say("ui.group.repeat_title", lang, name=node_title(graph, first, None, lang), n=dd["repeat"])
        name = dd["name"]
        if dd.get("step_range"):
            return name + step_range(dd["step_range"], lang)
        if dd.get("alike"):
            name = say("ui.group.alike", lang, name=name, n=dd["alike"])
        return f"{name} (call {dd['call'] + 1})" if dd.get("call") else name
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        return display.nx.nodes[node]["op_type"]
    d = graph.nx.nodes[node]
    if d.get("name"):
        return d["name"]
    if d["kind"] == "op":
        return d.get("function") or gathered_title(graph, node, display, lang) or _written(graph, d, node, display)
    return say("ui.kind.constant", lang) if d["kind"] == "constant" else d["label"]


#: Ops that gather a loop's values into one tensor, and how their title says it.
GATHERS = {"Pack": "ui.gathered.stack", "ConcatV2": "ui.gathered.stack", "AddN": "ui.gathered.sum"}


def gathered_title(graph: TapeGraph, node, display: Shown | None = None, lang: str = DEFAULT) -> str | None:
    """The title of an op that gathers the values a loop collected (``tf.stack(log_probs)``,
    ``tf.add_n(losses)``): how many and what, ``stack of 20 log_probs``. What is named by the
    list that held the values in the user's frame, else by the op a folded repeat box draws
    for them (``Σ 20 LogSoftmax``); None when the op gathers no loop's values."""
    d = graph.nx.nodes[node]
    key = GATHERS.get(d.get("op_type", ""))
    if key is None:
        return None
    g = graph.nx
    sources = [u for u, _ in g.in_edges(node)]
    if len(sources) < 2:
        return None
    listed = {g.nodes[u].get("listed") for u in sources}
    if len(listed) == 1 and None not in listed:
        return say(key, lang, n=len(sources), name=listed.pop())
    if display is None:
        return None
    boxes = {display.of.get(u) for u in sources}
    box = boxes.pop() if len(boxes) == 1 else None
    if box is None or display.nx.nodes[box].get("group_kind") != "repeat":
        return None
    return say(key, lang, n=len(sources), name=node_title(graph, display.members[box][0], None, lang))


def step_range(steps: tuple[int, int], lang: str = DEFAULT) -> str:
    """What follows a loop's group name on the box of some of its steps: `` ×19 (steps 1–19)``,
    `` (step 0)``."""
    first, last = steps
    if first == last:
        return say("ui.group.one_step", lang, k=first)
    return say("ui.group.step_range", lang, n=last - first + 1, first=first, last=last)


def _written(graph: TapeGraph, d, node=None, display: Shown | None = None) -> str:
    """An op's title by the call that ran it: the user's own TF call or operator when it
    ran outside every layer and is the one op of that call drawn (see :func:`call_title`),
    else its op type (an opened call's ops, and a target beside its call's box, are parts
    of the call)."""
    if d.get("op_index") is None:
        return d["op_type"]
    if d.get("scope") and (display is None or _in_builtin(graph, display, node)):
        return d["op_type"]  # a part of a Keras layer's or loss's work, not a call the user wrote
    op = graph.capture.ops[d["op_index"]]
    if op.api and display is not None and _drawn_calls(graph, display).get((op.api, op.api_call), 0) > 1:
        return d["op_type"]
    return call_title(op.api, d["op_type"])


def _in_builtin(graph: TapeGraph, display: Shown, node) -> bool:
    """Whether an op ran inside a Keras layer of Keras's own or a loss (its ops are Keras's
    code: ResNet50's residual Add layer is AddV2), rather than in the call of a model or
    layer the user wrote."""
    cap = graph.capture
    scope = graph.nx.nodes[node].get("scope") or ""
    if not user_scope(scope, getattr(cap, "layer_scopes", ()), getattr(cap, "loss_scopes", ())):
        return True
    tree = display.tree
    if tree is None:
        return True
    return any(tree.groups[gid].builtin or tree.groups[gid].kind == "loss" for gid in tree.paths.get(node, ()))


_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _drawn_calls(graph: TapeGraph, display: Shown) -> dict:
    """(API name, call number) -> how many drawn ops (in boxes or in closed groups) it ran."""
    got = _CALLS.get(display)
    if got is None:
        got = {}
        ops = graph.capture.ops
        for members in display.members.values():
            for m in members:
                d = graph.nx.nodes[m]
                if d["kind"] == "op" and d.get("op_index") is not None:
                    op = ops[d["op_index"]]
                    if op.api:
                        got[(op.api, op.api_call)] = got.get((op.api, op.api_call), 0) + 1
        _CALLS[display] = got
    return got


def _tip(graph: TapeGraph, node, display: Shown | None, title: str) -> str:
    """An op's tooltip when its title is the call that ran it: the call and the op type."""
    d = graph.nx.nodes[node]
    if d.get("kind") == "op" and not d.get("name") and gathered_title(graph, node, display) is not None:
        return f"{title}: {d['op_type']}"
    if d.get("kind") != "op" or d.get("function") or _written(graph, d, node, display) == d["op_type"]:
        return title
    api = graph.capture.ops[d["op_index"]].api
    return f"{api}: {d['op_type']}" if api else f"{title}: {d['op_type']}"


def _path(graph: TapeGraph, node, display: Shown | None) -> str:
    """A box's full name when it has one: a layer's Keras path, a variable's or a tensor's
    name (``generator/dense/kernel``, ``loss``); '' for ops and constants named by type."""
    if display is not None:
        dd = display.nx.nodes[node]
        if dd.get("kind") == "layer":
            # an API call and a derivative ("du = ∂u/∂pts": its "/" is a fraction bar) are their name
            return "" if dd.get("group_kind") in ("api", "derivative", "repeat") else dd["layer"]
        if dd.get("kind") == "inner":
            return ""
    return graph.nx.nodes[node].get("name") or ""


def box_names(
    graph: TapeGraph, display: Shown | None = None, lang: str = DEFAULT, unframed=frozenset()
) -> dict[Any, tuple[str, str]]:
    """(title, full name) of every box. A named box's title is the shortest end of its path
    that no other box's path ends with (see :func:`tapeviz.picture.names.short_names`): the
    model's prefix and the parts every box shares drop away, the full name stays as the tooltip.
    Inside a frame, a title is named below the frame's group (open groups ``unframed`` have
    none drawn: their boxes are named as if they were outside)."""
    nodes = list((display.nx if display is not None else graph.nx).nodes)
    paths = {n: p for n in nodes if (p := _path(graph, n, display))}
    short = _in_frames(paths, display, unframed)
    out = {}
    for n in nodes:
        if n not in paths:
            title = node_title(graph, n, display, lang)
            plain = display is None or display.nx.nodes[n].get("kind") not in ("layer", "inner")
            out[n] = (title, _tip(graph, n, display, title) if plain else title)
            continue
        dd = display.nx.nodes[n] if display is not None else {}
        call, alike = dd.get("call"), dd.get("alike")
        more = f" (call {call + 1})" if call else ""
        if dd.get("steps"):  # the model called once per step of a loop
            more = say("ui.group.steps", lang, n=dd["steps"])
        if dd.get("step_range"):  # the steps of an opened loop before or after the one drawn opened
            more = step_range(dd["step_range"], lang)
        if alike:  # a run of alike blocks: "conv3_block2–4 (3 alike)"
            out[n] = (
                say("ui.group.alike", lang, name=short[n], n=alike),
                say("ui.group.alike", lang, name=paths[n], n=alike),
            )
            continue
        out[n] = (short[n] + more, paths[n] + more)
    return out


def _in_frames(paths: dict, display: Shown | None, unframed=frozenset()) -> dict:
    """Each path's short name in the frame it is drawn in: the path below the frame's group
    (``dense``, not ``block1/dense``, in block1's frame), shortened among the frame's boxes
    (:func:`short_names`). Boxes in no frame are shortened among themselves."""
    if display is None or display.tree is None:
        return short_names(paths)
    by_frame: dict = {}
    for n, p in paths.items():
        frame = frame_of(display, n, unframed)
        if frame is not None and p.startswith(frame + "/"):
            p = p[len(frame) + 1 :]
        by_frame.setdefault(frame, {})[n] = p
    out: dict = {}
    for inside in by_frame.values():
        out.update(short_names(inside))
    return out


def _op_label(d) -> str:
    """`Mul`, or `tf.function f` for a function call / custom-gradient entry."""
    return f"{d['via']} {d['function']}" if d.get("via") else d["op_type"]


def node_subtitle(graph: TapeGraph, node, display: Shown | None = None, lang: str = DEFAULT) -> str:
    """Middle line: the op type when the title is the user's name for the op."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        members = display.members[node]
        ops = sum(1 for m in members if graph.nx.nodes[m]["kind"] == "op")
        dd = display.nx.nodes[node]
        return say(f"ui.group.{dd.get('group_kind', 'layer')}", lang, n=ops, call=dd.get("note") or "")
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        fn = display.nx.nodes[node]["function"]
        return say("ui.group.inner", lang, function=graph.nx.nodes[fn].get("function", ""))
    d = graph.nx.nodes[node]
    if d["kind"] != "op":
        return ""
    if d.get("name"):
        written = "" if d.get("via") else _written(graph, d, node, display)
        # a named op says the call the user wrote (not an operator's symbol), else its type
        return written if written not in ("", d["op_type"], *OPERATORS.values()) else _op_label(d)
    if not d.get("via") and _written(graph, d, node, display) != d["op_type"]:
        return d["op_type"]  # titled by the call that ran it: the op type is said below
    return d.get("via") or ""


def node_value(graph: TapeGraph, node, display: Shown | None = None) -> tuple[Any, dict | None] | None:
    """(value, summary) a box's bottom line writes: its forward value; a layer's is its
    output's; None when the box has none."""
    dd = display.nx.nodes[node] if display is not None else {}
    if display is not None and dd.get("kind") == "layer":
        ops = [m for m in display.members[node] if graph.nx.nodes[m]["kind"] == "op"]
        node = ops[-1] if ops else display.members[node][-1]
    elif dd.get("kind") == "inner":
        # TF keeps no per-op values inside a function call; the ops it returns have the call's outputs
        outs = graph.nx.nodes[dd["function"]].get("outputs") or []
        j = dd.get("ret_index")
        if j is None or j >= len(outs):
            return None
        returned = graph.tensors[outs[j]]
        return returned.value, returned.summary
    info = graph.output_info(node)
    return None if info is None else (info.value, info.summary)


def node_value_text(graph: TapeGraph, node, display: Shown | None = None) -> str:
    """Bottom line: the forward value (or its summary) written whole; a layer shows its
    output's (a box fits it to its room with :func:`tapeviz.picture.value_text.fit_value`)."""
    got = node_value(graph, node, display)
    return "" if got is None else format_value(*got)


#: Causes whose stops carry a short label of their own instead of their reason's code.
OWN_EDGE_LABEL = frozenset({"not_registered", "never_used"})


def edge_code(stop) -> str:
    """The message key of a stop's short label: ``ui.edge.<cause>`` for a cause in
    OWN_EDGE_LABEL (TF raises there; a branch that never ran), else ``ui.edge.<reason>``."""
    cause = stop.cause.value
    return f"ui.edge.{cause}" if cause in OWN_EDGE_LABEL else f"ui.edge.{stop.reason.value}"


def grad_text(value) -> str:
    """What a box shows under it for the gradient that reached it."""
    return "∂ " + ("None" if value is None else format_value(np.asarray(value), norm=GRAD_NORM))
