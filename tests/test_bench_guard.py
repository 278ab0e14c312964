"""The benchmark's regression guard (ADR 0066): it names the goals that moved, and only those."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

# The benchmarks are not an installed package: import them from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import guard


@dataclass
class R:
    section: str
    case: str
    ratio: float | None
    goal: str
    status: str


ROWS = [
    R("resume", "verified replay vs floor, 20 MB", 1.10, "<= 1.2x", "PASS"),
    R("write", "append+stop vs plain", 2.4, ">= 2x", "PASS"),
    R("write", "info row", 3.0, "info", "info"),
]


def test_comparisons_are_keyed_under_the_row_they_compare() -> None:
    """Indented comparison rows of the same name under different rows are different goals."""
    rows = [
        R("resume", "replay ascii 1 MB", None, "", ""),
        R("resume", "  vs floor", 1.1, "<= 1.2x", "PASS"),
        R("resume", "replay cjk 1 MB", None, "", ""),
        R("resume", "  vs floor", 1.3, "<= 1.2x", "MISS"),
        R("resume", "  replay growth", 1.0, "<= 2x", "PASS"),
    ]
    goals = guard.goals_of(rows)
    assert set(goals) == {
        "resume: replay ascii 1 MB / vs floor",
        "resume: replay cjk 1 MB / vs floor",
        "resume: replay growth",
    }


def test_goals_are_the_judged_rows_with_their_direction() -> None:
    """Only PASS/MISS rows with a ratio are goals; a `<=` goal is better lower."""
    goals = guard.goals_of(ROWS)
    assert set(goals) == {"resume: verified replay vs floor, 20 MB", "write: append+stop vs plain"}
    assert not goals["resume: verified replay vs floor, 20 MB"].higher_is_better
    assert goals["write: append+stop vs plain"].higher_is_better


def test_a_baseline_round_trips_and_nothing_moved(tmp_path: Path) -> None:
    """A run compared with its own saved baseline reports nothing; the other mode is kept."""
    path = tmp_path / "baseline.json"
    goals = guard.goals_of(ROWS)
    guard.save_baseline(path, "full", goals, {"commit": "x"})
    guard.save_baseline(path, "quick", goals, {"commit": "y"})
    base = guard.load_baseline(path, "full")
    assert base is not None
    assert base["environment"]["commit"] == "x"
    assert guard.compare(goals, base) == []


def test_a_worse_figure_a_lost_goal_and_noise_are_told_apart(tmp_path: Path) -> None:
    """A slower replay beyond the tolerance is WORSE, a verdict that flips is named with both
    verdicts, a move within the tolerance is not reported, a missing goal is named."""
    path = tmp_path / "baseline.json"
    guard.save_baseline(path, "quick", guard.goals_of(ROWS), {})
    base = guard.load_baseline(path, "quick")
    assert base is not None
    now = [
        R("resume", "verified replay vs floor, 20 MB", 1.15, "<= 1.2x", "PASS"),  # +4.5%: noise
        R("write", "append+stop vs plain", 1.5, ">= 2x", "MISS"),
        R("stop", "new row", 0.5, "<= 1x", "PASS"),
    ]
    moved = {m.key: m for m in guard.compare(guard.goals_of(now), base)}
    assert set(moved) == {"write: append+stop vs plain", "stop: new row"}
    assert moved["write: append+stop vs plain"].worse
    assert "PASS -> MISS" in moved["write: append+stop vs plain"].what
    slower = [R("resume", "verified replay vs floor, 20 MB", 1.19 * 1.0, "<= 1.2x", "PASS")]
    base2 = {"goals": {"resume: verified replay vs floor, 20 MB": {"value": 0.9, "ok": True}}}
    (m,) = guard.compare(guard.goals_of(slower), base2)
    assert m.worse
    assert "+32%" in m.what
