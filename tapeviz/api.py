"""The public surface: a drop-in tape, a recorder for plain tapes, and flow()."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import tensorflow as tf

from .capture import GRAPH_MODE_MESSAGE, GraphModeError, Recorder, tape_is_recording
from .flow import GradientFlow
from .export import check_path, save_view
from .graph import DEFAULT_BUDGET_BYTES, DEFAULT_MAX_VALUE_BYTES, TapeGraph
from .messages import DEFAULT
from .themes import Theme
from .view import GraphView

__all__ = ["GradientTape", "record", "Recording", "flow", "view", "draw", "save", "explore", "export_html", "explain",
           "TapeGraph", "GradientFlow", "GraphView"]


class _GraphHolder:
    """Shared by GradientTape and Recording: a finished capture, turned into a graph lazily."""

    _tv_capture = None
    _tv_error: BaseException | None = None
    _tv_graph: TapeGraph | None = None
    _tv_max_value_bytes = DEFAULT_MAX_VALUE_BYTES
    _tv_budget_bytes = DEFAULT_BUDGET_BYTES

    @property
    def graph(self) -> TapeGraph:
        """The TapeGraph of what was recorded (built on first use, after the block)."""
        if self._tv_error is not None:
            raise RuntimeError(f"tapeviz could not read this tape's recording: {self._tv_error}") from self._tv_error
        if self._tv_capture is None:
            raise RuntimeError("Nothing recorded yet: the graph exists once the `with` block has finished.")
        if self._tv_capture.graph_mode:
            raise GraphModeError(GRAPH_MODE_MESSAGE)
        if self._tv_graph is None:
            self._tv_graph = TapeGraph(self._tv_capture, max_value_bytes=self._tv_max_value_bytes, budget_bytes=self._tv_budget_bytes)
        return self._tv_graph

    def _tv_stop(self, recorder: Recorder, frame) -> None:
        # Never raise from here: an error in tapeviz must not replace the user's exception
        # or break their run. It is reported when they ask for the graph. (Ctrl+C still
        # propagates: stop() has removed every hook before it does anything else.)
        try:
            self._tv_capture = recorder.stop(frame)
        except Exception as e:  # noqa: BLE001
            self._tv_error = e
            warnings.warn(f"tapeviz could not finish recording: {e}", RuntimeWarning, stacklevel=3)


class GradientTape(tf.GradientTape, _GraphHolder):
    """``tf.GradientTape`` that also records what it saw; gradients are untouched.

    Same arguments and behaviour as ``tf.GradientTape``; after the block, ``tape.graph``
    holds the recorded graph. ``max_value_bytes`` caps the value kept per tensor,
    ``budget_bytes`` the total for the capture (bigger tensors keep a summary).
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True, *,
                 max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        super().__init__(persistent=persistent, watch_accessed_variables=watch_accessed_variables)
        self._tv_recorder: Recorder | None = None
        self._tv_max_value_bytes = max_value_bytes
        self._tv_budget_bytes = budget_bytes

    def __enter__(self):
        super().__enter__()
        self._tv_capture = self._tv_graph = self._tv_error = None
        recorder = Recorder(self)
        try:
            recorder.start()
        except BaseException:
            super().__exit__(*sys.exc_info())
            raise
        self._tv_recorder = recorder
        return self

    def __exit__(self, typ, value, traceback):
        recorder, self._tv_recorder = self._tv_recorder, None
        try:
            if recorder is not None:
                self._tv_stop(recorder, sys._getframe(1))
        finally:
            result = super().__exit__(typ, value, traceback)  # the tape is popped whatever happens
        return result

    def watch(self, tensor) -> None:
        super().watch(tensor)
        if self._tv_recorder is not None:
            self._tv_recorder.note_watch(tensor)


class Recording(_GraphHolder):
    """Attach to a plain ``tf.GradientTape`` inside its block: ``with tv.record(tape) as rec``."""

    def __init__(self, tape: tf.GradientTape, *, max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
                 budget_bytes: int = DEFAULT_BUDGET_BYTES):
        if not isinstance(tape, tf.GradientTape):
            raise TypeError(
                f"tv.record() needs a tf.GradientTape, got {type(tape).__name__}. "
                "Use: with tf.GradientTape() as tape, tv.record(tape) as rec: ..."
            )
        self.tape = tape
        self._tv_max_value_bytes = max_value_bytes
        self._tv_budget_bytes = budget_bytes
        self._recorder: Recorder | None = None

    def __enter__(self) -> "Recording":
        tape = self.tape
        if not tape_is_recording(tape):
            raise RuntimeError(
                "tv.record(tape) must be entered inside the tape's `with` block: "
                "with tf.GradientTape() as tape, tv.record(tape) as rec: ..."
            )
        recorder = Recorder(tape)
        recorder.start()
        self._recorder = recorder
        plain_watch = tape.watch

        def watch(tensor):
            plain_watch(tensor)
            recorder.note_watch(tensor)

        tape.watch = watch  # instance attribute, removed on exit
        return self

    def __exit__(self, typ, value, traceback):
        recorder, self._recorder = self._recorder, None
        try:
            self.tape.__dict__.pop("watch", None)
        finally:
            if recorder is not None:
                self._tv_stop(recorder, sys._getframe(1))
        return False


def record(tape: tf.GradientTape, **options) -> Recording:
    """Record what a plain ``tf.GradientTape`` sees, from inside its block."""
    return Recording(tape, **options)


def _graph_of(obj) -> TapeGraph:
    if isinstance(obj, TapeGraph):
        return obj
    if isinstance(obj, _GraphHolder):
        return obj.graph
    if isinstance(obj, tf.GradientTape):
        raise TypeError(
            "This is a plain tf.GradientTape, which tapeviz did not record. "
            "Use tv.GradientTape() instead, or attach tv.record(tape) inside its block."
        )
    raise TypeError(f"Expected a tv.GradientTape, a tv.record(...) or a TapeGraph, got {type(obj).__name__}.")


def flow(tape: Any, target, *, sources=None, output_gradients=None) -> GradientFlow:
    """The backward pass of ``target`` over what ``tape`` recorded (see GradientFlow)."""
    graph = _graph_of(tape)
    if not graph.capture.ops:
        raise ValueError("The tape recorded no operations: run your computation inside the `with` block.")
    return GradientFlow(graph, target, sources=sources, output_gradients=output_gradients)


def view(tape: Any, target=None, *, step: int | None = None, ax=None, title: str | None = None,
         caption: str | None = None, output_gradients=None, collapsed="auto", show_all: bool = False,
         theme: "str | Theme | None" = None, lang: str = DEFAULT) -> GraphView:
    """A GraphView of what ``tape`` recorded; with a target, its backward pass at ``step``
    (0 seeds the target; None, the default, is the last step: the finished pass).

    What is shown: ops that carry nothing to the target are hidden, constants and
    shape plumbing fold into chips on the ops that use them (``show_all=True`` draws
    every recorded op). ``collapsed``: "auto" (TF API calls collapse; layers when the
    picture would not fit a screen), True, False, or the names of groups to collapse.
    ``theme``: "light" (default), "dark" (JupyterLab's dark theme) or "projector" (large
    text, thick lines); ``lang``: the language of the picture's words (tapeviz.messages.LANGUAGES)."""
    graph = _graph_of(tape)
    fl = flow(tape, target, output_gradients=output_gradients) if target is not None else None
    v = GraphView(graph, fl, ax=ax, title=title, caption=caption, collapsed=collapsed, show_all=show_all,
                  theme=theme, lang=lang)
    if step is not None:
        v.set_step(step)
    return v


def draw(tape: Any, target=None, step: int | None = None, *, ax=None, title: str | None = None,
         caption: str | None = None, output_gradients=None, collapsed="auto", show_all: bool = False,
         theme: "str | Theme | None" = None, lang: str = DEFAULT):
    """A matplotlib Figure of the recorded graph and, given a target, its gradient flow.

    ``step=None`` shows the finished backward pass, ``step=k`` the state after k steps.
    Pass ``ax=`` to draw into an existing Axes (its figure is returned).
    """
    return view(tape, target, step=step, ax=ax, title=title, caption=caption, output_gradients=output_gradients,
                collapsed=collapsed, show_all=show_all, theme=theme, lang=lang).figure


def save(tape: Any, path, *, target=None, step: int | None = None, dpi: int = 100, fps: float = 1.5,
         caption: str | None = None, output_gradients=None, collapsed="auto", show_all: bool = False,
         theme: "str | Theme | None" = None, lang: str = DEFAULT):
    """Write a .png / .svg picture, or a .gif of the backward pass (one frame a step)."""
    check_path(path)  # fail before any work on a bad path
    v = view(tape, target, step=step, caption=caption, output_gradients=output_gradients, collapsed=collapsed,
             show_all=show_all, theme=theme, lang=lang)
    return save_view(v, path, dpi=dpi, fps=fps)


def explore(tape: Any, targets, *, output_gradients=None):
    """A live Explorer widget: ``targets`` is one tensor or {name: tensor} (persistent tapes)."""
    from .widget import Explorer

    graph = _graph_of(tape)
    if isinstance(targets, dict):
        if not targets:
            raise ValueError("explore() needs at least one target.")
        named = {str(k): v for k, v in targets.items()}
    else:
        named = {graph.display_name(graph.node_of(targets)) if graph.node_of(targets) is not None else "target": targets}
    for name, t in named.items():  # fail now, with flow's clear message, not inside a callback
        flow(tape, t, output_gradients=output_gradients)
    return Explorer(graph, named, flow_factory=lambda t: flow(tape, t, output_gradients=output_gradients))


def export_html(tape: Any, target, path, *, output_gradients=None, title: str | None = None,
                embed_url: str | None = None, requirejs: bool = True, requirejs_url: str | None = None,
                cors: bool = True):
    """Write a standalone .html page that steps through the backward pass of ``target`` with
    no Python kernel (a slider and a play button over pictures rendered now).

    ``target``: a tensor, or {name: tensor} with one entry to choose the name shown. The
    page loads its widget scripts from public CDNs unless ``embed_url`` / ``requirejs_url``
    point at local copies: see :meth:`tapeviz.widget.Explorer.export_html`. Returns the path.
    """
    if isinstance(target, dict) and len(target) != 1:
        raise ValueError(
            f"export_html writes one target's backward pass, got {len(target)} targets. Pass one tensor or "
            "{name: tensor} with one entry (or call .export_html on a tv.explore(...) widget after choosing "
            "its target).")
    check_path(path, formats=(".html", ".htm"))  # fail before any drawing work
    ex = explore(tape, target, output_gradients=output_gradients)
    try:
        return ex.export_html(path, title=title, embed_url=embed_url, requirejs=requirejs,
                              requirejs_url=requirejs_url, cors=cors)
    finally:
        ex.close()


def explain(tape: Any, target, source, *, output_gradients=None):
    """Why d target / d source is None: a Diagnosis (reason, message, fix), or None if it is not."""
    from .diagnose import explain_flow

    return explain_flow(flow(tape, target, output_gradients=output_gradients), source)
