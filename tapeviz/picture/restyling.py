"""A scene's records restyled for one backward step: what each box, edge and title says.

:class:`Restyling` is the half of :class:`~tapeviz.picture.scene.Scene` that runs on every
step and every clipping move: ``set_step(k)`` writes the gradient texts, colours, line
widths and the title for the pass after steps 0..k, from the GradientFlow, into records
that the scene built and placed once (nothing is created or moved here). Texts are fitted
to the room the placement left them; a fitted text that can no longer change (its
gradient arrived) is kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..gradients.flow import GradientFlow
from ..messages import localize, say
from ..record.graph import TapeGraph
from ..record.values import GRAD_NORM, format_value
from . import fonts
from .marks import Arrow, Box, Hidden, Label
from .style import (
    LW_ACTIVE,
    LW_ACTIVE_EDGE,
    LW_BOX,
    LW_CARRIES,
    LW_EDGE,
    LW_ORIGIN,
    LW_ORIGIN_PATH,
    LW_STOPPED,
    LW_TARGET,
    ORIGIN_DASH,
    REASON_STYLE,
)
from .themes import Theme, mix
from .value_text import fit_value
from .visibility import Shown
from .wording import edge_code, grad_text, is_bad, node_title

__all__ = ["GradOverride", "Restyling", "drawn_stops"]


class GradOverride(NamedTuple):
    """A gradient text shown instead of the flow's (e.g. after clipping), with its short
    form for the one line of a closed layer's box, after the variable's name: the box's
    line holds all of a layer's variables, where "∂ 3×4 ‖g‖ 1.41 → 1" each is too long."""

    text: str  # under the variable's own box: "∂ 3×4 ‖g‖ 1.41 → 1"
    short: str  # in its layer's line: "1.41 → 1" (the line says ‖g‖ once)


def _override_text(o: GradOverride | str) -> str:
    return o.text if isinstance(o, GradOverride) else o


def _override_short(o: GradOverride | str) -> str:
    return o.short if isinstance(o, GradOverride) else o.removeprefix("∂ ")


#: Written before a NaN / Inf gradient's text (an edge's label, a box's gradient line): the
#: colour that says "bad" is not the only sign of it (colour-blind readers, grey print).
BAD_MARK = "⚠ "


class Restyling:
    """Per-step styling of a Scene's records (the Scene builds and places them: the
    attributes below are its, read and restyled here)."""

    graph: TapeGraph
    flow: GradientFlow | None
    display: Shown
    theme: Theme
    lang: str
    targets: set
    boxes: dict[Any, Box]
    grads: dict[Any, Label]
    arrows: dict[Any, Arrow]
    edge_labels: dict[Any, Label]
    box_magnitudes: dict
    magnitude_scale: Any
    custom_title: str | None
    title: str
    title_label: Label
    title_lines: int
    title_size: float
    hidden: Hidden | None
    overrides: dict[Any, GradOverride | str]
    step: int
    _laid_out: bool
    _texts: dict  # fitted texts that no longer change once their gradient arrived
    _rooms: dict  # edge -> the points its label may take
    _grad_rooms: dict  # box -> the points its gradient line may take
    _title_inner: float
    _norms: dict  # variable -> its gradient's text, norm and badness (see _variable_norm)
    _layer_vars: dict  # group box -> its variables (see _layer_variables)
    origin: Any  # tapeviz.gradients.origin.Origin, or None: where a bad gradient starts
    origin_box: Any  # the box it is drawn in
    origin_path: frozenset  # the display edges of its path back to the source
    origin_label: Label | None  # the tag over that box

    def origin_shown(self, step: int) -> bool:
        """Whether the origin is marked at this step: from the step it starts at on (the
        mark is never ahead of the pass)."""
        return self.origin is not None and step >= self.origin.step

    def magnitude_fill(self, box) -> str:
        """The fill of a box coloured by its ||g||/||w||: the scale's colour, lightened
        towards the background so the box's words stay readable."""
        m = self.box_magnitudes[box]
        th = self.theme
        if m.status == "nonfinite":
            return mix(th.bad, th.background, 0.55)
        return mix(self.magnitude_scale.color(m.relative), th.background, 0.6)

    def _magnitude_arrived(self, fl: GradientFlow, box, k: int) -> bool:
        """Whether every gradient a box's magnitude is made of has arrived at step k."""
        members = [m for m in self.display.members.get(box, [box]) if self.graph.nx.nodes[m]["kind"] == "variable"]
        return all((s := fl.step_of(m)) is not None and s <= k for m in members)

    def set_grad_overrides(self, texts: Mapping[Any, GradOverride | str]) -> None:
        """Show these texts as the gradient of some nodes (e.g. after clipping); a
        :class:`GradOverride` also gives the short form a closed layer's line lists."""
        self.overrides = dict(texts)
        self.set_step(self.step)

    def _fit_value(self, value, room: float, size: float, prefix: str = "") -> str:
        """``prefix + value`` in ``room`` points, every number whole (:func:`fit_value`:
        the gradient as written, else its shape and norm, its norm, its first numbers and "…")."""
        return fit_value(value, room, size, norm=GRAD_NORM, prefix=prefix, norm_first=True)

    def set_step(self, step: int | None) -> None:
        """Style every record for the flow as it stands after steps 0..`step` (None: the
        last step, the finished pass). A step outside the pass is refused."""
        fl = self.flow
        if fl is None:
            return
        k = fl.check_step(step)
        self.step = k
        finished = k == fl.last_step
        disp = self.display
        th = self.theme
        active_node = disp.of.get(fl.steps[k].node)
        active_edges = disp.display_edges_of(fl.steps[k].edges)
        for e, arrow in self.arrows.items():
            self._style_edge(fl, e, arrow, self.edge_labels[e], k, e in active_edges)
        dg = disp.nx
        for n, box in self.boxes.items():
            kind = dg.nodes[n]["kind"]
            grad = self.grads[n]
            grad.text, grad.color = self._node_grad_text(fl, n, kind, k, finished)
            if n in self.box_magnitudes:  # coloured once its gradient is complete: never ahead of the pass
                arrived = self._magnitude_arrived(fl, n, k)
                box.fc = self.magnitude_fill(n) if arrived else th.kinds.get(kind, th.kinds["op"])[0]
            box.linestyle = "-"
            if n == self.origin_box and self.origin_shown(k):  # dashed: not told by colour alone
                box.ec, box.lw, box.linestyle = th.bad, LW_ORIGIN * th.line, ORIGIN_DASH
            elif n == active_node:
                box.ec, box.lw = th.active, LW_ACTIVE * th.line
            elif n in self.targets:
                box.ec, box.lw = th.target, LW_TARGET * th.line
            else:
                box.ec, box.lw = th.kinds.get(kind, th.kinds["op"])[1], LW_BOX * th.line
        if self.origin_label is not None:
            self.origin_label.visible = self.origin_shown(k)
        self.title = self.custom_title or self._step_title(fl, k, finished)
        if self.hidden is not None:
            self._hide(self.hidden)
        if self._laid_out:  # (the title's record is made when the canvas is laid out)
            self.set_title()

    def _hide(self, hidden: Hidden) -> None:
        """Write "?" where the hidden gradients would show, and the hidden title."""
        disp = self.display
        for e in disp.display_edges_of(hidden.edges):
            if e in self.edge_labels:
                self.edge_labels[e].text = "?"
        for n in {disp.of.get(n) for n in hidden.nodes} - {None}:
            if n in self.grads:
                self.grads[n].text = "∂ ?"
        if hidden.title is not None:
            self.title = hidden.title

    def set_title(self) -> None:
        """Write ``self.title`` into the title's record: wrapped to the canvas, cut to the lines it has."""
        lines = fonts.wrap(self.title, self._title_inner, self.title_size)
        if len(lines) > self.title_lines:
            rest = " ".join(lines[self.title_lines - 1 :])
            lines = lines[: self.title_lines - 1] + [fonts.fit(rest, self._title_inner, self.title_size)]
        self.title_label.text = "\n".join(lines)

    def _style_edge(self, fl: GradientFlow, e, arrow: Arrow, text: Label, k: int, active: bool) -> None:
        th = self.theme
        members = arrow.members
        stops = [fl.edge_reason.get(m) for m in members]
        room = self._rooms[e]
        arrow.marks = []
        first = stops[0] if stops else None
        if first is not None and all(r is not None for r in stops):
            arrow.color, arrow.lw = th.stopped, LW_STOPPED * th.line
            arrow.linestyle = REASON_STYLE.get(first.reason, "--")
            # a cause with a label of its own (no gradient registered) says it; else the reason
            code = say(edge_code(first), self.lang)
            full = code if len(members) == 1 else say("ui.edge.stopped_n", self.lang, code=code, n=len(members))
            if fonts.text_width(full, text.size, style="italic") > room:
                full = code  # the count goes first: a reason cut ("not_watche…") reads as a typo
            text.text = fonts.fit(full, room, text.size, style="italic")
            text.color, text.style = th.stop_text, "italic"
            return
        carried = [m for m in members if fl.arrived(m, k)]
        arrow.linestyle = "-"
        text.style = "normal"
        if not carried:
            arrow.color, arrow.lw = th.forward, LW_EDGE * th.line
            text.text = ""
            return
        key = ("edge", e, len(carried))
        cached = self._texts.get(key)
        if cached is None:
            if len(members) == 1:
                value = fl.edge_grad(*carried[0])
                bad = is_bad(value)
                cached = (self._fit_value(value, room, text.size, BAD_MARK if bad else ""), bad)
            elif len({self.graph.nx.edges[m]["tensor"] for m in members}) > 1:  # several tensors: no one sum
                values = [fl.edge_grad(*m) for m in carried]
                bad = any(is_bad(v) for v in values)
                cached = (
                    fonts.fit(
                        (BAD_MARK if bad else "") + say("ui.edge.parts", self.lang, n=len(carried)), room, text.size
                    ),
                    bad,
                )
            elif len(carried) == len(members) or k == fl.last_step:
                # every use of the tensor has sent its part, or the pass is over and the uses that
                # sent nothing never will: TF's sum (add_n) of the parts sent is the tensor's gradient
                value = fl.total_along(members)
                values = [fl.edge_grad(*m) for m in carried]
                bad = is_bad(value) or any(is_bad(v) for v in values)
                sigma = (BAD_MARK if bad else "") + say("ui.edge.sum", self.lang)
                cached = (self._fit_value(value, room, text.size, sigma), bad)
            else:
                values = [fl.edge_grad(*m) for m in carried]
                bad = any(is_bad(v) for v in values)
                arriving = say("ui.edge.arriving", self.lang, got=len(carried), n=len(members))
                cached = (fonts.fit((BAD_MARK if bad else "") + arriving, room, text.size), bad)
            self._texts[key] = cached
        text.text, bad = cached
        arrow.color = th.bad if bad else (th.active if active else th.flowing)
        arrow.lw = (LW_ACTIVE_EDGE if active else LW_CARRIES) * th.line
        if e in self.origin_path and self.origin_shown(k):  # the bad gradient's way to the source: thick
            bad = True
            arrow.color, arrow.lw = th.bad, max(arrow.lw, LW_ORIGIN_PATH * th.line)
        text.color = th.bad if bad else th.grad_text
        if active and arrow.mark_at is not None:
            arrow.marks = [arrow.mark_at]
            arrow.mark_color = th.active

    def _node_grad_text(self, fl: GradientFlow, n, kind: str, k: int, finished: bool) -> tuple[str, str]:
        th = self.theme
        room = self._grad_rooms[n]
        size = self.grads[n].size
        if kind == "inner":
            return "", th.grad_text
        if kind == "layer":
            parts, bad, squares, clipped = [], False, 0.0, False
            for m, name in self._layer_variables(n):
                if m in self.overrides:
                    parts.append(f"{name} {_override_short(self.overrides[m])}")
                    clipped = True
                    continue
                s = fl.step_of(m)
                if s is None or s > k:
                    continue
                text, norm, var_bad = self._variable_norm(fl, m)
                bad = bad or var_bad
                parts.append(f"{name} {text}")
                squares += norm * norm
            if clipped:
                return self._whole_parts(parts, room, size), th.grad_text
            text = ((BAD_MARK if bad else "") + GRAD_NORM + " " + " · ".join(parts)) if parts else ""
            if len(parts) > 1 and fonts.text_width(text, size) > room:
                # too many to list: their norm taken together (a group's variables as one vector)
                text = (BAD_MARK if bad else "") + say(
                    "ui.group.grad_total", self.lang, norm=f"{math.sqrt(squares):.3g}", n=len(parts)
                )
            return fonts.fit(text, room, size), (th.bad if bad else th.grad_text)
        if n in self.overrides:
            return fonts.fit(_override_text(self.overrides[n]), room, size), th.grad_text
        s = fl.step_of(n)
        if s is not None and s <= k:
            key = ("node", n, room)
            cached = self._texts.get(key)
            if cached is None:
                if n in fl.target_nodes:
                    value = fl.steps[0].grad
                elif kind in ("variable", "watched", "input", "constant") or fl.computed(n) is not None:
                    value = fl.computed(n)
                else:
                    value = fl.steps[s].grad
                value = value if not isinstance(value, list) else value[0]
                if value is None:
                    text = grad_text(None)
                else:
                    text = self._fit_value(np.asarray(value), room, size, (BAD_MARK if is_bad(value) else "") + "∂ ")
                cached = self._texts[key] = (text, th.bad if is_bad(value) else th.grad_text)
            return cached
        if n in fl.node_reason and finished and kind in ("variable", "watched", "input"):
            if self.display.nx.degree(n) == 0:  # no edge to carry the reason: the box says it
                code = say(edge_code(fl.node_reason[n]), self.lang)
                return fonts.fit(say("ui.node.none_because", self.lang, code=code), room, size), th.stop_text
            return grad_text(None), th.stop_text
        return "", th.grad_text

    def _whole_parts(self, parts: list[str], room: float, size: float) -> str:
        """A closed layer's clipped variables in one line, each part whole or not at all (a
        cut "1.41 → 0.…" reads as a wrong number): as many as fit, then how many more the
        clipping table lists; if not even one fits, only how many there are."""
        for k in range(len(parts), 0, -1):
            rest = len(parts) - k
            text = GRAD_NORM + " " + " · ".join(parts[:k])
            if rest:
                text += " · " + say("ui.group.more", self.lang, n=rest)
            if fonts.text_width(text, size) <= room:
                return text
        return fonts.fit(say("ui.group.clipped_n", self.lang, n=len(parts)), room, size)

    def _layer_variables(self, n) -> list[tuple[Any, str]]:
        """A group's variables (node, short name) in member order, read once per scene: a
        step's picture reads them for every group box (ResNet50's groups hold hundreds of
        ops each, looked up again per step: 2.3 M graph reads for a page of its 1,348 steps)."""
        got = self._layer_vars.get(n)
        if got is None:
            nodes = self.graph.nx.nodes
            got = self._layer_vars[n] = [
                (m, nodes[m]["name"].split("/")[-1]) for m in self.display.members[n] if nodes[m]["kind"] == "variable"
            ]
        return got

    def _variable_norm(self, fl: GradientFlow, m) -> tuple[str, float, bool]:
        """A variable's gradient as a group's line shows it (its value if one number, else its
        norm), the norm, and whether it holds NaN / Inf; computed once per scene (ResNet50's
        23 M gradient numbers took 0.8 s a picture when summed again for every step)."""
        got = self._norms.get(m)
        if got is None:
            value = fl.computed(m)
            if value is None:
                got = ("None", 0.0, False)
            else:
                a = np.asarray(value)
                norm = math.sqrt(fl.sum_squares(m))  # kept by the flow: every new picture asks
                bad = not math.isfinite(norm) and is_bad(a)
                got = (format_value(a) if a.size == 1 else f"{norm:.3g}", norm, bad)
            self._norms[m] = got
        return got

    def _step_title(self, fl: GradientFlow, k: int, finished: bool) -> str:
        g = fl.graph
        target = localize(g.display_name(fl.target_nodes[0]), self.lang)
        st = fl.steps[k]
        n = fl.last_step
        if k == 0:
            title = say(
                "ui.step.start", self.lang, k=k, n=n, target=target, value=format_value(st.grad, norm=GRAD_NORM)
            )
        else:
            grad = format_value(st.grad if not isinstance(st.grad, list) else st.grad[0], norm=GRAD_NORM)
            to = sorted({localize(g.display_name(u), self.lang) for u, _, _ in st.edges})
            node = localize(g.display_name(st.node), self.lang)
            box = self.display.of.get(st.node, st.node)
            if box != st.node and self.display.nx.nodes[box].get("kind") == "layer":
                # an op inside a collapsed box: say which box the reader sees it in
                group = node_title(g, box, self.display, self.lang)
                node = say("ui.step.in_group", self.lang, node=node, group=group)
            reads = g.nx.nodes[st.node].get("reads") or []
            if to:
                title = say("ui.step.passes", self.lang, k=k, n=n, node=node, value=grad, to=", ".join(to))
            elif len(reads) > 1 and fl.step_of(st.node) != k:
                # one read of a variable read several times: a part of its gradient
                title = say("ui.step.part", self.lang, k=k, n=n, node=node, value=grad, reads=len(reads))
            else:
                if len(reads) > 1:  # the last part: the total, as TF added it up
                    grad = format_value(fl.computed(st.node), norm=GRAD_NORM)
                title = say("ui.step.received", self.lang, k=k, n=n, node=node, value=grad)
        return title + say("ui.step.done", self.lang, target=target) if finished else title


def drawn_stops(flow: GradientFlow, dg) -> set:
    """The stop reasons of the edges drawn as stopped: every edge an arrow stands for
    carries nothing, and the first one's reason styles it (see Scene._style_edge). A merged
    edge into a group box that carries gradient on one of its edges is not one."""
    out = set()
    for _, _, d in dg.edges(data=True):
        stops = [flow.edge_reason.get(m) for m in d.get("members", ())]
        first = stops[0] if stops else None
        if first is not None and all(r is not None for r in stops):
            out.add(first.reason)
    return out
