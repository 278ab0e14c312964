"""Section 5, scaling: the cost per message of the library and its peers as the session grows."""

from __future__ import annotations

import gc
import math
import shutil
import time
from pathlib import Path

from benchmarks import gen, peer_shapes, peers
from benchmarks.config import MB, Config
from benchmarks.library import Library
from benchmarks.report import Report, Row, status_of
from ledger import StopKind

__all__ = ["section_scaling"]


def section_scaling(cfg: Config, lib: Library, rep: Report, work: Path) -> None:
    sec = "scale"
    rep.raw["scaling"] = {
        "library_write": {},
        "library_replay": {},
        "sqlite_write": {},
        "sqlite_read": {},
        "langgraph_write": {},
        "langgraph_read": {},
    }
    raw = rep.raw["scaling"]
    longest = gen.conversation(max(cfg.scale_lib), "ascii")
    if lib.writer is None or lib.read_replay is None:
        rep.add(lib.na(sec, "library cost per message", "RolloutWriter/read_replay"))
    else:
        for n in cfg.scale_lib:
            msgs = longest[:n]
            tw = tr = math.inf
            for attempt in range(2 if n <= 20_000 else 1):
                d = work / f"scale-{n}-{attempt}"
                d.mkdir()
                gc.collect()
                t0 = time.perf_counter()
                w = lib.writer.create(d, session_id=f"scale-{n}")
                for m in msgs:
                    w.append(m)
                w.stop(StopKind.PAUSED, reason="bench")
                t1 = time.perf_counter()
                w.close()
                gc.collect()
                t2 = time.perf_counter()
                lib.read_replay(w.path)
                tr = min(tr, time.perf_counter() - t2)
                tw = min(tw, t1 - t0)
                shutil.rmtree(d)
            raw["library_write"][n] = tw / n * 1e6
            raw["library_replay"][n] = tr / n * 1e6
            rep.add(
                Row(
                    sec,
                    f"library n={n:,}: write / replay per msg",
                    f"{tw / n * 1e6:.1f} / {tr / n * 1e6:.1f} us",
                    status="info",
                )
            )
    try:
        for n in cfg.scale_sqlite:
            d = work / f"sq-{n}"
            d.mkdir()
            items = [peer_shapes.to_openai_items(m) for m in longest[:n]]
            tw = peers.sqlite_write(d / "s.db", items)
            tr, _ = peers.sqlite_read(d / "s.db")
            raw["sqlite_write"][n] = tw / n * 1e6
            raw["sqlite_read"][n] = tr / n * 1e6
            rep.add(
                Row(
                    sec,
                    f"SQLiteSession n={n:,}: write / read per msg",
                    f"{tw / n * 1e6:.0f} / {tr / n * 1e6:.1f} us",
                    status="info",
                )
            )
            shutil.rmtree(d)
    except peers.PeerMissingError as exc:
        rep.add(Row(sec, "SQLiteSession", f"not available ({exc})", status="n/a"))
    try:
        for n in cfg.scale_langgraph:
            d = work / f"lg-{n}"
            d.mkdir()
            lc = [peer_shapes.to_langchain(m) for m in longest[:n]]
            tw = peers.langgraph_write(d / "s.db", lc)
            tr, _ = peers.langgraph_read(d / "s.db")
            size = (d / "s.db").stat().st_size
            raw["langgraph_write"][n] = tw / n * 1e6
            raw["langgraph_read"][n] = tr / n * 1e6
            rep.add(
                Row(
                    sec,
                    f"LangGraph n={n:,}: write / read per msg",
                    f"{tw / n * 1e6:.0f} / {tr / n * 1e6:.1f} us",
                    f"db {size / MB:,.0f} MB",
                    status="info",
                )
            )
            shutil.rmtree(d)
    except (peers.PeerMissingError, ImportError) as exc:
        rep.add(Row(sec, "LangGraph SqliteSaver", f"not available ({exc})", status="n/a"))
    for key, label in (
        ("library_write", "library write"),
        ("library_replay", "library replay"),
        ("sqlite_write", "SQLiteSession write"),
        ("langgraph_write", "LangGraph write"),
    ):
        pts = raw[key]
        if len(pts) >= 2:
            lo, hi = min(pts), max(pts)
            growth = pts[hi] / pts[lo]
            rep.add(
                Row(
                    sec,
                    f"  {label} per msg, n={lo:,} -> {hi:,}",
                    f"{pts[lo]:.1f} -> {pts[hi]:.1f} us",
                    f"growth (length grew {hi // lo}x)",
                    growth,
                    "flat" if key.startswith("library") else "info",
                    status_of(growth <= 1.5) if key.startswith("library") else "info",
                )
            )
            if key.startswith("library") and growth > 1.5:
                rep.missed.append(f"scale_{key}")
