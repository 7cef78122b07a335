"""Export: PNG, SVG and animated GIF files of a view, with no system binaries.

Every file is written to a temporary name in the destination folder and renamed
into place when complete: Ctrl+C (or any error) part way leaves no half-written
file behind, and an older file of that name stays as it was.  Saves that take
longer than :data:`PROGRESS_AFTER` seconds show a progress bar (``tqdm.auto``:
a text bar in a terminal, a widget in a notebook).

PNG and GIF are pixels of the SVG that :func:`tapeviz.output.svg.to_svg` writes
(:mod:`tapeviz.output.raster`), so they look exactly like it; matplotlib draws them only
for a view whose artists exist (``view.drawn``: someone may have restyled them)
or when asked with ``engine="matplotlib"``.

A GIF has one frame per step of the picture: steps whose active node is the same
box (a collapsed layer's ops) are one frame, and at most ``max_frames`` frames
are made (evenly merging steps beyond that, which each merged frame says).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import rc_context

from .svg import draws_whole_figure, to_svg
from .view import GraphView

__all__ = ["FORMATS", "ENGINES", "FRAME_BUDGET", "Frame", "plan_frames", "check_path", "save_view"]

FORMATS = (".png", ".svg", ".gif")
ENGINES = ("auto", "tapeviz", "matplotlib")
FRAME_BUDGET = 150  # frames in a GIF, by default: steps beyond that are merged
PROGRESS_AFTER = 2.0  # seconds: a save that takes longer shows a progress bar
LAST_FRAME_HOLD = 3.0  # the finished pass stays this many frames' time (at least 2 s)


def check_path(path: str | os.PathLike, formats: tuple[str, ...] = FORMATS) -> Path:
    """Refuse unsupported suffixes and unwritable folders before any drawing work."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in formats:
        names = [f for f in formats if f != ".htm"]
        allowed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        raise ValueError(f"Cannot export to {p.name!r}: use a file name ending in {allowed}.")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"Cannot write {p}: the folder {folder} does not exist. Create it first.")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"Cannot write {p}: the folder {folder} is not writable. Choose another path.")
    return p


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True)
class Frame:
    """One frame of an animation: it shows ``step`` (what steps 0..step computed) and
    stands for steps ``first``..``step``."""

    step: int
    first: int
    merged: bool = False  # the frame budget merged several of the picture's steps into it

    @property
    def note(self) -> str | None:
        """What the frame says about itself when it stands for several of the picture's steps."""
        return f"steps {self.first}–{self.step} shown as one frame" if self.merged else None


def plan_frames(view: GraphView, *, max_frames: int | None = FRAME_BUDGET, every_step: bool = False) -> list[Frame]:
    """The frames of the view's backward pass, as the picture shows it.

    Step 0 (the seeded target) is always a frame of its own.  After it, consecutive
    steps whose node is drawn as the same box (``view.display.of``: a collapsed
    layer's ops) make one frame, which shows the last of them; ``every_step`` gives
    each step a frame.  More than ``max_frames`` frames are merged evenly into
    ``max_frames`` (frame 0 and the finished pass always stay), and a merged frame
    says which steps it stands for.
    """
    fl = view.flow
    if fl is None or not fl.steps:
        return [Frame(view.step, view.step)]
    last = fl.last_step
    runs: list[tuple[int, int]]  # (first step, last step) of each frame after frame 0
    if every_step:
        runs = [(k, k) for k in range(1, last + 1)]
    else:
        of = view.display.of
        growing: list[list[int]] = []
        box = object()
        for k in range(1, last + 1):
            here = of.get(fl.steps[k].node)
            if growing and (here == box or here is None):  # a step drawn nowhere joins the run before it
                growing[-1][1] = k
            else:
                growing.append([k, k])
                box = here
        runs = [(a, b) for a, b in growing]
    frames = [Frame(0, 0)] + [Frame(b, a) for a, b in runs]
    if max_frames is not None and len(frames) > max(max_frames, 2):
        if max_frames < 2:
            raise ValueError(f"max_frames must be at least 2 (the start and the finished pass), not {max_frames}.")
        groups = np.array_split(np.arange(len(runs)), max_frames - 1)
        frames = [Frame(0, 0)] + [Frame(runs[g[-1]][1], runs[g[0]][0], merged=len(g) > 1) for g in groups]
    return frames


# --------------------------------------------------------------------------- progress, safe writes


@contextlib.contextmanager
def progress_bar(total: int, desc: str, enabled: bool = True, unit: str = "frame") -> Iterator:
    """A tqdm bar (notebook-aware) that appears only once the work has taken
    :data:`PROGRESS_AFTER` seconds; ``update(n)`` it as work is done."""
    from tqdm.auto import tqdm

    bar = tqdm(
        total=total, desc=desc, unit=unit, delay=PROGRESS_AFTER, disable=not enabled, leave=True, dynamic_ncols=True
    )
    try:
        yield bar
    finally:
        bar.close()


@contextlib.contextmanager
def written_in_place(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` to write; renamed to ``path`` when the block
    succeeds, deleted when it raises (Ctrl+C included): never a half-written file."""
    tmp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.part{path.suffix}")  # the suffix names the format
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


# --------------------------------------------------------------------------- saving


def save_view(
    view: GraphView,
    path: str | os.PathLike,
    *,
    dpi: int = 100,
    fps: float = 1.5,
    engine: str = "auto",
    every_step: bool = False,
    max_frames: int | None = FRAME_BUDGET,
    progress: bool = True,
    chain: bool = False,
) -> Path:
    """Write the view: a still picture (.png/.svg) or the backward pass animated (.gif).

    ``engine`` picks who draws: "tapeviz" (the SVG of :func:`tapeviz.output.svg.to_svg`,
    rasterised by resvg for PNG and GIF: a 1,000-op graph in a fraction of a second),
    "matplotlib" (``savefig`` and ``FuncAnimation``: draws anything else the figure
    holds, ~3 ms per label) or "auto": tapeviz's unless the view's matplotlib
    artists exist (someone may have restyled them) — for SVG, unless its figure
    holds other things too.  Pixels are at ``dpi``, lower for pictures that would
    pass :data:`tapeviz.output.raster.MAX_PNG_PIXELS` (PNG) or
    :data:`tapeviz.output.raster.MAX_GIF_PIXELS` (each GIF frame).

    A GIF shows the steps as the picture does (a collapsed layer's ops are one
    frame), at most ``max_frames`` frames (None: no limit) unless ``every_step``,
    at ``fps`` frames a second, holding the finished pass longer.  ``progress``:
    show a bar when the save takes more than a couple of seconds.  ``chain``: each GIF
    frame carries its step's chain rule in a strip under the picture
    (:mod:`tapeviz.output.chain_caption`; ``tv.save(..., caption="chain")``).
    """
    if engine not in ENGINES:
        raise ValueError(f"Unknown engine {engine!r}: use one of {', '.join(ENGINES)}.")
    p = check_path(path)
    suffix = p.suffix.lower()
    if suffix == ".svg":
        ours = engine == "tapeviz" or (engine == "auto" and draws_whole_figure(view))
    else:
        ours = engine == "tapeviz" or (engine == "auto" and not view.drawn)
    with written_in_place(p) as tmp:
        if suffix == ".gif":
            frames = plan_frames(view, max_frames=None if every_step else max_frames, every_step=every_step)
            writer = _gif_tapeviz if ours else _gif_matplotlib
            captions = _chain_captions(view, frames) if chain else None
            writer(view, tmp, frames, dpi=dpi, fps=fps, progress=progress, label=f"writing {p.name}", captions=captions)
        else:
            with progress_bar(1, f"writing {p.name}", progress, unit="part") as bar:
                if suffix == ".svg":
                    _svg(view, tmp, ours, dpi)
                elif ours:
                    from .raster import png_bytes

                    def drawn(done: int, total: int) -> None:  # a big picture is drawn in strips
                        bar.total = total
                        bar.update(done - bar.n)

                    tmp.write_bytes(png_bytes(to_svg(view), dpi=dpi, on_part=drawn))
                else:
                    from . import raster

                    view.figure.savefig(tmp, format="png", dpi=_mpl_dpi(view, dpi, raster.MAX_PNG_PIXELS))
                bar.update(bar.total - bar.n)
    return p


def _svg(view: GraphView, tmp: Path, ours: bool, dpi: float) -> None:
    if ours:
        tmp.write_bytes(to_svg(view).encode("utf-8"))
    else:
        # Keep text as <text> elements: searchable, selectable, and far smaller than glyph paths.
        with rc_context({"svg.fonttype": "none"}):
            view.figure.savefig(tmp, format="svg", dpi=dpi)


def _mpl_dpi(view: GraphView, dpi: float, max_pixels: int) -> float:
    w, h = view.figure.get_size_inches()
    return min(float(dpi), (max_pixels / max(w * h, 1e-9)) ** 0.5)


def _hold(fps: float) -> float:
    return max(2.0, LAST_FRAME_HOLD / fps)


def _chain_captions(view: GraphView, frames: list[Frame]) -> list[list[str]]:
    """Each frame's caption: the chain rule of the step it shows (TF's numbers)."""
    from ..gradients.chain_rule import ChainRule
    from .chain_caption import chain_lines

    if view.flow is None:
        raise ValueError(
            'caption="chain" needs a target: the chain rule is the backward pass\'s; give tv.save a target.'
        )
    rule = ChainRule(view.flow, view.lang)
    return [chain_lines(view, f.step, rule) for f in frames]


def _gif_tapeviz(
    view: GraphView,
    tmp: Path,
    frames: list[Frame],
    *,
    dpi: float,
    fps: float,
    progress: bool,
    label: str,
    captions: list[list[str]] | None = None,
) -> None:
    """Frames rasterised from the view's SVG, redrawn only where they change (see
    :class:`tapeviz.output.raster.FrameRenderer`), quantised to one palette and streamed
    into the file (see :mod:`tapeviz.output.gif`)."""
    from .gif import GifStream, Palette
    from .raster import FrameRenderer, caption_height, caption_lines, caption_strip, text_strip

    before = view.step
    renderer = FrameRenderer(dpi=dpi)

    def draw(f: Frame):
        view.set_step(f.step)
        return renderer.render(to_svg(view))

    try:
        with progress_bar(len(frames) + 1, label, progress) as bar, open(tmp, "wb") as fp:
            first = draw(frames[0])
            # one palette from the first and the last frames: every colour the animation uses
            ends = [_on_white(first[0]).copy()]
            if len(frames) > 1:
                view.set_step(frames[-1].step)
                ends.append(_on_white(FrameRenderer(dpi=dpi).render(to_svg(view))[0]))
            palette = Palette.from_frames(*ends)
            bar.update(1)
            w, h = renderer.size
            band = _note_height(renderer.scale) if any(f.note for f in frames) else 0
            # the captions' strip under the picture: as tall as the longest caption, wrapped to its width
            wrapped = [caption_lines(c, w, renderer.scale) for c in captions] if captions else []
            below = caption_height(max(map(len, wrapped)), renderer.scale) if wrapped else 0
            stream = GifStream(fp, (w, h + band + below), palette)
            indices = np.zeros((h + band + below, w), np.uint8)
            strips: dict[str, np.ndarray] = {}
            shown = None
            for i, f in enumerate(frames):
                pixels, rects = first if i == 0 else draw(f)
                for x0, y0, x1, y1 in rects:
                    indices[y0 + band : y1 + band, x0:x1] = palette.indices(_on_white(pixels[y0:y1, x0:x1]))
                rects = [(x0, y0 + band, x1, y1 + band) for x0, y0, x1, y1 in rects]
                if band and (i == 0 or f.note != shown):  # the note strip above the picture
                    text = f.note or ""
                    if text not in strips:
                        strip = text_strip(text, w, renderer.scale, height=band, background=ends[0][0, 0])
                        strips[text] = palette.indices(_on_white(strip))
                    indices[:band] = strips[text]
                    rects.append((0, 0, w, band))
                    shown = f.note
                if wrapped and (i == 0 or wrapped[i] != wrapped[i - 1]):  # the frame's chain rule
                    strip = caption_strip(wrapped[i], w, renderer.scale, height=below, background=ends[0][0, 0])
                    indices[h + band :] = palette.indices(_on_white(strip))
                    rects.append((0, h + band, w, h + band + below))
                changed = (
                    (
                        min(r[0] for r in rects),
                        min(r[1] for r in rects),
                        max(r[2] for r in rects),
                        max(r[3] for r in rects),
                    )
                    if rects
                    else (0, 0, 0, 0)
                )  # nothing changed: held longer
                stream.add(indices, 1.0 / fps, changed)
                bar.update(1)
            stream.close(last_delay=_hold(fps))
    finally:
        view.set_step(before)


def _note_height(scale: float) -> int:
    """Pixels of the strip that carries a merged frame's note (a 12 px line at 100 dpi, with room)."""
    return max(1, round(24.0 * scale))


def _on_white(rgba: np.ndarray) -> np.ndarray:
    """RGB of RGBA pixels laid on white (GIF has no partial transparency)."""
    rgba = np.asarray(rgba)
    alpha = rgba[..., 3:4]
    if alpha.min() == 255:
        return rgba[..., :3]
    a = alpha.astype(np.uint16)
    return ((rgba[..., :3].astype(np.uint16) * a + 255 * (255 - a) + 127) // 255).astype(np.uint8)


def _gif_matplotlib(
    view: GraphView,
    tmp: Path,
    frames: list[Frame],
    *,
    dpi: float,
    fps: float,
    progress: bool,
    label: str,
    captions: list[list[str]] | None = None,
) -> None:
    """The same frames drawn by matplotlib (for views whose artists someone may have
    restyled); a merged frame's note goes under the title."""
    from matplotlib.animation import FuncAnimation, PillowWriter

    from . import raster

    before = view.step
    title = view.artists.title

    def show(i: int):
        f = frames[min(i, len(frames) - 1)]
        view.set_step(f.step)
        if f.note:
            title.set_text(f"{title.get_text()}\n({f.note})")
        if captions:
            title.set_text(title.get_text() + "\n" + "\n".join(captions[min(i, len(frames) - 1)]))
        return []

    # the last frame is repeated so the finished pass is held longer (PillowWriter has one fps)
    repeats = max(1, round(_hold(fps) * fps))
    order = list(range(len(frames))) + [len(frames) - 1] * (repeats - 1)
    anim = FuncAnimation(view.figure, show, frames=order, blit=False, repeat=False, cache_frame_data=False)
    try:
        with progress_bar(len(order), label, progress) as bar:
            # matplotlib's stubs say fps is an int; PillowWriter only computes 1000 / fps (1.5 fps is fine)
            writer = PillowWriter(fps=fps)  # type: ignore[arg-type]
            anim.save(
                str(tmp),
                writer=writer,
                dpi=_mpl_dpi(view, dpi, raster.MAX_GIF_PIXELS),
                progress_callback=lambda i, n: bar.update(1),
            )
    finally:
        view.set_step(before)
