"""Section 4, memory: the peak RSS growth of ``read_replay``, each file in a fresh process
(``python -m benchmarks.run --child-memory FILE``), windowed files beside full ones."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.config import MB, Config
from benchmarks.library import Library
from benchmarks.report import Report, Row, status_of
from benchmarks.section_data import resume_dataset, window_dataset

__all__ = ["section_memory", "child_memory"]


def _proc_status_kib(field_name: str) -> int:
    # VmHWM (peak) and VmRSS belong to the process's own address space, which starts afresh
    # at exec; ru_maxrss does not (Linux carries the parent's peak across fork and exec).
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def child_memory(path: str) -> None:
    """In a fresh process: peak RSS growth (KiB) of one read_replay of ``path``."""
    lib = Library()
    gc.collect()
    before = _proc_status_kib("VmRSS")
    r = lib.read_replay(path)
    after = _proc_status_kib("VmHWM")
    print(
        json.dumps(
            {
                "before_kib": before,
                "peak_kib": after,
                "messages": len(r.messages),
                "verified": r.verified,
            }
        )
    )


def _measure_memory(path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--child-memory", str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    info: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    info["growth_mb"] = (info["peak_kib"] - info["before_kib"]) / 1024
    return info


def section_memory(cfg: Config, lib: Library, rep: Report) -> None:
    sec = "memory"
    if lib.read_replay is None:
        rep.add(lib.na(sec, "read_replay peak memory", "read_replay"))
        return
    rep.raw["memory"] = {}
    small_window: list[float] = []
    for mb in cfg.memory_mb:
        for kind, ds in (("window", window_dataset(mb)), ("full", resume_dataset("ascii", mb))):
            info = _measure_memory(ds.path)
            rep.raw["memory"][f"{kind}-{mb}MB"] = info | {"bytes": ds.bytes}
            what = "50-message window" if kind == "window" else f"{info['messages']:,} messages"
            rep.add(
                Row(
                    sec,
                    f"read_replay {ds.bytes / MB:.0f} MB file, {what}",
                    f"+{info['growth_mb']:.0f} MB peak RSS",
                    "x file size",
                    info["growth_mb"] * MB / ds.bytes,
                    status="info",
                )
            )
            if kind == "window":
                small_window.append(info["growth_mb"])
    lo, hi = small_window[0], small_window[-1]
    r = hi / max(lo, 1.0)
    rep.add(
        Row(
            sec,
            "window peak, largest / smallest file",
            f"{lo:.0f} -> {hi:.0f} MB",
            "ratio",
            r,
            "<= 1.5x (flat)",
            status_of(r <= 1.5),
        )
    )
    if r > 1.5:
        rep.missed.append("replay_memory")
