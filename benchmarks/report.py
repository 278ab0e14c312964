"""The benchmark's report: the rows of its table, as printed and as kept for the JSON file."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Row", "Report", "status_of", "fmt_time", "header"]


@dataclass
class Row:
    """One line of the table."""

    section: str
    case: str
    value: str
    vs: str = ""
    ratio: float | None = None
    goal: str = ""
    status: str = ""


@dataclass
class Report:
    """Everything one run measured: the table rows, raw figures, profiles."""

    rows: list[Row] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, Any] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def add(self, *rows: Row) -> None:
        for r in rows:
            self.rows.append(r)
            print(_format_row(r), flush=True)


def status_of(ok: bool) -> str:
    """The status of a row held to a goal."""
    return "PASS" if ok else "MISS"


def fmt_time(seconds: float) -> str:
    """A duration in the unit that reads best: s, ms or us."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def _fmt_ratio(r: float | None) -> str:
    if r is None or math.isnan(r):
        return ""
    return f"{r:.2f}x" if r < 100 else f"{r:.0f}x"


_COLS = (("section", 7), ("case", 46), ("value", 28), ("vs", 24), ("ratio", 7), ("goal", 20))


def _format_row(r: Row) -> str:
    cells = (r.section, r.case, r.value, r.vs, _fmt_ratio(r.ratio), r.goal)
    out = "  ".join(str(c)[:w].ljust(w) for c, (_, w) in zip(cells, _COLS, strict=True))
    return (out + "  " + r.status).rstrip()


def header() -> str:
    """The table's column names, underlined."""
    head = "  ".join(n.ljust(w) for n, w in _COLS) + "  status"
    return head + "\n" + "-" * len(head)
