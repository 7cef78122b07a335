"""Sphinx configuration for tapeviz's docs. Build with `make docs` (strict: any warning fails).

Sphinx rather than MkDocs: autodoc reads the API reference straight from tapeviz's
docstrings, myst-parser reads the guide's Markdown pages (and includes the README's first
example from there: one copy), and myst-nb executes the notebooks with nbclient at build
time without pandoc. The default theme (alabaster) and these extensions load nothing from the internet.
"""

from __future__ import annotations

import os
import sys

# The site has no kernel behind its pages: each lesson's explorer is written as the offline
# stepping page (tapeviz/explorer/fallback.py, TAPEVIZ_STEPPING_PAGE), not a widget. The other
# widgets a page shows (ipywidgets' html-manager) have no anywidget front end: the canvas falls
# back to the HTML picture there. tapeviz's kernel inherits both.
os.environ.setdefault("TAPEVIZ_STEPPING_PAGE", "1")
os.environ.setdefault("TAPEVIZ_CANVAS", "html")
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document (and run) this checkout's tapeviz
sys.path.insert(0, str(DOCS / "_ext"))

import tapeviz  # noqa: E402

project = "tapeviz"
author = "the tapeviz authors"
copyright = "the tapeviz authors"
version = release = tapeviz.__version__

extensions = ["sphinx.ext.autodoc", "myst_nb", "tapeviz_docs"]
root_doc = "index"
exclude_patterns = ["_build", "_ext", "_generated/static", "**/.ipynb_checkpoints"]
html_static_path = ["_generated/static"]
html_theme = "alabaster"
html_title = f"tapeviz {release}"
html_theme_options = {
    "description": "See what tf.GradientTape records",
    "fixed_sidebar": True,
    "page_width": "1180px",
    "sidebar_width": "240px",
}  # room for pictures and code

# API reference: signatures as written in the code, types in the signature.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False}

# MyST: the pages are GitHub Markdown; headings get anchors for links like page.md#section.
myst_heading_anchors = 3

# Notebooks: committed without outputs, executed here by nbclient (a failing cell fails the
# build). Their explorers are shown with ipywidgets' html-manager served from _static.
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_in_temp = True  # what a notebook writes stays out of the docs folder
nb_ipywidgets_js = {"widgets/embed.js": {}}
# TensorFlow's start-up log lines (oneDNN, absl) go to stderr in every kernel; they are not
# part of the lesson. An exception in a cell still fails the build (raise_on_error).
nb_output_stderr = "remove"
