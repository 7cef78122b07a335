"""The Explorer: a live ipywidgets view of a recorded tape.

The widget only maps its controls to an :class:`~tapeviz.explorer.state.ExplorerState` and shows
what the state shows (``state.picture``, ``state.panel``, ``state.inspector``): a step
slider, a target menu, clipping settings, the SGD preview's learning rate, groups to
open, "show every op" and the inspected node each replace one field of the state, and
one redraw follows. It never touches TF internals and never computes a gradient: the
flow does, and TensorFlow's clip functions (clipping.py) do the clipping.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import ipywidgets as W
import numpy as np

from ..gradients import clipping
from ..gradients.flow import GradientFlow
from ..messages import say
from ..output.view import GraphView
from ..picture.names import short_names
from . import panels
from . import state as st
from .canvas import Canvas, make_canvas
from .chain_line import ChainLine
from .fallback import StaticFallback
from .keyboard import attach_keys
from .notebook_theme import PageTheme
from .state import ExplorerState, GraphTargets

__all__ = ["Explorer"]


def step_buttons(lang: str) -> tuple[W.Button, W.Button]:
    """The ◀ ▶ buttons beside a step slider (classes tv-prev / tv-next, which the page's
    keys and the browser tests find), their tooltips in ``lang``."""
    prev = W.Button(description="◀", layout=W.Layout(width="40px"), tooltip=say("ui.control.prev", lang))
    nxt = W.Button(description="▶", layout=W.Layout(width="40px"), tooltip=say("ui.control.next", lang))
    return prev.add_class("tv-prev"), nxt.add_class("tv-next")


class Explorer(StaticFallback, W.VBox):
    """Step through the backward pass, switch targets, clip gradients, inspect nodes.

    ``presenter=True`` shows only the picture and the step buttons, full width (for a
    projector); the other controls still exist in ``ex.controls``."""

    def __init__(self, explored: GraphTargets, *, presenter: bool = False, **settings):
        super().__init__()
        self.graph_targets = explored
        # theme="auto": light until the page says it is dark (PageTheme, below)
        self.auto_theme = settings.get("theme") == "auto"
        if self.auto_theme:
            settings = {**settings, "theme": "light"}
        self.state: ExplorerState = explored.initial(**settings)
        self._muted = False
        self.add_class("tv-explorer")
        lang = self.state.lang
        c: dict[str, W.Widget] = {}
        last = explored.flow(self.state.target).last_step
        first = explored.flow(self.state.target).check_step(self.state.step)
        c["step"] = W.IntSlider(
            value=first,
            min=0,
            max=last,
            description=say("ui.control.step", lang),
            continuous_update=True,
            layout=W.Layout(width="420px"),
        ).add_class("tv-step")
        c["play"] = W.Play(
            value=first, min=0, max=last, interval=900, description=say("ui.control.play", lang)
        ).add_class("tv-play")
        self._link = W.jslink((c["play"], "value"), (c["step"], "value"))
        c["prev"], c["next"] = step_buttons(lang)
        names = list(explored.targets)
        if len(names) > 1:
            c["target"] = W.Dropdown(
                options=names, value=names[0], description=say("ui.control.target", lang)
            ).add_class("tv-target")
        c["clip"] = W.Dropdown(
            options=[(panels.mode_label(m, lang), m) for m in clipping.MODES],
            value=self.state.clip_mode,
            description=say("ui.control.clip", lang),
        ).add_class("tv-clip-mode")
        # the sliders' ranges hold the clipping the explorer opens with (tv.explore(clip_norm=20))
        c["clip_norm"] = W.FloatSlider(
            value=self.state.clip_norm,
            min=min(0.01, self.state.clip_norm),
            max=max(10.0, self.state.clip_norm),
            step=0.01,
            description=say("ui.control.clip_norm", lang),
            continuous_update=True,
        ).add_class("tv-clip-norm")
        c["clip_value"] = W.FloatRangeSlider(
            value=self.state.clip_value,
            min=min(-10.0, self.state.clip_range[0]),
            max=max(10.0, self.state.clip_range[1]),
            step=0.05,
            description=say("ui.control.clip_value", lang),
            continuous_update=True,
        ).add_class("tv-clip-value")
        c["lr"] = W.FloatSlider(
            value=self.state.lr,
            min=0.0,
            max=1.0,
            step=0.001,
            readout_format=".3f",
            description=say("ui.control.lr", lang),
            continuous_update=True,
        ).add_class("tv-lr")
        c["node"] = W.Dropdown(
            options=self._node_options(), value=None, description=say("ui.control.node", lang)
        ).add_class("tv-node")
        c["show_all"] = W.Checkbox(
            value=self.state.show_all,
            description=say("ui.control.show_all", lang),
            tooltip=say("ui.control.show_all_tip", lang),
            indent=False,
        ).add_class("tv-show-all")
        c["layers"] = W.SelectMultiple(options=[], description=say("ui.control.layers", lang), rows=4).add_class(
            "tv-layers"
        )
        # where a NaN, Inf or zero gradient starts (the picture marks it): a button goes to its step
        c["jump"] = W.Button(description="", layout=W.Layout(width="auto")).add_class("tv-jump")
        if self.state.quiz:
            c["answer"] = W.Text(placeholder=say("quiz.placeholder", lang), layout=W.Layout(width="260px")).add_class(
                "tv-quiz-input"
            )
            c["check"] = W.Button(description=say("quiz.check", lang)).add_class("tv-quiz-check")
            c["reveal"] = W.Button(description=say("quiz.reveal", lang)).add_class("tv-quiz-reveal")
            c["reset"] = W.Button(description=say("quiz.reset", lang)).add_class("tv-quiz-reset")
        self.controls = c

        # The canvas (canvas.py): patched in place, clicks open / close groups and select boxes;
        # today's HTML picture where anywidget's front end is missing.
        self.canvas = make_canvas(
            reset_label=say("ui.canvas.reset", lang), fallback_note=say("ui.canvas.fallback", lang)
        ).add_class("tv-canvas")
        self._canvas_links: list[W.Widget] = []
        if isinstance(self.canvas, Canvas):
            self.canvas.on_click(self._on_canvas_click)
            # the page shows the slider's step (and clip_norm) by itself when it has the patches (canvas.py)
            self._canvas_links = [
                W.jslink((c["step"], "value"), (self.canvas, "step")),
                W.jslink((c["clip_norm"], "value"), (self.canvas, "clip")),
            ]
        # the step's sentence and chain rule: drawn by the canvas under its picture (its terms
        # highlight their boxes there); a widget of its own beside today's HTML picture
        self.chain = W.HTML().add_class("tv-chain-box")
        if isinstance(self.canvas, Canvas):
            self.chain.layout.display = "none"
        self.panel = W.HTML().add_class("tv-panel")
        self.inspector = W.HTML().add_class("tv-inspect")
        self.message = W.HTML().add_class("tv-message")
        self.quiz = W.HTML().add_class("tv-quiz-panel")

        c["prev"].on_click(lambda _: self._nudge(-1))
        c["next"].on_click(lambda _: self._nudge(+1))
        c["step"].observe(lambda ch: self._set(step=ch["new"]), names="value")
        if "target" in c:
            c["target"].observe(lambda ch: self._on_target(ch["new"]), names="value")
        c["clip"].observe(lambda ch: self._set(clip_mode=ch["new"]), names="value")
        c["clip_norm"].observe(lambda ch: self._set(clip_norm=float(ch["new"])), names="value")
        c["clip_value"].observe(lambda ch: self._set(clip_value=tuple(ch["new"])), names="value")
        c["lr"].observe(lambda ch: self._set(lr=float(ch["new"])), names="value")
        c["node"].observe(lambda ch: self._set(node=ch["new"]), names="value")
        c["show_all"].observe(lambda ch: self._on_structure(show_all=ch["new"]), names="value")
        c["layers"].observe(lambda ch: self._on_layers(ch["new"]), names="value")
        c["jump"].on_click(lambda _: self.jump_to_origin())
        quiz: list[W.Widget] = []
        if self.state.quiz:
            c["check"].on_click(lambda _: self._on_answer(c["answer"].value))
            c["reveal"].on_click(lambda _: self._move(st.reveal(self.graph_targets, self.state)))
            c["reset"].on_click(lambda _: self._move(st.reset_score(self.state)))
            quiz = [W.HBox([c["answer"], c["check"], c["reveal"], c["reset"]]).add_class("tv-quiz-bar"), self.quiz]

        steps = W.HBox([c["play"], c["prev"], c["next"], c["step"]])
        if presenter:
            self.add_class("tv-presenter")
            self.canvas.layout.width = "100%"
            self.children = [W.HTML(panels.CSS), steps, self.canvas, self.chain, *quiz, self.message]
        else:
            top = [c[k] for k in ("target",) if k in c] + [c["clip"], c["clip_norm"], c["clip_value"], c["lr"]]
            side = W.VBox([c["node"], c["show_all"], c["layers"], c["jump"], self.inspector])
            self.children = [
                W.HTML(panels.CSS),
                steps,
                self.canvas,
                self.chain,
                *quiz,
                W.HBox(top[:3]),
                W.HBox(top[3:]),
                self.message,
                W.HBox([self.panel, side]).add_class("tv-lower"),
            ]
        # Keyboard stepping (keyboard.py): ← / → / space while focus is in this box. Called after
        # self.children is set: it appends its (hint) widget to the box's children.
        self.key_stepper = attach_keys(self, c["step"], c["play"], lang=lang)
        if self.state.theme == "projector":  # panels.CSS sizes the controls and tables up
            self.add_class("tv-projector")
        self.page_theme: PageTheme | None = None
        if self.auto_theme:
            self.page_theme = PageTheme()
            self.page_theme.observe(lambda ch: self._on_page_theme(ch["new"]), names="dark")
            self.children = [*self.children, self.page_theme]
        self._sync_groups()
        self._show()

    # -- what the state is about --------------------------------------------------------
    @property
    def graph(self):
        return self.graph_targets.graph

    @property
    def targets(self) -> dict:
        return self.graph_targets.targets

    @property
    def target_name(self) -> str:
        return self.state.target

    @property
    def flow(self) -> GradientFlow:
        return self.graph_targets.flow(self.state.target)

    @property
    def view(self) -> GraphView:
        """The view on screen now (its scene, and its artists if a PNG was made)."""
        return self.graph_targets.view(self.state)

    @property
    def chain_line(self) -> ChainLine | None:
        """The chain rule of the step on screen, as shown under the picture (its pieces name
        the boxes and arrows they come from; ``.text()`` the plain lines); None in a quiz
        while the step waits for an answer."""
        return st.chain_line(self.graph_targets, self.state)

    def gradients(self, clipped: bool = True) -> dict[str, np.ndarray | None]:
        """{variable name: gradient} under the current controls (TF's clip functions)."""
        return st.gradients(self.graph_targets, self.state, clipped)

    def _node_options(self):
        opts = []
        for n, d in self.graph_targets.graph.nx.nodes(data=True):
            label = d.get("name") or d["label"]
            opts.append((f"{label} ({d['kind']}{', ' + d['op_type'] if d['kind'] == 'op' else ''})", n))
        return opts

    # -- controls -> state -----------------------------------------------------------------
    @contextmanager
    def _quiet(self):
        """Change several controls, then redraw once (not once per change)."""
        self._muted = True
        try:
            yield
        finally:
            self._muted = False

    def _set(self, **changes) -> None:
        if self._muted:
            return
        new = self.state.replace(**changes)
        try:
            clipping.check_settings(new.clip_mode, new.clip_norm, new.clip_range)
        except ValueError as e:  # say why, keep the last good state and its picture
            self.message.value = f"<span class='tv-bad'>{panels._esc(e)}</span>"
            return
        self.state = new
        self._show()

    def _on_answer(self, typed: str) -> None:
        """A prediction typed at this step: judged, revealed and scored (or: what to type)."""
        new, problem = st.answer(self.graph_targets, self.state, typed)
        if problem is not None:
            self.message.value = f"<span class='tv-bad'>{panels._esc(problem)}</span>"
            return
        self.controls["answer"].value = ""
        self._move(new)

    def _move(self, state: ExplorerState) -> None:
        self.state = state
        self._show()

    def _on_page_theme(self, dark: bool | None) -> None:
        """The page switched between light and dark: draw the picture in the matching theme."""
        if dark is not None:
            self._set(theme="dark" if dark else "light")

    def jump_to_origin(self) -> None:
        """Go to the step where the target's NaN, Inf or zero gradient first appears, its
        op in the inspector (the jump button; nothing when there is none)."""
        new = st.jump_to_origin(self.graph_targets, self.state)
        if new is self.state:
            return
        with self._quiet():
            self.controls["step"].value = new.step
            self.controls["node"].value = new.node
        self._move(new)

    def _nudge(self, d: int) -> None:
        s = self.controls["step"]
        s.value = max(s.min, min(s.max, s.value + d))

    def _on_target(self, target: str) -> None:
        last = self.graph_targets.flow(target).last_step
        start = 0 if self.state.quiz else last  # a quiz starts at the seed, else the finished pass
        with self._quiet():
            for k in ("step", "play"):
                w = self.controls[k]
                w.max = last  # the last step shows the finished pass
                w.value = start
        self.state = self.state.replace(target=target, step=start, collapsed=None, node=None)
        with self._quiet():
            self.controls["node"].value = None
        self._sync_groups()
        self._show()

    def _on_structure(self, **changes) -> None:
        """What is shown changes the picture's groups: the defaults of the new picture."""
        if self._muted:
            return
        self.state = self.state.replace(collapsed=None, **changes)
        self._sync_groups()
        self._show()

    def _on_layers(self, chosen) -> None:
        """Open the groups ticked in the list, with the groups holding them; unticking a
        group closes it and the groups inside it."""
        if self._muted:
            return
        tree = self.graph_targets.default_shown(self.state).tree
        groups = set(self.graph_targets.groups(self.state))
        before = groups - set(self.graph_targets.collapsed(self.state))
        opened = {x for kind, x in chosen if kind == "layer"}
        for gid in before - opened:  # unticked: what it holds closes with it
            opened = {x for x in opened if gid not in tree.ancestors(x)}
        for gid in list(opened):
            opened.update(tree.ancestors(gid))
        functions = frozenset(x for kind, x in chosen if kind == "function")
        chosen_state = st.with_groups(self.graph_targets, self.state, frozenset(groups - opened), functions=functions)
        self._move_groups(chosen_state)

    def _on_canvas_click(self, element_id: str) -> None:
        """A click on the picture: a closed group's box opens it (its groups inside stay
        closed), an open group's frame closes it, a box of an opened loop's steps opens its
        first step, any other box goes to the inspector."""
        hit = st.box_at(self.graph_targets, self.state, element_id)
        if hit is None:
            return
        what, x = hit
        if what == "select":
            self.controls["node"].value = x  # the node menu sets state.node, as a pick there does
            return
        if what == "step":  # another step of an opened loop: the same groups, that step opened
            self._move_groups(st.open_step(self.graph_targets, self.state, x))
        elif what == "open":
            self._move_groups(st.open_group(self.graph_targets, self.state, x))
        else:  # closing what was opened brings back the default picture (st.with_groups)
            self._move_groups(st.close_group(self.graph_targets, self.state, x))

    def _move_groups(self, state: ExplorerState) -> None:
        """Show a state whose groups changed, and tick them in the groups list."""
        self._set(**{f: getattr(state, f) for f in ("options", "functions")})
        self._sync_groups()

    def _sync_groups(self) -> None:
        """The 'expanded' list: this picture's groups as a tree (indented) and its
        tf.function calls, open ones selected."""
        groups = self.graph_targets.groups(self.state)
        tree = self.graph_targets.default_shown(self.state).tree
        collapsed = self.graph_targets.collapsed(self.state)
        g = self.graph_targets.graph
        functions = [(f"tf.function {g.nx.nodes[f]['function']} ({f})", ("function", f)) for f in g.functions()]
        w = self.controls["layers"]
        with self._quiet():
            names = short_names({x: x for x in groups})  # unique labels: a <select> tells options by label
            # a derivative is its whole name ("du = ∂u/∂pts": its "/" is a fraction bar, not a path)
            whole = {x: tree.groups[x].name for x in groups if tree.groups[x].kind == "derivative"}
            if len(set(whole.values()) | {names[x] for x in groups if x not in whole}) == len(groups):
                names.update(whole)
            w.options = [(_indented(tree.groups[x], names[x]), ("layer", x)) for x in groups] + functions
            w.value = tuple(
                [("layer", x) for x in groups if x not in collapsed] + [("function", f) for f in self.state.functions]
            )
            w.rows = max(1, min(8, len(w.options)))
        w.layout.display = None if w.options else "none"

    def show_graph_targets(self, explored: GraphTargets, state: ExplorerState) -> None:
        """Show another recording in this widget (a what-if move, another training step),
        keeping its controls: the step slider follows the new backward pass, the inspector
        menu its nodes, the groups list its groups. The picture leaves for the browser
        first; the old recording's pictures and flows are dropped."""
        old = self.graph_targets
        self.graph_targets, self.state = explored, state
        self._set_canvas(st.picture(explored, state))
        last = explored.flow(state.target).last_step
        c = self.controls
        with self._quiet():
            for k in ("step", "play"):
                c[k].max = max(last, c[k].min)
                c[k].value = explored.flow(state.target).check_step(state.step)
            c["node"].options = self._node_options()
            c["node"].value = state.node
        self._sync_groups()
        self._show()
        if old is not explored:
            old.forget()

    # -- state -> what is shown ------------------------------------------------------------
    def _show(self) -> None:
        """Show the state: the picture, the clipping panel, the inspector (one redraw each)."""
        c = self.controls
        c["clip_norm"].layout.display = None if self.state.clip_mode in ("by_norm", "by_global_norm") else "none"
        c["clip_value"].layout.display = None if self.state.clip_mode == "by_value" else "none"
        try:
            # The picture first (the clipping report it may need is kept for the panel):
            # it is what the eye is on; the panel follows.
            self._set_canvas(st.picture(self.graph_targets, self.state))
            panel = st.panel(self.graph_targets, self.state)
        except ValueError as e:  # TF refuses this clipping (e.g. mixed dtypes): say so, keep the picture
            self.message.value = f"<span class='tv-bad'>{panels._esc(e)}</span>"
            return
        self.message.value = ""
        if self.panel.value != panel:
            self.panel.value = panel
        self.inspector.value = st.inspector(self.graph_targets, self.state)
        start = st.origin_step(self.graph_targets, self.state)
        c["jump"].layout.display = "none" if start is None else None
        if start is not None:
            c["jump"].description = say("inspect.jump", self.state.lang, step=start)
        chain = st.chain_html(self.graph_targets, self.state)
        if isinstance(self.canvas, Canvas):
            if self.canvas.chain != chain:
                self.canvas.chain = chain
        elif self.chain.value != chain:
            self.chain.value = chain
        if self.state.quiz:
            self.quiz.value = st.quiz_panel(self.graph_targets, self.state)
            open_step = st.quiz_open(self.graph_targets, self.state)
            for k in ("answer", "check", "reveal"):
                c[k].disabled = not open_step
        if isinstance(self.canvas, Canvas):
            self.canvas.look_ahead()  # last: the patches to the steps around this one

    def _set_canvas(self, svg: str) -> None:
        if not isinstance(self.canvas, Canvas):
            if self.canvas.value != svg:
                self.canvas.value = svg
            return
        model, state = self.graph_targets, self.state
        step, last = st.step_of(model, state), model.flow(state.target).last_step
        # the pictures of every step in these settings: the page steps between them by itself;
        # on the finished pass (where clipped values are drawn) it also goes one clip_norm
        # slider step either way by itself
        s = self.controls["clip_norm"]
        clip_near: list[float] = []
        if state.clip_mode in ("by_norm", "by_global_norm") and step == last:
            clip_near = [round(state.clip_norm + d * s.step, 10) for d in (-1, 1, -2, 2)]
            clip_near = [v for v in clip_near if s.min <= v <= s.max]
        self.canvas.show(
            svg,
            step=step,
            family=(model, state.replace(step=None, node=None, lr=0.0)),
            picture_at=lambda k: st.picture(model, state.replace(step=k)),
            last=last,
            clip_near=clip_near,
            picture_of=lambda v: st.picture(model, state.replace(clip_norm=v)),
        )
        # the inspector's box, highlighted on the page (a class on top of the picture, not in it)
        selected = f"node-{state.node}" if state.node is not None else ""
        if self.canvas.selected != selected:
            self.canvas.selected = selected
        tips = st.tips(model, state)  # after the picture: what the eye is on goes first
        if self.canvas.tips is not tips:
            self.canvas.tips = tips

    # -- output --------------------------------------------------------------------------
    def save(self, path) -> Any:
        """Write what is on screen now (.png or .svg)."""
        from ..output.export import check_path, save_view

        p = check_path(path)
        if p.suffix.lower() == ".gif":
            raise ValueError("Explorer.save writes the current view: use .png or .svg (tv.save makes GIFs).")
        return save_view(self.view, p)

    def export_html(
        self,
        path,
        *,
        title: str | None = None,
        all_targets: bool = False,
        clip_norms=None,
        **removed: Any,
    ) -> Any:
        """Write a standalone .html page of what is on screen: the pictures of every backward
        step (current target, groups and clipping, drawn exactly as the canvas draws them), a
        step slider, ◀ ▶, play and the keys that step in the browser with no kernel, and the
        clipping panel. ``all_targets=True`` puts every target in the page (a menu picks
        one); ``clip_norms=[...]`` computes the panel for each of those clip_norm positions
        (a slider picks one). The page is one file that makes no request: see
        :func:`tapeviz.explorer.html_page.page_fragment`. Returns the path.
        """
        from .html_page import write_page

        targets = list(self.graph_targets.targets) if all_targets else None
        return write_page(
            self.graph_targets,
            self.state,
            path,
            targets=targets,
            clip_norms=clip_norms,
            title=title,
            interval=self.controls["play"].interval,
            **removed,  # the page's old script keywords: a TypeError naming the change
        )

    def close(self) -> None:
        """Close every widget this explorer made and drop its pictures (ipywidgets keeps
        widgets alive in a registry until closed, so closing only the box would leak)."""
        if not hasattr(self, "_link"):  # an explorer whose construction was refused
            super().close()
            return
        if self.page_theme is not None:
            self.page_theme.close()
        for w in [
            self._link,
            *self._canvas_links,
            *self.controls.values(),
            self.canvas,
            self.panel,
            self.inspector,
            self.chain,
            self.message,
            self.quiz,
            *self._boxes(),
            self,
        ]:
            for part in (getattr(w, "layout", None), getattr(w, "style", None)):
                if isinstance(part, W.Widget):  # Layout and Style are widgets of their own
                    part.close()
            if w is not self:
                w.close()
        self.graph_targets.forget()
        super().close()

    def _boxes(self) -> list:
        out, todo = [], list(self.children)
        while todo:
            w = todo.pop()
            out.append(w)
            todo.extend(getattr(w, "children", ()))
        return out


def _indented(group, name: str) -> str:
    """A group's line in the explorer's list: its name, indented by its level (no-break
    spaces: a <select> collapses ordinary ones)."""
    return "\u00a0\u00a0\u00a0" * (group.level - 1) + name
