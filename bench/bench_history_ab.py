"""hist.add before and after issue 23, side by side in one run: issue 23's light step
(Keras MLP 32-128-128-10, batch 64, MSE, SGD, no clipping) plain, followed by this
checkout's ``hist.add``, by another checkout's (``--old DIR``: a folder holding that
checkout's package renamed ``tapeviz_old``, e.g. ``git archive main tapeviz | tar -x -C DIR``
then ``mv DIR/tapeviz DIR/tapeviz_old``) and by the floor: the weight read and the dots
alone, which any exact per-step norm needs, with no History around them. Interleaved step
by step, as bench_history.py.

Run: .venv/bin/python bench/bench_history_ab.py --old DIR [--rounds 9]
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_history as b

import tapeviz as tv
from tapeviz.record.variable_reads import VariableReader
from tapeviz.training.squared_norms import view_sums
from tapeviz.training.step_arguments import inner_variable


def main(argv=None) -> None:
    args, old = b.parse_with_old(__doc__, argv, rounds=9)
    step, variables = b.light_setup()
    hists = {"new": tv.History(), "old": old.History()}
    count = {"new": 0, "old": 0}

    def with_(name):
        def run():
            loss, grads = step()
            count[name] += 1
            hists[name].add(count[name], loss=loss, grads=grads, variables=variables)

        return run

    reader = VariableReader([inner_variable(v) for v in variables])
    kept: list = []

    def floor():  # what any exact per-step norm must do: read the weights, one dot per tensor
        loss, grads = step()
        kept.append([loss, *view_sums(reader.views_after(grads))])
        if len(kept) >= block:
            kept.clear()

    block = 256
    variants = {"plain": step, "new": with_("new"), "old": with_("old"), "floor": floor}
    for fn in variants.values():
        for _ in range(block):
            fn()
    times = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    rng = random.Random(0)
    order = list(variants)
    for _ in range(args.rounds):
        gc.collect()
        total = dict.fromkeys(variants, 0.0)
        for _ in range(block):
            rng.shuffle(order)
            for k in order:
                c0, t0 = time.process_time(), time.perf_counter()
                variants[k]()
                total[k] += time.perf_counter() - t0
                cpu[k].append(time.process_time() - c0)
        for k, v in total.items():
            times[k].append(v / block)
    print(f"light step, rounds={args.rounds} of {block} steps per variant, interleaved step by step")
    print("| variant | ms / step | ratio to the plain step (rounds) | ratio of CPU-time medians |")
    print("|---|---|---|---|")
    print(f"| plain | {statistics.median(times['plain']) * 1e3:.3f} | 1.00x | |")
    for k, label in (
        ("new", "+ hist.add, this checkout"),
        ("old", "+ hist.add, --old checkout"),
        ("floor", "+ the weight read and the dots alone, no History"),
    ):
        r = statistics.median(a / p for a, p in zip(times[k], times["plain"], strict=True))
        rc = statistics.median(cpu[k]) / statistics.median(cpu["plain"])
        print(f"| {label} | {statistics.median(times[k]) * 1e3:.3f} | **{r:.3f}x** | {rc:.3f}x |")


if __name__ == "__main__":
    main()
