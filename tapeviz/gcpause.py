"""Python's cyclic garbage collector, paused while a picture is built.

A TensorFlow process holds a few hundred thousand tracked objects. Building a picture
allocates tens of thousands of short-lived, mostly acyclic ones (records, texts, strings),
which triggers full collections that walk all of TensorFlow's objects: on a 1,000-op graph
they were about half of a save's time. Nothing a picture builds needs the collector, so it
waits until the picture is done (then runs as usual); a collector the user disabled stays
disabled.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (nested blocks are fine)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
