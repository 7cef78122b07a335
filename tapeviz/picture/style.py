"""Style constants of a picture: geometry in data units, line widths, dash patterns, the default colours.

The writers and the scene read them; the colours of each theme live in themes.py."""

from __future__ import annotations

from .themes import LIGHT

# Geometry, in data units: one layer is INCH_X inches wide, one row INCH_Y inches tall (x theme.scale).
INCH_X, INCH_Y = 2.7, 1.15
BOX_W, BOX_H = 0.56, 0.6  # node box, as a fraction of a layer / a row (layout.py keeps bends clear of it)
GAP = 1.0 - BOX_W  # between two columns' boxes: edge labels live here, and only here
PARALLEL_GAP = 0.13  # vertical distance between the ends of parallel edges (x * x)
CURVE_ROOM = 0.07  # at a gap's left: where an edge turns from where it comes to its port
CONVERGE_ROOM = 0.06  # at a gap's right: where a port's run turns into the middle of the box
TAIL = 0.03  # the straight stretch under the arrow head
PORT_WINDOW = 0.45  # ports spread at most this far above and below a box's middle
CAPTION_H = 0.15  # the strip under a box where its gradient is written (layout.py keeps bends out of it)
RETURN_PAD, RETURN_STEP = 0.05, 0.02  # an edge returning to the next band turns down this far right of the boxes
BAND_MOST = 20  # widest band, in columns (a 20-column band of the default theme is ~55 inches)
FONT = LIGHT.font
DPI = 100
MARGIN = 8.0  # points between the canvas edge and anything on it
MAX_INCHES = 200.0  # figure_size's cap; a Scene is never squeezed (squeezed text would overlap)

# The default (light) theme's colours, for callers and tests that compare against them.
KIND_STYLE = {k: dict(fc=fc, ec=ec) for k, (fc, ec) in LIGHT.kinds.items()}
C_FORWARD, C_GRAD, C_ACTIVE, C_STOP = LIGHT.forward, LIGHT.flowing, LIGHT.active, LIGHT.stopped
C_BAD, C_TARGET, C_GRADTEXT, C_STOPTEXT = LIGHT.bad, LIGHT.target, LIGHT.grad_text, LIGHT.stop_text
# Line widths in points, before the theme's ``line`` factor.
LW_BOX, LW_TARGET, LW_ACTIVE = 1.1, 2.6, 3.4
LW_EDGE, LW_STOPPED, LW_CARRIES, LW_ACTIVE_EDGE = 1.1, 1.2, 1.8, 3.0
# Where a NaN, Inf or zero gradient starts: its op's outline (dashed, not by colour alone)
# and its path back to the source (thicker than any other carrying edge).
LW_ORIGIN, LW_ORIGIN_PATH = 3.0, 2.8
ORIGIN_DASH = (0, (3, 1.5))
ORIGIN_GAP = 0.04  # data units between the origin's box and its tag above it

REASON_STYLE = {
    "stop_gradient": (0, (4, 2)),
    "not_recorded": (0, (1, 2)),
    "not_watched": (0, (3, 2, 1, 2)),
    "integer_dtype": (0, (6, 2)),
    "no_gradient": (0, (2, 2)),
    "stateful": (0, (5, 1, 1, 1)),
    "outside_tf": (0, (1, 1)),
    "unconnected": (0, (3, 3)),
}

# matplotlib's path codes (the writers read them as such)
MOVETO, LINETO, CURVE4 = 1, 2, 4
LABEL_PAD = 0.15  # a boxed label's padding, in units of its font size (matplotlib's "round,pad=0.15")
CHIP_PAD = 0.25
MARK_SIZE = 8.0  # points: a backward marker's length and width (times the theme's line factor)
