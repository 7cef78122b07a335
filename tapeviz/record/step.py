"""tv.record_step: one call of a compiled training step, run eagerly and recorded, then undone.

TensorFlow's tutorials train with ``@tf.function`` steps and Keras compiles ``train_step``
under ``model.fit``: a tape there runs in graph mode and holds no values to show. This
module makes one call of the step with ``tf.config.run_functions_eagerly(True)`` in force,
so every ``tf.function`` on the way (the step itself, a ``train_step`` or another method
decorated with ``@tf.function``, a compiled helper the step calls, ``jit_compile=True``
ones too) runs its Python eagerly. Every ``tf.GradientTape`` the call opens is recorded
(as ``tv.record`` would), what each tape's gradient was asked for is noted, and then every
variable the call wrote is put back (write_guard.WriteGuard), so the user's run goes on as
if the call had never happened. A call that opens no tape is refused with the reason.
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
    #: every ``tape.gradient`` call of the step, in call order: (tape number in ``tapes``,
    #: target, sources, what TF returned); what ``hist.callback`` records of a custom train_step
    gradients: list = field(default_factory=list)

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
    """The step as a call: a Keras model's train_step on (x, y[, w]) (one argument is
    passed as it is: a GAN's images, a dict, nested tuples), else fn itself. A
    tf.function (a bound method too) is called as such: with functions running eagerly
    it runs its Python, bound to its instance as TF binds it."""
    if _is_keras_model(fn):
        if kwargs:
            raise TypeError(
                f"tv.record_step(model, ...) passes the batch to model.train_step(data), which takes no keyword "
                f"arguments (got {', '.join(sorted(kwargs))}). Use: tv.record_step(model, x, y) or "
                "tv.record_step(model, batch)."
            )
        data = args[0] if len(args) == 1 else tuple(args)
        return lambda: fn.train_step(data)
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
        self.gradients: list = []  # (tape number, target, sources, result) of each gradient call
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

        def asked(original, keep: bool):
            def note(tape, target, sources, *args, **kwargs):
                rec = hook._by_tape.get(id(tape)) if hook.mine(tape) else None
                if rec is not None:
                    rec.asked = [*rec.asked, (target, sources)]
                out = original(tape, target, sources, *args, **kwargs)
                if keep and rec is not None:
                    hook.gradients.append((hook.tapes.index(rec), target, sources, out))
                return out

            return note

        cls.__enter__, cls.__exit__ = entered, exited
        cls.gradient, cls.jacobian = asked(gradient, True), asked(jacobian, False)
        return self

    def mine(self, tape) -> bool:
        return _get_ident() == self._thread

    def __exit__(self, *exc) -> None:
        for name, original in self._saved.items():
            setattr(tf.GradientTape, name, original)


def _name_of(fn: Any) -> str:
    if _is_keras_model(fn):
        return f"{type(fn).__name__}.train_step"
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _no_tape_message(fn: Any) -> str:
    return (
        f"tv.record_step ran {_name_of(fn)} once and it opened no tf.GradientTape on this thread, so there is "
        "nothing to show (its variables were put back). Every @tf.function in the call ran eagerly, so a "
        "compiled step or method is not the cause; the call computed no gradient with a tape: it only "
        "predicts, it uses tf.gradients or a tape opened in another thread, or it is not the training step. "
        "Fix: pass the function (or Keras model) whose code opens `with tf.GradientTape() as tape:`, e.g. "
        "steps = tv.record_step(train_step, x, y)."
    )


def record_step(fn: Any, /, *args: Any, **kwargs: Any) -> RecordedStep:
    """Run one call of a training step eagerly, record the tapes it opens, and undo it.

    ``fn``: a ``@tf.function`` step, a Keras model (its ``train_step``, decorated with
    ``@tf.function`` or not, on ``args`` = ``(x, y)``, ``(x, y, sample_weight)`` or one
    batch passed as it is, outside ``fit``'s compiled function), a method decorated with
    ``@tf.function`` (``agent.update``), or a plain function that calls compiled helpers.
    The call runs with ``tf.config.run_functions_eagerly(True)`` (put back afterwards): every
    ``tf.function`` it reaches runs its Python, ``jit_compile=True`` ones without XLA. The
    arguments are passed unchanged (NumPy arrays stay NumPy arrays; ``fit`` would have
    converted them to tensors). Every ``tf.GradientTape`` the call opens is recorded;
    afterwards every variable the call wrote is put back to its value
    before the call (weights, optimizer slots and iterations, metric states, Keras seed
    generators and tf.random.Generator states; the op-seed sequence of
    ``tf.random.set_seed``), so the run continues exactly as if the call never happened.

    Returns a RecordedStep: ``steps[0]`` is the first tape's recording and
    ``steps[0].target`` what its gradient was asked for, so
    ``tv.view(steps[0], steps[0].target)`` shows it; ``steps[0].asked`` lists every
    ``(target, sources)`` the tape's ``gradient`` / ``jacobian`` was called with (a
    persistent tape asked several times). If the call raises, the variables are put back and
    the error propagates; if it opens no tape, they are put back and a ValueError says why.

    While the call runs, every ``tf.function`` called from another thread runs eagerly too (the
    setting is TF's, for the whole process): slower, the same values."""
    if not tf.executing_eagerly():
        raise RuntimeError(
            "tv.record_step was called while TensorFlow was tracing a tf.function (graph mode), where no step "
            "can run eagerly. Fix: call it from eager Python: a notebook cell, your loop between steps, or a "
            "Keras callback (they run eagerly)."
        )
    call = _eager_call(fn, args, kwargs)
    guard = WriteGuard()
    eager_before = tf.config.functions_run_eagerly()
    try:
        with guard, _TapeHook() as hook:
            tf.config.run_functions_eagerly(True)
            try:
                result = call()
            finally:
                tf.config.run_functions_eagerly(eager_before)
    finally:
        restored = guard.restore()  # also when the call raised: the run must not change
    if not hook.tapes:
        raise ValueError(_no_tape_message(fn))
    return RecordedStep(hook.tapes, result, restored, hook.gradients)
