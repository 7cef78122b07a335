"""The Explorer: a live ipywidgets view of a recorded tape.

Controls hold the parameters (step, target, clipping, learning rate, inspected node);
callbacks registered on them restyle one GraphView in place (its scene: texts and
colours, no matplotlib artist), and one redraw writes it as inline SVG for the canvas. Clipping numbers are
computed by TensorFlow (clipping.py); gradients come from the GradientFlow. The widget
never touches TF internals and never computes a gradient itself.
"""

from __future__ import annotations

import html
from contextlib import contextmanager
from typing import Any, Mapping

import ipywidgets as W
import numpy as np

from . import clipping
from .diagnose import explain_flow
from .flow import GradientFlow
from .graph import TapeGraph, format_value
from .keys import attach_keys
from .shown import decide
from .render import GraphView
from .svg import to_svg

CSS = """
<style>
.tv-panel table { border-collapse: collapse; font-size: 12px; }
.tv-panel td, .tv-panel th { padding: 2px 6px; text-align: left; vertical-align: middle; }
.tv-panel th { color: #475569; font-weight: 600; }
.tv-bar { height: 9px; display: inline-block; vertical-align: middle; }
.tv-raw { background: #94a3b8; }
.tv-clip { background: #ea580c; }
.tv-none { color: #737373; font-style: italic; }
.tv-bad { color: #dc2626; font-weight: 600; }
.tv-inspect pre { font-size: 11px; max-height: 220px; overflow: auto; background: #f8fafc; padding: 4px; }
</style>
"""


#: The clipping panel lists at most this many variables (a table of hundreds helps nobody).
PANEL_ROWS = 40


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _arr(a: np.ndarray | None, precision: int = 4) -> str:
    if a is None:
        return "None"
    a = np.asarray(a)
    if a.size <= 6:
        return format_value(a)
    return np.array2string(a, precision=precision, separator=", ", threshold=64)


def _bad(a) -> bool:
    return a is not None and np.asarray(a).dtype.kind in "fc" and not np.all(np.isfinite(a))


class Explorer(W.VBox):
    """Step through the backward pass, switch targets, clip gradients, inspect nodes."""

    def __init__(self, graph: TapeGraph, targets: Mapping[str, Any], *, flow_factory, dpi: int = 72):
        super().__init__()
        self._muted = False
        self.graph = graph
        self.targets = dict(targets)
        self._flow_factory = flow_factory
        self._flows: dict[str, GradientFlow] = {}
        self._views: dict[str, GraphView] = {}
        self.dpi = dpi
        self.add_class("tv-explorer")

        names = list(self.targets)
        c: dict[str, W.Widget] = {}
        c["step"] = W.IntSlider(value=0, min=0, max=1, description="step", continuous_update=True,
                                layout=W.Layout(width="420px")).add_class("tv-step")
        c["play"] = W.Play(value=0, min=0, max=1, interval=900, description="play").add_class("tv-play")
        self._link = W.jslink((c["play"], "value"), (c["step"], "value"))
        c["prev"] = W.Button(description="◀", layout=W.Layout(width="40px"), tooltip="previous step").add_class("tv-prev")
        c["next"] = W.Button(description="▶", layout=W.Layout(width="40px"), tooltip="next step").add_class("tv-next")
        if len(names) > 1:
            c["target"] = W.Dropdown(options=names, value=names[0], description="target").add_class("tv-target")
        c["clip"] = W.Dropdown(options=list(clipping.MODES), value="none", description="clip").add_class("tv-clip-mode")
        c["clip_norm"] = W.FloatSlider(value=1.0, min=0.01, max=10.0, step=0.01, description="clip_norm",
                                       continuous_update=True).add_class("tv-clip-norm")
        c["clip_value"] = W.FloatRangeSlider(value=(-1.0, 1.0), min=-10.0, max=10.0, step=0.05,
                                             description="clip_value", continuous_update=True).add_class("tv-clip-value")
        c["lr"] = W.FloatSlider(value=0.01, min=0.0, max=1.0, step=0.001, readout_format=".3f",
                                description="lr", continuous_update=True).add_class("tv-lr")
        c["node"] = W.Dropdown(options=self._node_options(), description="inspect").add_class("tv-node")
        shown = decide(graph, self._flow_factory(self.targets[names[0]]))
        layers = list(shown.group_names)
        self._collapsed = set(shown.collapsed)
        self._functions: set = set()  # tf.function calls opened into their bodies
        functions = [(f"tf.function {graph.nx.nodes[f]['function']} ({f})", ("function", f)) for f in graph.functions()]
        if layers or functions:
            c["layers"] = W.SelectMultiple(
                options=[(x, ("layer", x)) for x in layers] + functions,
                value=[("layer", x) for x in layers if x not in self._collapsed],
                description="expanded", rows=min(6, len(layers) + len(functions))).add_class("tv-layers")
        self.controls = c

        self.canvas = W.HTML(layout=W.Layout(overflow="auto")).add_class("tv-canvas")
        self.panel = W.HTML().add_class("tv-panel")
        self.inspector = W.HTML().add_class("tv-inspect")
        self.message = W.HTML().add_class("tv-message")

        c["prev"].on_click(lambda _: self._nudge(-1))
        c["next"].on_click(lambda _: self._nudge(+1))
        c["step"].observe(lambda ch: self._on_view(), names="value")
        if "target" in c:
            c["target"].observe(lambda ch: self._on_target(), names="value")
        for k in ("clip", "clip_norm", "clip_value", "lr"):
            c[k].observe(lambda ch: self._on_clip(), names="value")
        c["node"].observe(lambda ch: self._show_inspector(), names="value")
        if "layers" in c:
            c["layers"].observe(lambda ch: self._on_layers(), names="value")

        top = [c[k] for k in ("target",) if k in c] + [c["clip"], c["clip_norm"], c["clip_value"], c["lr"]]
        self.children = [
            W.HTML(CSS),
            W.HBox([c["play"], c["prev"], c["next"], c["step"]]),
            self.canvas,
            W.HBox(top[:3]),
            W.HBox(top[3:]),
            self.message,
            W.HBox([self.panel, W.VBox([c[k] for k in ("node", "layers") if k in c] + [self.inspector])]),
        ]
        # Keyboard stepping (keys.py): ← / → / space while focus is in this box. Call it after
        # self.children is set: it appends its (hint) widget to the box's children.
        self.key_stepper = attach_keys(self, c["step"], c["play"])
        self._report: clipping.ClipReport | None = None
        self._frames: dict = {}  # picture cache, see _on_view
        self._on_target()

    # -- state ---------------------------------------------------------------------
    @property
    def target_name(self) -> str:
        return self.controls["target"].value if "target" in self.controls else next(iter(self.targets))

    @property
    def flow(self) -> GradientFlow:
        name = self.target_name
        if name not in self._flows:
            self._flows[name] = self._flow_factory(self.targets[name])
        return self._flows[name]

    @property
    def view(self) -> GraphView:
        name = self.target_name
        if name not in self._views:
            self._views[name] = GraphView(self.graph, self.flow, collapsed=self._collapsed, functions=self._functions)
        return self._views[name]

    def _on_layers(self) -> None:
        """Expanding or collapsing layers changes the picture's structure: new views."""
        chosen = set(self.controls["layers"].value)
        layers = {x for kind, x in (v for _, v in self.controls["layers"].options) if kind == "layer"}
        self._collapsed = layers - {x for kind, x in chosen if kind == "layer"}
        self._functions = {x for kind, x in chosen if kind == "function"}
        self._views.clear()
        self._on_view()  # the cache key includes the layers, so old pictures stay valid

    def _variables(self) -> dict[str, Any]:
        return {d["name"]: n for n, d in self.graph.nx.nodes(data=True) if d["kind"] == "variable"}

    def _node_options(self):
        opts = []
        for n, d in self.graph.nx.nodes(data=True):
            label = d.get("name") or d["label"]
            opts.append((f"{label} ({d['kind']}{', ' + d['op_type'] if d['kind'] == 'op' else ''})", n))
        return opts

    def gradients(self, clipped: bool = True) -> dict[str, np.ndarray | None]:
        """{variable name: gradient} under the current controls (TF's clip functions)."""
        c = self.controls
        raw = {name: self.flow.grad_tensor(node) for name, node in self._variables().items()}
        if not clipped:
            return {k: clipping.to_numpy(v) for k, v in raw.items()}
        out = clipping.clip(raw, c["clip"].value, c["clip_norm"].value, tuple(c["clip_value"].value))
        return {k: clipping.to_numpy(v) for k, v in out.items()}

    # -- callbacks -----------------------------------------------------------------------
    def _nudge(self, d: int) -> None:
        s = self.controls["step"]
        s.value = max(s.min, min(s.max, s.value + d))

    def _on_target(self) -> None:
        last = self.flow.last_step  # the last step is the finished pass
        with self._quiet():
            for k in ("step", "play"):
                w = self.controls[k]
                w.max = last
                w.value = last
        self._on_clip()
        self._show_inspector()

    @contextmanager
    def _quiet(self):
        """Change several controls, then redraw once (not once per change)."""
        self._muted = True
        try:
            yield
        finally:
            self._muted = False

    def _on_clip(self) -> None:
        c = self.controls
        c["clip_norm"].layout.display = None if c["clip"].value in ("by_norm", "by_global_norm") else "none"
        c["clip_value"].layout.display = None if c["clip"].value == "by_value" else "none"
        try:
            self._report = self._make_report()
            self.message.value = ""
        except ValueError as e:
            self.message.value = f"<span class='tv-bad'>{_esc(e)}</span>"
            return
        self.panel.value = self._panel_html(self._report)
        self._on_view()

    def _make_report(self) -> clipping.ClipReport:
        c = self.controls
        raw = {name: self.flow.grad_tensor(node) for name, node in self._variables().items()}
        weights = {name: self.graph.value_of(node) for name, node in self._variables().items()}
        weights = {k: v for k, v in weights.items() if v is not None}
        return clipping.report(raw, weights, mode=c["clip"].value, clip_norm=c["clip_norm"].value,
                               clip_value=tuple(c["clip_value"].value), lr=c["lr"].value)

    def _on_view(self) -> None:
        """Restyle the view for step + clipping, then one redraw into the canvas.

        A picture is keyed by everything it shows (target, layers, step, clipped texts):
        moves that change nothing drawn (the learning rate, clipping while an earlier
        step is shown) cost no SVG rendering, and pictures seen before come from a cache.
        """
        if self._muted:
            return
        key = self._state_key()
        view = self._apply_state()  # cheap, and keeps the view true to the screen
        svg = self._frames.get(key)
        if svg is None:
            svg = self._svg(view)
            if len(self._frames) >= 128:
                self._frames.pop(next(iter(self._frames)))
            self._frames[key] = svg
        if self.canvas.value != svg:
            self.canvas.value = svg

    def _overrides(self) -> dict:
        """Clipped gradients replace the variables' texts on the finished picture."""
        rep = self._report
        if rep is None or rep.mode == "none" or self.controls["step"].value < self.flow.last_step:
            return {}
        out = {}
        for name, node in self._variables().items():
            g = rep.clipped.get(name)
            out[node] = f"∂ {format_value(rep.raw.get(name))} → {format_value(g)}" if g is not None else "∂ None"
        return out

    def _state_key(self) -> tuple:
        return (self.target_name, frozenset(self._collapsed), frozenset(self._functions), self.controls["step"].value,
                tuple(sorted(self._overrides().items())))

    def _apply_state(self) -> GraphView:
        """Bring the view (its scene, and its artists if a PNG was saved) to what the controls say."""
        view = self.view
        step = self.controls["step"].value
        view.overrides = self._overrides()
        view.set_step(step)
        return view

    def _svg(self, view: GraphView) -> str:
        """The picture for the canvas, written straight from the view's scene (svg.to_svg):
        no matplotlib artist is made, and it is many times faster than savefig."""
        svg = to_svg(view)
        return svg[svg.find("<svg"):]

    def _show_inspector(self) -> None:
        node = self.controls["node"].value
        if node is None:
            self.inspector.value = ""
            return
        g, fl = self.graph, self.flow
        d = g.nx.nodes[node]
        info = g.output_info(node)
        parts = [f"<b>{_esc(d.get('name') or d['label'])}</b> <i>{_esc(d['kind'])}"
                 f"{' · ' + _esc(d['op_type']) if d['kind'] == 'op' else ''}</i>"]
        if d.get("scope"):
            parts.append(f"scope: {_esc(d['scope'])}")
        if info is not None:
            value = info.value if info.value is not None else info.summary
            parts.append(f"value ({_esc(info.dtype)}, shape {_esc(info.shape)}):<pre>{_esc(_arr(value) if info.value is not None else value)}</pre>")
        grad = fl.grad(node)
        cls = "tv-bad" if _bad(grad) else ""
        parts.append(f"d{_esc(g.display_name(fl.target_nodes[0]))}/d·:<pre class='{cls}'>{_esc(_arr(grad))}</pre>")
        why = explain_flow(fl, node) if grad is None else None
        if why is not None:
            parts.append(f"<span class='tv-none'>no gradient ({_esc(why.reason)}): {_esc(why)}</span>")
        self.inspector.value = "<br>".join(parts)

    def _panel_html(self, rep: clipping.ClipReport) -> str:
        rows = []
        scale = max([v for v in rep.norm_before.values() if v] + [1e-12])
        names = list(rep.raw)
        shown = names
        if len(names) > PANEL_ROWS:  # big models: None gradients, then the largest norms
            nones = [n for n in names if rep.raw[n] is None]
            rest = sorted((n for n in names if rep.raw[n] is not None), key=lambda n: -rep.norm_before[n])
            keep = set((nones + rest)[:PANEL_ROWS])
            shown = [n for n in names if n in keep]
        for name in shown:
            raw, clipped = rep.raw[name], rep.clipped[name]
            if raw is None:
                why = explain_flow(self.flow, self._variables()[name])
                rows.append(f"<tr><td>{_esc(name)}</td><td colspan='5' class='tv-none'>gradient is None"
                            f"{' (' + _esc(why.reason) + '): ' + _esc(why) if why else ''} "
                            f"{_esc(clipping.NONE_ADVICE)}</td></tr>")
                continue
            nb, na = rep.norm_before[name], rep.norm_after[name]
            bars = (f"<span class='tv-bar tv-raw' style='width:{120 * nb / scale:.1f}px'></span><br>"
                    f"<span class='tv-bar tv-clip' style='width:{120 * na / scale:.1f}px'></span>")
            bad = " class='tv-bad'" if _bad(raw) else ""
            w, upd = rep.weights.get(name), rep.updated.get(name)
            rows.append(
                f"<tr><td>{_esc(name)}</td><td{bad}>{_esc(_small(raw))}</td><td>{_esc(_small(clipped))}</td>"
                f"<td class='tv-norm' data-var='{_esc(name)}'>{nb:.4g} → <b class='tv-clipped-norm'>{na:.4g}</b></td>"
                f"<td>{bars}</td><td>{_esc(_small(w))} − {rep.lr:g}·g = {_esc(_small(upd))}</td></tr>"
            )
        head = ("<tr><th>variable</th><th>raw g</th><th>clipped g</th><th>‖g‖ before → after</th>"
                "<th>bars</th><th>SGD preview w − lr·g</th></tr>")
        more = (f"<div class='tv-none'>showing {len(shown)} of {len(names)} variables (None gradients, then the "
                f"largest norms); ex.gradients() has them all</div>" if len(shown) < len(names) else "")
        foot = more + (f"<div>global norm: {rep.global_norm_before:.4g} → "
                f"<b class='tv-global-norm'>{rep.global_norm_after:.4g}</b> ({_esc(rep.mode)})</div>")
        return f"<div class='tv-panel'><table>{head}{''.join(rows)}</table>{foot}</div>"

    def close(self) -> None:
        """Close every widget this explorer made and drop its figures (ipywidgets keeps
        widgets alive in a registry until closed, so closing only the box would leak)."""
        for w in [self._link, *self.controls.values(), self.canvas, self.panel, self.inspector, self.message,
                  *self._boxes(), self]:
            for part in (getattr(w, "layout", None), getattr(w, "style", None)):
                if isinstance(part, W.Widget):  # Layout and Style are widgets of their own
                    part.close()
            if w is not self:
                w.close()
        self._views.clear()
        self._flows.clear()
        self._frames.clear()
        super().close()

    def _boxes(self) -> list:
        out, todo = [], list(self.children)
        while todo:
            w = todo.pop()
            out.append(w)
            todo.extend(getattr(w, "children", ()))
        return out

    # -- output --------------------------------------------------------------------------
    def save(self, path) -> Any:
        """Write what is on screen now (.png or .svg)."""
        from .export import check_path, save_view

        p = check_path(path)
        if p.suffix.lower() == ".gif":
            raise ValueError("Explorer.save writes the current view: use .png or .svg (tv.save makes GIFs).")
        return save_view(self._apply_state(), p)

    def export_html(self, path, *, title: str | None = None, embed_url: str | None = None,
                    requirejs: bool = True, requirejs_url: str | None = None, cors: bool = True) -> Any:
        """Write a standalone .html page where the backward pass can be stepped with no kernel.

        The page holds one picture per backward step plus the finished pass (the current
        target, layers and clipping, drawn exactly as the canvas draws them), a step slider
        and a play button that pick a picture in the browser (``jslink``), and a static copy
        of the clipping panel. Returns the path.

        The page runs on ``@jupyter-widgets/html-manager``. By default it loads it, and
        require.js, from public CDNs (the URLs ipywidgets itself uses: jsDelivr
        ``html-manager@^1.0.1/dist/embed-amd.js`` and cdnjs ``require.js 2.3.4``), so whoever
        opens the page needs internet access. For a page that works offline or on a
        closed network, serve local copies (``npm pack @jupyter-widgets/html-manager@1
        requirejs``) and point the page at them:

        - ``embed_url``: URL of the html-manager script (``dist/embed-amd.js``; with
          ``requirejs=False`` the standalone ``dist/embed.js``). Relative URLs are resolved
          against the page's address.
        - ``requirejs``: True (default) loads require.js first and the AMD build of the
          manager; False loads the standalone ``embed.js`` and no require.js.
        - ``requirejs_url``: where require.js comes from (default: the cdnjs copy).
        - ``cors``: ``crossorigin="anonymous"`` on the script tags (ipywidgets' default).
        - ``title``: the page's heading and title (default "tapeviz: backward pass of <target>").

        Browsers refuse some scripts on ``file://`` pages: serve the page over http
        (e.g. ``python -m http.server``) when the scripts are local files too.
        """
        import json
        import re

        from ipywidgets import embed

        from .export import check_path

        p = check_path(path, formats=(".html", ".htm"))
        if requirejs_url is not None and not requirejs:
            raise ValueError("requirejs_url needs requirejs=True: with requirejs=False the page loads the "
                             "standalone embed.js and no require.js.")
        if embed_url is None:
            embed_url = embed.DEFAULT_EMBED_REQUIREJS_URL if requirejs else embed.DEFAULT_EMBED_SCRIPT_URL

        # The pictures: each step as the canvas shows it (same code path and cache as a
        # slider move). Nothing reaches the front end meanwhile; the step is put back.
        c = self.controls
        step = c["step"]
        n = len(self.flow.steps)  # pictures 0..n-1; the last is the finished pass
        current = step.value
        frames: list[str] = []
        with self.canvas.hold_sync(), step.hold_sync():
            try:
                for k in range(n):
                    step.value = k
                    self._on_view()  # a no-op when the observer already drew this state
                    frames.append(self.canvas.value)
            finally:
                step.value = current
                self._on_view()

        target = self.target_name
        mode = c["clip"].value
        if mode in ("by_norm", "by_global_norm"):
            clip_text = f"{mode} (clip_norm={c['clip_norm'].value:g})"
        elif mode == "by_value":
            lo, hi = c["clip_value"].value
            clip_text = f"by_value (clip_value=({lo:g}, {hi:g}))"
        else:
            clip_text = "none"
        page_title = title if title is not None else f"tapeviz: backward pass of {target}"

        header = W.HTML(f"<div class='tv-export-head'><b>{_esc(page_title)}</b><br>"
                        f"target: {_esc(target)} · clipping: {_esc(clip_text)} · lr: {c['lr'].value:g} · "
                        f"{n} pictures; the slider runs in the browser, no Python needed</div>")
        pictures = [W.HTML(svg) for svg in frames]
        stack = W.Stack(pictures, selected_index=current, layout=W.Layout(overflow="auto")).add_class("tv-frames")
        slider = W.IntSlider(value=current, min=0, max=n - 1, description="step", continuous_update=True,
                             layout=W.Layout(width="420px")).add_class("tv-step")
        play = W.Play(value=current, min=0, max=n - 1, interval=c["play"].interval,
                      description="play").add_class("tv-play")
        links = [W.jslink((slider, "value"), (stack, "selected_index")),
                 W.jslink((play, "value"), (stack, "selected_index"))]
        panel = W.HTML(CSS + self.message.value + self.panel.value)
        bar = W.HBox([play, slider])
        root = W.VBox([header, bar, stack, panel]).add_class("tv-export")
        made = [root, bar, header, stack, *pictures, slider, play, panel, *links]
        try:
            snippet = embed.embed_snippet(
                [root], state=embed.dependency_state([root], drop_defaults=True), indent=None,
                embed_url=_esc(embed_url), requirejs=requirejs and requirejs_url is None, cors=cors)
        finally:
            for w in made:  # layouts and styles are widgets too: close them, or they stay registered
                for part in (getattr(w, "layout", None), getattr(w, "style", None)):
                    if isinstance(part, W.Widget):
                        part.close()
                w.close()

        crossorigin = ' crossorigin="anonymous"' if cors else ""
        load_requirejs = ""
        if requirejs:
            # The AMD build finds its fonts (the play buttons' icons) next to the URL that
            # require.js gives its modules; by default that is the page's own folder, where
            # they are not. Map the modules to the folder of embed_url instead.
            assets = re.sub(r"[?#].*$", "", embed_url).rpartition("/")[0] or "."
            config = json.dumps({"paths": {"@jupyter-widgets/html-manager/dist": assets, "@jupyter-widgets": assets}})
            load_requirejs = f"<script>var require = {embed.escape_script(config)};</script>\n"
            if requirejs_url is not None:
                load_requirejs += f'<script src="{_esc(requirejs_url)}"{crossorigin}></script>\n'
        page = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<link rel="icon" href="data:,">\n'  # no favicon request
            f"<title>{_esc(page_title)}</title>\n"
            "<style>\nbody { font-family: sans-serif; margin: 12px; }\n"
            ".tv-export-head { font-size: 13px; margin-bottom: 6px; }\n"
            ".tv-frames svg { max-width: 100%; height: auto; }\n"  # wide graphs fit the window
            "body:has(.jupyter-widgets) .tv-export-loading { display: none; }\n</style>\n"
            "</head>\n<body>\n"
            f"<p class='tv-export-loading'>Loading the widget scripts from {_esc(embed_url)} ... "
            "If nothing appears below, this browser cannot reach that address "
            "(see Explorer.export_html: embed_url, requirejs_url).</p>\n"
            f"{load_requirejs}{snippet}\n</body>\n</html>\n"
        )
        p.write_text(page, encoding="utf-8")
        return p


def _small(a: np.ndarray | None, max_items: int = 4) -> str:
    """Components for small tensors, the norm for large ones."""
    if a is None:
        return "None"
    a = np.asarray(a)
    if a.size <= max_items:
        return format_value(a, max_items=max_items)
    return f"{'x'.join(map(str, a.shape))} ‖·‖={float(np.linalg.norm(a)):.4g}"
