"""ResNet50's default picture, cold: from a recorded training step to the SVG document.

Goal (issue 20): <= 1 s. Each round runs in a fresh Python process (nothing cached: no
flow, no font tables, no layout), which records one training step of ResNet50 (32x32x3
inputs, batch 2, weights=None, as tests/support/gallery_models.py builds it; not timed), then
times the three stages of ``tv.save(tape, loss, "x.svg")``:

- flow: ``tv.flow`` (TF's gradient functions replayed over the recorded ops), with Python's
  cyclic collector paused as ``tv.view`` pauses it;
- picture: ``tv.view`` (what is shown, the layout, every record placed; the flow is kept);
- svg: ``to_svg`` (the writer);

and, for scale, one ``tape.gradient`` of the same loss afterwards (TF's own backward pass,
its kernels warm). The goal is on the render (picture + svg): the flow is the backward pass
replayed op by op, which any gradient picture needs and which the explorer reuses.

``--baseline DIR`` runs the same rounds against another copy of the package (e.g. the
commit before issue 20: ``git worktree add /tmp/old <commit>``), interleaved with the
current one, so the two are measured side by side on the same machine load.

Run: .venv/bin/python bench/bench_gallery.py [--rounds 5] [--baseline /tmp/old]
Prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One round, in a fresh process: PYTHONPATH picks the package, tests/support/ gives the model.
ROUND = r"""
import json, os, sys, time
import tapeviz
assert tapeviz.__file__.startswith({package!r}), tapeviz.__file__
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
sys.path.insert(0, {tests!r})
import gallery_models
import tapeviz as tv
from tapeviz.gcpause import gc_paused
try:
    from tapeviz.output.svg import to_svg
except ImportError:  # a baseline from before the stage folders
    from tapeviz.svg import to_svg

step = gallery_models.GALLERY[{model!r}]()
t0 = time.perf_counter()
with gc_paused():  # as tv.view / tv.save run it (else a cyclic GC pass over TF's heap lands in it)
    tv.flow(step.tape, step.loss)
t1 = time.perf_counter()
view = tv.view(step.tape, step.loss)
t2 = time.perf_counter()
svg = to_svg(view)
t3 = time.perf_counter()
step.tape.gradient(step.loss, step.variables)  # for scale: TF's own backward pass, kernels warm
t4 = time.perf_counter()
sc = view.scene
print(json.dumps(dict(flow=t1 - t0, picture=t2 - t1, svg=t3 - t2, gradient=t4 - t3, boxes=len(sc.boxes),
                      width=sc.canvas[0], height=sc.canvas[1], bytes=len(svg))))
"""


def one_round(package_dir: Path, model: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(package_dir), TF_CPP_MIN_LOG_LEVEL="3")
    code = ROUND.format(tests=str(ROOT / "tests" / "support"), model=model, package=str(package_dir))
    # cwd: not a checkout (python -c puts the working directory first on sys.path)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="ResNet50")
    ap.add_argument("--baseline", default=None, help="another checkout's root (its tapeviz/ is compared)")
    args = ap.parse_args()
    runs = {"this branch": Path(ROOT)}
    if args.baseline:
        runs["baseline"] = Path(args.baseline).resolve()
    results: dict[str, list[dict]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, root in runs.items():  # interleaved: both see the same machine load
            results[name].append(one_round(root, args.model))
    print(f"{args.model}, default SVG from a recorded step, fresh process per round; medians of {args.rounds}")
    print(
        "| package | boxes | canvas px | flow s | picture s | svg s | **render s** (picture + svg) | total s "
        "| tape.gradient s | SVG KiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, rs in results.items():

        def med(k: str, rs: list[dict] = rs) -> float:
            return statistics.median(r[k] for r in rs)

        render = statistics.median(r["picture"] + r["svg"] for r in rs)
        total = statistics.median(r["flow"] + r["picture"] + r["svg"] for r in rs)
        print(
            f"| {name} | {rs[0]['boxes']} | {rs[0]['width']:.0f} × {rs[0]['height']:.0f} | {med('flow'):.3f} | "
            f"{med('picture'):.3f} | {med('svg'):.3f} | **{render:.3f}** | {total:.3f} | {med('gradient'):.3f} | "
            f"{rs[0]['bytes'] / 1024:.0f} |"
        )


if __name__ == "__main__":
    main()
