"""The placement checks: no label overlaps another label, covers a box it does not belong
to, or leaves the canvas, measured on a scene's geometry with the text metrics the SVG writer
uses. picture/test_placement.py runs them over many pictures; the gallery, theme, state and
canvas tests run them on theirs."""

from tapeviz.picture.scene import Scene

EPS = 0.5  # pixels: touching is not overlapping


def _overlap(r, s) -> bool:
    return min(r[2], s[2]) - max(r[0], s[0]) > EPS and min(r[3], s[3]) - max(r[1], s[1]) > EPS


def _inside(r, box) -> bool:
    return r[0] >= box[0] - EPS and r[1] >= box[1] - EPS and r[2] <= box[2] + EPS and r[3] <= box[3] + EPS


def problems(scene: Scene) -> dict[str, list]:
    """Every label/label overlap, label/box overlap and thing outside the canvas."""
    W, H = scene.canvas
    placed = scene.placed()
    boxes = dict(placed["boxes"])
    texts = placed["texts"]
    out = {"label/label": [], "label/box": [], "outside": []}
    order = sorted(range(len(texts)), key=lambda i: texts[i][2][0])
    for a, i in enumerate(order):  # sweep along x: only neighbours that start before i ends can overlap it
        ri = texts[i][2]
        for j in order[a + 1 :]:
            rj = texts[j][2]
            if rj[0] >= ri[2] - EPS:
                break
            if _overlap(ri, rj):
                out["label/label"].append((texts[i][0], texts[j][0]))
    box_order = sorted(boxes.items(), key=lambda kv: kv[1][0])
    for what, owner, r in texts:
        if owner is not None and not _inside(r, boxes[owner]):
            out["label/box"].append((what, "sticks out of its box"))
        for n, b in box_order:
            if b[0] >= r[2]:
                break
            if n != owner and _overlap(r, b):
                out["label/box"].append((what, n))
    canvas = (0.0, 0.0, W, H)
    for what, _, r in texts:
        if not _inside(r, canvas):
            out["outside"].append(what)
    for n, b in boxes.items():
        if not _inside(b, canvas):
            out["outside"].append(f"box {n}")
    # an open group's frame (the explorer's canvas) holds its boxes, and stays off the
    # title, caption and legend
    chrome = [(what, r) for what, owner, r in texts if what in ("title", "caption") or what.startswith("legend")]
    # ... and its line runs through no text drawn without a background (gradients under
    # boxes, frames' names): such a text is inside the frame or clear of it
    bare = [(what, r) for what, owner, r in texts if what.startswith(("gradient", "frame name"))]
    out["frame/chrome"] = []
    for gid, f in placed.get("frames", ()):
        if not _inside(f, canvas):
            out["outside"].append(f"frame {gid}")
        out["frame/chrome"] += [(gid, what) for what, r in chrome if _overlap(f, r)]
        out["frame/chrome"] += [(gid, what) for what, r in bare if _overlap(f, r) and not _inside(r, f)]
    for e, a in scene.arrows.items():
        for x, y in a.path.vertices if a.path is not None else (a.start, a.end):
            px, py = scene.data_to_px(x, y)
            if not (-EPS <= px <= W + EPS and -EPS <= py <= H + EPS):
                out["outside"].append(f"edge {e}")
                break
    return out


def check(scene: Scene, what: str) -> None:
    """Count at every step worth looking at (start, middle, finished) and assert all are 0."""
    steps = [None] if scene.flow is None else sorted({0, scene.flow.last_step // 2, scene.flow.last_step})
    for k in steps:
        if k is not None:
            scene.set_step(k)
        found = problems(scene)
        counts = {kind: len(v) for kind, v in found.items()}
        assert counts == {"label/label": 0, "label/box": 0, "outside": 0, "frame/chrome": 0}, (
            what,
            k,
            {kind: v[:4] for kind, v in found.items()},
        )
