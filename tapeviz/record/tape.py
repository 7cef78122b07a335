"""Recording: a drop-in tf.GradientTape that records what it sees, and tv.record for plain tapes.

The first stage the user touches: it starts and stops capture's Recorder around the
``with`` block and turns the finished capture into a TapeGraph on first use. Every later
stage (flow, pictures, the explorer, History) finds the graph of whatever the user
hands it through :func:`graph_of`.
"""

from __future__ import annotations

import sys
import warnings
from types import TracebackType
from typing import Any, Literal

import tensorflow as tf

from .graph import DEFAULT_BUDGET_BYTES, DEFAULT_MAX_VALUE_BYTES, TapeGraph
from .recorder import Recorder, tape_is_recording
from .records import GRAPH_MODE_MESSAGE, GraphModeError

__all__ = ["GradientTape", "Recording", "record", "graph_of"]


class _GraphHolder:
    """Shared by GradientTape and Recording: a finished capture, turned into a graph lazily."""

    _tv_capture = None
    _tv_error: BaseException | None = None
    _tv_graph: TapeGraph | None = None
    _tv_max_value_bytes = DEFAULT_MAX_VALUE_BYTES
    _tv_budget_bytes = DEFAULT_BUDGET_BYTES
    #: what tape.gradient / jacobian was asked for while tv.record_step watched: [(target, sources)]
    asked: list = []  # replaced per instance when something is noted

    @property
    def target(self) -> Any:
        """The first target the step asked this tape's gradient of (tv.record_step), else None."""
        return self.asked[0][0] if self.asked else None

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
            self._tv_graph = TapeGraph(
                self._tv_capture, max_value_bytes=self._tv_max_value_bytes, budget_bytes=self._tv_budget_bytes
            )
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

    def __init__(
        self,
        persistent: bool = False,
        watch_accessed_variables: bool = True,
        *,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
    ):
        super().__init__(persistent=persistent, watch_accessed_variables=watch_accessed_variables)
        self._tv_recorder: Recorder | None = None
        self._tv_max_value_bytes = max_value_bytes
        self._tv_budget_bytes = budget_bytes

    def __enter__(self) -> GradientTape:
        super().__enter__()
        self._tv_capture = self._tv_graph = self._tv_error = None
        recorder = Recorder(self)
        try:
            recorder.start(sys._getframe(1))
        except BaseException:
            super().__exit__(*sys.exc_info())
            raise
        self._tv_recorder = recorder
        return self

    def __exit__(
        self, typ: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        recorder, self._tv_recorder = self._tv_recorder, None
        try:
            if recorder is not None:
                self._tv_stop(recorder, sys._getframe(1))
        finally:
            result = super().__exit__(typ, value, traceback)  # the tape is popped whatever happens
        return result

    def watch(self, tensor: Any) -> None:
        """As ``tf.GradientTape.watch`` (a tensor or a nest of them); tapeviz notes the watch."""
        super().watch(tensor)
        if self._tv_recorder is not None:
            self._tv_recorder.note_watch(tensor)


class Recording(_GraphHolder):
    """Attach to a plain ``tf.GradientTape`` inside its block: ``with tv.record(tape) as rec``."""

    def __init__(
        self,
        tape: tf.GradientTape,
        *,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
    ):
        if not isinstance(tape, tf.GradientTape):
            raise TypeError(
                f"tv.record() needs a tf.GradientTape, got {type(tape).__name__}. "
                "Use: with tf.GradientTape() as tape, tv.record(tape) as rec: ..."
            )
        self.tape = tape
        self._tv_max_value_bytes = max_value_bytes
        self._tv_budget_bytes = budget_bytes
        self._recorder: Recorder | None = None

    def __enter__(self) -> Recording:
        return self._start(sys._getframe(1))

    def _start(self, frame) -> Recording:
        """Attach to the tape; ``frame`` is the user's code entering the block."""
        tape = self.tape
        if not tape_is_recording(tape):
            raise RuntimeError(
                "tv.record(tape) must be entered inside the tape's `with` block: "
                "with tf.GradientTape() as tape, tv.record(tape) as rec: ..."
            )
        recorder = Recorder(tape)
        recorder.start(frame)
        self._recorder = recorder
        plain_watch = tape.watch

        def watch(tensor):
            plain_watch(tensor)
            recorder.note_watch(tensor)

        tape.watch = watch  # instance attribute, removed on exit
        return self

    def __exit__(
        self, typ: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> Literal[False]:
        self._stop(sys._getframe(1))
        return False

    def _stop(self, frame) -> None:
        """Detach from the tape; ``frame`` is the user's code leaving the block."""
        recorder, self._recorder = self._recorder, None
        try:
            self.tape.__dict__.pop("watch", None)
        finally:
            if recorder is not None:
                self._tv_stop(recorder, frame)


def record(tape: tf.GradientTape, **options: int) -> Recording:
    """Record what a plain ``tf.GradientTape`` sees, from inside its block (``options``:
    ``max_value_bytes`` and ``budget_bytes``, as for tv.GradientTape)."""
    return Recording(tape, **options)


def graph_of(obj: Any) -> TapeGraph:
    """The TapeGraph of a tv.GradientTape, a tv.record(...) or a TapeGraph (a clear error otherwise)."""
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
