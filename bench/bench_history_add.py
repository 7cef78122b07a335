"""``hist.add`` alone, timed right after each real training step, this checkout against
another (``--old DIR``: a folder holding that checkout's package renamed ``tapeviz_old``, as
for bench_history_ab.py), interleaved call by call in a random order. Whole-step ratios (bench_history.py)
mix in how the step that follows is slowed; this times the call itself: the light step of
issue 23 (MSE, no clipping) and the heavy one (cross-entropy, ``clip_by_global_norm``,
``clipped=`` passed), plus the batched weight read alone.

Run: .venv/bin/python bench/bench_history_add.py --old DIR [--calls 3000]
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import bench_history as b

import tapeviz as tv
from tapeviz.record.variable_reads import VariableReader
from tapeviz.training.step_arguments import inner_variable


def main(argv=None) -> None:
    args, old = b.parse_with_old(__doc__, argv, calls=3000)
    light, light_vars = b.light_setup()
    heavy, heavy_vars = b.mlp_setup()
    read = VariableReader([inner_variable(v) for v in light_vars])
    hists = {"light, now": tv.History(), "light, old": old.History()}
    hists |= {"heavy, now": tv.History(), "heavy, old": old.History()}
    times: dict[str, list[int]] = {k: [] for k in [*hists, "weight read alone"]}
    clock = time.perf_counter_ns
    rng = random.Random(0)
    pairs = [["light, now", "light, old"], ["heavy, now", "heavy, old"]]
    for i in range(args.calls):
        for pair in pairs:
            rng.shuffle(pair)  # which checkout runs first changes from call to call (caches favour neither)
        for k in pairs[0]:
            loss, grads = light()
            t0 = clock()
            hists[k].add(i, loss=loss, grads=grads, variables=light_vars)
            times[k].append(clock() - t0)
        for k in pairs[1]:
            loss, grads, clipped, _ = heavy()
            t0 = clock()
            hists[k].add(i, loss=loss, grads=grads, variables=heavy_vars, clipped=clipped)
            times[k].append(clock() - t0)
        light()
        t0 = clock()
        read()
        times["weight read alone"].append(clock() - t0)
    skip = args.calls // 10  # warm-up: traces, first flush
    print(f"hist.add alone after each real step, medians of {args.calls - skip} calls, load {os.getloadavg()[0]:.1f}")
    print("| call | median (µs) |\n|---|---|")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v[skip:]) / 1e3:.1f} |")


if __name__ == "__main__":
    main()
