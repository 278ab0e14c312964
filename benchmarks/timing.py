"""Timing helpers: interleaved repetitions (ADR 0060), the median, percentiles, one timed call."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["interleaved", "med", "pct", "timed"]


def interleaved(cases: dict[str, Callable[[], float]], repeat: int) -> dict[str, list[float]]:
    """Run every case ``repeat`` times, rotating the order, so drift hits all cases alike."""
    names = list(cases)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeat):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            gc.collect()
            times[n].append(cases[n]())
    return times


def med(xs: Sequence[float]) -> float:
    """The median."""
    return statistics.median(xs)


def pct(xs: Sequence[int], q: float) -> float:
    """The ``q`` quantile of ``xs``: the sorted value at rank ``q * len(xs)``, no interpolation."""
    s = sorted(xs)
    return float(s[min(len(s) - 1, int(q * len(s)))])


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` took."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
