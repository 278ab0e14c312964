"""The benchmark's configuration: the sizes of a full and a quick run, and the goals of SPEC
section 5 that the rows are held to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "MB",
    "Config",
    "FULL",
    "QUICK",
    "GOAL_WRITE_DEFAULT",
    "GOAL_WRITE_OS",
    "GOAL_APPEND_P99_US",
    "GOAL_REPLAY_FLOOR",
    "GOAL_REPLAY_JSON",
]

MB: Final = 1 << 20


@dataclass(frozen=True)
class Config:
    """Sizes of one run; ``quick`` keeps every section but makes it small."""

    quick: bool
    write_n: int
    write_sqlite_n: int
    write_langgraph_n: int
    write_repeat: int
    resume_mb: tuple[int, ...]
    resume_repeat: dict[int, int]
    stop_big_mb: int
    list_n: int
    memory_mb: tuple[int, ...]
    scale_lib: tuple[int, ...]
    scale_sqlite: tuple[int, ...]
    scale_langgraph: tuple[int, ...]


FULL = Config(
    quick=False,
    write_n=10_000,
    write_sqlite_n=1_000,
    write_langgraph_n=200,
    write_repeat=3,
    resume_mb=(1, 20, 200),
    resume_repeat={1: 7, 20: 5, 200: 3},
    stop_big_mb=1024,
    list_n=10_000,
    memory_mb=(20, 200),
    scale_lib=(1_000, 10_000, 100_000),
    scale_sqlite=(1_000, 10_000),
    scale_langgraph=(100, 300, 1_000),
)

QUICK = Config(
    quick=True,
    write_n=1_500,
    write_sqlite_n=500,
    write_langgraph_n=100,
    write_repeat=2,
    resume_mb=(1, 8),
    resume_repeat={1: 5, 8: 2},
    stop_big_mb=64,
    list_n=1_000,
    memory_mb=(4, 32),
    scale_lib=(500, 5_000),
    scale_sqlite=(500, 1_500),
    scale_langgraph=(50, 150),
)


# The goals of SPEC section 5.
GOAL_WRITE_DEFAULT: Final = 1.5  # append+stop against plain JSONL, default durability
GOAL_WRITE_OS: Final = 2.0  # the same at equal durability (Durability.OS)
GOAL_APPEND_P99_US: Final = 25
GOAL_LIST_10K_S: Final = 0.5  # list_sessions of 10,000 sessions, warm cache
GOAL_REPLAY_FLOOR: Final = 1.2  # verified replay, x the floor's time
GOAL_REPLAY_JSON: Final = 1 / 1.2  # x json.loads' time: at least 1.2x faster
