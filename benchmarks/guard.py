"""The regression guard: which goals moved since the committed results file.

``benchmarks/results/baseline.json`` (committed, small) holds, per mode (``quick``, ``full``),
the value and verdict of every judged row of one run and the environment it ran in. After each
run the harness compares its judged rows with the baseline of the same mode and prints those
whose verdict changed, or whose ratio moved by more than :data:`TOLERANCE` of the baseline's;
``make bench BENCH_ARGS="--quick --save-baseline"`` replaces that mode's baseline (ADR 0066).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

__all__ = ["TOLERANCE", "Goal", "Moved", "compare", "goals_of", "load_baseline", "save_baseline"]

TOLERANCE: Final = 0.15
"""A relative change of a goal's value smaller than this is noise on a shared machine."""


class _Row(Protocol):
    section: str
    case: str
    ratio: float | None
    goal: str
    status: str


@dataclass(frozen=True)
class Goal:
    """One judged figure: its value, whether higher is better, its verdict and its threshold."""

    value: float
    higher_is_better: bool
    ok: bool
    goal: str

    def as_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "higher_is_better": self.higher_is_better,
            "ok": self.ok,
            "goal": self.goal,
        }


@dataclass(frozen=True)
class Moved:
    """A goal that moved since the baseline, said in words."""

    key: str
    what: str
    worse: bool

    def __str__(self) -> str:
        return f"  {'WORSE ' if self.worse else 'better'} {self.key}: {self.what}"


def _key(section: str, case: str) -> str:
    # Sizes and counts inside a case name are part of what it measures; spaces are not.
    return f"{section}: " + re.sub(r"\s+", " ", case).strip()


def goals_of(rows: Iterable[_Row]) -> dict[str, Goal]:
    """The judged rows of a run (a PASS or MISS with a ratio) as goals, keyed by section and
    case; a case named alike under several rows (a comparison under the row it compares) is
    keyed under that row.
    A goal written ``<= ...`` is better lower, any other better higher."""
    rows = list(rows)
    seen: dict[tuple[str, str], int] = {}
    for r in rows:
        seen[r.section, r.case] = seen.get((r.section, r.case), 0) + 1
    out: dict[str, Goal] = {}
    parent = ""
    for r in rows:
        if not r.case.startswith(" "):
            parent = r.case
        # A comparison named alike under several rows is told apart by the row above it.
        case = f"{parent} / {r.case}" if seen[r.section, r.case] > 1 else r.case
        if r.status not in ("PASS", "MISS") or r.ratio is None:
            continue
        lower = r.goal.lstrip().startswith(("<=", "<"))
        out[_key(r.section, case)] = Goal(float(r.ratio), not lower, r.status == "PASS", r.goal)
    return out


def load_baseline(path: Path, mode: str) -> dict[str, Any] | None:
    """The baseline of ``mode`` in ``path``, or ``None`` when there is none."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = doc.get(mode) if isinstance(doc, dict) else None
    return entry if isinstance(entry, dict) else None


def save_baseline(
    path: Path, mode: str, goals: dict[str, Goal], environment: dict[str, Any]
) -> None:
    """Replace the baseline of ``mode`` in ``path`` by ``goals`` (the other mode is kept)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    doc[mode] = {
        "environment": {k: environment.get(k) for k in ("when", "commit", "python", "cpus")},
        "goals": {k: g.as_json() for k, g in sorted(goals.items())},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def compare(goals: dict[str, Goal], baseline: dict[str, Any]) -> list[Moved]:
    """The goals whose verdict changed, or whose value moved beyond :data:`TOLERANCE`, since
    ``baseline``; goals new in this run or gone from it are named too."""
    before: dict[str, Any] = baseline.get("goals", {})
    moved: list[Moved] = []
    for key in sorted(set(goals) | set(before)):
        now = goals.get(key)
        then = before.get(key)
        if now is None:
            moved.append(Moved(key, "not measured in this run", worse=True))
            continue
        if then is None:
            moved.append(Moved(key, f"new: {_fmt(now.value)} ({_verdict(now.ok)})", worse=False))
            continue
        old = float(then["value"])
        if bool(then["ok"]) != now.ok:
            what = f"{_verdict(bool(then['ok']))} -> {_verdict(now.ok)} ({_fmt(old)} -> "
            moved.append(Moved(key, what + f"{_fmt(now.value)}, goal {now.goal})", not now.ok))
            continue
        if old and abs(now.value - old) / abs(old) > TOLERANCE:
            better = (now.value > old) == now.higher_is_better
            change = (now.value - old) / abs(old)
            moved.append(
                Moved(key, f"{_fmt(old)} -> {_fmt(now.value)} ({change:+.0%})", not better)
            )
    return moved


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _fmt(x: float) -> str:
    return f"{x:.3g}"
