"""GraphView: a Scene shown as SVG or drawn as matplotlib artists, kept in step.

The view sits above both writers: its scene is written as SVG by :mod:`tapeviz.output.svg`
(files, the explorer's canvas, Jupyter's display) with no artist made, and drawn by
:mod:`tapeviz.output.artists` (PNG, GIF, ``view.figure``, ``view.artists``) only when someone
asks for artists. When the step or the shown gradients change, the scene restyles its
records and the matplotlib writer restyles the artists that exist (scene -> artists, one
way); when someone restyles an artist, an SVG is written from a copy of the records
restyled as the artists are (:meth:`GraphView.scene_as_drawn`), so the file shows it too
and the scene stays as the view made it.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

from ..gradients.flow import GradientFlow
from ..gradients.origin import flow_origin
from ..picture.frames import WHOLE
from ..picture.marks import Hidden
from ..picture.opening import leaf_groups
from ..picture.options import Options
from ..picture.restyling import GradOverride
from ..picture.rows import PAGE_WIDTH
from ..picture.scene import Scene
from ..picture.style import DPI
from ..picture.themes import Theme
from ..picture.visibility import Shown
from ..record.graph import TapeGraph
from .artists import Artists, Chrome, chrome_artists, draw_scene, raster_dpi, restyle_artists, scene_as_drawn
from .svg import to_svg

__all__ = ["GraphView", "TapeFigure"]


class TapeFigure(Figure):
    """A Figure that shows itself in Jupyter without ``%matplotlib inline`` or pyplot
    (pyplot-free figures otherwise display as their text repr).

    While it holds nothing but its GraphView's picture it shows as SVG written by
    svg.py (a 1,000-op graph in ~0.1 s, where matplotlib's PNG spends ~3 ms on each
    label); once anything else is drawn on it, as matplotlib's PNG."""

    _tv_view: GraphView | None = None  # the GraphView drawn on this figure (tv.draw returns only the figure)

    def _view_owning_all(self) -> GraphView | None:
        view = self._tv_view
        return view if view is not None and view.drawn and view.draws_whole_figure() else None

    def _repr_svg_(self) -> str | None:
        view = self._view_owning_all()
        if view is None:
            return None
        svg = to_svg(view)
        return svg[svg.find("<svg") :]

    def _repr_png_(self) -> bytes | None:
        if self._view_owning_all() is not None:
            return None  # shown as SVG instead
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=raster_dpi(self, self.dpi))
        return buf.getvalue()


def _root_figure(ax: Axes) -> Figure:
    """The Figure an Axes is drawn on, through any SubFigures: only a Figure can be saved."""
    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


class _Drawing(NamedTuple):
    """The matplotlib side of a view, made together on first use."""

    chrome: Chrome
    ax: Axes
    artists: Artists


class GraphView:
    """A picture of a graph whose gradient state can be changed in place.

    ``set_step(k)`` shows the backward pass after steps 0..k (None: the last step, the
    finished pass); ``set_grad_overrides`` replaces the gradient texts of some nodes
    (e.g. clipped values) without touching the rest. Only texts and colours change;
    nothing is re-created or moved.

    What is shown, and how it is placed, is the :class:`~tapeviz.picture.scene.Scene`'s
    business: the picture's options (:class:`tv.Options`, as ``options=`` or keywords) and
    the tf.function calls opened (``functions``); :meth:`expanded` returns a view with
    some layers opened.

    Given ``ax``, the picture is drawn into it at once; otherwise its figure and artists
    are made on first use (``figure``, ``ax``, ``artists``, ``png``).
    """

    def __init__(
        self,
        graph: TapeGraph,
        flow: GradientFlow | None = None,
        options: Options | None = None,
        *,
        ax: Axes | None = None,
        pos: Mapping[Any, tuple[float, float]] | None = None,
        title: str | None = None,
        caption: str | None = None,
        routes: Mapping[tuple[Any, Any], list] | None = None,
        functions: Iterable[str] = (),
        page: float = PAGE_WIDTH,
        frames: bool | str = WHOLE,
        **option_keywords: Any,
    ):
        self.options = opts = Options.of(options, **option_keywords).in_file()
        variable_magnitudes = None
        if opts.magnitude and flow is not None:
            from ..gradients.magnitude import flow_magnitudes  # the norms, computed by TF

            variable_magnitudes = flow_magnitudes(flow)
        self.magnitude = opts.magnitude
        origin = None
        if flow is not None:  # where a NaN, Inf or zero gradient starts, read from the flow: the picture marks it
            origin = flow_origin(flow)
        self.scene = Scene(
            graph,
            flow,
            opts,
            pos=pos,
            routes=routes,
            title=title,
            caption=caption,
            functions=functions,
            variable_magnitudes=variable_magnitudes,
            page=page,
            frames=frames,
            origin=origin,
        )
        self._user_ax = ax
        self._drawing: _Drawing | None = None
        if ax is not None:
            self._draw()

    # -- what the scene holds ------------------------------------------------------

    @property
    def graph(self) -> TapeGraph:
        return self.scene.graph

    @property
    def flow(self) -> GradientFlow | None:
        """The gradient flow shown (None: the recorded graph without a target)."""
        return self.scene.flow

    @property
    def functions(self) -> set:
        """The tf.function call nodes opened into the ops of their body."""
        return self.scene.functions

    @property
    def display(self) -> Shown:
        """What is shown: the graph with layers collapsed and hidden nodes folded."""
        return self.scene.display

    @property
    def pos(self) -> dict:
        """Each shown node's position, in data units."""
        return self.scene.pos

    @property
    def routes(self) -> dict:
        """(producer, consumer) -> the bend points of an edge that does not run straight."""
        return self.scene.routes

    @property
    def targets(self) -> set:
        """The shown nodes of the flow's targets."""
        return self.scene.targets

    @property
    def step(self) -> int:
        """The step shown: the pass after steps 0..step."""
        return self.scene.step

    @property
    def theme(self) -> Theme:
        return self.scene.theme

    @property
    def lang(self) -> str:
        return self.scene.lang

    @property
    def layers(self) -> list[str]:
        """Names of the layers this graph groups its ops into."""
        return self.scene.layers

    @property
    def n_steps(self) -> int:
        """How many steps the backward pass has (0 without a flow)."""
        return self.scene.n_steps

    @property
    def overrides(self) -> dict[Any, GradOverride | str]:
        """Node -> the gradient text shown instead of TF's (e.g. a clipped value)."""
        return self.scene.overrides

    @overrides.setter
    def overrides(self, texts: Mapping[Any, GradOverride | str]) -> None:
        self.scene.overrides = dict(texts)  # shown at the next set_step, as set_grad_overrides shows at once

    # -- the matplotlib side, made on first use --------------------------------------

    @property
    def hidden(self) -> Hidden | None:
        """Gradients shown as "?" until a quiz reveals them (:class:`tapeviz.picture.marks.Hidden`)."""
        return self.scene.hidden

    @hidden.setter
    def hidden(self, hidden: Hidden | None) -> None:
        self.scene.hidden = hidden  # shown at the next set_step, like overrides

    @property
    def drawn(self) -> bool:
        """Whether the graph's matplotlib artists exist (a user may have restyled them)."""
        return self._drawing is not None

    @property
    def figure(self) -> Figure:
        """The matplotlib Figure the picture is drawn on (for an Axes inside a SubFigure,
        the Figure that holds it: the one that can be saved)."""
        return self._draw().chrome.figure

    @property
    def ax(self) -> Axes:
        return self._draw().ax

    @property
    def artists(self) -> Artists:
        return self._draw().artists

    @property
    def caption(self) -> Text:
        return self._draw().chrome.caption

    def _draw(self) -> _Drawing:
        if self._drawing is None:
            sc = self.scene
            if self._user_ax is None:
                fig = TapeFigure(figsize=sc.size, dpi=DPI, facecolor=sc.theme.background)
                fig._tv_view = self
                chrome = chrome_artists(fig, sc)
                ax = fig.add_axes(sc.frame.axes)
            else:  # someone else's Axes: the chrome goes on it, matplotlib lays it out
                ax = self._user_ax
                chrome = self._chrome_on_axes(ax)
            self._drawing = _Drawing(chrome, ax, draw_scene(ax, sc, chrome))
        return self._drawing

    def _chrome_on_axes(self, ax: Axes) -> Chrome:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        sc = self.scene
        title = ax.set_title(sc.title_label.text, fontsize=sc.title_label.size)
        caption = ax.text(
            0.5,
            -0.02,
            sc.caption_label.text,
            transform=ax.transAxes,
            ha="center",
            va="top",
            fontsize=sc.caption_label.size,
            color=sc.caption_label.color,
        )
        handles: list[Artist] = []
        for sw in sc.legend:
            if sw.kind == "box":
                handles.append(Patch(fc=sw.fc, ec=sw.ec, label=sw.label.text))
            elif sw.kind == "line":
                handles.append(Line2D([], [], color=sw.ec, lw=sw.lw, ls=sw.linestyle, label=sw.label.text))
        legend = (
            ax.legend(
                handles=handles,
                loc="upper center",
                bbox_to_anchor=(0.5, -0.08),
                ncol=3,
                fontsize=sc.theme.size("legend"),
                frameon=False,
            )
            if handles
            else None
        )
        return Chrome(_root_figure(ax), title, caption, legend)

    def draws_whole_figure(self) -> bool:
        """True when the view's figure holds nothing but what to_svg draws.

        False when the view was drawn into someone else's Axes or Figure (other
        axes, extra artists, a layout engine that moves things at draw time): then
        only matplotlib's SVG shows everything."""
        d = self._drawing
        if d is None:  # nobody has had the artists to add to: the scene is the whole picture
            return True
        fig, ax, a = d.chrome.figure, d.ax, d.artists
        if not isinstance(fig, TapeFigure) or fig._tv_view is not self:
            return False
        if fig.axes != [ax] or fig.get_layout_engine() is not None:
            return False
        ours = {id(x) for x in d.chrome.all()}
        for group in (a.boxes, a.arrows, a.grads, a.edge_labels):
            ours |= {id(x) for x in group.values()}
        ours |= {id(t) for trio in a.labels.values() for t in trio}
        ours |= {id(t) for tags in a.chips.values() for t in tags}
        ours |= {id(m) for m in a.marks}
        ours |= {id(f) for f in a.frames}
        if fig.legends or fig.images or fig.subfigs or fig.artists:
            return False
        if any(id(x) not in ours for kind in (fig.texts, fig.patches, fig.lines) for x in kind):
            return False
        if ax.axison or ax.get_title() or ax.get_legend() is not None:
            return False
        for kind in (ax.artists, ax.collections, ax.images, ax.lines, ax.patches, ax.tables, ax.texts):
            if any(id(child) not in ours for child in kind):
                return False
        return True

    def scene_as_drawn(self) -> Scene:
        """What an SVG of this view shows: the scene, or, once its artists exist, a copy of
        it restyled as someone restyled the artists (the scene itself is not changed)."""
        d = self._drawing
        return self.scene if d is None else scene_as_drawn(self.scene, d.artists, d.chrome)

    def _push(self) -> None:
        """The scene restyled its records: the same on the artists that exist."""
        d = self._drawing
        if d is not None:
            restyle_artists(d.ax, self.scene, d.artists, d.chrome.title)

    # -- changing what is shown ----------------------------------------------------

    def set_step(self, step: int | None) -> None:
        """Show the flow as it stands after steps 0..`step` (None: the finished pass)."""
        self.scene.set_step(step)
        self._push()

    def set_grad_overrides(self, texts: Mapping[Any, GradOverride | str]) -> None:
        """Show these texts as the gradient of some nodes (e.g. after clipping)."""
        self.scene.set_grad_overrides(texts)
        self._push()

    def _like(self, collapsed, functions) -> GraphView:
        sc = self.scene
        view = GraphView(
            self.graph,
            self.flow,
            self.options.closing(collapsed),
            title=sc.custom_title,
            functions=functions,
            page=sc.page,
            frames=sc.show_frames,
        )
        view.overrides = self.overrides
        view.set_step(self.step)
        return view

    def expanded(self, *layers: str) -> GraphView:
        """A new view with these groups opened, and the groups holding them (the others
        stay as they are). A group is named by its path or a unique end of it
        ("conv3_block2" for "resnet50/conv3/conv3_block2")."""
        tree = self.display.tree
        ids = [tree.find(name) for name in layers]
        opened = set(ids).union(*(tree.ancestors(i) for i in ids))
        return self._like(self.display.collapsed - opened, self.functions)

    def expanded_function(self, *nodes: str) -> GraphView:
        """A new view with these tf.function call nodes (default: all) opened into the
        ops of their body. Gradients show on the edges into and out of the body; TF
        does not expose per-op gradients or values inside a function call."""
        chosen = set(nodes) or set(self.graph.functions())
        return self._like(self.display.collapsed, self.functions | chosen)

    def collapsed_view(self, *layers: str) -> GraphView:
        """A new view with these groups (every innermost group, when none are named) collapsed."""
        tree = self.display.tree
        chosen = {tree.find(name) for name in layers} if layers else leaf_groups(tree)
        return self._like(self.display.collapsed | chosen, self.functions)

    def _repr_svg_(self) -> str:
        """Jupyter shows a GraphView as SVG written from its scene: no matplotlib artist
        is made, so even a 1,000-op graph appears in a fraction of a second, and it stays
        sharp when zoomed. (``tv.draw`` returns a matplotlib Figure.)"""
        svg = to_svg(self)
        return svg[svg.find("<svg") :]

    def png(self, dpi: int = 100) -> bytes:
        """The picture as PNG bytes: its SVG's pixels (tapeviz.output.raster), or matplotlib's
        drawing once the view's artists exist (a user may have restyled them)."""
        if not self.drawn:
            from .raster import png_bytes

            return png_bytes(to_svg(self), dpi=dpi)
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=raster_dpi(self.figure, dpi), facecolor=self.scene.theme.background)
        return buf.getvalue()
