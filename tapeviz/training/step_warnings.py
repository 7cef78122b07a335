"""Warnings about a training run, decided step by step as norms arrive: vanishing and
exploding gradients, NaN / Inf, and variables that got no gradient.

Rules (every threshold is a field of :class:`Thresholds`):

- **vanishing** (per layer): the layer's gradient norm relative to its weight norm,
  ``||g|| / ||w||``, is below ``vanishing_ratio`` (rule ``"ratio"``), or more than
  ``vanishing_gap`` times smaller than the last layer's (rule ``"gap"``; the last layer is
  the layer of the last variable passed to ``hist.add``, as in ``model.trainable_variables``).
- **exploding** (per layer): the gradient norm is more than ``exploding_jump`` times the
  median of the layer's previous ``median_window`` recorded norms, once at least
  ``min_history`` are known (rule ``"jump"``), or it grew by ``growth_factor`` or more at
  each of ``growth_steps`` recorded steps in a row (rule ``"growth"``).
- **nan** (per variable, and ``"loss"``): the gradient (or the loss) is NaN or Inf. Such a
  step, or one whose weights are already Inf, raises no vanishing or exploding flags (its
  ratios mean nothing).
- **no_gradient** (per variable): the gradient passed for it was None.

A condition that holds for many steps is one episode and gives one flag, at its first
step; the episode ends after ``quiet_steps`` recorded steps without it, and a later
occurrence flags again. At most ``max_flags`` flags are kept (later ones are counted in
``dropped``), so memory stays bounded however long the run.

Decisions use the exact per-step norms (before any downsampling), batched: each call of
:meth:`FlagDetector.observe` judges a block of consecutive steps with array operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ..messages import say

KINDS = ("vanishing", "exploding", "nan", "no_gradient")
#: One bit per kind, for storing "which conditions hold here" as one number per step.
BITS = {kind: 1 << i for i, kind in enumerate(KINDS)}


def kinds_of(bits: float) -> tuple[str, ...]:
    """The kinds whose bits are set in ``bits`` (NaN or 0: none)."""
    if not bits == bits or not bits:  # NaN: not measured
        return ()
    b = int(bits)
    return tuple(k for k in KINDS if b & BITS[k])


@dataclass(frozen=True)
class Flag:
    """One warning: at ``step``, ``name`` (a layer, a variable or ``"loss"``) showed ``kind``.

    ``value`` is what was measured: ``||g|| / ||w||`` for vanishing, the gradient norm for
    exploding and nan (NaN / Inf), None for no_gradient. ``message`` is one sentence with
    the fix (English; ``text(lang)`` says it in another language, from the same facts);
    ``rule`` says which test fired (``ratio``, ``gap``, ``jump``, ``growth``,
    ``nonfinite``, ``none``).
    """

    step: int
    name: str
    kind: str
    value: float | None
    message: str
    rule: str = ""
    facts: tuple = field(default=(), repr=False, compare=False)  # (message key, {fact: text}) for text()

    def text(self, lang: str = "en") -> str:
        """The message in ``lang`` (see tapeviz.messages)."""
        if not self.facts:
            return self.message
        key, facts = self.facts
        return _say_flag(key, lang, facts)

    def __str__(self) -> str:
        return f"step {self.step} {self.kind} {self.name}: {self.message}"


def _say_flag(key: str, lang: str, facts: dict) -> str:
    fix = say(f"flagfix.{facts['fix']}", lang, **facts) if facts.get("fix") else ""
    return say(key, lang, **{**facts, "fix": fix})


def _flag(step: int, name: str, kind: str, value, rule: str, key: str, **facts) -> Flag:
    facts = {"name": name, **facts}
    return Flag(step, name, kind, value, _say_flag(key, "en", facts), rule, (key, facts))


@dataclass(frozen=True)
class Thresholds:
    """When a flag is raised; see the module docstring for the rules."""

    vanishing_ratio: float = 1e-6
    vanishing_gap: float = 1e-3
    exploding_jump: float = 5.0
    median_window: int = 50
    min_history: int = 5
    growth_factor: float = 2.0
    growth_steps: int = 3
    quiet_steps: int = 10
    max_flags: int = 10_000

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"Thresholds.{f.name} must be a positive number, got {v!r}.")
        for name in ("median_window", "min_history", "growth_steps", "quiet_steps", "max_flags"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ValueError(f"Thresholds.{name} must be a whole number, got {getattr(self, name)!r}.")
        if self.vanishing_gap >= 1:
            raise ValueError(
                f"Thresholds.vanishing_gap is a factor below the last layer (e.g. 1e-3), got {self.vanishing_gap}."
            )
        if self.exploding_jump <= 1 or self.growth_factor <= 1:
            raise ValueError("Thresholds.exploding_jump and growth_factor must be above 1 (a factor of growth).")
        if self.min_history > self.median_window:
            raise ValueError(
                f"Thresholds.min_history ({self.min_history}) cannot exceed median_window ({self.median_window})."
            )


class _Episodes:
    """Onset detection for one kind over a growing list of names."""

    def __init__(self):
        self.active = np.zeros(0, bool)
        self.quiet = np.zeros(0, np.int64)

    def grow(self, n: int) -> None:
        if n > len(self.active):
            k = n - len(self.active)
            self.active = np.concatenate([self.active, np.zeros(k, bool)])
            self.quiet = np.concatenate([self.quiet, np.zeros(k, np.int64)])

    def onsets(self, cond: np.ndarray, quiet_steps: int):
        """Yield (row, column) where an episode starts, row by row; update the state over
        all rows. An episode starts where the condition holds and none is open; it stays
        open until ``quiet_steps`` rows in a row without the condition.

        Worked out for the whole block at once (a loop over rows cost ~7 µs a training
        step while any episode was open): for each row, the last row at or before it where
        the condition held (``np.maximum.accumulate``) gives how many quiet rows preceded it."""
        self.grow(cond.shape[1])
        b = cond.shape[0]
        if b == 0 or (not cond.any() and not self.active.any()):
            return
        rows = np.arange(b)[:, None]
        last = np.maximum.accumulate(np.where(cond, rows, -1), axis=0)  # -1: not in this block yet
        before = np.concatenate([np.full((1, cond.shape[1]), -1), last[:-1]], axis=0)
        carried = self.active & (self.quiet + rows < quiet_steps)  # rows before any in this block held
        open_before = np.where(before >= 0, rows - 1 - before < quiet_steps, carried)
        end = last[-1]
        self.quiet = np.where(end >= 0, b - 1 - end, self.quiet + b)
        self.active = (self.quiet < quiet_steps) & ((end >= 0) | self.active)
        for i, j in zip(*np.nonzero(cond & ~open_before), strict=True):
            yield int(i), int(j)


class FlagDetector:
    """Keeps what the rules need from earlier steps (a window of layer norms, growth
    streaks, open episodes) and turns blocks of new steps into Flags."""

    def __init__(self, thresholds: Thresholds | None = None):
        self.t = thresholds or Thresholds()
        self.flags: list[Flag] = []
        self.dropped = 0
        # the last block's conditions, step by step (a flag is raised at an episode's
        # first step only; these say where each condition holds): kind -> (steps, n) bool
        self.conditions: dict[str, np.ndarray] = {}
        w = self.t.median_window
        self._window = np.full((w, 0), np.nan)  # the last `w` layer gradient norms
        self._prev = np.zeros(0)  # previous layer norm (NaN: none yet)
        self._streak = np.zeros(0, np.int64)
        self._ep = {k: _Episodes() for k in ("vanishing", "exploding", "nan_var", "nan_loss", "no_gradient")}

    def _grow_layers(self, n: int) -> None:
        k = n - self._window.shape[1]
        if k > 0:
            self._window = np.concatenate([self._window, np.full((self._window.shape[0], k), np.nan)], axis=1)
            self._prev = np.concatenate([self._prev, np.full(k, np.nan)])
            self._streak = np.concatenate([self._streak, np.zeros(k, np.int64)])

    def _emit(self, flag: Flag) -> None:
        if len(self.flags) >= self.t.max_flags:
            self.dropped += 1
            return
        self.flags.append(flag)

    def observe(
        self,
        steps,
        *,
        layers,
        layer_grad,
        layer_weight,
        last_layer,
        variables,
        var_grad,
        var_present,
        var_missing,
        loss,
        loss_given,
        clip_scale,
    ) -> list[Flag]:
        """Judge a block of steps; return the new flags (also appended to ``self.flags``).

        ``layer_grad`` / ``layer_weight``: (steps, layers) norms, NaN where a layer was not
        part of a step; ``last_layer``: (steps,) column of the last layer; ``var_grad``:
        (steps, variables) gradient norms; ``var_present``: True where a gradient was
        measured; ``var_missing``: True where the gradient passed was None; ``loss``:
        (steps,) and ``loss_given`` where it was passed;
        ``clip_scale``: (steps,) global clipped / raw norm, NaN without clipping.
        """
        t = self.t
        before = len(self.flags)
        steps = np.asarray(steps)
        self._grow_layers(len(layers))
        # A step with a NaN / Inf gradient or loss gets nan flags only: ratios and jumps
        # of a broken step say nothing about vanishing or exploding.
        broken = (
            (var_present & ~np.isfinite(var_grad)).any(axis=1)
            | (loss_given & ~np.isfinite(loss))
            | np.isinf(layer_weight).any(axis=1)
        )[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where((layer_weight > 0) & np.isfinite(layer_weight), layer_grad / layer_weight, np.nan)
            last_rel = rel[np.arange(len(steps)), last_layer] if len(layers) else np.zeros(len(steps))
            is_last = np.arange(len(layers))[None, :] == np.asarray(last_layer)[:, None]
            by_ratio = rel < t.vanishing_ratio
            by_gap = (rel < last_rel[:, None] * t.vanishing_gap) & ~is_last
        vanish = (by_ratio | by_gap) & ~broken
        for i, j in self._ep["vanishing"].onsets(vanish, t.quiet_steps):
            r = float(rel[i, j])
            if by_ratio[i, j]:
                flag = _flag(
                    int(steps[i]),
                    layers[j],
                    "vanishing",
                    r,
                    "ratio",
                    "flag.vanishing.ratio",
                    ratio=f"{r:.1e}",
                    threshold=f"{t.vanishing_ratio:g}",
                    fix="vanishing",
                )
            else:
                lr = float(last_rel[i])
                orders = np.log10(lr / r) if r > 0 else np.inf
                flag = _flag(
                    int(steps[i]),
                    layers[j],
                    "vanishing",
                    r,
                    "gap",
                    "flag.vanishing.gap",
                    ratio=f"{r:.1e}",
                    orders=f"{orders:.1f}",
                    last=f"{lr:.1e}",
                    fix="vanishing",
                )
            self._emit(flag)

        jump, growth, median = self._exploding(layer_grad)
        for i, j in self._ep["exploding"].onsets((jump | growth) & ~broken, t.quiet_steps):
            g = float(layer_grad[i, j])
            s = clip_scale[i]
            clipped = bool(np.isfinite(s) and s < 1 - 1e-5)
            fix = {"fix": "clipped", "scale": f"{s:.2g}"} if clipped else {"fix": "exploding"}
            if jump[i, j]:
                flag = _flag(
                    int(steps[i]),
                    layers[j],
                    "exploding",
                    g,
                    "jump",
                    "flag.exploding.jump",
                    norm=f"{g:.3g}",
                    times=f"{g / median[i, j]:.0f}",
                    median=f"{median[i, j]:.3g}",
                    **fix,
                )
            else:
                flag = _flag(
                    int(steps[i]),
                    layers[j],
                    "exploding",
                    g,
                    "growth",
                    "flag.exploding.growth",
                    norm=f"{g:.3g}",
                    factor=f"{t.growth_factor:g}",
                    steps=str(t.growth_steps),
                    **fix,
                )
            self._emit(flag)

        nonfinite = var_present & ~np.isfinite(var_grad)
        for i, j in self._ep["nan_var"].onsets(nonfinite, t.quiet_steps):
            g = float(var_grad[i, j])
            key = "flag.nan.nan" if np.isnan(g) else "flag.nan.inf"
            self._emit(_flag(int(steps[i]), variables[j], "nan", g, "nonfinite", key, fix="nan"))
        bad_loss = (loss_given & ~np.isfinite(loss))[:, None]
        for i, _ in self._ep["nan_loss"].onsets(bad_loss, t.quiet_steps):
            what = "NaN" if np.isnan(loss[i]) else "Inf"
            self._emit(
                _flag(int(steps[i]), "loss", "nan", float(loss[i]), "nonfinite", "flag.nan.loss", what=what, fix="nan")
            )
        for i, j in self._ep["no_gradient"].onsets(var_missing, t.quiet_steps):
            self._emit(_flag(int(steps[i]), variables[j], "no_gradient", None, "none", "flag.no_gradient.none"))
        self.conditions = {
            "vanishing": vanish,
            "exploding": (jump | growth) & ~broken,
            "nan": nonfinite,
            "no_gradient": np.asarray(var_missing, bool),
            "nan_loss": bad_loss[:, 0],
        }
        new = self.flags[before:]
        new.sort(key=lambda f: f.step)
        self.flags[before:] = new
        return new

    def _exploding(self, layer_grad: np.ndarray):
        """(jump, growth, median) arrays of shape (steps, layers), from the window of the
        previous norms and the growth streaks carried over from earlier blocks."""
        t = self.t
        b, n = layer_grad.shape
        w = t.median_window
        stacked = np.concatenate([self._window, layer_grad], axis=0)  # (w + b, n)
        windows = np.lib.stride_tricks.sliding_window_view(stacked, w, axis=0)[:b]  # (b, n, w): previous w norms
        known, median = _nanmedian(windows)
        with np.errstate(divide="ignore", invalid="ignore"):
            jump = (known >= t.min_history) & (layer_grad > t.exploding_jump * median) & (median > 0)
            prev = np.concatenate([self._prev[None, :], layer_grad[:-1]], axis=0)
            grew = layer_grad >= t.growth_factor * prev
            grew &= (prev > 0) & np.isfinite(layer_grad)
        # the growth streak at each row: rows since the last one that did not grow (the
        # streak carried over from earlier blocks when every row so far grew), for the
        # whole block at once (a loop over rows cost µs a training step)
        rows = np.arange(b)[:, None]
        stop = np.maximum.accumulate(np.where(grew, -1, rows), axis=0) if b else np.zeros((0, n), np.int64)
        streaks = np.where(stop >= 0, rows - stop, self._streak + rows + 1)
        growth = streaks >= t.growth_steps
        if b:
            self._streak = streaks[-1]
        self._window = stacked[-w:]
        last = layer_grad[-1] if b else self._prev
        self._prev = np.where(np.isnan(last), self._prev, last)  # a layer absent from a step keeps its norm
        return jump & np.isfinite(layer_grad), growth, median


def _nanmedian(windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(count of finite values, their median) along the last axis; NaN where none.

    np.nanmedian goes through masked arrays for small inputs (~20x slower here); sorting
    puts NaNs last, so the median of the k finite values sits at index (k-1)//2 and k//2."""
    finite = np.isfinite(windows)
    k = finite.sum(axis=-1)
    w = windows.shape[-1]
    if w and finite.all():  # full windows (the usual case): partition, no sort
        part = np.partition(windows, [(w - 1) // 2, w // 2], axis=-1)
        return k, (part[..., (w - 1) // 2] + part[..., w // 2]) / 2
    ordered = np.sort(np.where(finite, windows, np.inf), axis=-1)
    lo = np.take_along_axis(ordered, np.maximum(k - 1, 0)[..., None] // 2, axis=-1)[..., 0]
    hi = np.take_along_axis(ordered, (k // 2)[..., None], axis=-1)[..., 0] if windows.shape[-1] else lo
    with np.errstate(invalid="ignore"):
        median = np.where(k > 0, (lo + hi) / 2, np.nan)
    return k, median
