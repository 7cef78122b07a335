"""What a screen reader and a keyboard get from a picture: each box's role and spoken name,
and the order the keys walk the boxes in, as data the writers copy onto the elements.

The order is the backward pass's: the boxes in the order the flow's steps reach them (the
target first, then what its gradient arrives at next), each open group's frame just before
its first box (Enter on a frame closes the group), then the boxes no step reaches (a
``stop_gradient``'s input, a constant), last drawn first. The front end only walks it.

A box's name is a sentence from the message catalogue, written from the scene's own texts
(its full name, its op type, its value, and the gradient its line shows at this step, so a
quiz's hidden gradient stays "?" here too); nothing is read back from drawn text. A group's
box is a button, and a button's name starts with the words drawn on it (WCAG 2.5.3, "label
in name": a voice-control user says what they see).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..messages import say
from .frames import GroupFrame, open_path

__all__ = ["Access", "box_order", "accessible"]

#: The gradient lines' prefix: read as the word "gradient" in the sentence instead.
_GRAD = "∂ "


@dataclass(frozen=True, slots=True)
class Access:
    """One focusable element's part for assistive technology: its ARIA ``role``, its
    spoken ``label``, where the keys reach it (``order``, 0 first) and, for a group,
    whether it is open (``expanded``; None for a box that is not a group) and its id
    (``group``: the frame that replaces its box when it opens, and back)."""

    role: str
    label: str
    order: int
    expanded: bool | None = None
    group: str = ""


def box_order(scene, frames: list[GroupFrame]) -> list[str]:
    """Element ids (``node-…``, ``group-…``) in the order the keys walk them: the boxes as
    the flow's steps reach them, each frame before its first box, then the boxes no step
    reaches, last drawn first. Boxes not drawn are left out."""
    display = scene.display
    shown = [n for n, b in scene.boxes.items() if b.visible]
    rank: dict[Any, int] = {}
    fl = scene.flow
    if fl is not None:
        for st in fl.steps:
            n = display.of.get(st.node, st.node)
            if n in scene.boxes and n not in rank:
                rank[n] = len(rank)
    rest = [n for n in reversed(shown) if n not in rank]
    boxes = sorted((n for n in shown if n in rank), key=rank.__getitem__) + rest
    framed = {f.gid for f in frames}
    out: list[str] = []
    placed: set[str] = set()
    for n in boxes:
        for gid in open_path(display, n) if n in display.nx else ():
            if gid in framed and gid not in placed:
                placed.add(gid)
                out.append(f"group-{gid}")
        out.append(scene.boxes[n].gid)
    out += [f"group-{f.gid}" for f in frames if f.gid not in placed]
    return out


def _cached_order(scene, frames: list[GroupFrame]) -> dict[str, int]:
    """:func:`box_order` as {id: place}, kept on the scene: its boxes and steps do not change
    with the step shown (a page of ResNet50's 1,348 steps asked 1,348 times)."""
    key = tuple(f.gid for f in frames)
    kept = scene.__dict__.setdefault("_key_order", {})
    got = kept.get(key)
    if got is None:
        got = kept[key] = {k: i for i, k in enumerate(box_order(scene, frames))}
    return got


def _group_of(display, d: dict) -> str:
    """The group a closed group's box opens (for a box of alike blocks, the first of them)."""
    runs = {r.id: r for r in display.runs.values()}
    layer = d.get("layer")
    if layer in runs:
        return str(runs[layer].groups[0])
    return str(layer) if layer is not None and layer in display.tree else ""


def _grad_words(text: str, lang: str) -> str:
    """A box's gradient line as words: "∂ 4.0" -> "4.0"; no line yet -> "not arrived yet"."""
    text = text.strip()
    if not text:
        return say("a11y.no_grad", lang)
    return text[len(_GRAD) :] if text.startswith(_GRAD) else text


def accessible(scene, frames: list[GroupFrame]) -> dict[str, Access]:
    """Role, spoken name and key order of every drawn box and frame, by element id, for the
    scene as it stands at its step. A closed group's box is a button (Enter opens it), an
    open group's frame a button that closes it; any other box an image with its name."""
    lang = scene.lang
    display = scene.display
    order = _cached_order(scene, frames)
    out: dict[str, Access] = {}
    for n, b in scene.boxes.items():
        if b.gid not in order:
            continue
        title, sub, value = (t.text for t in scene.labels[n][:3])
        name = b.tip or title.replace("\n", " ")
        d = display.nx.nodes[n] if n in display.nx else {}
        grad = _grad_words(scene.grads[n].text, lang)
        if d.get("kind") == "layer":
            # a button is named by its drawn words first (what a voice-control user says to press it)
            drawn = " ".join(t for t in (title.replace("\n", " "), sub, value, scene.grads[n].text) if t)
            label = say("a11y.group", lang, text=drawn, name="" if name == title.replace("\n", " ") else name)
            out[b.gid] = Access("button", label, order[b.gid], expanded=False, group=_group_of(display, d))
        else:
            label = say("a11y.box", lang, name=name, kind=sub, value=value, grad=grad)
            out[b.gid] = Access("img", label, order[b.gid])
    for f in frames:
        k = f"group-{f.gid}"
        out[k] = Access("button", say("a11y.frame", lang, name=f.name), order[k], expanded=True, group=f.gid)
    return out
