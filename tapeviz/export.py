"""Export: PNG, SVG and animated GIF files of a drawn graph, with no system binaries."""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib import rc_context
from matplotlib.animation import FuncAnimation, PillowWriter

from .render import raster_dpi
from .view import GraphView
from .svg import draws_whole_figure, to_svg

FORMATS = (".png", ".svg", ".gif")
SVG_ENGINES = ("auto", "tapeviz", "matplotlib")


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


def save_view(view: GraphView, path: str | os.PathLike, *, dpi: int = 100, fps: float = 1.5,
              engine: str = "auto") -> Path:
    """Write the view: a still picture (.png/.svg) or the backward pass animated (.gif).

    ``engine`` picks who writes an .svg: "tapeviz" (:func:`tapeviz.svg.to_svg`,
    straight from the view's artists: a 1,000-box graph in a fraction of a
    second), "matplotlib" (``savefig``, text kept as text: slower, but draws
    anything else the figure holds) or "auto" (tapeviz's unless the view was
    drawn into a figure that holds other things too). PNG and GIF always go
    through matplotlib, at ``dpi`` or lower for very large pictures (see
    :func:`tapeviz.render.raster_dpi`).
    """
    if engine not in SVG_ENGINES:
        raise ValueError(f"Unknown SVG engine {engine!r}: use one of {', '.join(SVG_ENGINES)}.")
    p = check_path(path)
    if p.suffix.lower() == ".gif":
        save_gif(view, p, dpi=dpi, fps=fps)
    elif p.suffix.lower() == ".svg":
        if engine == "tapeviz" or (engine == "auto" and draws_whole_figure(view)):
            p.write_bytes(to_svg(view).encode("utf-8"))
        else:
            # Keep text as <text> elements: searchable, selectable, and far smaller than glyph paths.
            with rc_context({"svg.fonttype": "none"}):
                view.figure.savefig(p, dpi=dpi)
    else:
        view.figure.savefig(p, dpi=raster_dpi(view.figure, dpi))
    return p


def save_gif(view: GraphView, path: Path, *, dpi: int = 80, fps: float = 1.5) -> None:
    """One frame per backward step; the last one is the finished pass."""
    frames = list(range(max(view.n_steps, 1)))
    before = view.step

    def show(k):
        view.set_step(k)
        return []

    anim = FuncAnimation(view.figure, show, frames=frames, blit=False, repeat=False, cache_frame_data=False)
    try:
        anim.save(str(path), writer=PillowWriter(fps=fps), dpi=raster_dpi(view.figure, dpi, max_pixels=8_000_000))
    finally:
        view.set_step(before)
