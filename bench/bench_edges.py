"""How long a default picture's edges are and how often they cross: the gallery's models
and the issue's pictures (tests/support/gallery_models.py), one row each.

Run: python bench/bench_edges.py [--json out.json] [--compare before.json after.json]

For each picture: its boxes, its canvas (px), the total length of its drawn edges (px,
along each edge's path: curves measured on their control polygon, which bounds them from
above), the length of its longest edge, and its edge crossings (pairs of edges of
different sources and targets whose paths cross; the segments of a path are its
vertices). ``--json`` writes the rows; ``--compare a b`` prints two runs side by side
(e.g. an untouched main's and a branch's: run this file with each checkout first on
PYTHONPATH, the same tests/support/gallery_models.py for both).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))  # gallery_models
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

MODELS = [
    "ResNet50",
    "MobileNetV2",
    "DenseNet121",
    "EfficientNetB0",
    "Transformer",
    "U-Net",
    "seq2seq LSTM",
    "GAN",
    "VAE",
    "WGAN-GP",
    "GPT-48",
    "actor-critic",
    "actor-critic, expand=ac",
    "actor-critic, expand=ac, repeat_step=3",
]

#: Pictures drawn with options: name -> (model, options).
OPENED = {
    "actor-critic, expand=ac": ("actor-critic", {"expand": ("ac",)}),
    "actor-critic, expand=ac, repeat_step=3": ("actor-critic", {"expand": ("ac",), "repeat_step": 3}),
}


def polylines(scene) -> list[tuple[tuple, np.ndarray]]:
    """Each drawn edge as ((u, v), an array of its path's points in canvas pixels)."""
    out = []
    for (u, v, _k), a in scene.arrows.items():
        if not a.visible:
            continue
        verts = a.path.vertices if a.path is not None else (a.start, a.end)
        out.append(((u, v), np.asarray([scene.data_to_px(x, y) for x, y in verts], float)))
    return out


def _cross(p, q, r, s) -> bool:
    """Whether segments pq and rs cross at a point inside both (touching ends do not count)."""

    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2, d3, d4 = orient(r, s, p), orient(r, s, q), orient(p, q, r), orient(p, q, s)
    return d1 * d2 < -1e-9 and d3 * d4 < -1e-9


def crossings(lines) -> int:
    """Pairs of edges (not sharing a source or a target) whose paths cross."""
    boxes = []
    for _, pts in lines:
        boxes.append((pts[:, 0].min(), pts[:, 0].max(), pts[:, 1].min(), pts[:, 1].max()))
    n = 0
    for i in range(len(lines)):
        (ui, vi), a = lines[i]
        for j in range(i + 1, len(lines)):
            (uj, vj), b = lines[j]
            if ui == uj or vi == vj:
                continue  # a bundle from one source (or into one target) shares its way
            bi, bj = boxes[i], boxes[j]
            if bi[1] < bj[0] or bj[1] < bi[0] or bi[3] < bj[2] or bj[3] < bi[2]:
                continue
            if any(_cross(a[k], a[k + 1], b[m], b[m + 1]) for k in range(len(a) - 1) for m in range(len(b) - 1)):
                n += 1
    return n


def measure(name: str) -> dict:
    from gallery_models import GALLERY, MORE

    import tapeviz as tv
    from tapeviz.picture.scene import Scene

    model, options = OPENED.get(name, (name, {}))
    step = {**GALLERY, **MORE}[model]()
    try:
        scene = Scene(step.tape.graph, tv.flow(step.tape, step.loss), options=tv.Options(**options))
    except TypeError:  # a checkout from before the option: the picture it draws without it
        options = {k: v for k, v in options.items() if k != "repeat_step"}
        scene = Scene(step.tape.graph, tv.flow(step.tape, step.loss), options=tv.Options(**options))
    lines = polylines(scene)
    lengths = [float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()) for _, pts in lines]
    return {
        "name": name,
        "boxes": len(scene.boxes),
        "canvas": [round(scene.canvas[0]), round(scene.canvas[1])],
        "edges": len(lines),
        "length": round(sum(lengths)),
        "longest": round(max(lengths, default=0.0)),
        "crossings": crossings(lines),
    }


def compare(before: list[dict], after: list[dict]) -> None:
    old = {r["name"]: r for r in before}
    print("| picture | boxes | canvas (px) | edge length (px) | longest edge | crossings |")
    print("|---|---|---|---|---|---|")
    for r in after:
        o = old.get(r["name"])
        if o is None:
            continue

        def pair(key, o=o, r=r):
            return f"{o[key]} → {r[key]}"

        canvas = f"{o['canvas'][0]}×{o['canvas'][1]} → {r['canvas'][0]}×{r['canvas'][1]}"
        ratio = r["length"] / o["length"] if o["length"] else float("nan")
        print(
            f"| {r['name']} | {pair('boxes')} | {canvas} | {pair('length')} ({ratio:.2f}×) "
            f"| {pair('longest')} | {pair('crossings')} |"
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print two runs side by side")
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args(argv)
    if args.compare:
        compare(*(json.loads(Path(p).read_text()) for p in args.compare))
        return
    rows = []
    for name in args.models:
        row = measure(name)
        rows.append(row)
        print(row, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
