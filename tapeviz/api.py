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
from .messages import check_lang
from .output.export import check_path, save_view
from .output.jacobian_heatmap import Jacobian
from .output.view import GraphView
from .picture.options import Options, option_names
from .record.graph import TapeGraph
from .record.step import RecordedStep, record_step
from .record.tape import GradientTape, Recording, graph_of, record
from .training.history import Flag, History

if TYPE_CHECKING:  # made on first use: a widget imports ipywidgets
    from .explorer.jacobian_explorer import JacobianExplorer
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
    "record_step",
    "RecordedStep",
    "flow",
    "jacobian",
    "batch_jacobian",
    "Jacobian",
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
    "Options",
]


def flow(tape: Any, target: Any, *, sources: Any = None, output_gradients: Any = None) -> GradientFlow:
    """The backward pass of ``target`` over what ``tape`` recorded (see GradientFlow),
    computed once per target and kept with the recording."""
    return flow_over(graph_of(tape), target, sources=sources, output_gradients=output_gradients)


def jacobian(tape: Any, target: Any, source: Any) -> Jacobian:
    """d target / d source of what ``tape`` recorded, one backward pass per row: a
    :class:`Jacobian` whose ``.matrix`` is what ``tape.jacobian(target, source)`` returns,
    ``.flow(i)`` the backward pass of target element i (its ``.grad(source)`` is row i) and
    ``.figure()`` a labelled heatmap; ``tv.explore(jac)`` steps through any row's pass.
    The user's tape is not used: ``tape.jacobian`` stays available and unchanged."""
    return Jacobian(graph_of(tape), target, source)


def batch_jacobian(tape: Any, target: Any, source: Any) -> Jacobian:
    """As :func:`jacobian`, for ``tape.batch_jacobian``: target and source share their first
    (batch) dimension, examples are independent; row i is element i of every example, and
    ``.matrix`` has batch_jacobian's shape ``[B] + target.shape[1:] + source.shape[1:]``."""
    return Jacobian(graph_of(tape), target, source, batch=True)


def view(
    tape: Any,
    target: Any = None,
    *,
    step: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    caption: str | None = None,
    output_gradients: Any = None,
    options: Options | None = None,
    **option_keywords: Any,
) -> GraphView:
    """A GraphView of what ``tape`` recorded; with a target, its backward pass at ``step``
    (0 seeds the target; None, the default, is the last step: the finished pass).

    The options (:class:`tv.Options`: ``theme``, ``lang``, ``show_all``, ``collapsed``,
    ``magnitude``, ``wrap``) come as keywords or as ``options=``; what an option left out
    means is said there, once for every function. What is shown by default: ops that carry
    nothing to the target are hidden, constants and shape plumbing fold into chips on the
    ops that use them (``show_all=True`` draws every recorded op)."""
    opts = Options.of(options, **option_keywords).in_file()
    graph = graph_of(tape)
    with gc_paused():
        fl = flow(tape, target, output_gradients=output_gradients) if target is not None else None
        v = GraphView(graph, fl, ax=ax, title=title, caption=caption, **opts.keywords())
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
    options: Options | None = None,
    **option_keywords: Any,
) -> Figure:
    """A matplotlib Figure of the recorded graph and, given a target, its gradient flow.

    ``step=None`` shows the finished backward pass, ``step=k`` the state after k steps.
    Pass ``ax=`` to draw into an existing Axes (its figure is returned). The options: as
    for :func:`view` (:class:`tv.Options`).
    """
    return view(
        tape,
        target,
        step=step,
        ax=ax,
        title=title,
        caption=caption,
        output_gradients=output_gradients,
        options=options,
        **option_keywords,
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
    every_step: bool = False,
    progress: bool = True,
    options: Options | None = None,
    **option_keywords: Any,
) -> Path:
    """Write a .png / .svg picture, or a .gif of the backward pass: one frame per step as the
    picture shows it (a collapsed layer's ops are one step), at most ~150 frames unless
    ``every_step``. A save that takes more than ~2 s shows a progress bar (``progress=False``:
    never); Ctrl+C leaves no partly written file. The options: as for :func:`view`
    (:class:`tv.Options`; ``wrap=k``: rows of at most k boxes). Returns the path."""
    check_path(path)  # fail before any work on a bad path
    v = view(
        tape,
        target,
        step=step,
        caption=caption,
        output_gradients=output_gradients,
        options=options,
        **option_keywords,
    )
    with gc_paused():
        return save_view(v, path, dpi=dpi, fps=fps, every_step=every_step, progress=progress)


def explore(
    tape: Any,
    targets: Any = None,
    *,
    output_gradients: Any = None,
    presenter: bool = False,
    quiz: bool = False,
    options: Options | None = None,
    **option_keywords: Any,
) -> Explorer | JacobianExplorer:
    """A live Explorer widget: ``targets`` is one tensor or {name: tensor} (persistent tapes).

    ``presenter``: only the picture and the step buttons, full width. ``quiz``: predict,
    then reveal: each step's numbers are shown as "?" until the student types a prediction
    (judged against TensorFlow's number within 1 %) or presses reveal, and a per-step score is
    kept (``controls["reset"]`` clears it). The options: as for :func:`view`
    (:class:`tv.Options`); here ``theme="auto"`` follows the page's theme (dark in
    JupyterLab's dark theme). Given a :class:`tv.History`, the explorer scrubs its training
    steps (``controls["train_step"]``) instead, its boxes coloured by ``‖g‖/‖w‖`` unless
    ``magnitude=False``. Given a :class:`tv.Jacobian` (tv.jacobian), a heatmap of the Jacobian
    above the backward pass of the row picked by clicking it or with ``controls["row"]``."""
    from .explorer.widget import Explorer

    opts = Options.of(options, **option_keywords)
    if isinstance(tape, Jacobian):
        from .explorer.jacobian_explorer import JacobianExplorer

        return JacobianExplorer(tape, presenter=presenter, quiz=quiz, **opts.in_explorer().keywords())
    if isinstance(tape, History):
        from .explorer.training_explorer import TrainingExplorer

        return TrainingExplorer(tape, presenter=presenter, **opts.in_explorer(training=True).keywords())
    if targets is None:
        raise TypeError("explore() needs the target: tv.explore(tape, loss) or tv.explore(tape, {'f1': f1, 'f2': f2}).")
    explored = _explored(tape, targets, output_gradients)
    return Explorer(explored, presenter=presenter, quiz=quiz, **opts.in_explorer().keywords())


def interact(
    fn: Callable[..., Any],
    /,
    *,
    presenter: bool = False,
    options: Options | None = None,
    **inputs: Any,
) -> Interact:
    """What-if: an explorer of ``fn``'s backward pass with one slider per input.

    The inputs follow ``ipywidgets.interact``: ``tv.interact(f, x=(-3.0, 3.0), w=(0.0, 2.0,
    0.5))`` gives ``x`` a FloatSlider over (min, max) and ``w`` one with step 0.5 (all ints:
    an IntSlider); each starts at ``f``'s default for that parameter (``def f(x=1.0, w=1.5)``),
    else at the middle. A ready widget is used as it is (``w=FloatSlider(value=1.5, min=0,
    max=2)``), ``fixed(value)`` passes a constant that is not differentiated, and a
    parameter with a number as its default becomes a slider even when not named.
    ``fn`` is called with one ``tf.Variable`` per input, named after it and holding that
    slider's value, under a tv.GradientTape, and returns the target tensor or a dict of
    targets (then a target menu appears). Every slider move calls ``fn`` again through
    TensorFlow (forward and backward) and repaints, keeping the explorer's state; a slope
    plot shows the target against one input with the tangent whose slope is TF's gradient.
    ``fn`` should depend only on its inputs: the slope plot calls it once per sample point.

    When ``fn`` raises or returns no tensor at some values, the explorer says why and keeps
    the last picture that worked. At construction there is none yet: a bad range raises
    ValueError (TypeError for a non-number or a widget that is not a number slider), a
    failing first call ValueError, a wrong return type TypeError. The options
    (:class:`tv.Options`) and ``presenter``: as for tv.explore, so no input can take an
    option's name."""
    from .explorer.whatif import interact as build

    names = set(option_names())
    opts = Options.of(options, **{k: v for k, v in inputs.items() if k in names})
    inputs = {k: v for k, v in inputs.items() if k not in names}
    return build(fn, inputs, opts.in_explorer(), presenter=presenter)


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
    clip: str = "none",
    clip_norm: float = 1.0,
    clip_norms: Sequence[float] | None = None,
    quiz: bool = False,
    options: Options | None = None,
    **option_keywords: Any,
) -> Path:
    """Write a standalone .html page that steps through the backward pass of ``target`` with
    no Python kernel (a slider and a play button over pictures rendered now).

    ``target``: a tensor, or {name: tensor}; with several targets (a persistent tape) the
    page holds each one's backward pass and a menu picks one. ``clip`` / ``clip_norm``:
    the clipping the panel shows; ``clip_norms=[...]``: the panel for each of those
    positions, picked by a slider in the page. The page is one file that makes no
    request (its script and pictures are inside it: open it from disk with the network
    off; see :func:`tapeviz.explorer.html_page.page_fragment`). ``quiz=True``: predict, then reveal, in
    the page itself: each step's numbers are hidden until the reader types a prediction
    (checked by the page's own script against TensorFlow's numbers, within 1 %) or presses
    reveal; a per-step score with a reset button. The options: as for :func:`view`
    (:class:`tv.Options`; ``theme="auto"`` is light: a page of its own has no theme to
    follow). Returns the path.
    """
    from .explorer.html_page import check_removed_keywords, write_page

    check_removed_keywords(option_keywords)
    check_path(path, formats=(".html", ".htm"))  # fail before any drawing work
    explored = _explored(tape, target, output_gradients)
    opts = Options.of(options, **option_keywords).in_file()
    state = explored.initial(**opts.keywords(), clip=clip, clip_norm=clip_norm, quiz=quiz)
    try:
        return write_page(
            explored,
            state,
            path,
            targets=list(explored.targets),
            clip_norms=clip_norms,
            title=title,
        )
    finally:
        explored.forget()


def explain(tape: Any, target: Any, source: Any, *, output_gradients: Any = None, lang: str = "en") -> Diagnosis | None:
    """Why d target / d source is None: a Diagnosis (reason, message, fix), or None if it is not.
    ``lang``: the language of the message and the fix ("en", "zh")."""
    from .gradients.diagnose import explain_flow

    return explain_flow(flow(tape, target, output_gradients=output_gradients), source, check_lang(lang))
