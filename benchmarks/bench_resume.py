"""Section 2, resume: verified ``read_replay`` at several sizes, ASCII and CJK, against
``json.loads`` per line, the floor and the peers' reads."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import datasets, gen, peer_shapes, peers
from benchmarks.config import GOAL_REPLAY_FLOOR, GOAL_REPLAY_JSON, MB, Config
from benchmarks.library import Library
from benchmarks.report import Report, Row, fmt_time, status_of
from benchmarks.section_data import resume_dataset
from benchmarks.timing import interleaved, med
from ledger import Message

__all__ = ["section_resume"]


def _peer_db(
    ds: datasets.Dataset,
    name: str,
    fill: Callable[[Path, list[Any]], None],
    convert: Callable[[Message], Any],
    variant: str,
) -> Path:
    db = ds.path.parent / f"{name}.db"
    done = ds.path.parent / f"{name}.done"
    if not done.exists():
        db.unlink(missing_ok=True)
        msgs = gen.conversation(ds.messages, variant)
        fill(db, [convert(m) for m in msgs])
        done.touch()
    return db


def section_resume(cfg: Config, lib: Library, rep: Report) -> None:
    sec = "resume"
    rep.raw["resume"] = {}
    for variant in gen.VARIANTS:
        for mb in cfg.resume_mb:
            ds = resume_dataset(variant, mb)
            cases: dict[str, Callable[[], float]] = {
                "json.loads": lambda ds=ds: peers.json_read(ds.path),
                "floor": lambda ds=ds: peers.floor_read(ds.path),
            }
            if lib.read_replay is not None:
                r = lib.read_replay(ds.path)
                if not r.verified or len(r.messages) != ds.messages:
                    raise RuntimeError(
                        f"read_replay of {ds.path} gave verified={r.verified} and "
                        f"{len(r.messages)} messages (expected {ds.messages}): the data or the "
                        "library is wrong; delete benchmarks/data and run again"
                    )

                def library(ds: datasets.Dataset = ds) -> float:
                    t0 = time.perf_counter()
                    lib.read_replay(ds.path)
                    return time.perf_counter() - t0

                cases["library"] = library
                if mb == max(cfg.resume_mb):
                    # The same replay with a token budget, so the token estimate is computed:
                    # what a caller that guards its context window pays on top.
                    def budgeted(ds: datasets.Dataset = ds) -> float:
                        t0 = time.perf_counter()
                        lib.read_replay(ds.path, token_budget=1 << 62)
                        return time.perf_counter() - t0

                    cases["library_budget"] = budgeted
            for name, fill, convert, read in (
                ("sqlite", peers.sqlite_fill, peer_shapes.to_openai_items, peers.sqlite_read),
                ("langgraph", peers.langgraph_fill, peer_shapes.to_langchain, peers.langgraph_read),
            ):
                try:
                    db = _peer_db(ds, name, fill, convert, variant)
                except (peers.PeerMissingError, ImportError):
                    continue
                cases[name] = lambda db=db, read=read: read(db)[0]
            times = interleaved(cases, cfg.resume_repeat[mb])
            m = {k: med(v) for k, v in times.items()}
            rep.raw["resume"][f"{variant}-{mb}MB"] = {
                "bytes": ds.bytes,
                "messages": ds.messages,
                "seconds": times,
            }
            case = f"{variant} {mb} MB ({ds.messages:,} msgs)"
            if "library" not in m:
                rep.add(lib.na(sec, f"read_replay {case}", "read_replay"))
                continue
            lt = m["library"]
            rep.add(
                Row(
                    sec,
                    f"read_replay verified, {case}",
                    f"{fmt_time(lt)} {ds.bytes / MB / lt:.0f} MB/s",
                )
            )
            r = lt / m["floor"]
            rep.add(
                Row(
                    sec,
                    "  vs floor: typed decode + sha256",
                    fmt_time(m["floor"]),
                    "x floor's time",
                    r,
                    f"<= {GOAL_REPLAY_FLOOR}x",
                    status_of(r <= GOAL_REPLAY_FLOOR),
                )
            )
            if r > GOAL_REPLAY_FLOOR:
                rep.missed.append(f"replay_vs_floor_{variant}_{mb}")
            r = lt / m["json.loads"]
            rep.add(
                Row(
                    sec,
                    "  vs json.loads per line",
                    fmt_time(m["json.loads"]),
                    "x json.loads' time",
                    r,
                    f"<= {GOAL_REPLAY_JSON:.2f}x",
                    status_of(r <= GOAL_REPLAY_JSON),
                )
            )
            if r > GOAL_REPLAY_JSON:
                rep.missed.append(f"replay_vs_json_{variant}_{mb}")
            if "library_budget" in m:
                r = m["library_budget"] / m["floor"]
                rep.add(
                    Row(
                        sec,
                        "  same with token_budget (estimates tokens)",
                        fmt_time(m["library_budget"]),
                        "x floor's time",
                        r,
                        "info",
                        "info",
                    )
                )
            for k, label in (
                ("sqlite", "SQLiteSession.get_items"),
                ("langgraph", "LangGraph get_tuple"),
            ):
                if k in m:
                    rep.add(
                        Row(
                            sec,
                            f"  vs {label}",
                            fmt_time(m[k]),
                            "speedup",
                            m[k] / lt,
                            status="info",
                        )
                    )
