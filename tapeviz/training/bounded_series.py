"""Series that stay the same size however long training runs: buckets of steps, each
keeping the min, max and last value of every column, so a spike is never averaged away.

While fewer than ``capacity`` steps are stored, every bucket is one step (the values are
exact). When the buckets are full, neighbours merge in pairs (min of mins, max of maxes,
the later bucket's last) and every later bucket holds twice as many steps: after ``n``
steps a bucket spans the next power of two above ``n / capacity`` steps. Memory is
``capacity * columns * 3`` float32 values plus three int64 per bucket, whatever ``n`` is.

Missing values (a column not measured at a step) are NaN; ``min`` and ``max`` skip them
(NaN only if the whole bucket is missing), ``last`` is the value at the bucket's last step.
"""

from __future__ import annotations

import numpy as np

STATS = ("min", "max", "last")


class Buckets:
    """``capacity`` buckets x a growing number of float32 columns."""

    def __init__(self, capacity: int = 1024):
        if capacity < 2 or capacity % 2:
            raise ValueError(f"capacity must be an even number >= 2, got {capacity}.")
        self.capacity = capacity
        self.width = 1  # steps per full bucket
        self.n = 0  # buckets in use
        self.first_step = np.zeros(capacity, np.int64)
        self.last_step = np.zeros(capacity, np.int64)
        self.count = np.zeros(capacity, np.int64)
        self.columns = 0
        self._data = {s: np.full((capacity, 0), np.nan, np.float32) for s in STATS}

    # -- writing ------------------------------------------------------------------------
    def add_columns(self, k: int) -> None:
        """Append k columns, NaN (missing) in every bucket so far."""
        if k <= 0:
            return
        pad = np.full((self.capacity, k), np.nan, np.float32)
        self._data = {s: np.concatenate([a, pad], axis=1) for s, a in self._data.items()}
        self.columns += k

    def append(self, steps: np.ndarray, rows: np.ndarray) -> None:
        """Add consecutive steps (ascending) with one row of ``columns`` values each."""
        steps = np.asarray(steps, np.int64)
        rows = np.asarray(rows, np.float32)
        if rows.shape != (len(steps), self.columns):
            raise ValueError(f"rows must have shape ({len(steps)}, {self.columns}), got {rows.shape}.")
        i = 0
        while i < len(steps):
            if self.n and self.count[self.n - 1] < self.width:
                b = self.n - 1  # the open bucket takes rows until it holds `width` steps
                take = min(self.width - int(self.count[b]), len(steps) - i)
                self._merge_rows(b, steps[i : i + take], rows[i : i + take])
                i += take
                continue
            if self.n == self.capacity:
                self._halve()
                continue
            if self.width == 1:  # one step per bucket: copy as many rows as fit at once
                take = min(self.capacity - self.n, len(steps) - i)
                sl = slice(self.n, self.n + take)
                for s in STATS:
                    self._data[s][sl] = rows[i : i + take]
                self.first_step[sl] = self.last_step[sl] = steps[i : i + take]
                self.count[sl] = 1
                self.n += take
                i += take
                continue
            if (m := min((len(steps) - i) // self.width, self.capacity - self.n)) > 1:
                self._fill_buckets(m, steps[i : i + m * self.width], rows[i : i + m * self.width])
                i += m * self.width
                continue
            b = self.n
            self.n += 1
            self.count[b] = 0
            for s in STATS:
                self._data[s][b] = np.nan
            self.first_step[b] = steps[i]

    def _fill_buckets(self, m: int, steps: np.ndarray, rows: np.ndarray) -> None:
        """Fill ``m`` new buckets of ``width`` rows each at once: the same values as one
        bucket at a time (min / max are exact whatever the order), with a dozen array
        operations instead of a dozen per bucket (a History flushing 256 steps into 4-step
        buckets ran 64 bucket merges)."""
        w, sl = self.width, slice(self.n, self.n + m)
        block = rows.reshape(m, w, self.columns)
        with np.errstate(invalid="ignore"):
            self._data["min"][sl] = np.fmin.reduce(block, axis=1)
            self._data["max"][sl] = np.fmax.reduce(block, axis=1)
        self._data["last"][sl] = block[:, -1]
        self.first_step[sl] = steps[::w]
        self.last_step[sl] = steps[w - 1 :: w]
        self.count[sl] = w
        self.n += m

    def _merge_rows(self, b: int, steps: np.ndarray, rows: np.ndarray) -> None:
        mn, mx, last = self._data["min"], self._data["max"], self._data["last"]
        with np.errstate(invalid="ignore"):
            if self.count[b] == 0:
                mn[b] = np.fmin.reduce(rows, axis=0)
                mx[b] = np.fmax.reduce(rows, axis=0)
            else:
                mn[b] = np.fmin(mn[b], np.fmin.reduce(rows, axis=0))
                mx[b] = np.fmax(mx[b], np.fmax.reduce(rows, axis=0))
        last[b] = rows[-1]
        self.last_step[b] = steps[-1]
        self.count[b] += len(steps)

    def _halve(self) -> None:
        """Merge buckets in pairs: half as many buckets, each twice as wide."""
        h = self.n // 2
        mn, mx, last = self._data["min"], self._data["max"], self._data["last"]
        with np.errstate(invalid="ignore"):
            mn[:h] = np.fmin(mn[0 : 2 * h : 2], mn[1 : 2 * h : 2])
            mx[:h] = np.fmax(mx[0 : 2 * h : 2], mx[1 : 2 * h : 2])
        last[:h] = last[1 : 2 * h : 2]
        self.first_step[:h] = self.first_step[0 : 2 * h : 2]
        self.last_step[:h] = self.last_step[1 : 2 * h : 2]
        self.count[:h] = self.count[0 : 2 * h : 2] + self.count[1 : 2 * h : 2]
        self.n = h
        self.width *= 2

    # -- reading ------------------------------------------------------------------------
    def steps(self) -> np.ndarray:
        """The last step of each bucket (the step its ``last`` values belong to)."""
        return self.last_step[: self.n].copy()

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(first step, last step) of each bucket."""
        return self.first_step[: self.n].copy(), self.last_step[: self.n].copy()

    def column(self, col: int, stat: str = "last") -> np.ndarray:
        if stat not in STATS:
            raise ValueError(f"stat must be one of {', '.join(STATS)}, got {stat!r}.")
        return self._data[stat][: self.n, col].copy()

    def row(self, b: int, stat: str = "last") -> np.ndarray:
        return self._data[stat][b]

    def bucket_of(self, step: int) -> int | None:
        """The bucket holding ``step`` (None if no bucket spans it)."""
        b = int(np.searchsorted(self.last_step[: self.n], step, side="left"))
        if b < self.n and self.first_step[b] <= step:
            return b
        return None

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._data.values()) + 3 * self.capacity * 8
