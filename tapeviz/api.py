"""The public surface: a drop-in tape, a recorder for plain tapes, and flow()."""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .gcpause import gc_paused
from .gradients.clipping import MODES, check_settings
from .gradients.compare import Comparison
from .gradients.flow import GradientFlow, flow_over
from .messages import check_lang
from .output.chain_caption import chain_lines, is_chain
from .output.export import check_path, save_view
from .output.jacobian_heatmap import Jacobian
from .output.view import GraphView
from .picture.options import Options, option_names
from .record.graph import TapeGraph
from .record.step import RecordedStep, record_step
from .record.tape import GradientTape, Recording, graph_of, record
from .training.history import Flag, History

if TYPE_CHECKING:  # made on first use: a widget imports ipywidgets
    from .explorer.compare_explorer import CompareExplorer
    from .explorer.jacobian_explorer import JacobianExplorer
    from .explorer.state import GraphTargets
    from .explorer.training_explorer import TrainingExplorer
    from .explorer.whatif import Interact
    from .explorer.widget import Explorer
    from .gradients.chain_rule import ChainRule
    from .gradients.diagnose import Diagnosis
    from .output.compare_picture import ComparePicture

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
    "explore_history",
    "explore_jacobian",
    "explore_compare",
    "interact",
    "InteractFactory",
    "export_html",
    "explain",
    "chain_rule",
    "compare",
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
        v = GraphView(graph, fl, opts, ax=ax, title=title, caption=caption)
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
    target: Any = None,
    path: str | os.PathLike[str] | None = None,
    /,
    *,
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
    """Write a .png / .svg picture of ``target``'s backward pass, or a .gif of it: one frame
    per step as the picture shows it (a collapsed layer's ops are one step), at most ~150
    frames unless ``every_step``. ``tv.save(tape, target, path)``, the path last as in every
    writer; ``target`` and ``path`` may be given by name too, and ``tv.save(tape,
    path=...)`` draws the recorded graph with no backward pass. A save that takes more than
    ~2 s shows a progress bar (``progress=False``: never); Ctrl+C leaves no partly written
    file. The options: as for :func:`view` (:class:`tv.Options`; ``wrap=k``: rows of at most
    k boxes). ``caption="chain"``: each GIF frame (or the still picture) carries its step's
    chain rule under it (:func:`chain_rule`'s lines, in the picture's language). Returns the path."""
    target, path = _target_and_path("save", target, path, option_keywords)
    p = check_path(path)  # fail before any work on a bad path
    chain = is_chain(caption)
    if chain and target is None:
        raise ValueError('caption="chain" writes each step\'s chain rule: give tv.save a target.')
    v = view(
        tape,
        target,
        step=step,
        caption=None if chain else caption,
        output_gradients=output_gradients,
        options=options,
        **option_keywords,
    )
    if chain and p.suffix.lower() != ".gif":  # a still picture: its step's chain rule as its caption
        lines = chain_lines(v, v.step)
        v = view(
            tape,
            target,
            step=step,
            caption="\n".join(lines),
            output_gradients=output_gradients,
            options=options,
            **option_keywords,
        )
    with gc_paused():
        return save_view(v, path, dpi=dpi, fps=fps, every_step=every_step, progress=progress, chain=chain)


def _is_path(value: Any) -> bool:
    """A file name: a target is a tensor, a variable or a structure of them, never a string."""
    return isinstance(value, (str, os.PathLike))


def _target_and_path(
    function: str, target: Any, path: Any, keywords: dict[str, Any]
) -> tuple[Any, str | os.PathLike[str]]:
    """A writer's target and path, called ``tv.<function>(tape, target, path)`` or with
    either by name; the order of tapeviz 0.1, ``(tape, path, target=...)``, still works
    for one release, with a DeprecationWarning."""
    if "path" in keywords:
        if path is not None or (_is_path(target) and "target" not in keywords):
            raise TypeError(f"tv.{function}() got two paths; write tv.{function}(tape, target, path).")
        path = keywords.pop("path")
    if "target" in keywords:
        named = keywords.pop("target")
        if _is_path(target) and path is None:  # tapeviz 0.1: save(tape, "x.png", target=y)
            _deprecated(f"tv.{function}(tape, path, target=...)", f"tv.{function}(tape, target, path)", stacklevel=4)
            return named, target
        if target is not None:
            raise TypeError(f"tv.{function}() got two targets; write tv.{function}(tape, target, path).")
        target = named
    elif _is_path(target) and path is None:  # tapeviz 0.1: save(tape, "x.png"), no target
        _deprecated(
            f"tv.{function}(tape, path)",
            f"tv.{function}(tape, path=path) or tv.{function}(tape, None, path)",
            stacklevel=4,
        )
        return None, target
    if path is None:
        raise TypeError(f"tv.{function}() needs a path: tv.{function}(tape, target, 'picture.png').")
    if _is_path(target):
        raise TypeError(
            f"tv.{function}(tape, {target!r}, ...): the target comes before the path; "
            f"write tv.{function}(tape, target, path)."
        )
    return target, path


def _deprecated(old: str, new: str, *, stacklevel: int) -> None:
    """Warn that a spelling goes in the next release, naming the one to write instead
    (``stacklevel`` points the warning at the user's call)."""
    warnings.warn(f"{old} {DEPRECATED}; write {new}.", DeprecationWarning, stacklevel=stacklevel)


#: How each DeprecationWarning of tapeviz says it (pyproject's pytest filter makes them errors).
DEPRECATED = "is deprecated in tapeviz and goes in the next release"


def _clip_settings(clip: str, clip_norm: float, clip_value: tuple[float, float]) -> dict[str, Any]:
    """The clipping an explorer opens with or a page shows (``clip``: one of "none",
    "by_norm", "by_value", "by_global_norm"; ``clip_norm``: the norm limit of by_norm and
    by_global_norm; ``clip_value``: by_value's (min, max)), checked alike wherever it is
    given: a wrong type is a TypeError, a setting TF's clip functions refuse a ValueError."""
    if not isinstance(clip, str):
        raise TypeError(f"clip={clip!r}: use one of {', '.join(map(repr, MODES))}.")
    if isinstance(clip_norm, bool) or not isinstance(clip_norm, (int, float, np.integer, np.floating)):
        raise TypeError(f"clip_norm={clip_norm!r}: give a positive number, e.g. clip_norm=1.0.")
    try:
        lo, hi = clip_value
    except (TypeError, ValueError):
        raise TypeError(f"clip_value={clip_value!r}: give (min, max), e.g. clip_value=(-1.0, 1.0).") from None
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"clip_value={clip_value!r}: give two numbers (min, max), e.g. clip_value=(-1.0, 1.0).")
    norm, limits = float(clip_norm), (float(lo), float(hi))
    check_settings(clip, norm, limits)
    return {"clip_mode": clip, "clip_norm": norm, "clip_value": limits}


@functools.singledispatch
def explore(
    tape: Any,
    target: Any = None,
    *,
    output_gradients: Any = None,
    presenter: bool = False,
    quiz: bool | str = False,
    clip: str = "none",
    clip_norm: float = 1.0,
    clip_value: tuple[float, float] = (-1.0, 1.0),
    options: Options | None = None,
    **option_keywords: Any,
) -> Explorer | JacobianExplorer | TrainingExplorer:
    """A live explorer of what the first argument holds. ``tv.explore`` is a
    ``functools.singledispatch`` function: the type of its first argument picks the
    function that runs (``tv.explore.registry`` lists them).

    - a tape (``tv.GradientTape``, ``tf.GradientTape`` under ``tv.record``, a Recording or a
      TapeGraph): this function. ``target`` is one tensor or {name: tensor} (persistent
      tapes); the Explorer steps through its backward pass.
    - a :class:`tv.History`: :func:`explore_history`, the training run's steps.
    - a :class:`tv.Jacobian` (tv.jacobian): :func:`explore_jacobian`, a heatmap above the
      backward pass of the row picked.
    - a comparison (``tv.compare(a, b)``): :func:`explore_compare`, the two passes side by
      side with one step slider, and the picture of their ratios.

    ``presenter``: only the picture and the step buttons, full width. ``quiz``: predict,
    then reveal: each step's numbers are shown as "?" until the student types a prediction
    (judged against TensorFlow's number within 1 %) or presses reveal, and a per-step score is
    kept (``controls["reset"]`` clears it). ``quiz="local"`` asks instead for an op's local
    derivative at its inputs' values, ``quiz="product"`` for the missing factor of the chain
    rule ("1.0 × ? = 4.0"), ``quiz="chain"`` for each by turns (TF's numbers are the answers).
    ``clip`` / ``clip_norm`` / ``clip_value``: the
    clipping the explorer opens with ("none", "by_norm", "by_value" or "by_global_norm"; the
    norm limit; by_value's (min, max)), as :func:`export_html` takes them. The options: as
    for :func:`view` (:class:`tv.Options`); here ``theme="auto"`` follows the page's theme
    (dark in JupyterLab's dark theme)."""
    from .explorer.widget import Explorer

    if "targets" in option_keywords:  # tapeviz 0.1's name
        if target is not None:
            raise TypeError("explore() got target and targets; write tv.explore(tape, target).")
        _deprecated("tv.explore(tape, targets=...)", "tv.explore(tape, target)", stacklevel=4)
        target = option_keywords.pop("targets")
    opts = Options.of(options, **option_keywords)
    settings = _clip_settings(clip, clip_norm, clip_value)
    if target is None:
        raise TypeError("explore() needs the target: tv.explore(tape, loss) or tv.explore(tape, {'f1': f1, 'f2': f2}).")
    explored = _explored(tape, target, output_gradients)
    return Explorer(explored, presenter=presenter, **_quiz_settings(quiz), **settings, **opts.in_explorer().keywords())


def _quiz_settings(quiz: bool | str) -> dict[str, Any]:
    """``quiz``: False, True (the gradient each step computes) or what to ask (one of
    quiz.ASKS: "gradient", "local", "product", "chain"), as the explorer's state holds it."""
    from .explorer.quiz import check_ask

    if isinstance(quiz, bool):
        return {"quiz": quiz}
    if not isinstance(quiz, str):
        raise TypeError(f"quiz={quiz!r}: give True, False or what to ask ('gradient', 'local', 'product', 'chain').")
    return {"quiz": True, "ask": check_ask(quiz)}


@explore.register(History)
def explore_history(
    history: History, *, presenter: bool = False, options: Options | None = None, **option_keywords: Any
) -> TrainingExplorer:
    """``tv.explore(hist)``: scrub the steps of a training run (``controls["train_step"]``),
    its boxes coloured by ``‖g‖/‖w‖`` unless ``magnitude=False``. ``presenter`` and the
    options: as for :func:`explore`."""
    from .explorer.training_explorer import TrainingExplorer

    _drop_unused(option_keywords, "tv.explore(history, ...)", ("targets", "output_gradients", "quiz"))
    opts = Options.of(options, **option_keywords)
    return TrainingExplorer(history, presenter=presenter, **opts.in_explorer(training=True).keywords())


@explore.register(Jacobian)
def explore_jacobian(
    jacobian: Jacobian,
    *,
    presenter: bool = False,
    quiz: bool = False,
    clip: str = "none",
    clip_norm: float = 1.0,
    clip_value: tuple[float, float] = (-1.0, 1.0),
    options: Options | None = None,
    **option_keywords: Any,
) -> JacobianExplorer:
    """``tv.explore(jac)``: a heatmap of the Jacobian above the backward pass of the row
    picked by clicking it or with ``controls["row"]``. ``presenter``, ``quiz``, the clipping
    and the options: as for :func:`explore`."""
    from .explorer.jacobian_explorer import JacobianExplorer

    _drop_unused(option_keywords, "tv.explore(jacobian, ...)", ("targets", "output_gradients"))
    opts = Options.of(options, **option_keywords)
    settings = _clip_settings(clip, clip_norm, clip_value)
    return JacobianExplorer(jacobian, presenter=presenter, quiz=quiz, **settings, **opts.in_explorer().keywords())


@explore.register(Comparison)
def explore_compare(
    comparison: Comparison,
    *,
    names: tuple[str, str] = ("a", "b"),
    options: Options | None = None,
    **option_keywords: Any,
) -> CompareExplorer:
    """``tv.explore(tv.compare(a, b))``: the two backward passes side by side with one step
    slider (``controls["step"]``: both sides show that step; a shorter pass stays at its
    end), the picture of ‖g_b‖ / ‖g_a‖ and the table of the largest changes under them.
    ``names``: what a and b are, e.g. ("raw", "clipped"). The options: as for
    :func:`explore` (:class:`tv.Options`)."""
    from .explorer.compare_explorer import CompareExplorer

    opts = Options.of(options, **option_keywords)
    return CompareExplorer(comparison, names=names, **opts.in_explorer().keywords())


def _drop_unused(keywords: dict[str, Any], call: str, names: Sequence[str]) -> None:
    """Keywords tapeviz 0.1 took and ignored for this kind of explorer: dropped, with a
    DeprecationWarning (they will be a TypeError, as any unknown keyword)."""
    for name in names:
        if name in keywords:
            keywords.pop(name)
            _deprecated(f"{name}= in {call}", f"{call} without it (it has no effect there)", stacklevel=5)


class InteractFactory:
    """``tv.interact``: what-if, an explorer of a function's backward pass with one slider
    per input. Its options are kept apart from the inputs, as ``ipywidgets.interact`` keeps
    its own: ``tv.interact.options(theme="dark", presenter=True)`` is a ``tv.interact`` with
    those options (as ``ipywidgets.interact.options(manual=True)``), so an input may take
    any name."""

    def __init__(
        self,
        options: Options | None = None,
        *,
        presenter: bool = False,
        clip: str = "none",
        clip_norm: float = 1.0,
        clip_value: tuple[float, float] = (-1.0, 1.0),
    ):
        self._options = Options.of(options)
        self._presenter = presenter
        self._clip = _clip_settings(clip, clip_norm, clip_value)

    def options(
        self,
        options: Options | None = None,
        *,
        presenter: bool | None = None,
        clip: str | None = None,
        clip_norm: float | None = None,
        clip_value: tuple[float, float] | None = None,
        **option_keywords: Any,
    ) -> InteractFactory:
        """A ``tv.interact`` with these options, the others as this one has them:
        ``tv.interact.options(theme="dark")(f, x=(-3.0, 3.0))``, or kept to reuse
        (``dark = tv.interact.options(tv.Options(theme="dark"), presenter=True)``).
        ``presenter``, ``clip`` / ``clip_norm`` / ``clip_value`` and the options
        (:class:`tv.Options`, given as one value or as keywords): as for :func:`explore`."""
        clip_now = self._clip
        return InteractFactory(
            Options.of(options or self._options, **option_keywords),
            presenter=self._presenter if presenter is None else presenter,
            clip=clip_now["clip_mode"] if clip is None else clip,
            clip_norm=clip_now["clip_norm"] if clip_norm is None else clip_norm,
            clip_value=clip_now["clip_value"] if clip_value is None else clip_value,
        )

    def __call__(self, fn: Callable[..., Any], /, **inputs: Any) -> Interact:
        """An explorer of ``fn``'s backward pass with one slider per input.

        The inputs follow ``ipywidgets.interact``: ``tv.interact(f, x=(-3.0, 3.0), w=(0.0,
        2.0, 0.5))`` gives ``x`` a FloatSlider over (min, max) and ``w`` one with step 0.5
        (all ints: an IntSlider); each starts at ``f``'s default for that parameter (``def
        f(x=1.0, w=1.5)``), else at the middle. A ready widget is used as it is
        (``w=FloatSlider(value=1.5, min=0, max=2)``), ``fixed(value)`` passes a constant that
        is not differentiated, and a parameter with a number as its default becomes a slider
        even when not named. ``fn`` is called with one ``tf.Variable`` per input, named after
        it and holding that slider's value, under a tv.GradientTape, and returns the target
        tensor or a dict of targets (then a target menu appears). Every slider move calls
        ``fn`` again through TensorFlow (forward and backward) and repaints, keeping the
        explorer's state; a slope plot shows the target against one input with the tangent
        whose slope is TF's gradient. ``fn`` should depend only on its inputs: the slope
        plot calls it once per sample point. The sliders are ``ex.inputs[name]``, apart from
        the explorer's own ``ex.controls``.

        When ``fn`` raises or returns no tensor at some values, the explorer says why and
        keeps the last picture that worked. At construction there is none yet: a bad range
        raises ValueError (TypeError for a non-number or a widget that is not a number
        slider), a failing first call ValueError, a wrong return type TypeError. The options
        and ``presenter``: :meth:`options`."""
        from .explorer.whatif import interact as build

        factory = self._with_old_options(fn, inputs)
        return build(fn, inputs, factory._options.in_explorer(), presenter=factory._presenter, **factory._clip)

    def _with_old_options(self, fn: Callable[..., Any], inputs: dict[str, Any]) -> InteractFactory:
        """tapeviz 0.1 took the options among the inputs (``tv.interact(f, x=..., theme="dark")``):
        a keyword named like an option, ``options`` or ``presenter`` that is no parameter of
        ``fn`` is still taken as one, with a DeprecationWarning; it is taken out of ``inputs``."""
        named: set[str] = set()
        try:
            if callable(fn):
                params = inspect.signature(fn).parameters.values()
                named = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        except (TypeError, ValueError):  # no signature to read (some builtins)
            pass
        old = {k: inputs.pop(k) for k in [*inputs] if k in {*option_names(), "options", "presenter"} and k not in named}
        if not old:
            return self
        spelled = ", ".join(f"{k}=..." for k in old)
        _deprecated(
            f"tv.interact(fn, {spelled}) (options among the inputs)",
            f"tv.interact.options({spelled})(fn, ...)",
            stacklevel=4,
        )
        return self.options(old.pop("options", None), **old)


interact = InteractFactory()


def _explored(tape: Any, targets: Any, output_gradients: Any) -> GraphTargets:
    from .explorer.state import GraphTargets

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
    return GraphTargets(graph, named, flow_factory=lambda t: flow(tape, t, output_gradients=output_gradients))


def export_html(
    tape: Any,
    target: Any,
    path: str | os.PathLike[str],
    *,
    output_gradients: Any = None,
    title: str | None = None,
    clip: str = "none",
    clip_norm: float = 1.0,
    clip_value: tuple[float, float] = (-1.0, 1.0),
    clip_norms: Sequence[float] | None = None,
    quiz: bool | str = False,
    options: Options | None = None,
    **option_keywords: Any,
) -> Path:
    """Write a standalone .html page that steps through the backward pass of ``target`` with
    no Python kernel (a slider and a play button over pictures rendered now).

    ``target``: a tensor, or {name: tensor}; with several targets (a persistent tape) the
    page holds each one's backward pass and a menu picks one. ``clip`` / ``clip_norm`` /
    ``clip_value``: the clipping the panel shows, as :func:`explore` takes it;
    ``clip_norms=[...]``: the panel for each of those norm limits, picked by a slider in the
    page. The page is one file that makes no request (its script and pictures are inside
    it: open it from disk with the network off; see
    :func:`tapeviz.explorer.html_page.page_fragment`). ``quiz=True``: predict, then reveal, in
    the page itself: each step's numbers are hidden until the reader types a prediction
    (checked by the page's own script against TensorFlow's numbers, within 1 %) or presses
    reveal; a per-step score with a reset button (``quiz="local"``, ``"product"``,
    ``"chain"``: the chain rule's questions, as :func:`explore` asks them). The options: as for :func:`view`
    (:class:`tv.Options`; ``theme="auto"`` is light: a page of its own has no theme to
    follow). Returns the path.
    """
    from .explorer.html_page import check_removed_keywords, write_page

    check_removed_keywords(option_keywords)
    check_path(path, formats=(".html", ".htm"))  # fail before any drawing work
    settings = _clip_settings(clip, clip_norm, clip_value)
    opts = Options.of(options, **option_keywords).in_file()
    explored = _explored(tape, target, output_gradients)
    state = explored.initial(**opts.keywords(), **settings, **_quiz_settings(quiz))
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


def explain(
    tape: Any,
    target: Any,
    source: Any,
    *,
    output_gradients: Any = None,
    lang: str = "en",
    index: Any = None,
) -> Diagnosis | None:
    """Why d target / d source is None, NaN, Inf or zero: a Diagnosis, or None when it is
    none of these (a finite gradient with some element not zero).

    A None gradient: the reason, where the path was cut, the fix. A NaN or Inf gradient:
    the first op on the backward path where it stops being finite, with the arriving
    gradient, the op's local derivative and the forward value there (``0 × 1/x at x = 0``),
    the element indices, your source line and the known pattern (the ``tf.where`` trap,
    sqrt or norm at 0, log of 0 ...) with its usual fix; when the target itself is NaN or
    Inf, the first forward op that made it. A zero gradient (every element exactly zero
    while the target depends on source; with ``index``, that element or row of it): the
    op where it becomes zero (a dead ReLU, a saturated sigmoid, a row no lookup read ...).
    ``lang``: the language of message and fix ("en", "zh"); ``d.in_language("zh")`` says
    the same in another. The facts are in ``d.finding``, the pattern in ``d.pattern``."""
    from .gradients.diagnose import explain_flow

    fl = flow(tape, target, output_gradients=output_gradients)
    return explain_flow(fl, source, check_lang(lang), index)


def chain_rule(tape: Any, target: Any, *, lang: str = "en", output_gradients: Any = None) -> ChainRule:
    """The chain rule at every step of ``target``'s backward pass: ``rule[k]`` is step k
    (a :class:`~tapeviz.gradients.chain_steps.ChainStep`: the gradient that arrived, the
    sum it was when several paths met, and for each input the arriving gradient times the
    op's local derivative), ``print(rule)`` writes every step, ``rule[k].lines("zh")`` one
    step in Chinese, and ``rule.group("sequential/dense")`` a group of ops as one step.

    Every number is TensorFlow's (what tape.gradient and the ops' registered gradient
    functions computed); the formulas (``2·x``, ``g·bᵀ``) say why, from a table of local
    derivatives (:mod:`tapeviz.gradients.local_derivatives`). ``lang``: the language
    ``print`` uses ("en", "zh")."""
    from .gradients.chain_rule import ChainRule

    return ChainRule(flow(tape, target, output_gradients=output_gradients), check_lang(lang))


def compare(
    a: Any,
    b: Any,
    *,
    clip: str = "none",
    clip_norm: float = 1.0,
    clip_value: tuple[float, float] = (-1.0, 1.0),
) -> ComparePicture:
    """Compare two backward passes of the same program: per node and per edge of ``a``,
    the ratio ‖g_b‖ / ‖g_a‖, the gradients b lost (``.lost()``), the largest changes
    (``.rows(n)``, ``.table(n)``, a table in a notebook) and ``.node_ratio`` /
    ``.edge_ratio`` to colour a picture by.

    ``a`` and ``b``: a GradientFlow (``tv.flow(tape, loss)``), a ``(tape, target)`` pair,
    or a ``(graph, flow)`` pair as ``History.picture(step)`` returns it. ``clip`` ("none",
    "by_norm", "by_value", "by_global_norm", with ``clip_norm`` / ``clip_value``) clips b's
    variable gradients as a training step would, so ``tv.compare(fl, fl,
    clip="by_global_norm")`` shows what clipping does. Two recordings that are not of the
    same program (other ops, other order; tf.stop_gradient and tf.identity may differ)
    raise an error naming the first op that differs.

    The result draws itself: ``.save("cmp.png")`` (or .svg; the options as for
    :func:`save`) writes a's graph with every edge and box coloured by the ratio (blue
    shrunk, grey unchanged, orange grown, a legend of the ratios), labelled with it, the
    edges whose gradient b lost dashed and labelled "lost", and the largest changes under
    the title; a notebook shows that picture and the table. ``tv.explore(c)`` shows the
    two passes side by side with one step slider."""
    from .gradients.compare import compare_flows
    from .output.compare_picture import ComparePicture

    return ComparePicture.of(
        compare_flows(_as_flow(a, "a"), _as_flow(b, "b"), clip_mode=clip, clip_norm=clip_norm, clip_value=clip_value)
    )


def _as_flow(x: Any, which: str) -> GradientFlow:
    """A GradientFlow from what tv.compare takes, or a clear error."""
    if isinstance(x, GradientFlow):
        return x
    if isinstance(x, tuple) and len(x) == 2:
        first, second = x
        if isinstance(second, GradientFlow):
            return second
        if first is not None and second is not None and not isinstance(first, TapeGraph):
            return flow(first, second)
    if x is None:
        raise TypeError(
            f"{which} is None: History.picture(step) returns None for a step whose picture was not kept; "
            "use one of history.recorded_steps()."
        )
    raise TypeError(
        f"tv.compare takes flows: pass tv.flow(tape, loss), a (tape, loss) pair or history.picture(step) as {which}, "
        f"got {type(x).__name__}."
    )
