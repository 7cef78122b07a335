"""What each part of a recording costs inside a Keras step: the step (forward + ``tape.gradient``)
timed under ``tf.GradientTape``, under ``tv.GradientTape``, and under ``tv.GradientTape`` with one
part of the recording taken out at a time, all in one process, calls alternating one by one.

A part's cost measured this way includes what it does to the step around it (cache misses,
CPython's specialised look-ups undone by a class attribute write), which timing the part
alone in a loop does not see: in the step, tapeviz's calls cost 2-5x what they cost in a loop.
The variants with a part taken out record less (or wrongly): they exist to be timed, never used.

Variants (``--variants``, comma-separated; ``+`` combines removals):
  plain       tf.GradientTape
  tv          tv.GradientTape as it is
  scopes      the Keras-scope walk (where it still runs) answered from a per-process dict by scope string
  kstack      Keras's name-scope stack not read: every new scope walked (as before the fifth pass)
  anchor      the user-call anchor check (UserCalls.below) answering "the last call"
  api         no TF API-call walk
  block       no read of the block's frame at the end (scan_frame, named_in_block)
  reentry     no NumPy -> tensor check (note_reentry)
  classes     the tensor and tape class patches not installed (the module patches are)
  patches     no patch at all (Patches.acquire / release do nothing)
  floor       a do-nothing recorder (an op callback appending a tuple) with the 13 patches
  floor0      the same without the patches

Each round runs every variant once, in a new random order (a variant that always ran right
after the plain tape would be timed 20-30 µs apart from the same variant elsewhere in the
round); each figure is the mean of the fastest tenth of its calls.
Run: .venv/bin/python bench/bench_capture_ablation.py [--calls N] [--program NAME] [--variants ...]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import record as _record
from tensorflow.python.framework import constant_op as _constant_op
from tensorflow.python.framework import op_callbacks as _op_callbacks
from tensorflow.python.ops import resource_variable_ops as _rvo
from tensorflow.python.ops import script_ops as _script_ops

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import programs

import tapeviz as tv
from tapeviz.record import callsites, hooks, recorder, user_calls

_WALKS = "scopes+anchor+api+block+reentry"
DEFAULT = f"plain,tv,kstack,scopes,anchor,api,block,reentry,classes,patches,{_WALKS},{_WALKS}+patches,floor,floor0"
MODE = {"removed": frozenset()}  # the variant being timed now


def _off(part: str) -> bool:
    return part in MODE["removed"]


def _install_switches() -> None:
    """Wrap each part so that the variant being timed can take it out."""
    walk, answers = recorder.keras_scopes_at, {}

    def keras_scopes_at(scope, f, stop=None):
        if _off("scopes") and scope in answers:
            return answers[scope]
        answers[scope] = walk(scope, f, stop)
        return answers[scope]

    recorder.keras_scopes_at = keras_scopes_at
    from_stack = recorder.from_keras_stack
    recorder.from_keras_stack = lambda scope, mark: None if _off("kstack") else from_stack(scope, mark)
    below = user_calls.UserCalls.below
    user_calls.UserCalls.below = lambda self, index, key: self.last if _off("anchor") else below(self, index, key)
    current = callsites.ApiCalls.current

    def api_current(self):
        if _off("api"):
            self.caller = None
            return None
        return current(self)

    callsites.ApiCalls.current = api_current
    scan, named = recorder.scan_frame, recorder.named_in_block
    recorder.scan_frame = lambda frame, local=None: None if _off("block") else scan(frame, local)
    recorder.named_in_block = lambda frame, enter, local=None: {} if _off("block") else named(frame, enter, local)
    reentry = hooks.note_reentry
    hooks.note_reentry = lambda *a: None if _off("reentry") else reentry(*a)
    acquire, release = hooks.Patches.acquire.__func__, hooks.Patches.release.__func__
    module_patches = _ModulePatches()

    def acquire_switch(cls):
        if _off("patches"):
            return
        if _off("classes"):
            module_patches.install()
            return
        acquire(cls)

    def release_switch(cls):
        if _off("patches"):
            return
        if _off("classes"):
            module_patches.remove()
            return
        release(cls)

    hooks.Patches.acquire = classmethod(acquire_switch)
    hooks.Patches.release = classmethod(release_switch)


class _ModulePatches:
    """Patches.acquire's module-level patches only (no class attribute written)."""

    def __init__(self) -> None:
        self.saved: dict = {}

    def install(self) -> None:
        s = self.saved
        s.update(
            fast=pywrap_tfe.TFE_Py_FastPathExecute,
            accessed=_rvo.variable_accessed,
            record=_record.record_operation,
            record_bp=_record.record_operation_backprop_only,
            convert=_constant_op.convert_to_eager_tensor,
            script=_script_ops.backprop,
        )
        hooks._tf_fast, hooks._tf_accessed = s["fast"], s["accessed"]
        hooks._tf_record, hooks._tf_record_bp, hooks._tf_convert = s["record"], s["record_bp"], s["convert"]
        pywrap_tfe.TFE_Py_FastPathExecute = hooks._fast_path_execute
        _rvo.variable_accessed = hooks._variable_accessed
        _record.record_operation = hooks._record_operation
        _record.record_operation_backprop_only = hooks._record_operation_backprop_only
        _constant_op.convert_to_eager_tensor = hooks._convert_to_eager_tensor
        _script_ops.backprop = hooks._ScriptBackprop(s["script"])

    def remove(self) -> None:
        s = self.saved
        pywrap_tfe.TFE_Py_FastPathExecute = s["fast"]
        _rvo.variable_accessed = s["accessed"]
        _record.record_operation = s["record"]
        _record.record_operation_backprop_only = s["record_bp"]
        _constant_op.convert_to_eager_tensor = s["convert"]
        _script_ops.backprop = s["script"]


class _FloorTape(tf.GradientTape):
    """A recorder that does nothing but log a tuple per op, with or without the patches."""

    patched = True

    def __enter__(self):
        super().__enter__()
        log = []
        append = log.append

        def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
            append((op_type, inputs, attrs, outputs))

        self._floor_callback = callback
        if self.patched:
            hooks.Patches.acquire()
        _op_callbacks.add_op_callback(callback)
        return self

    def __exit__(self, *exc):
        _op_callbacks.remove_op_callback(self._floor_callback)
        if self.patched:
            hooks.Patches.release()
        self._floor_callback = None
        return super().__exit__(*exc)


class _FloorTapeUnpatched(_FloorTape):
    patched = False


def _tape_class(variant: str):
    if variant == "plain":
        return tf.GradientTape
    if variant == "floor":
        return _FloorTape
    if variant == "floor0":
        return _FloorTapeUnpatched
    return tv.GradientTape


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--program", default="Keras MLP 3-4-1")
    ap.add_argument("--variants", default=DEFAULT)
    args = ap.parse_args(argv)
    prog, variables = programs()[args.program]
    _install_switches()
    variants = args.variants.split(",")
    clock = time.perf_counter
    times: dict[str, list[float]] = {v: [] for v in variants}

    def step(variant: str) -> float:
        MODE["removed"] = frozenset(variant.split("+")) if variant not in ("plain", "tv") else frozenset()
        cls = _tape_class(variant)
        a = clock()
        with cls() as tape:
            loss = prog()
        tape.gradient(loss, variables)
        return clock() - a

    for _ in range(50):
        for v in variants:
            step(v)
    rng = random.Random(0)
    order = list(variants)
    for _ in range(args.calls):
        rng.shuffle(order)  # no variant always runs right after another
        for v in order:
            times[v].append(step(v))
    MODE["removed"] = frozenset()

    def low(values: list[float]) -> float:
        fastest = sorted(values)[: max(1, len(values) // 10)]
        return sum(fastest) / len(fastest) * 1e6

    plain = low(times["plain"]) if "plain" in times else None
    full = low(times["tv"]) if "tv" in times else None
    print(f"{args.program}, calls={args.calls}: mean of the fastest tenth; µs")
    print("| variant | step µs | over plain | ratio | saved against tv |")
    print("|---|---|---|---|---|")
    for v in variants:
        t = low(times[v])
        over = f"+{t - plain:.1f}" if plain is not None else ""
        ratio = f"{t / plain:.3f}x" if plain is not None else ""
        saved = f"{full - t:.1f}" if full is not None and v not in ("plain", "tv") else ""
        print(f"| {v} | {t:.1f} | {over} | {ratio} | {saved} |")


if __name__ == "__main__":
    main()
