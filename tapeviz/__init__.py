"""tapeviz: see what tf.GradientTape recorded and how the gradient flows back."""

from .api import (
    Flag,
    GradientFlow,
    GradientTape,
    GraphView,
    History,
    RecordedStep,
    Recording,
    TapeGraph,
    draw,
    explain,
    explore,
    export_html,
    flow,
    interact,
    record,
    record_step,
    save,
    view,
)

__all__ = [
    "GradientTape",
    "record",
    "Recording",
    "record_step",
    "RecordedStep",
    "flow",
    "view",
    "draw",
    "save",
    "explore",
    "interact",
    "explain",
    "export_html",
    "TapeGraph",
    "GradientFlow",
    "GraphView",
    "History",
    "Flag",
]
__version__ = "0.1.0"
