"""tv.record_step: one call of a compiled training step, run eagerly and recorded, then undone.

TensorFlow's tutorials train with ``@tf.function`` steps and Keras compiles ``train_step``
under ``model.fit``: a tape there runs in graph mode and holds no values to show. The
same Python runs eagerly when called as ``fn.python_function`` (or ``model.train_step``
outside ``fit``). This module makes that one call with every ``tf.GradientTape`` it
opens recorded (as ``tv.record`` would), notes what each tape's gradient was asked for,
and then puts back every variable the call wrote (write_guard.WriteGuard), so the user's
run goes on as if the call had never happened.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from threading import get_ident as _get_ident
from typing import Any

import tensorflow as tf

from .tape import GradientTape, Recording
from .write_guard import WriteGuard

__all__ = ["record_step", "RecordedStep"]


@dataclass
class RecordedStep:
    """What one recorded call left: its tapes' recordings, in the order the step opened
    them (``steps[0]``, ``len(steps)``; each viewable, explorable, savable like any
    recording, with ``.target`` the first thing its gradient was asked for), the call's
    return value, and the variables put back afterwards."""

    tapes: list = field(default_factory=list)
    result: Any = None
    restored: list = field(default_factory=list)

    def __getitem__(self, i: int) -> Any:
        return self.tapes[i]

    def __len__(self) -> int:
        return len(self.tapes)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tapes)

    def __repr__(self) -> str:
        return f"RecordedStep({len(self.tapes)} tapes, {len(self.restored)} variables restored)"


def _is_keras_model(obj: Any) -> bool:
    return callable(getattr(obj, "train_step", None)) and callable(getattr(obj, "fit", None))


def _eager_call(fn: Any, args: tuple, kwargs: dict) -> Callable[[], Any]:
    """The same step as a plain Python call: a Keras model's train_step on (x, y[, w]),
    a tf.function's python_function, or fn itself."""
    if _is_keras_model(fn):
        data = args[0] if len(args) == 1 and not kwargs else tuple(args)
        return lambda: fn.train_step(data)
    python = getattr(fn, "python_function", None)
    if callable(python):
        return lambda: python(*args, **kwargs)
    if not callable(fn):
        raise TypeError(
            f"tv.record_step needs a @tf.function, a Keras model or a function, got {type(fn).__name__}. "
            "Use: steps = tv.record_step(train_step, x, y)."
        )
    return lambda: fn(*args, **kwargs)


class _TapeHook:
    """While active on this thread, every tf.GradientTape entered gets a tv.record
    attached (a tv.GradientTape records itself), and gradient/jacobian calls note their
    targets on the recording."""

    def __init__(self) -> None:
        self.tapes: list = []
        self._thread = _get_ident()
        self._by_tape: dict[int, Any] = {}
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> _TapeHook:
        cls = tf.GradientTape
        hook = self
        enter, exit_, gradient, jacobian = cls.__enter__, cls.__exit__, cls.gradient, cls.jacobian
        self._saved = {"__enter__": enter, "__exit__": exit_, "gradient": gradient, "jacobian": jacobian}

        def entered(tape):
            out = enter(tape)
            if hook.mine(tape):
                rec: GradientTape | Recording
                if isinstance(tape, GradientTape):
                    rec = tape
                else:
                    rec = Recording(tape)
                    try:
                        rec._start(sys._getframe(1))
                    except Exception:  # noqa: BLE001 - graph mode or a tape not recording: leave it
                        return out
                hook.tapes.append(rec)
                hook._by_tape[id(tape)] = rec
            return out

        def exited(tape, typ, value, traceback):
            rec = hook._by_tape.get(id(tape)) if hook.mine(tape) else None
            if isinstance(rec, Recording):
                rec._stop(sys._getframe(1))
            return exit_(tape, typ, value, traceback)

        def asked(original):
            def note(tape, target, sources, *args, **kwargs):
                rec = hook._by_tape.get(id(tape)) if hook.mine(tape) else None
                if rec is not None:
                    rec.asked = [*rec.asked, (target, sources)]
                return original(tape, target, sources, *args, **kwargs)

            return note

        cls.__enter__, cls.__exit__ = entered, exited
        cls.gradient, cls.jacobian = asked(gradient), asked(jacobian)
        return self

    def mine(self, tape) -> bool:
        return _get_ident() == self._thread

    def __exit__(self, *exc) -> None:
        for name, original in self._saved.items():
            setattr(tf.GradientTape, name, original)


def record_step(fn: Any, /, *args: Any, **kwargs: Any) -> RecordedStep:
    """Run one call of a training step eagerly, record the tapes it opens, and undo it.

    ``fn``: a ``@tf.function`` (its Python function runs, eagerly), a Keras model (its
    ``train_step`` on ``args`` = ``(x, y)`` or ``(x, y, sample_weight)``, outside
    ``fit``'s compiled function), or a plain function. Every ``tf.GradientTape`` the call
    opens is recorded; afterwards every variable the call wrote is put back to its value
    before the call (weights, optimizer slots and iterations, metric states, Keras seed
    generators and tf.random.Generator states; the op-seed sequence of
    ``tf.random.set_seed``), so the run continues exactly as if the call never happened.

    Returns a RecordedStep: ``steps[0]`` is the first tape's recording and
    ``steps[0].target`` what its gradient was asked for, so
    ``tv.view(steps[0], steps[0].target)`` shows it. If the call raises, the variables are
    put back and the error propagates."""
    call = _eager_call(fn, args, kwargs)
    guard = WriteGuard()
    try:
        with guard, _TapeHook() as hook:
            result = call()
    finally:
        restored = guard.restore()  # also when the call raised: the run must not change
    return RecordedStep(hook.tapes, result, restored)
