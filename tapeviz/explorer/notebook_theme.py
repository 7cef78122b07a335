"""What theme the page around a widget uses, reported to the kernel.

JupyterLab, Notebook 7 and Voilà mark the page's theme on ``<body>``
(``data-jp-theme-light="true" | "false"``). An explorer made with ``theme="auto"`` holds
one :class:`PageTheme`: its front end reads that attribute when shown and whenever the
user switches themes, and sets ``dark``; the explorer draws its picture in the matching
tapeviz theme. Where the page says nothing (a plain HTML page), ``dark`` stays None and
the picture stays light.
"""

from __future__ import annotations

import anywidget
import traitlets as T

from . import static_files

__all__ = ["PageTheme"]


class PageTheme(anywidget.AnyWidget):
    """Reports whether the page is dark (``dark``: True / False, None where it cannot tell)."""

    _esm = static_files.path("page_theme.js")
    dark = T.Bool(None, allow_none=True, help="the page's theme is dark (None: unknown)").tag(sync=True)
