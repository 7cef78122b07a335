"""tapeviz: see what tf.GradientTape recorded and how the gradient flows back."""

from typing import Any

# First: when this process is the `tapeviz` command, TensorFlow is imported there, quietly.
from .record import quietstart  # noqa: F401

# isort: split
from .api import (
    Flag,
    GradientFlow,
    GradientTape,
    GraphView,
    History,
    Jacobian,
    Options,
    RecordedStep,
    Recording,
    TapeGraph,
    batch_jacobian,
    chain_rule,
    compare,
    draw,
    explain,
    explore,
    export_html,
    flow,
    interact,
    jacobian,
    record,
    record_step,
    save,
    view,
)
from .gradients.magnitude import MagnitudeScale, relative_magnitudes
from .output.raster import png_bytes
from .output.svg import to_svg
from .training.step_warnings import Thresholds

__all__ = [
    "GradientTape",
    "record",
    "Recording",
    "record_step",
    "RecordedStep",
    "flow",
    "jacobian",
    "batch_jacobian",
    "Jacobian",
    "view",
    "draw",
    "save",
    "explore",
    "interact",
    "explain",
    "chain_rule",
    "compare",
    "export_html",
    "TapeGraph",
    "GradientFlow",
    "GraphView",
    "History",
    "Flag",
    "Options",
    "Thresholds",
    "MagnitudeScale",
    "relative_magnitudes",
    "to_svg",
    "png_bytes",
    "fixed",
    "attach_keys",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The names that need ipywidgets, imported on first use (``import tapeviz`` stays free
    of widget code: a script that only saves pictures never loads it)."""
    if name == "fixed":
        from ipywidgets import fixed

        return fixed
    if name == "attach_keys":
        from .explorer.keyboard import attach_keys

        return attach_keys
    raise AttributeError(f"module 'tapeviz' has no attribute {name!r}")
