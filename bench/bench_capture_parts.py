"""Where a recorded Keras step's extra time goes: the step's phases (entering the tape, the
forward pass, leaving the tape, ``tape.gradient``) under ``tf.GradientTape``, this
checkout's ``tv.GradientTape`` and, with ``--baseline DIR``, another copy of tapeviz (e.g.
an older commit: ``git worktree add /tmp/old <commit>`` then ``--baseline /tmp/old/tapeviz``;
a package from before the record/ folder works too: only ``GradientTape`` is used).

Calls of the variants alternate one by one; each figure is the mean of the fastest tenth of
the calls, which on a machine shared with other work is steadier than a median (a call
slowed by another process only ever gets slower). Prints a markdown table, µs.

Run: .venv/bin/python bench/bench_capture_parts.py [--calls N] [--only SUBSTR] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import load_baseline, programs

import tapeviz as tv

PHASES = ("enter", "forward", "exit", "gradient")


def _low_mean(values: list[float]) -> float:
    fastest = sorted(values)[: max(1, len(values) // 10)]
    return sum(fastest) / len(fastest) * 1e6


def measure(prog, variables, tapes: dict, calls: int) -> dict:
    clock = time.perf_counter
    times: dict = {(k, p): [] for k in tapes for p in (*PHASES, "step")}

    def run(name, cls):
        tape = cls()
        a = clock()
        tape.__enter__()
        b = clock()
        loss = prog()
        c = clock()
        tape.__exit__(None, None, None)
        d = clock()
        tape.gradient(loss, variables)
        e = clock()
        for phase, dt in zip((*PHASES, "step"), (b - a, c - b, d - c, e - d, e - a), strict=True):
            times[name, phase].append(dt)

    for _ in range(20):
        for name, cls in tapes.items():
            run(name, cls)
    for v in times.values():
        v.clear()
    for _ in range(calls):
        for name, cls in tapes.items():
            run(name, cls)
    return {key: _low_mean(v) for key, v in times.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=600)
    ap.add_argument("--only", default="Keras", help="programs whose name contains this (default: the Keras ones)")
    ap.add_argument("--baseline", default=None)
    args = ap.parse_args(argv)
    tapes = {"plain": tf.GradientTape, "tv": tv.GradientTape}
    if args.baseline:
        tapes["baseline"] = load_baseline(args.baseline).GradientTape
    cols = ["program", "phase", "plain µs", "tapeviz +µs"] + (["baseline +µs"] if args.baseline else [])
    print(f"calls={args.calls}: mean of the fastest tenth of the calls; +µs = over the plain tape's phase")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, (prog, variables) in programs().items():
        if args.only.lower() not in name.lower():
            continue
        m = measure(prog, variables, tapes, args.calls)
        for phase in (*PHASES, "step"):
            plain = m["plain", phase]
            cells = [name, phase, f"{plain:.1f}", f"+{m['tv', phase] - plain:.1f}"]
            if args.baseline:
                cells.append(f"+{m['baseline', phase] - plain:.1f}")
            if phase == "step":
                cells[1] = "**whole step**"
                cells[3] += f" ({m['tv', phase] / plain:.3f}x)"
                if args.baseline:
                    cells[4] += f" ({m['baseline', phase] / plain:.3f}x)"
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
