"""Benchmark tapeviz.picture.layout.layered_layout / layered_routes on seeded random DAGs.

Run: python bench/bench_layout.py [--repeat N]

Prints a markdown table: layout time and layout-plus-routes time (best of N
runs, wall clock, so it is sensitive to other load on the machine) and edge
crossings before (insertion order) and after crossing reduction, counted
three ways:

* routed   - the objective the reduction minimises: long edges pass through
             one invisible bend point per column they span.
* straight - count_crossings() on the positions alone, i.e. what drawing
             every edge as a straight line shows.  Long edges ignore their
             routes, so this improves much less when they abound.
* drawn    - count_crossings() on the positions plus the bend points of
             layered_routes(), i.e. what tapeviz draws: long edges follow
             their routes.  Equal to "routed" by construction (the bend
             points take the slots the reduction ordered), which the table
             shows rather than assumes.

Two graph families, both with about two edges per node:

* uniform  - every edge joins a random earlier node to a random later one.
             Few, wide layers; the reference case for the performance target.
* tape     - edges mostly join nearby nodes, like ops consuming recent
             results.  Many deep layers, and every node nobody consumes is
             pulled to the last layer, so long edges (and the dummy nodes the
             crossing reduction routes them through) dominate: a stress case.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from functools import partial
from pathlib import Path

import networkx as nx

try:
    from tapeviz.picture import layout
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tapeviz.picture import layout

count_crossings, layered_layout, layered_routes = layout.count_crossings, layout.layered_layout, layout.layered_routes


def random_dag(n: int, m: int, seed: int, *, locality: float | None = None) -> nx.MultiDiGraph:
    """n nodes 0..n-1, m edges i -> j with i < j (parallel edges allowed).

    With ``locality`` the source is on average that many nodes before the
    target (exponential), otherwise uniform over all earlier nodes.
    """
    rng = random.Random(seed)
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    for _ in range(m):
        j = rng.randrange(1, n)
        if locality is None:
            i = rng.randrange(j)
        else:
            i = max(0, j - 1 - int(rng.expovariate(1.0 / locality)))
        g.add_edge(i, j)
    return g


def best_time(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per graph; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rows = []
    for family, locality in (("uniform", None), ("tape", 20.0)):
        for n in (100, 1_000, 5_000):
            g = random_dag(n, 2 * n, args.seed, locality=locality)
            seconds, pos = best_time(partial(layered_layout, g), args.repeat)
            routed_seconds, (pos_r, routes) = best_time(partial(layered_routes, g), args.repeat)
            assert pos_r == pos
            # The routed objective is internal: read it from the private driver.
            _, _, routed_before, routed_after = layout._ordered_layers(g, sweeps=4)
            straight_before = count_crossings(g, layered_layout(g, sweeps=0))
            straight_after = count_crossings(g, pos)
            drawn_before = count_crossings(g, *layered_routes(g, sweeps=0))
            drawn_after = count_crossings(g, pos, routes)
            n_layers = len({x for x, _ in pos.values()})
            rows.append(
                f"| {family} | {n:,} | {g.number_of_edges():,} | {n_layers} | {seconds * 1000:,.0f} "
                f"| {routed_seconds * 1000:,.0f} | {change(routed_before, routed_after)} "
                f"| {change(straight_before, straight_after)} | {change(drawn_before, drawn_after)} |"
            )
            print(f"  done: {family} n={n}", file=sys.stderr, flush=True)

    print(
        "| graph | nodes | edges | layers | layout (ms) | layout + routes (ms) "
        "| routed crossings before → after | straight crossings before → after "
        "| drawn (routed) crossings before → after |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


def change(before: int, after: int) -> str:
    cut = 100.0 * (before - after) / before if before else 0.0
    return f"{before:,} → {after:,} (−{cut:.0f}%)"


if __name__ == "__main__":
    main()
