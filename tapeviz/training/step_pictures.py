"""The steps of a training run that keep their whole picture (TapeGraph + GradientFlow),
chosen to fit a memory budget.

A picture is what a ``tv.GradientTape`` recorded at one step: every op, the tensors
between them, and (computed on first request, then kept) the backward pass of the loss.
It costs memory in proportion to the model's activations, so only some steps keep one.

Sampling, applied each time a picture arrives, while the pictures kept are more than
``max_pictures`` or their estimated bytes exceed ``budget_bytes``: never drop the first
or the latest; drop a picture of an unflagged step before one of a flagged step; among
those, drop the one whose neighbours are closest together (the remaining steps stay evenly
spread over the run). A single picture larger than the whole budget is not kept.

The byte estimate of a picture counts each tensor the recording holds (shape x dtype
size), the values the graph copied for display (``graph.kept_bytes``), and twice the
float tensors again for the backward pass (a total per tensor and a contribution per
edge). It is an estimate of what these objects hold, not a measurement of the process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gradients.flow import GradientFlow
from ..record.graph import TapeGraph


def estimate_bytes(graph: TapeGraph) -> int:
    """Bytes a kept picture holds, by the rule in the module docstring."""
    tensors = floats = 0
    for info in graph.tensors.values():
        if info.dtype in ("resource", "variant") or any(d is None for d in info.shape):
            continue
        try:
            size = int(np.prod(info.shape, dtype=np.int64)) * np.dtype(info.dtype).itemsize
        except TypeError:  # a dtype numpy does not know (e.g. bfloat16 spelled by TF)
            size = int(np.prod(info.shape, dtype=np.int64)) * 4
        tensors += size
        if info.trainable:
            floats += size
    return tensors + 2 * floats + graph.kept_bytes


@dataclass
class Picture:
    """One kept step: its graph, the loss tensor, and the flow once asked for."""

    step: int
    graph: TapeGraph
    target: Any
    nbytes: int
    flagged: bool = False
    _flow: GradientFlow | None = field(default=None, repr=False)

    def flow(self) -> GradientFlow:
        if self._flow is None:
            self._flow = GradientFlow(self.graph, self.target)
        return self._flow


class PictureStore:
    """Pictures by step, kept within ``max_pictures`` and ``budget_bytes``."""

    def __init__(self, max_pictures: int = 16, budget_bytes: int = 256 << 20):
        if max_pictures < 2:
            raise ValueError(f"max_pictures must be at least 2 (the first and the latest step), got {max_pictures}.")
        if budget_bytes <= 0:
            raise ValueError(f"picture_budget_bytes must be positive, got {budget_bytes}.")
        self.max_pictures = max_pictures
        self.budget_bytes = budget_bytes
        self._by_step: dict[int, Picture] = {}  # insertion order == step order (steps increase)
        self.dropped = 0  # pictures recorded but not kept (sampled out or over budget)
        self.too_big = 0  # of which: alone larger than the budget

    def add(self, step: int, graph: TapeGraph, target, *, flagged: bool) -> bool:
        """Keep the picture of ``step`` if the budget allows; True if it is kept."""
        nbytes = estimate_bytes(graph)
        if nbytes > self.budget_bytes:
            self.dropped += 1
            self.too_big += 1
            return False
        self._by_step[step] = Picture(step, graph, target, nbytes, flagged)
        self._shrink()
        return step in self._by_step

    def mark_flagged(self, step: int) -> None:
        pic = self._by_step.get(step)
        if pic is not None:
            pic.flagged = True

    def _shrink(self) -> None:
        while len(self._by_step) > self.max_pictures or self.nbytes > self.budget_bytes:
            steps = list(self._by_step)
            if len(steps) <= 2:
                # first + latest alone exceed the budget: the older one goes
                victim = steps[0] if len(steps) == 2 else steps[-1]
            else:
                victim = self._victim(steps)
            del self._by_step[victim]
            self.dropped += 1

    def _victim(self, steps: list[int]) -> int:
        inner = range(1, len(steps) - 1)
        unflagged = [i for i in inner if not self._by_step[steps[i]].flagged]
        pool = unflagged or list(inner)
        # the picture whose neighbours are closest: removing it leaves the most even spacing
        i = min(pool, key=lambda k: (steps[k + 1] - steps[k - 1], k))
        return steps[i]

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self._by_step.values())

    def steps(self) -> list[int]:
        return list(self._by_step)

    def get(self, step: int) -> Picture | None:
        return self._by_step.get(step)

    def __len__(self) -> int:
        return len(self._by_step)
