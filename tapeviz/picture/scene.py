"""Scene: what a picture of a tape shows, as plain data, placed and styled, before anything is drawn.

A Scene holds one record per box, text, tag and arrow, plus the figure's chrome (title,
caption, legend), each with its position, text, colour, line width and dash, and
restyles those records when the backward step or the shown gradients change. Drawing
goes one way, scene -> writers: two painters (output/painter.py) read it and decide
nothing: ``svg.py`` writes it as an SVG document (files, the explorer's canvas, Jupyter;
PNG and GIF are that SVG's pixels) and ``output/artists.py`` turns it into matplotlib
artists (``tv.draw``'s Figure).

The Scene puts together the jobs of its sibling modules: what is shown (visibility.py),
where (layout.py, rows.py), the records of boxes and texts (placement.py), edge routes
(routing.py), wording (wording.py), the legend (legend.py), what each record says at a
backward step (restyling.py, the half of the Scene that runs per step), with the style constants of
style.py and the text metrics of :mod:`tapeviz.picture.fonts` (the ones the SVG writer
uses too), so that no label overlaps another label or covers a box and nothing leaves
the canvas:

* every edge is labelled in the gap just before its consumer, on a horizontal run at
  one of the consumer's *ports* (its in-edges spread over the box's height, ordered as
  they arrive, so parallel edges and fan-in get a row each); the run then converges
  on the middle of the consumer's left side, where the arrow head is;
* a gap holds nothing but edge labels, a column nothing but boxes and the gradient
  text under each box; each label is fitted (shortened, a value to its shape and
  norm, else cut with "…") to the room it has;
* constants and shape plumbing folded away by :mod:`tapeviz.picture.visibility` appear as small
  tags (chips) inside their consumer's box;
* the title, caption and legend are laid out by width: wrapped to the canvas and
  flowed into rows.

Graph records are in data units (one column is 1 wide, one row 1 tall, as the layout
places them); chrome records are in canvas pixels (``DPI`` per inch, y up).
``data_to_px`` maps the former onto the latter.

Nothing here computes a gradient: every number comes from the GradientFlow, and
every sentence from the message catalogue (:func:`tapeviz.messages.say`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from typing import Any

import numpy as np

from ..gradients.flow import GradientFlow
from ..messages import say
from ..record.graph import TapeGraph
from ..record.values import GRAD_NORM, VALUE_NORM
from . import fonts
from .frames import WHOLE, frame_pad, frame_reach, group_frames, name_label, open_groups, open_path, open_spans
from .groups import GROUP_KINDS
from .layout import layered_routes
from .legend import legend_entries, legend_layout
from .marks import GraphArea, Hidden, Label
from .options import Options
from .placement import (
    arrow_specs,
    box_lines,
    box_specs,
    chip_specs,
    edge_label_specs,
    grad_specs,
    label_height,
    label_specs,
)
from .restyling import GradOverride, Restyling, drawn_stops
from .routing import edge_plans, edge_route, legs_through
from .rows import (
    MAX_RATIO,
    NARROW_PAGE,
    PAGE_FIT_MOST,
    PAGE_WIDTH,
    band_columns,
    row_lengths,
    row_starts,
    split_frames,
    wrap_bands,
)
from .style import (
    BAND_MOST,
    BOX_W,
    CHIP_PAD,
    CONVERGE_ROOM,
    DPI,
    INCH_X,
    INCH_Y,
    LABEL_PAD,
    MARGIN,
    MARK_SIZE,
    ORIGIN_GAP,
    TAIL,
)
from .themes import get_theme
from .visibility import Shown, collapse, decide
from .wording import box_names

__all__ = ["Scene"]


def _checked_wrap(wrap):
    if wrap is not None and (isinstance(wrap, bool) or not isinstance(wrap, int) or wrap < 2):
        raise ValueError(
            f"wrap={wrap!r}: give the most boxes a row may hold (an int of at least 2), "
            "or None for rows that fit a 1,600 px page"
        )
    return wrap


#: Rows that keep every frame whole are taken over the first that fit the page but split
#: one, unless they make the picture more than this many times as tall.
SPLIT_FREE_TALLER = 1.5
#: The explorer's picture (laid out by the flow, its frames drawn in pieces where another
#: group's box sits among a group's) is laid out with whole frames instead unless that makes
#: it more than this many times as tall (the VAE's: a 4:1 strip, 1.35 times as tall).
WHOLE_TALLER = 1.2


class Scene(Restyling):
    """Every box, text, tag and arrow of one picture, placed, and styled for the current step.

    ``set_step(k)`` shows the backward pass after steps 0..k (None: the last step, the
    finished pass); ``set_grad_overrides`` replaces the gradient texts of some nodes
    (e.g. clipped values). Both only change the records' texts and colours; positions
    are fixed when the scene is made, with room for the longest text a label shows.

    The picture's options (:class:`~tapeviz.picture.options.Options`, as ``options=`` or
    keywords; ``theme="auto"`` is light here) say what is drawn and how. What is shown comes
    from :func:`tapeviz.picture.visibility.decide` (the options, and the tf.function calls
    ``functions`` opened); positions and edge routes from ``layered_routes`` unless ``pos``
    is given, in which case edges are drawn straight (the caller's positions carry no
    routes). ``variable_magnitudes``: each variable's ||g|| / ||w||, for boxes coloured by
    it. ``frames``: each open group is drawn as a frame with its name around its boxes:
    "whole" (a file's picture) those that are one rectangle, True (the explorer's) the
    others in pieces too, False none (the boxes alone, as a caller's own drawing wants them).
    """

    def __init__(
        self,
        graph: TapeGraph,
        flow: GradientFlow | None = None,
        options: Options | None = None,
        *,
        pos=None,
        routes=None,
        title: str | None = None,
        caption: str | None = None,
        functions=(),
        variable_magnitudes=None,
        page: float = PAGE_WIDTH,
        frames: bool | str = WHOLE,
        origin=None,
        **option_keywords,
    ):
        self.options = opts = Options.of(options, **option_keywords).in_file()
        self.wrap = _checked_wrap(opts.wrap)
        self.page = page  # pixels: the width the rows are chosen for (the explorer's is a notebook cell's)
        self.show_frames = frames  # open groups' frames are drawn (see above): room is kept for them
        self.unframed: frozenset = frozenset()  # open groups drawn with no frame (named so in the titles)
        self.graph = graph
        self.lang = opts.lang
        self.theme = th = get_theme(opts.theme)
        self.show_all = opts.show_all
        self.flow = flow
        self.origin = origin if flow is not None else None  # where a NaN, Inf or zero gradient starts
        self.display = self._decide_shown(functions, placed=pos is not None)
        self.font = th.font
        self.unit = (INCH_X * th.scale * th.column * 72.0, INCH_Y * th.scale * 72.0)  # points per data unit
        self._list_what_is_shown()
        self.custom_title = title
        self.title = title or ""
        self.caption = self._caption(caption)
        self._norms: dict = {}  # variable -> its gradient's text, norm and badness (see _variable_norm)
        self._place(pos, routes, box_names(graph, self.display, self.lang), variable_magnitudes)
        if self.show_frames == WHOLE:
            # a group whose frame could not be one rectangle has none: its boxes say whose they are
            unframed = open_groups(self.display) - {f.gid for f in self.frames}
            if unframed:
                self.unframed = frozenset(unframed)
                self._place(pos, routes, box_names(graph, self.display, self.lang, unframed), variable_magnitudes)

    def _build(self, pos, routes, lanes, names, variable_magnitudes) -> None:
        """Every record for these positions, routes and lanes, then the canvas around them."""
        self.pos = pos
        self.routes = routes  # (u, v) -> bend points; edges not in it run straight to their consumer's gap
        self.lanes = lanes  # (u, v) -> lanes back to the next band, where the layout wraps
        label_h = (label_height(self.theme.size("edge")) + 1.0) / self.unit[1]
        plans = edge_plans(self.graph, self.pos, self.routes, self.display, self.lanes, label_h=label_h)
        self._make_records(plans, names)
        self._origin_records()
        self.frames = [f for f in group_frames(self) if f.gid not in self.unframed] if self.show_frames else []
        side: set = set()
        while blocked := self._clear_frame_names(plans, label_h):
            side |= blocked  # frame names on both sides of where they come down: these enter from the left
            plans = edge_plans(self.graph, self.pos, self.routes, self.display, self.lanes, label_h=label_h, side=side)
            self._make_records(plans, names)
        self.box_magnitudes, self.magnitude_scale = self._box_magnitudes(variable_magnitudes)
        self._texts: dict = {}  # fitted texts that no longer change once their gradient arrived
        self._layer_vars: dict = {}  # group box -> its variables (see _layer_variables)
        self._grad_rooms = self._grad_allowance(plans, label_h)
        self.overrides: dict[Any, GradOverride | str] = {}
        self.hidden: Hidden | None = None  # numbers shown as "?" (set_step applies it)
        self._route_edges(plans)
        self.step: int = 0
        self._laid_out = False  # the title's record is made with the canvas
        self.set_step(None)  # the finished pass: the texts the canvas must hold
        self.has_bad = any(v[1] for k, v in self._texts.items() if k[0] == "edge")
        self.notation = any(  # a shape and a norm written somewhere: the legend says how to read them
            VALUE_NORM in t.text or GRAD_NORM in t.text
            for t in (
                *(t for trio in self.labels.values() for t in trio),
                *self.grads.values(),
                *self.edge_labels.values(),
            )
        )
        self._layout_canvas()
        self._laid_out = True
        self._restyle_clamped()
        self.set_title()

    # -- what is shown, and where ------------------------------------------------------
    def _decide_shown(self, functions, *, placed: bool) -> Shown:
        """Which nodes become boxes (visibility.py), with the tf.function calls asked to open."""
        graph = self.graph
        self.functions = set(functions)
        unknown = self.functions - set(graph.functions())
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not tf.function calls; those are: {graph.functions()}")
        bodies = {f: graph.function_body(f) for f in self.functions}
        if not placed:
            origin = self.origin.node if self.origin is not None else None  # its groups open: the mark is on the op
            return decide(graph, self.flow, self.options, bodies=bodies, origin=origin)
        return collapse(graph.nx, collapsed=False, bodies=bodies)  # the caller's positions name every node

    def _place(self, pos, routes, names, variable_magnitudes) -> None:
        """Positions and edge routes (the layered layout, folded into rows by rows.py: the
        fewest rows that fit the page and are not a strip, else the best miss), then every
        record placed for them. A file's open groups are whole frames (group_bands.py); the
        explorer's are too where its plain layout would draw one in pieces and whole frames
        make it at most :data:`WHOLE_TALLER` times as tall."""
        if pos is not None:
            self._build(pos, routes or {}, {}, names, variable_magnitudes)
            return
        pos, computed = self._layered(grouped=self.show_frames == WHOLE)  # a file's frames are whole
        if routes is not None:
            self._build(pos, routes, {}, names, variable_magnitudes)
            return
        self._fold(pos, computed, names, variable_magnitudes)
        if self.show_frames is True and any(f.parts for f in self.frames):
            # the explorer's frame in pieces: whole frames too, unless they make a much taller picture
            plain_height = self.canvas[1]
            self._fold(*self._layered(grouped=True), names, variable_magnitudes)
            if self.canvas[1] > WHOLE_TALLER * plain_height or any(f.parts for f in self.frames):
                self._fold(pos, computed, names, variable_magnitudes)

    def _layered(self, *, grouped: bool) -> tuple[dict, dict]:
        """The layered layout's positions and routes; ``grouped``: each open group a block of
        its own rows (group_bands.py), so that its frame is one rectangle."""
        dg = self.display.nx
        if not grouped:
            return layered_routes(dg)
        groups = {n: open_path(self.display, n) for n in dg}
        return layered_routes(dg, groups=groups, frame_pad=frame_pad(self))

    def _fold(self, pos, computed, names, variable_magnitudes) -> None:
        """Fold the layout into rows (the first choice that fits, see :meth:`_place`) and build."""
        n_columns = len({x for x, _ in pos.values()})
        if self.wrap is not None:
            choices = [self.wrap]
        elif n_columns <= PAGE_FIT_MOST:
            choices = row_lengths(n_columns)
        else:  # too long for a page at full size: bands as wide as a screen can show
            choices = [band_columns(n_columns, most=BAND_MOST)]
        column_px = INCH_X * self.theme.scale * self.theme.column * DPI
        best = None
        first_fit = None  # (columns, height) of the first rows that fit, if they split a frame
        for i, columns in enumerate(choices):
            if i < len(choices) - 1 and min(columns, n_columns) * column_px > self.page:
                continue  # its boxes alone are wider than the page
            self._build(*self._rows(pos, computed, columns), names, variable_magnitudes)
            width, height = self.canvas
            miss = (
                width > self.page,
                min(self.page, NARROW_PAGE) < width > MAX_RATIO * height,
                self._splits,  # frames split across rows: fewer columns may keep them whole
                width,
            )
            fits = not (miss[0] or miss[1])
            if fits and not miss[2]:
                # rows that keep every frame whole, unless they are a much taller, narrower picture
                if first_fit is None or (columns >= 3 and height <= SPLIT_FREE_TALLER * first_fit[1]):
                    return
                break
            if fits and first_fit is None:
                first_fit = (columns, height)
            if best is None or miss < best[0]:
                best = (miss, columns)
        chosen = first_fit[0] if first_fit is not None else best[1] if best is not None else columns
        if chosen != columns:
            self._build(*self._rows(pos, computed, chosen), names, variable_magnitudes)

    def _rows(self, pos, routes, columns: int) -> tuple[dict, dict, dict]:
        """The layout folded into rows of at most ``columns``: wrap=k's rows are k long; the
        rows chosen here are cut where the fewest edges return to the next row."""
        dg = self.display.nx
        spans = open_spans(self.display, pos, unframed=self.unframed) if self.show_frames else ()
        starts = None if self.wrap is not None else row_starts(dg, pos, columns, spans=spans)
        n_columns = len({round(x) for x, _ in pos.values()})
        firsts = starts if starts is not None else list(range(0, n_columns, columns))
        self._splits = split_frames(firsts, spans, columns) if n_columns > columns else 0
        # a file's rows keep room for its whole frames and their names (group_bands.py stacks them)
        reach = frame_reach(self, dg) if self.show_frames == WHOLE else None
        return wrap_bands(dg, pos, routes, columns=columns, starts=starts, reach=reach)

    def _list_what_is_shown(self) -> None:
        """The targets, kinds of boxes, stop reasons and chip kinds on the picture (the legend's entries)."""
        flow, dg = self.flow, self.display.nx
        self.targets = {self.display.of[t] for t in flow.target_nodes} if flow is not None else set()
        self.kinds = [k for k in self.theme.kinds if any(d["kind"] == k for _, d in dg.nodes(data=True))]
        # the kinds of the closed group boxes, in the caption's order: the legend names them
        drawn = {d.get("group_kind", "layer") for _, d in dg.nodes(data=True) if d["kind"] == "layer"}
        self.group_kinds = [k for k in GROUP_KINDS if k in drawn]
        self.reasons = sorted(drawn_stops(flow, dg)) if flow is not None else []
        self.origin_box, self.origin_path = None, frozenset()
        if self.origin is not None:  # the box the origin op is drawn in, and the arrows of its path
            self.origin_box = self.display.of.get(self.origin.node)
            self.origin_path = frozenset(self.display.display_edges_of(self.origin.edges))
        self.chip_kinds = [
            k
            for k in ("value", "input", "random")
            if any(c.kind == k for _, d in dg.nodes(data=True) for c in d.get("chips") or ())
        ]

    def _make_records(self, plans, names) -> None:
        """One record per box, text, chip, gradient line, arrow and edge label (placement.py)."""
        graph, pos, disp, th = self.graph, self.pos, self.display, self.theme
        edge = th.size("edge")
        self._rooms = {e: p.room * self.unit[0] - 2 * LABEL_PAD * edge - 1.0 for e, p in plans.items()}
        self.boxes = box_specs(graph, pos, targets=self.targets, display=disp, theme=th, names=names)
        self.labels = label_specs(
            graph, pos, fontsize=self.font, display=disp, theme=th, lang=self.lang, unit=self.unit, names=names
        )
        chip_rows = {
            n: trio[2].y - (sum(box_lines(self.font, True, True, th)[2:]) / 2 + 1.0) / self.unit[1]
            for n, trio in self.labels.items()
        }
        self.chips = chip_specs(disp, pos, fontsize=self.font, theme=th, unit=self.unit, rows=chip_rows, lang=self.lang)
        self.grads = grad_specs(graph, pos, fontsize=self.font, display=disp, theme=th)
        self.arrows = arrow_specs(graph, pos, display=disp, plans=plans, theme=th, route=False)
        self.edge_labels = edge_label_specs(graph, pos, fontsize=self.font, display=disp, plans=plans, theme=th)

    def _clear_frame_names(self, plans, label_h: float) -> set:
        """An edge entering a box from above writes its label left of where it comes down,
        over the box (routing.py); where a frame's name is written there (the box is the
        first of its frame), it writes it right of where it comes down instead. Returns the
        (u, v) pairs with a frame's name on both sides, or on the left with no room on the
        right (an edge coming down beside the box's column, or another edge's way down there):
        they enter their box from the left; so do those into the box the origin mark's tag is
        over (the tag fills the gap above it)."""
        tops = [(e, p) for e, p in plans.items() if p.top is not None]
        blocked: set = {e[:2] for e, _ in tops if self.origin_label is not None and e[1] == self.origin_box}
        if not tops or not self.frames:
            return blocked
        ux, uy = self.unit
        names = []
        for f in self.frames:
            name = name_label(f, self)
            w = fonts.text_width(name.text, name.size) / ux
            h = sum(fonts.line_box(name.size)[:2]) / uy
            x0 = name.x if name.ha == "left" else name.x - w
            names.append((x0, x0 + w, name.y - h, name.y))
        for e, p in tops:
            label = self.edge_labels[e]
            y0, y1 = label.y - label_h / 2, label.y + label_h / 2

            def hits(a: float, b: float, y0: float = y0, y1: float = y1) -> bool:
                return any(a < n1 and n0 < b and y0 < m1 and m0 < y1 for n0, n1, m0, m1 in names)

            if not hits(p.top - p.room, p.top):
                continue
            if (
                p.beside is not None
                or hits(p.top, p.top + p.room)
                or legs_through(plans, e, p.top, p.top + p.room, y0, y1)
            ):
                blocked.add(e[:2])  # beside: its way down is right of it; or another edge's way down is
            else:
                label.x, label.ha = p.top + (p.top - label.x), "left"
        return blocked

    def _route_edges(self, plans) -> None:
        """Route each edge (routing.py): it turns towards its port where its widest label begins."""
        flow = self.flow
        for e, arrow in self.arrows.items():
            label = self.edge_labels[e]
            widest = self._rooms[e]
            if flow is not None and len(arrow.members) <= 1:
                self._style_edge(flow, e, arrow, label, flow.last_step, False)
                widest = fonts.text_width(label.text, label.size, style=label.style)
            width = (widest + 2 * LABEL_PAD * label.size + 2.0) / self.unit[0]
            arrow.path, _, arrow.mark_at = edge_route(plans[e], width)

    def _origin_records(self) -> None:
        """The mark over the box where a NaN, Inf or zero gradient starts: a tag just above
        the box (the row gap above a box holds no text: gradient lines go under boxes, edge
        labels in the gaps between columns); set_step shows it from the step it starts at."""
        self.origin_label = None
        box = self.boxes.get(self.origin_box) if self.origin is not None else None
        if box is None:
            return
        o, th = self.origin, self.theme
        text = say(f"ui.origin.{o.problem}", self.lang, value=o.value)
        self.origin_label = Label(
            box.x + box.w / 2,
            box.y + box.h + ORIGIN_GAP,
            text,
            th.size("edge"),
            color="#ffffff",  # on the NaN red of every theme: 6.5:1 (light), 5:1 (dark)
            va="bottom",
            weight="bold",
            boxed=True,
            gid="origin-mark",
            fill=th.bad,
            edge=th.bad,
            pad=CHIP_PAD,
        )

    def _restyle_clamped(self) -> None:
        """Restyle only what the canvas layout changed: the gradient lines cut to the canvas."""
        changed = self._clamp_grad_rooms()
        flow = self.flow
        if flow is not None:
            finished = self.step == flow.last_step
            for n in changed:
                self.grads[n].text, self.grads[n].color = self._node_grad_text(
                    flow, n, self.display.nx.nodes[n]["kind"], self.step, finished
                )

    def _box_magnitudes(self, items) -> tuple[dict, Any]:
        """{box: Magnitude} from per-variable Magnitudes (tapeviz.gradients.magnitude): a variable's box
        its own, a collapsed group's box its variables taken together; and the log scale
        they are coloured on (whole decades around the values)."""
        if not items or self.flow is None:
            return {}, None
        from ..gradients.magnitude import MagnitudeScale, group_by_layer

        per_box: dict = {}
        for m in items:
            box = self.display.of.get(m.node)
            if box is not None and box in self.boxes:
                per_box.setdefault(box, []).append(m)
        values = {}
        for box, ms in per_box.items():
            values[box] = ms[0] if len(ms) == 1 and ms[0].node == box else group_by_layer(ms, lambda m: "box")[0]
        return values, MagnitudeScale.fit(m.relative for m in values.values())

    def _clamp_grad_rooms(self) -> list:
        """Keep every gradient line on the canvas, whatever it shows later (clipped values);
        returns the nodes whose room shrank."""
        (x0, x1), _ = self.limits
        changed = []
        for n, g in self.grads.items():
            edge = min(g.x - x0, x1 - g.x) * 2 * self.unit[0]
            if edge < self._grad_rooms[n]:
                self._grad_rooms[n] = edge
                changed.append(n)
        return changed

    def _grad_allowance(self, plans, label_h: float) -> dict:
        """Points of text each box's gradient line may take: the box's width, or more where
        the gaps beside it hold no edge label at that height (at most to the middle of each
        gap, which the neighbouring column's gradient line may use from the other side)."""
        unit_x = self.unit[0]
        size = self.theme.size("gradient")
        text_h = sum(fonts.line_box(size)[:2]) / self.unit[1]
        rects: dict = {}  # column of the consumer -> reserved label rectangles (y0, y1, x0, x1), by y0
        pad = LABEL_PAD * self.theme.size("edge") / unit_x
        for p in plans.values():
            if p.top is not None:  # written over its consumer's box, not in a gap beside a gradient line
                continue
            x1 = p.gap_right - (CONVERGE_ROOM if abs(p.port - p.end_y) > 1e-9 else TAIL) - p.col * p.room
            rects.setdefault(round(p.gap_right + BOX_W / 2), []).append(
                (p.port - label_h / 2, p.port + label_h / 2, x1 - p.room - pad, x1 + pad)
            )
        starts = {}
        for col, rs in rects.items():
            rs.sort()
            starts[col] = [r[0] for r in rs]
        out = {}
        most = 0.5 - 0.02  # half a column pitch, less a margin from the neighbour's text
        walls = self._frame_walls()
        for n, g in self.grads.items():
            x, y_top = g.x, g.y
            y_low = y_top - text_h
            half = most
            if walls is not None:  # a frame's line runs beside the text, not through it
                x0, x1, y0, y1 = walls
                near = (y0 < y_top) & (y1 > y_low)
                if near.any():
                    inside = near & (x0 < x) & (x < x1)
                    sides = np.concatenate([x - x0[inside], x1[inside] - x, x0[near & (x0 >= x)] - x])
                    sides = np.concatenate([sides, x - x1[near & (x1 <= x)]])
                    half = min(half, float(sides.min()) - 2.0 / unit_x)
            c = round(x)
            for col in (c, c + 1):
                rs = rects.get(col)
                if not rs:
                    continue
                for r0, r1, x0, x1 in rs[bisect_left(starts[col], y_low - label_h) : bisect_left(starts[col], y_top)]:
                    if r1 <= y_low or r0 >= y_top:
                        continue
                    if x1 <= x:
                        half = min(half, x - x1)
                    elif x0 >= x:
                        half = min(half, x0 - x)
                    else:
                        half = 0.0
            out[n] = max(half, BOX_W / 2) * 2 * unit_x
        return out

    def _frame_walls(self):
        """The open groups' frames (their pieces) as arrays x0, x1, y0, y1 in data units,
        or None when no frame is drawn."""
        rects = [r for f in self.frames for r in (f.parts or ((f.x, f.y, f.w, f.h),))]
        if not rects:
            return None
        x, y, w, h = np.asarray(rects, float).T
        return x, x + w, y, y + h

    # -- the canvas: graph, title, caption and legend -------------------------------

    def _graph_extent(self) -> tuple[float, float, float, float]:
        """x0, x1, y0, y1 in data units holding every box, label, tag, bend and lane."""
        xs, ys = [], []
        for b in self.boxes.values():
            xs += [b.x, b.x + b.w]
            ys += [b.y, b.y + b.h]
        for g in self.grads.values():
            ys.append(g.y - sum(fonts.line_box(g.size)[:2]) / self.unit[1])
            if g.text:
                half = fonts.text_width(g.text, g.size) / 2 / self.unit[0]
                xs += [g.x - half, g.x + half]
        verts = [v for a in self.arrows.values() for v in (a.path.vertices if a.path is not None else (a.start, a.end))]
        if verts:
            arr = np.asarray(verts, float)
            xs += [float(arr[:, 0].min()), float(arr[:, 0].max())]
            ys += [float(arr[:, 1].min()), float(arr[:, 1].max())]
        half = (label_height(self.theme.size("edge")) / 2 + 1.0) / self.unit[1]
        for e, t in self.edge_labels.items():
            ys += [t.y - half, t.y + half]
            xs.append(t.x - (self._rooms.get(e, 0.0) + 2 * LABEL_PAD * t.size) / self.unit[0])
        for f in self.frames:
            for x, y, w, h in f.parts or ((f.x, f.y, f.w, f.h),):
                xs += [x, x + w]
                ys += [y, y + h]
        mark = self.origin_label
        if mark is not None:  # its size in data units (the canvas is not laid out yet)
            a, d, _ = fonts.line_box(mark.size, mark.weight)
            pad = mark.pad * mark.size
            half = (fonts.text_width(mark.text, mark.size, mark.weight) / 2 + pad) / self.unit[0]
            xs += [mark.x - half, mark.x + half]
            ys.append(mark.y + (a + d + 2 * pad) / self.unit[1])
        if not xs:
            return (0.0, 1.0, 0.0, 1.0)
        pad_x, pad_y = 0.04, 0.04
        return (min(xs) - pad_x, max(xs) + pad_x, min(ys) - pad_y, max(ys) + pad_y)

    def _layout_canvas(self) -> None:
        th = self.theme
        x0, x1, y0, y1 = self._graph_extent()
        graph_w = (x1 - x0) * self.unit[0]  # points
        graph_h = (y1 - y0) * self.unit[1]
        margin = MARGIN * th.scale
        width = max(graph_w + 2 * margin, 4.5 * 72 * th.scale)
        inner = width - 2 * margin
        # title: room for two lines (step titles change length; the picture must not jump)
        self.title_size = self.font + 2
        if self.custom_title is not None:
            self.title_lines = max(1, len(fonts.wrap(self.title, inner, self.title_size)))
        elif self.flow is not None:  # room for the longest of a few steps' titles (later ones are fitted to it)
            fl = self.flow
            sampled = {0, fl.last_step // 2, fl.last_step}
            self.title_lines = max(
                len(fonts.wrap(self._step_title(fl, k, k == fl.last_step), inner, self.title_size)) for k in sampled
            )
        else:
            self.title_lines = 1
        self.caption_size = self.font + 0.5
        caption_lines = fonts.wrap(self.caption, inner, self.caption_size) if self.caption else []
        title_pitch = self._pitch(self.title_size)
        caption_pitch = self._pitch(self.caption_size)
        caption_h = 4.0 + len(caption_lines) * caption_pitch if caption_lines else 0.0
        top = margin + self.title_lines * title_pitch + caption_h + 6.0
        legend, legend_h = legend_layout(legend_entries(self), inner, th, self.font)
        bottom = margin + legend_h + (6.0 if legend_h else 0.0)
        height = top + graph_h + bottom
        self.size = (width / 72.0, height / 72.0)
        px = DPI / 72.0
        self.canvas = (width * px, height * px)  # pixels at DPI
        gx = (width - graph_w) / 2
        self.frame = GraphArea((gx / width, bottom / height, graph_w / width, graph_h / height))
        self.limits = ((x0, x1), (y0, y1))
        self.px_per_unit = (self.unit[0] * px, self.unit[1] * px)
        self._origin = (gx * px - x0 * self.unit[0] * px, bottom * px - y0 * self.unit[1] * px)
        # chrome records, in canvas pixels (y up)
        W, H = self.canvas
        self.title_label = Label(W / 2, H - margin * px, "", self.title_size, color=th.text, va="top", gid="title")
        self._title_inner = inner
        cap_y = H - (margin + self.title_lines * title_pitch + 4.0) * px
        self.caption_label = Label(
            W / 2, cap_y, "\n".join(caption_lines), self.caption_size, color=th.muted, va="top", gid="caption"
        )
        self.legend = []
        for sw in legend:
            sw.x = sw.x * px + margin * px
            sw.y = sw.y * px + margin * px
            sw.w *= px
            sw.h *= px
            sw.label.x = sw.label.x * px + margin * px
            sw.label.y = sw.label.y * px + margin * px
            if sw.chip is not None:
                sw.chip.x = sw.chip.x * px + margin * px
                sw.chip.y = sw.chip.y * px + margin * px
            self.legend.append(sw)

    @staticmethod
    def _pitch(size: float) -> float:
        a, d, g = fonts.line_box(size)
        return a + d + g

    def data_to_px(self, x: float, y: float) -> tuple[float, float]:
        """A data point's position on the canvas, in pixels (y up)."""
        return (self._origin[0] + x * self.px_per_unit[0], self._origin[1] + y * self.px_per_unit[1])

    def text_rect(self, t: Label, *, px: bool = False) -> tuple[float, float, float, float]:
        """The canvas rectangle (x0, y0, x1, y1; pixels, y up) a label's text and background
        cover, measured as the SVG writer lays it out."""
        x, y = (t.x, t.y) if px else self.data_to_px(t.x, t.y)
        k = DPI / 72.0
        lines = t.text.split("\n") if t.text else [""]
        width = max(fonts.text_width(line, t.size, t.weight, t.style) for line in lines) * k
        a, d, g = (v * k for v in fonts.line_box(t.size, t.weight, t.style))
        g = g if len(lines) > 1 else 0.0
        a, d = a + g / 2, d + g / 2
        block = len(lines) * (a + d)
        top = {"top": y, "bottom": y + block, "baseline": y + block - d}.get(t.va, y + block / 2)
        x0 = x - (width / 2 if t.ha == "center" else width if t.ha == "right" else 0.0)
        pad = t.pad * t.size * k if t.boxed else 0.0
        return (x0 - pad, top - block - pad, x0 + width + pad, top + pad)

    def placed(self) -> dict[str, list]:
        """Everything placed on the canvas, for checking the placement: ``boxes`` as
        (node, rect), ``texts`` as (what, node it belongs inside or None, rect) and the
        open groups' ``frames`` (drawn ones only) as (group, rect), rects in canvas pixels
        (x0, y0, x1, y1; y up); only texts that show something."""
        boxes = []
        for n, b in self.boxes.items():
            (x0, y0), (x1, y1) = self.data_to_px(b.x, b.y), self.data_to_px(b.x + b.w, b.y + b.h)
            boxes.append((n, (x0, y0, x1, y1)))
        texts = []
        for n, trio in self.labels.items():
            texts += [(f"box text {n}", n, self.text_rect(t)) for t in trio if t.text]
            texts += [(f"chip {n}", n, self.text_rect(t)) for t in self.chips.get(n, ()) if t.text]
            if self.grads[n].text:
                texts.append((f"gradient {n}", None, self.text_rect(self.grads[n])))
        texts += [(f"edge label {e}", None, self.text_rect(t)) for e, t in self.edge_labels.items() if t.text]
        if self.origin_label is not None and self.origin_label.visible:
            texts.append(("origin mark", None, self.text_rect(self.origin_label)))
        for what, t in (("title", self.title_label), ("caption", self.caption_label)):
            if t.text:
                texts.append((what, None, self.text_rect(t, px=True)))
        for sw in self.legend:
            texts.append((f"legend {sw.label.text}", None, self.text_rect(sw.label, px=True)))
            if sw.chip is not None:  # a "chip" swatch: its sample is a tag
                sample = self.text_rect(sw.chip, px=True)
            elif sw.kind == "line":
                half = max(sw.lw * DPI / 72.0, MARK_SIZE * self.theme.line * DPI / 72.0 if sw.mark else 0.0) / 2
                sample = (sw.x, sw.y - half, sw.x + sw.w, sw.y + half)
            else:
                sample = (sw.x, sw.y, sw.x + sw.w, sw.y + sw.h)
            texts.append((f"legend sample {sw.label.text}", None, sample))
        frames = []
        for f in self.frames:
            texts.append((f"frame name {f.gid}", None, self.text_rect(name_label(f, self))))
            for x, y, w, h in f.parts or ((f.x, f.y, f.w, f.h),):
                (x0, y0), (x1, y1) = self.data_to_px(x, y), self.data_to_px(x + w, y + h)
                frames.append((f.gid, (x0, y0, x1, y1)))
        return {"boxes": boxes, "texts": texts, "frames": frames}

    # -- texts -----------------------------------------------------------------------

    def _caption(self, caption: str | None) -> str:
        notes = [caption] if caption else []
        disp = self.display
        kinds = Counter(d.get("group_kind") for _, d in disp.nx.nodes(data=True) if d.get("kind") == "layer")
        if kinds:  # the group boxes drawn (not the closed groups inside them)
            notes.append(
                say(
                    "ui.note.collapsed",
                    self.lang,
                    blocks=kinds["block"],
                    layers=kinds["layer"],
                    losses=kinds["loss"],
                    calls=kinds["api"],
                    derivatives=kinds["derivative"],
                    functions=kinds["function"],
                    total=self.graph.nx.number_of_nodes(),
                )
            )
        if disp.hidden or disp.folded:
            target = self.graph.display_name(self.flow.target_nodes[0]) if self.flow is not None else ""
            notes.append(
                say("ui.note.hidden", self.lang, hidden=disp.n_hidden_ops, folded=len(disp.folded), target=target)
            )
        for n in getattr(self.flow, "unregistered", ()):  # tape.gradient raises: say where, always
            notes.append(say("ui.note.unregistered", self.lang, op=self.graph.nx.nodes[n]["op_type"]))
        if self.origin is not None:  # what the mark on the picture means, in a sentence
            notes.append(self.origin.summary.get(self.lang, ""))
        budget = getattr(self.graph, "budget_note", None)
        if budget:
            notes.append(budget)
        return "\n".join(notes)

    @property
    def layers(self) -> list[str]:
        """Names of the groups (layers, TF API calls) this picture can collapse or expand."""
        return list(self.display.group_names)

    @property
    def n_steps(self) -> int:
        """How many pictures the backward pass has: steps 0 .. n_steps - 1 (the last is the finished pass)."""
        return len(self.flow.steps) if self.flow is not None else 0
