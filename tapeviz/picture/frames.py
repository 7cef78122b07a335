"""Frames around open groups: where an opened block's boxes are, and its name on it.

A closed group is one box; once opened (the explorer's click, ``expand=``), its boxes
spread among the others and nothing says they belonged together. A frame is the
rectangle around the boxes (and their gradient texts) of one open group, outer groups
around inner ones, titled with the group's short name, so a reader sees the block she
opened and can click its frame to close it again.

Frames are plain records in data units, like boxes; the SVG writer draws them behind
the edges (``g#group-<group id>``). Nested frames get wider margins, innermost first,
so the lines of a group and of its parent never coincide; above the boxes, each
frame leaves a band for its name over those of the frames inside it. A file's layout keeps
each group's boxes in a rectangle of their own (group_bands.py, with :func:`frame_pad`'s
margins); the explorer's places boxes by the flow alone, so a group's boxes may sit among
others' (a wrapped row, a bias beside another layer's input): then one rectangle would
claim boxes that are not in it, and the frame is drawn in pieces around runs of its own
boxes instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import DEFAULT, say
from . import fonts
from .group_bands import FramePad
from .marks import Label
from .style import BOX_H, CAPTION_H
from .visibility import Shown

__all__ = [
    "WHOLE",
    "GroupFrame",
    "group_frames",
    "name_label",
    "open_spans",
    "frame_of",
    "open_groups",
    "open_path",
    "frame_pad",
    "frame_reach",
]

PAD_X, PAD_TOP, PAD_BOTTOM = 0.05, 0.11, CAPTION_H + 0.03  # data units around the innermost frame
NEST_X, NEST_Y = 0.035, 0.04  # more margin per open group inside
NAME_X, NAME_Y = 4.0, 2.0  # points between a frame's corner and its name
#: A scene's ``frames`` value that draws only the frames that are one rectangle (a file's
#: picture); True draws the others in pieces too (the explorer's, where a click closes them).
WHOLE = "whole"


@dataclass(frozen=True)
class GroupFrame:
    """An open group's frame: lower-left corner and size in data units, its id and name."""

    gid: str  # the group's id (full path in the tree)
    name: str  # its own short name, written on the frame
    x: float
    y: float
    w: float
    h: float
    level: int  # 1 for the outermost groups
    inner: int = 0  # open groups nested inside it (on its deepest path)
    parts: tuple = ()  # (x, y, w, h) pieces when one rectangle would hold boxes of other groups


def _open_path(display: Shown, node) -> tuple[str, ...]:
    """The open groups holding a drawn box, outermost first."""
    tree = display.tree
    d = display.nx.nodes[node]
    if d.get("kind") == "layer" and d.get("layer") in tree:  # a closed group's box
        gid = d["layer"]
        return tuple(reversed(tree.ancestors(gid)))
    if d.get("kind") == "layer" and d.get("alike"):  # a run of alike groups: where its first is
        run = next((r for r in display.runs.values() if r.id == d["layer"]), None)
        if run is not None:
            return tuple(reversed(tree.ancestors(run.groups[0])))
    path = tree.paths.get(node, ())
    out = []
    for gid in path:
        if gid in display.collapsed:
            break
        out.append(gid)
    return tuple(out)


def open_path(display: Shown, node) -> tuple[str, ...]:
    """The open groups holding a drawn box, outermost first (their frames are drawn around it)."""
    return _open_path(display, node)


def frame_of(display: Shown, node, unframed=frozenset()) -> str | None:
    """The innermost open group holding a drawn box (the frame it is drawn in), or None;
    groups ``unframed`` have no frame drawn."""
    return next((gid for gid in reversed(_open_path(display, node)) if gid not in unframed), None)


def open_groups(display: Shown) -> set[str]:
    """The open groups holding a drawn box: each would be a frame."""
    return {gid for n in display.nx for gid in _open_path(display, n)}


def open_spans(display: Shown, pos, *, layer_gap: float = 1.0, unframed=frozenset()) -> list[tuple[int, int]]:
    """(first, last) column of each open group's boxes in a layered layout ``pos``: where
    rows may not cut (see :func:`tapeviz.picture.rows.row_starts`); groups ``unframed`` have no frame."""
    cols: dict[str, list[int]] = {}
    for n, (x, _) in pos.items():
        if n in display.nx:
            for gid in _open_path(display, n):
                cols.setdefault(gid, []).append(int(round(x / layer_gap)))
    return [(min(c), max(c)) for gid, c in cols.items() if gid not in unframed]


def name_label(f: GroupFrame, scene) -> Label:
    """A frame's name, inside its top corner (of its first piece, the top row's): the
    innermost frames name themselves top left, the ones holding them top right (apart)."""
    th = scene.theme
    x, y, w, h = f.parts[0] if f.parts else (f.x, f.y, f.w, f.h)
    dx, dy = NAME_X / scene.unit[0], NAME_Y / scene.unit[1]
    left = f.inner == 0
    return Label(
        x + dx if left else x + w - dx,
        y + h - dy,
        f.name,
        th.size("frame"),
        color=th.muted,
        ha="left" if left else "right",
        va="top",
    )


def _name_band(scene) -> float:
    """The band above a frame's boxes its name is written in (data units), per frame inside."""
    size = scene.theme.size("frame")
    return max(PAD_TOP, (sum(fonts.line_box(size)[:2]) + NAME_Y + 1.0) / scene.unit[1])


def frame_pad(scene) -> FramePad:
    """How far a scene's frames reach beyond their boxes: the room the layout keeps around
    each open group's boxes (:func:`tapeviz.picture.layout.layered_routes`)."""
    return FramePad(top=_name_band(scene), bottom=PAD_BOTTOM, nest=NEST_Y, box=BOX_H, caption=CAPTION_H)


def frame_reach(scene, nodes) -> dict:
    """How far the frames around each of ``nodes`` can reach beyond its box and gradient
    text, (above, below) in data units: a box in ``L`` open groups has up to ``L`` name
    bands above it and the outermost frame's bottom margin under it (:func:`group_frames`).
    Rows keep this room (rows.py), so a frame and its name stay inside their row."""
    pad_top = _name_band(scene)
    out = {}
    for n in nodes:
        depth = len(_open_path(scene.display, n))
        if depth:
            out[n] = (depth * pad_top, PAD_BOTTOM - CAPTION_H + (depth - 1) * NEST_Y)
    return out


def group_frames(scene) -> list[GroupFrame]:
    """The frames of a scene's open groups, outermost first (so inner ones are drawn on top).
    Above its boxes, a frame leaves room for its name (:func:`name_label`). A scene whose
    ``show_frames`` is :data:`WHOLE` gets only the frames that are one rectangle."""
    display: Shown = scene.display
    whole_only = getattr(scene, "show_frames", True) == WHOLE
    tree = getattr(display, "tree", None)
    if tree is None or not tree.groups:
        return []
    pad_top = _name_band(scene)
    bounds: dict[str, list[float]] = {}
    inner: dict[str, int] = {}  # open groups nested inside, on the deepest path
    members: dict[str, list] = {}
    paths = {}
    for n, b in scene.boxes.items():
        if n not in display.nx or not b.visible:
            continue
        path = paths[n] = _open_path(display, n)
        for i, gid in enumerate(path):
            members.setdefault(gid, []).append(b)
            x0, y0, x1, y1 = b.x, b.y, b.x + b.w, b.y + b.h
            got = bounds.get(gid)
            if got is None:
                bounds[gid] = [x0, y0, x1, y1]
            else:
                got[0], got[1], got[2], got[3] = min(got[0], x0), min(got[1], y0), max(got[2], x1), max(got[3], y1)
            inner[gid] = max(inner.get(gid, 0), len(path) - 1 - i)
    out = []
    for grp in tree.walk():  # parents first
        box = bounds.get(grp.id)
        if box is None:
            continue
        k = inner[grp.id]
        x0 = box[0] - PAD_X - k * NEST_X
        x1 = box[2] + PAD_X + k * NEST_X
        y0 = box[1] - PAD_BOTTOM - k * NEST_Y
        y1 = box[3] + (k + 1) * pad_top  # a band for its name above each frame inside
        strangers = any(
            grp.id not in paths[n] and x0 < b.x + b.w / 2 < x1 and y0 < b.y + b.h / 2 < y1
            for n, b in scene.boxes.items()
            if n in paths
        )
        if whole_only and not strangers:  # in a file, a box reaching into the frame (its name's band) is one too
            strangers = any(
                grp.id not in paths[n] and x0 < b.x + b.w and b.x < x1 and y0 < b.y + b.h and b.y < y1
                for n, b in scene.boxes.items()
                if n in paths
            )
        if strangers and whole_only:
            continue  # pieces of frames, each like a frame of its own, would mislead in a file
        parts = _pieces(members[grp.id], k, pad_top) if strangers else ()
        name = grp.name
        stepped = getattr(display, "stepped", None)
        if stepped is not None and stepped.gid == grp.id:  # a loop's model opened at one step: which
            name = say("ui.group.step_frame", getattr(scene, "lang", DEFAULT), name=name, k=stepped.step)
        out.append(GroupFrame(grp.id, name, x0, y0, x1 - x0, y1 - y0, grp.level, k, parts))
    return out


def _pieces(boxes: list, k: int, pad_top: float) -> tuple:
    """Rectangles around runs of boxes side by side in one row (next columns), padded; the
    first (top left) is the one :func:`name_label` writes the name in."""
    runs: list[list[float]] = []
    for b in sorted(boxes, key=lambda b: (-b.y, b.x)):
        last = runs[-1] if runs else None
        if last is not None and abs(last[1] - b.y) < 1e-6 and b.x - last[2] <= 1.0 - b.w + 1e-6:
            last[2] = b.x + b.w
        else:
            runs.append([b.x, b.y, b.x + b.w, b.y + b.h])
    px, pt, pb = PAD_X + k * NEST_X, pad_top + k * NEST_Y, PAD_BOTTOM + k * NEST_Y
    named = (k + 1) * pad_top  # the first piece holds the name, in a band above the frames inside
    return tuple(
        (x0 - px, y0 - pb, x1 - x0 + 2 * px, y1 - y0 + (named if i == 0 else pt) + pb)
        for i, (x0, y0, x1, y1) in enumerate(runs)
    )
