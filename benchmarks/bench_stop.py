"""Section 3, stop facts and listing: ``read_stop_facts`` on a small and a big file, sealed and
killed after a resume; ``list_sessions`` over a directory of small rollouts."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.config import GOAL_LIST_10K_S, MB, Config
from benchmarks.library import Library
from benchmarks.report import Report, Row, fmt_time, status_of
from benchmarks.section_data import big_dataset, listing_root, resume_dataset
from benchmarks.timing import interleaved, med, timed

__all__ = ["section_stop"]


def section_stop(cfg: Config, lib: Library, rep: Report) -> None:
    sec = "stop"
    small = resume_dataset("ascii", 1)
    big = big_dataset(cfg.stop_big_mb)
    tail = 40
    small_k = big_dataset(1, killed_after_resume=tail)
    big_k = big_dataset(cfg.stop_big_mb, killed_after_resume=tail)
    files = {"small": small, "big": big, "small_killed": small_k, "big_killed": big_k}
    rep.raw["stop"] = {k: ds.bytes for k, ds in files.items()}
    if lib.read_stop_facts is None:
        rep.add(lib.na(sec, "read_stop_facts 1 MB vs big", "read_stop_facts"))
    else:
        for ds in files.values():
            facts = lib.read_stop_facts(ds.path)
            if not facts.found or facts.checkpoint is None:
                raise RuntimeError(f"read_stop_facts found no stop point in {ds.path}")

        def per_call(p: Path) -> Callable[[], float]:
            def run() -> float:
                k = 50
                t0 = time.perf_counter()
                for _ in range(k):
                    lib.read_stop_facts(p)
                return (time.perf_counter() - t0) / k

            return run

        # Calls of tens of microseconds are at the mercy of preemption on a busy machine: the
        # least of many rounds is the estimate here (as timeit does), not the median.
        times = interleaved({k: per_call(ds.path) for k, ds in files.items()}, 15)
        m = {k: min(v) for k, v in times.items()}
        rep.raw["stop"]["seconds_per_call"] = times
        size = f"{big.bytes / MB:,.0f} MB"
        for suffix, what in (("", "sealed (terminal path)"), ("_killed", f"killed, {tail} after")):
            s, b = m["small" + suffix], m["big" + suffix]
            r = b / s
            rep.add(Row(sec, f"read_stop_facts {what}, 1 MB", fmt_time(s)))
            rep.add(
                Row(
                    sec,
                    f"read_stop_facts {what}, {size}",
                    fmt_time(b),
                    "x the 1 MB file's time",
                    r,
                    "<= 2x",
                    status_of(r <= 2),
                )
            )
            if r > 2:
                rep.missed.append("stop_facts_flat" + suffix)
    n = cfg.list_n
    if lib.list_sessions is None:
        rep.add(lib.na("list", f"list_sessions, {n:,} files", "list_sessions"))
        return
    root = listing_root(n)
    got = len(list(lib.list_sessions(root)))  # also warms the page cache
    if got != n:
        raise RuntimeError(f"list_sessions({root}) listed {got} sessions, expected {n}")
    times = interleaved({"list": lambda: timed(lambda: list(lib.list_sessions(root)))}, 3)
    t = med(times["list"])
    per10k = t * 10_000 / n
    rep.raw["list"] = {"files": n, "seconds": times["list"], "per_10k_s": per10k}
    avg_kb = sum(p.stat().st_size for p in (root / "sessions").iterdir()) / n / 1024
    label = f"list_sessions, {n:,} files of {avg_kb:.0f} KB (warm)"
    rep.add(
        Row(
            "list",
            label,
            f"{fmt_time(t)} ({per10k:.2f} s/10k)",
            f"x {GOAL_LIST_10K_S} s per 10,000",
            per10k / GOAL_LIST_10K_S,
            "<= 1x",
            status_of(per10k <= GOAL_LIST_10K_S),
        )
    )
    if per10k > GOAL_LIST_10K_S:
        rep.missed.append("list_sessions")
