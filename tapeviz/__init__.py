"""tapeviz: see what tf.GradientTape recorded and how the gradient flows back."""

from .api import GradientFlow, GradientTape, Recording, TapeGraph, flow, record

__all__ = ["GradientTape", "record", "Recording", "flow", "TapeGraph", "GradientFlow"]
__version__ = "0.1.0"
