"""The public surface: a drop-in tape, a recorder for plain tapes, and flow()."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .gcpause import gc_paused
from .gradients.flow import GradientFlow, flow_over
from .messages import DEFAULT, check_lang
from .output.export import check_path, save_view
from .output.view import GraphView
from .picture.themes import Theme
from .picture.visibility import Collapsed
from .record.graph import TapeGraph
from .record.tape import GradientTape, Recording, graph_of, record
from .training.history import Flag, History

if TYPE_CHECKING:  # made on first use: a widget imports ipywidgets
    from .explorer.state import Explored
    from .explorer.whatif import Interact
    from .explorer.widget import Explorer
    from .gradients.diagnose import Diagnosis

# TensorFlow ships no type information: a target, a source or output_gradients (a tensor,
# a variable, or a list / dict of them, as tape.gradient takes them) is Any to mypy.

__all__ = [
    "GradientTape",
    "record",
    "Recording",
    "flow",
    "view",
    "draw",
    "save",
    "explore",
    "interact",
    "export_html",
    "explain",
    "TapeGraph",
    "GradientFlow",
    "GraphView",
    "History",
    "Flag",
]


def flow(tape: Any, target: Any, *, sources: Any = None, output_gradients: Any = None) -> GradientFlow:
    """The backward pass of ``target`` over what ``tape`` recorded (see GradientFlow),
    computed once per target and kept with the recording."""
    return flow_over(graph_of(tape), target, sources=sources, output_gradients=output_gradients)


def view(
    tape: Any,
    target: Any = None,
    *,
    step: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    caption: str | None = None,
    output_gradients: Any = None,
    collapsed: Collapsed = "auto",
    show_all: bool = False,
    theme: str | Theme | None = None,
    lang: str = DEFAULT,
    magnitude: bool = False,
    wrap: int | None = None,
    depth: int | None = None,
    expand: Sequence[str] = (),
) -> GraphView:
    """A GraphView of what ``tape`` recorded; with a target, its backward pass at ``step``
    (0 seeds the target; None, the default, is the last step: the finished pass).

    What is shown: ops that carry nothing to the target are hidden, constants and
    shape plumbing fold into chips on the ops that use them (``show_all=True`` draws
    every recorded op). ``collapsed``: "auto" (TF API calls collapse; layers when the
    picture would not fit a screen), True, False, or the names of groups to collapse.
    ``theme``: "light" (default), "dark" (JupyterLab's dark theme) or "projector" (large
    text, thick lines); ``lang``: the language of the picture's words (tapeviz.messages.LANGUAGES);
    ``magnitude=True`` colours each variable's box (a collapsed layer's, its variables together)
    by ``‖g‖/‖w‖`` on a log scale, with a colour bar: vanishing and exploding layers stand out.
    ``wrap=k`` folds the picture into rows of at most k boxes (for a page, a slide or a
    README); by default only pictures wider than a screen (16 columns) wrap.

    Groups nest (a model's stages hold blocks, blocks hold layers, layers hold ops): by
    default the picture opens them down to the deepest level that still shows at most 30
    boxes, with TF API calls and Keras losses as one box each. ``depth=n`` opens n levels
    (1: the outermost groups are boxes); ``expand=["conv3_block2"]`` opens those groups
    and the groups holding them (a group is named by its path or a unique end of it)."""
    graph = graph_of(tape)
    with gc_paused():
        fl = flow(tape, target, output_gradients=output_gradients) if target is not None else None
        v = GraphView(
            graph,
            fl,
            ax=ax,
            title=title,
            caption=caption,
            collapsed=collapsed,
            show_all=show_all,
            theme=theme,
            lang=lang,
            magnitude=magnitude,
            wrap=wrap,
            depth=depth,
            expand=expand,
        )
        if step is not None:
            v.set_step(step)
    return v


def draw(
    tape: Any,
    target: Any = None,
    step: int | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    caption: str | None = None,
    output_gradients: Any = None,
    collapsed: Collapsed = "auto",
    show_all: bool = False,
    theme: str | Theme | None = None,
    lang: str = DEFAULT,
    magnitude: bool = False,
    wrap: int | None = None,
    depth: int | None = None,
    expand: Sequence[str] = (),
) -> Figure:
    """A matplotlib Figure of the recorded graph and, given a target, its gradient flow.

    ``step=None`` shows the finished backward pass, ``step=k`` the state after k steps.
    Pass ``ax=`` to draw into an existing Axes (its figure is returned).
    """
    return view(
        tape,
        target,
        step=step,
        ax=ax,
        title=title,
        caption=caption,
        output_gradients=output_gradients,
        collapsed=collapsed,
        show_all=show_all,
        theme=theme,
        lang=lang,
        magnitude=magnitude,
        wrap=wrap,
        depth=depth,
        expand=expand,
    ).figure


def save(
    tape: Any,
    path: str | os.PathLike[str],
    *,
    target: Any = None,
    step: int | None = None,
    dpi: int = 100,
    fps: float = 1.5,
    caption: str | None = None,
    output_gradients: Any = None,
    collapsed: Collapsed = "auto",
    show_all: bool = False,
    theme: str | Theme | None = None,
    lang: str = DEFAULT,
    magnitude: bool = False,
    wrap: int | None = None,
    depth: int | None = None,
    expand: Sequence[str] = (),
    every_step: bool = False,
    progress: bool = True,
) -> Path:
    """Write a .png / .svg picture, or a .gif of the backward pass: one frame per step as the
    picture shows it (a collapsed layer's ops are one step), at most ~150 frames unless
    ``every_step``. A save that takes more than ~2 s shows a progress bar (``progress=False``:
    never); Ctrl+C leaves no partly written file. ``wrap=k``: rows of at most k boxes (see
    :func:`view`). Returns the path."""
    check_path(path)  # fail before any work on a bad path
    v = view(
        tape,
        target,
        step=step,
        caption=caption,
        output_gradients=output_gradients,
        collapsed=collapsed,
        show_all=show_all,
        theme=theme,
        lang=lang,
        magnitude=magnitude,
        wrap=wrap,
        depth=depth,
        expand=expand,
    )
    with gc_paused():
        return save_view(v, path, dpi=dpi, fps=fps, every_step=every_step, progress=progress)


def explore(
    tape: Any,
    targets: Any = None,
    *,
    output_gradients: Any = None,
    lang: str = "en",
    theme: str = "auto",
    show_all: bool = False,
    presenter: bool = False,
    magnitude: bool | None = None,
    depth: int | None = None,
    expand: Sequence[str] = (),
) -> Explorer:
    """A live Explorer widget: ``targets`` is one tensor or {name: tensor} (persistent tapes).

    ``lang``: "en" or "zh"; ``theme``: "auto" (the page's: dark in JupyterLab's dark theme,
    else light), "light", "dark" or "projector"; ``show_all``: every
    recorded op; ``presenter``: only the picture and the step buttons, full width;
    ``magnitude``: boxes coloured by ``‖g‖/‖w‖``; ``depth`` / ``expand``: how far the groups
    open (see :func:`view`; the explorer's "expanded" list opens and closes any). Given a
    :class:`tv.History`, the explorer scrubs its training steps (``controls["train_step"]``)
    instead."""
    from .explorer.widget import Explorer

    if isinstance(tape, History):
        from .explorer.training_explorer import TrainingExplorer

        return TrainingExplorer(
            tape,
            presenter=presenter,
            lang=lang,
            theme=theme,
            show_all=show_all,
            magnitude=True if magnitude is None else magnitude,
        )
    if targets is None:
        raise TypeError("explore() needs the target: tv.explore(tape, loss) or tv.explore(tape, {'f1': f1, 'f2': f2}).")
    explored = _explored(tape, targets, output_gradients)
    return Explorer(
        explored,
        presenter=presenter,
        lang=lang,
        theme=theme,
        show_all=show_all,
        magnitude=bool(magnitude),
        depth=depth,
        expand=_names(expand),
    )


def interact(
    fn: Callable[..., Any],
    /,
    *,
    lang: str = "en",
    theme: str = "auto",
    show_all: bool = False,
    presenter: bool = False,
    **ranges: Sequence[float],
) -> Interact:
    """What-if: an explorer of ``fn``'s backward pass with one slider per input.

    ``tv.interact(f, x=(-3.0, 3.0, 1.0), w=(0.0, 2.0, 1.5))``: each keyword is an input given
    as ``(min, max[, start[, step]])`` (start: the middle; step: about 1/100 of the range).
    ``fn`` is called with one ``tf.Variable`` per keyword, named after it and holding that
    slider's value, under a tv.GradientTape, and returns the target tensor or a dict of
    targets (then a target menu appears). Every slider move calls ``fn`` again through
    TensorFlow (forward and backward) and repaints, keeping the explorer's state; a slope
    plot shows the target against one input with the tangent whose slope is TF's gradient.
    ``fn`` should depend only on its inputs: the slope plot calls it once per sample point.

    When ``fn`` raises or returns no tensor at some values, the explorer says why and keeps
    the last picture that worked. At construction there is none yet: a bad range raises
    ValueError (TypeError for a non-number), a failing first call ValueError, a wrong return
    type TypeError. ``lang``, ``theme``, ``show_all``, ``presenter``: as for tv.explore
    (so no input can take those names)."""
    from .explorer.whatif import interact as build

    return build(fn, ranges, lang=check_lang(lang), theme=theme, show_all=show_all, presenter=presenter)


def _names(expand: Sequence[str]) -> tuple[str, ...]:
    """``expand`` as the tuple an ExplorerState holds (one name may be passed as a str)."""
    return (expand,) if isinstance(expand, str) else tuple(expand)


def _explored(tape: Any, targets: Any, output_gradients: Any) -> Explored:
    from .explorer.state import Explored

    graph = graph_of(tape)
    if isinstance(targets, dict):
        if not targets:
            raise ValueError("explore() needs at least one target.")
        named = {str(k): v for k, v in targets.items()}
    else:
        node = graph.node_of(targets)
        named = {graph.display_name(node) if node is not None else "target": targets}
    for t in named.values():  # fail now, with flow's clear message, not inside a callback
        flow(tape, t, output_gradients=output_gradients)
    return Explored(graph, named, flow_factory=lambda t: flow(tape, t, output_gradients=output_gradients))


def export_html(
    tape: Any,
    target: Any,
    path: str | os.PathLike[str],
    *,
    output_gradients: Any = None,
    title: str | None = None,
    embed_url: str | None = None,
    requirejs: bool = True,
    requirejs_url: str | None = None,
    cors: bool = True,
    clip: str = "none",
    clip_norm: float = 1.0,
    clip_norms: Sequence[float] | None = None,
    lang: str = "en",
    theme: str = "light",
    depth: int | None = None,
    expand: Sequence[str] = (),
) -> Path:
    """Write a standalone .html page that steps through the backward pass of ``target`` with
    no Python kernel (a slider and a play button over pictures rendered now).

    ``target``: a tensor, or {name: tensor}; with several targets (a persistent tape) the
    page holds each one's backward pass and a menu picks one. ``clip`` / ``clip_norm``:
    the clipping the panel shows; ``clip_norms=[...]``: the panel for each of those
    positions, picked by a slider in the page. The page loads its widget scripts from
    public CDNs unless ``embed_url`` / ``requirejs_url`` point at local copies: see
    :func:`tapeviz.explorer.html_page.write_page`. ``depth`` / ``expand``: how far the groups open (see
    :func:`view`). Returns the path.
    """
    from .explorer.html_page import write_page

    check_path(path, formats=(".html", ".htm"))  # fail before any drawing work
    explored = _explored(tape, target, output_gradients)
    state = explored.initial(lang=lang, theme=theme, clip=clip, clip_norm=clip_norm, depth=depth, expand=_names(expand))
    try:
        return write_page(
            explored,
            state,
            path,
            targets=list(explored.targets),
            clip_norms=clip_norms,
            title=title,
            embed_url=embed_url,
            requirejs=requirejs,
            requirejs_url=requirejs_url,
            cors=cors,
        )
    finally:
        explored.forget()


def explain(tape: Any, target: Any, source: Any, *, output_gradients: Any = None, lang: str = "en") -> Diagnosis | None:
    """Why d target / d source is None: a Diagnosis (reason, message, fix), or None if it is not.
    ``lang``: the language of the message and the fix ("en", "zh")."""
    from .gradients.diagnose import explain_flow

    return explain_flow(flow(tape, target, output_gradients=output_gradients), source, check_lang(lang))
