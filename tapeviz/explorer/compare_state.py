"""The compare explorer's state, and what it shows, as pure functions of it.

``tv.explore(tv.compare(a, b))`` shows the two backward passes side by side with one step
slider, and the picture of the ratios ‖g_b‖ / ‖g_a‖ under them. A :class:`CompareState` is
plain data: the one step both sides show and the pictures' options. Each side is an
ordinary explorer target (:class:`~tapeviz.explorer.state.GraphTargets`, one per flow),
so each side's picture is the explorer's own picture of that pass at that step
(:func:`tapeviz.explorer.state.picture`); the ratio picture is the comparison's
(:class:`~tapeviz.picture.compare_scene.CompareScene`). A pass shorter than the other (b
with a ``tf.stop_gradient`` stops sooner) stays at its finished pass while the slider goes on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..gcpause import gc_paused
from ..gradients.compare import Comparison
from ..gradients.flow import GradientFlow
from ..output.svg import to_svg
from ..picture.compare_scene import CompareScene
from ..picture.options import Options
from ..picture.rows import CELL_WIDTH
from ..picture.themes import explorer_theme
from ..record.bounded_cache import BoundedCache
from . import state as st

__all__ = ["SIDES", "CompareState", "ComparedPair", "side_state", "side_step", "pictures", "ratio_picture"]

#: The two sides, in the order they are shown (left, right).
SIDES = ("a", "b")

_DEFAULTS = Options(theme="light", magnitude=False)


@dataclass(frozen=True)
class CompareState:
    """Everything that decides what the compare explorer shows: one step for both sides
    (None: the finished passes) and the pictures' options."""

    step: int | None = None
    options: Options = _DEFAULTS

    def replace(self, **changes: Any) -> CompareState:
        """A new state with these fields (or options, by name) changed."""
        picked = {k: changes.pop(k) for k in list(changes) if k not in ("step", "options")}
        if picked:
            changes["options"] = dataclasses.replace(self.options, **picked)
        return dataclasses.replace(self, **changes)


class ComparedPair:
    """A comparison as the compare explorer's states see it: each side as an explorer
    target, and the ratio picture kept per options."""

    def __init__(self, comparison: Comparison, names: tuple[str, str] = SIDES):
        self.comparison = comparison
        self.names: tuple[str, str] = (names[0], names[1])
        flows = {"a": comparison.a, "b": comparison.b}
        self.sides = {
            side: st.GraphTargets(
                fl.graph,
                {fl.graph.display_name(fl.target_nodes[0]): fl.target_nodes[0]},
                flow_factory=_made(fl),
            )
            for side, fl in flows.items()
        }
        self._ratios: BoundedCache[tuple, str] = BoundedCache(8)

    @property
    def last_step(self) -> int:
        """The slider's end: the longer pass's last step."""
        return max(self.comparison.a.last_step, self.comparison.b.last_step)

    def initial(self, **options: Any) -> CompareState:
        """The state the explorer opens in: both finished passes, these options."""
        return CompareState(step=self.last_step, options=Options.of(_DEFAULTS, **options))

    def forget(self) -> None:
        for side in self.sides.values():
            side.forget()
        self._ratios.clear()


def _made(fl: GradientFlow) -> Callable[[Any], GradientFlow]:
    """A side's flow factory: the flow is made already (the comparison holds it)."""
    return lambda _target: fl


def side_step(pair: ComparedPair, state: CompareState, side: str) -> int:
    """The step one side shows: the state's, or its own last one when its pass is shorter."""
    fl = pair.comparison.a if side == "a" else pair.comparison.b
    k = pair.last_step if state.step is None else state.step
    if not 0 <= k <= pair.last_step:
        raise ValueError(f"step {k} is outside 0..{pair.last_step}")
    return min(k, fl.last_step)


def side_state(pair: ComparedPair, state: CompareState, side: str) -> st.ExplorerState:
    """One side's explorer state for this compare state."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    targets = pair.sides[side]
    return targets.initial(**state.options.keywords()).replace(step=side_step(pair, state, side))


def pictures(pair: ComparedPair, state: CompareState) -> tuple[str, str]:
    """The two sides' SVG pictures (a, b) at the state's step."""
    a, b = (st.picture(pair.sides[s], side_state(pair, state, s)) for s in SIDES)
    return a, b


def ratio_picture(pair: ComparedPair, state: CompareState) -> str:
    """The ratio picture (from ``<svg``) at the explorer's text sizes; the same at every step."""
    opts = state.options

    def make() -> str:
        theme = explorer_theme(opts.theme)
        names = pair.names if pair.names != SIDES else None
        with gc_paused():
            scene = CompareScene(pair.comparison, dataclasses.replace(opts, theme=theme), names=names, page=CELL_WIDTH)
            svg = to_svg(scene, fit=True)
        return svg[svg.find("<svg") :]

    return pair._ratios.fetch((opts,), make)
