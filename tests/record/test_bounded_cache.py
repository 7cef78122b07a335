"""BoundedCache: every cache and memo of tapeviz keeps its bound in one place."""

import pytest

from tapeviz.record.bounded_cache import BoundedCache


def test_adding_past_the_size_drops_the_oldest():
    c: BoundedCache[str, int] = BoundedCache(2)
    assert c.put("a", 1) == 1 and c.put("b", 2) == 2
    c.put("a", 10)  # a key already held: nothing is dropped
    assert dict(c) == {"a": 10, "b": 2}
    c.put("c", 3)
    assert dict(c) == {"b": 2, "c": 3}, "the oldest entry went"


def test_fetch_makes_once_and_keeps_the_most_recent_with_recency():
    made = []

    def make(v):
        return lambda: made.append(v) or v

    plain: BoundedCache[str, str] = BoundedCache(2)
    recent: BoundedCache[str, str] = BoundedCache(2, recency=True)
    for c in (plain, recent):
        made.clear()
        assert c.fetch("a", make("A")) == "A" and c.fetch("b", make("B")) == "B"
        assert c.fetch("a", make("X")) == "A" and made == ["A", "B"], "a hit does not make it again"
        c.fetch("c", make("C"))
    assert list(plain) == ["b", "c"], "without recency the first kept goes first"
    assert list(recent) == ["a", "c"], "with recency the least recently used goes"


def test_start_over_empties_a_full_memo():
    c: BoundedCache[int, int] = BoundedCache(3, start_over=True)
    for i in range(3):
        c.put(i, i)
    c.put(3, 3)
    assert dict(c) == {3: 3}
    with pytest.raises(ValueError, match="at least one"):
        BoundedCache(0)
