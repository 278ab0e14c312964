"""The benchmark: the library beside its peers and the floor, as ratios taken in one run.

    make bench                      # full run (installs the bench extra on first use)
    make bench BENCH_ARGS=--quick   # small sizes, a fast check
    .venv/bin/python -m benchmarks.run [--quick] [--only write,resume,...] [--no-profile]

Prints one table and writes ``benchmarks/results/latest.json``. Generated data is cached under
``benchmarks/data/`` (both gitignored). Method, peers and floors: ADR 0060 and the README.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import datasets, gen, guard, importing, peer_shapes, peers
from benchmarks.config import (
    FULL,
    GOAL_APPEND_P99_US,
    GOAL_REPLAY_FLOOR,
    GOAL_REPLAY_JSON,
    GOAL_WRITE_DEFAULT,
    GOAL_WRITE_OS,
    MB,
    QUICK,
    Config,
)
from benchmarks.library import Library
from benchmarks.report import Report, Row, fmt_time, header, status_of
from benchmarks.section_data import (
    big_dataset,
    encoded,
    listing_root,
    records_of,
    resume_dataset,
    window_dataset,
)
from benchmarks.timing import interleaved, med, pct, timed
from ledger import Message, StopKind

RESULTS = Path(__file__).resolve().parent / "results"


# --- 1. write ------------------------------------------------------------------------------------


def section_write(cfg: Config, lib: Library, rep: Report, work: Path) -> None:
    n = cfg.write_n
    msgs = gen.conversation(n, "ascii")
    dicts = [peer_shapes.to_plain_dict(m) for m in msgs]
    records = records_of(msgs)
    payload = len(encoded(msgs)) / MB
    items = [peer_shapes.to_openai_items(m) for m in msgs[: cfg.write_sqlite_n]]
    lc_n = cfg.write_langgraph_n
    lc = _langchain(msgs[:lc_n])
    ts = gen.BASE_TS.isoformat()
    latencies: list[int] = []
    phases: dict[str, list[float]] = {"append": [], "drain": [], "stop": [], "os_stream": []}
    counter = iter(range(1_000_000))

    def fresh(name: str) -> Path:
        d = work / f"{name}-{next(counter)}"
        d.mkdir()
        return d

    def library() -> float:
        w = lib.writer.create(fresh("lib"), session_id="bench-write")
        lat = []
        clock = time.perf_counter_ns
        append = w.append
        t0 = time.perf_counter()
        for m in msgs:
            a = clock()
            append(m)
            lat.append(clock() - a)
        t1 = time.perf_counter()
        w.drain()
        t2 = time.perf_counter()
        w.stop(StopKind.PAUSED, reason="bench")
        t3 = time.perf_counter()
        w.close()
        latencies.extend(lat)
        phases["append"].append(t1 - t0)
        phases["drain"].append(t2 - t1)
        phases["stop"].append(t3 - t2)
        return t3 - t0

    cases: dict[str, Callable[[], float]] = {
        "plain": lambda: peers.json_write(fresh("plain") / "s.jsonl", dicts, ts),
        "floor": lambda: peers.floor_write(fresh("floor") / "s.jsonl", records),
    }
    if lib.writer is not None:
        cases["library"] = library
        durability_os = _durability_os()
        if durability_os is not None:
            # The plain writer hands lines to the OS and never fsyncs; this is the library
            # at that same durability, append+drain only and with its stop.
            def library_os() -> float:
                w = lib.writer.create(
                    fresh("lib-os"), session_id="bench-write", durability=durability_os
                )
                t0 = time.perf_counter()
                for m in msgs:
                    w.append(m)
                w.drain()
                t1 = time.perf_counter()
                w.stop(StopKind.PAUSED, reason="bench")
                t2 = time.perf_counter()
                w.close()
                phases["os_stream"].append(t1 - t0)
                return t2 - t0

            cases["library_os"] = library_os
    peer_missing: dict[str, str] = {}
    for name, fn in (
        ("sqlite", lambda: peers.sqlite_write(fresh("sqlite") / "s.db", items)),
        ("langgraph", lambda: peers.langgraph_write(fresh("lg") / "s.db", lc)),
    ):
        try:
            fn()  # a warm-up that also proves the peer is installed
            cases[name] = fn
        except peers.PeerMissingError as exc:
            peer_missing[name] = str(exc)
    times = interleaved(cases, cfg.write_repeat)
    per_msg = {
        k: med(v) / {"sqlite": len(items), "langgraph": lc_n}.get(k, n) for k, v in times.items()
    }
    rep.raw["write"] = {
        "messages": n,
        "payload_mb": payload,
        "sqlite_messages": len(items),
        "langgraph_messages": lc_n,
        "seconds": times,
        "per_message_us": {k: v * 1e6 for k, v in per_msg.items()},
        "peer_missing": peer_missing,
    }

    def rate(k: str) -> str:
        return f"{1 / per_msg[k]:,.0f} msg/s"

    sec = "write"
    if "library" not in per_msg:
        rep.add(lib.na(sec, f"library append+stop, n={n}", "RolloutWriter"))
    else:
        lib_pm = per_msg["library"]
        rep.raw["write"]["library_phases_s"] = phases
        rep.raw["write"]["append_latency_us"] = {
            "p50": pct(latencies, 0.5) / 1e3,
            "p99": pct(latencies, 0.99) / 1e3,
            "p999": pct(latencies, 0.999) / 1e3,
            "max": max(latencies) / 1e3,
        }
        mbps = payload / med(times["library"])
        rep.add(Row(sec, f"library append+stop, n={n}", f"{rate('library')} {mbps:.0f} MB/s"))
        r = per_msg["plain"] / lib_pm
        rep.add(
            Row(
                sec,
                "  vs plain json.dumps+write+flush",
                rate("plain"),
                "speedup",
                r,
                f">= {GOAL_WRITE_DEFAULT}x",
                status_of(r >= GOAL_WRITE_DEFAULT),
            )
        )
        if r < GOAL_WRITE_DEFAULT:
            rep.missed.append("write_vs_plain")
        if "sqlite" in per_msg:
            r = per_msg["sqlite"] / lib_pm
            rep.add(
                Row(
                    sec,
                    f"  vs SQLiteSession.add_items, n={len(items)}",
                    rate("sqlite"),
                    "speedup",
                    r,
                    ">= 50x",
                    status_of(r >= 50),
                )
            )
            if r < 50:
                rep.missed.append("write_vs_sqlite")
        else:
            rep.add(Row(sec, "  vs SQLiteSession", "not available", status="n/a"))
        if "langgraph" in per_msg:
            r = per_msg["langgraph"] / lib_pm
            rep.add(
                Row(
                    sec,
                    f"  vs LangGraph SqliteSaver, n={lc_n}",
                    rate("langgraph"),
                    "speedup",
                    r,
                    "info (grows with n)",
                    "info",
                )
            )
        else:
            rep.add(Row(sec, "  vs LangGraph SqliteSaver", "not available", status="n/a"))
        r = lib_pm / per_msg["floor"]
        rep.add(
            Row(
                sec,
                "  vs floor: msgspec, one buffer, one write",
                rate("floor"),
                "x floor's time",
                r,
                "info",
                "info",
            )
        )
        a = med(phases["append"]) / n * 1e6
        dr = med(phases["drain"])
        s = med(phases["stop"])
        rep.add(
            Row(
                sec,
                "  phases: append loop / drain / stop",
                f"{a:.1f} us/msg, {dr * 1e3:.0f} ms, {s * 1e3:.0f} ms",
                status="info",
            )
        )
        streamed = [x + y for x, y in zip(phases["append"], phases["drain"], strict=True)]
        r = per_msg["plain"] / (med(streamed) / n)
        rep.add(
            Row(
                sec,
                "  append+drain (no stop) vs plain",
                f"{n / med(streamed):,.0f} msg/s",
                "speedup",
                r,
                "info",
                "info",
            )
        )
        if "library_os" in per_msg:
            for label, secs, goal in (
                ("  Durability.OS, append+stop, vs plain", med(times["library_os"]), True),
                ("  Durability.OS, append+drain, vs plain", med(phases["os_stream"]), False),
            ):
                r = per_msg["plain"] / (secs / n)
                rep.add(
                    Row(
                        sec,
                        label,
                        f"{n / secs:,.0f} msg/s",
                        "speedup",
                        r,
                        f">= {GOAL_WRITE_OS}x" if goal else "info",
                        status_of(r >= GOAL_WRITE_OS) if goal else "info",
                    )
                )
                if goal and r < GOAL_WRITE_OS:
                    rep.missed.append("write_vs_plain_os")
        lat = rep.raw["write"]["append_latency_us"]
        rep.add(
            Row(
                sec,
                "append() p50 / p99 / p999",
                f"{lat['p50']:.1f} / {lat['p99']:.1f} / {lat['p999']:.1f} us",
                "",
                None,
                f"p99 <= {GOAL_APPEND_P99_US} us",
                status_of(lat["p99"] <= GOAL_APPEND_P99_US),
            )
        )
        if lat["p99"] > GOAL_APPEND_P99_US:
            rep.missed.append("append_p99")


def _durability_os() -> Any:
    try:
        from ledger.writer import Durability
    except ImportError:
        return None
    return getattr(Durability, "OS", None)


def _langchain(msgs: Sequence[Message]) -> list[Any]:
    try:
        return [peer_shapes.to_langchain(m) for m in msgs]
    except ImportError:
        return []


# --- 2. resume -----------------------------------------------------------------------------------


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


# --- 3. stop facts and listing -------------------------------------------------------------------


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
            "",
            None,
            "<= ~1 s per 10,000",
            status_of(per10k <= 1.2),
        )
    )
    if per10k > 1.2:
        rep.missed.append("list_sessions")


# --- 4. memory -----------------------------------------------------------------------------------


def _proc_status_kib(field_name: str) -> int:
    # VmHWM (peak) and VmRSS belong to the process's own address space, which starts afresh
    # at exec; ru_maxrss does not (Linux carries the parent's peak across fork and exec).
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def _child_memory(path: str) -> None:
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


# --- 5. scaling ----------------------------------------------------------------------------------


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


# --- profiles of missed goals --------------------------------------------------------------------


# Where the time goes, by the hot paths named in the issue. A Python function belongs to the
# first category one of whose keys its "file:line(name)" contains; a built-in (msgspec's encode,
# hashlib, file reads) is charged to the categories of its callers, in proportion, since
# "msgspec encode" alone cannot say whether the digest or the token estimate asked for it.
_CATEGORIES = (
    ("token estimate", ("estimate_tokens",)),
    ("digest (canonical encode + sha256)", ("digest.py",)),
    ("writer encode (records, lines)", ("message_records", "encode_line", "split_message")),
    ("writer queue / batches / fsync", ("writer.py",)),
    ("decode (read, split, typed decode)", ("reader.py", "codec.py", "messages.py", "records.py")),
    ("reducer step", ("reducer.py",)),
    ("replay bookkeeping (verify, degradations)", ("replay.py",)),
    ("stop facts (tail scan)", ("stop.py",)),
    ("listing (paths, open, stat, sort)", ("sessions.py", "naming.py", "pathlib", "genericpath")),
)

_BUILTIN_FALLBACK = (
    ("writer queue / batches / fsync", ("fsync", "posix.write", "_thread.lock")),
    ("decode (read, split, typed decode)", ("msgspec.json.Decoder", "BufferedReader", "FileIO")),
    ("digest (canonical encode + sha256)", ("msgspec.json.Encoder", "HASH")),
)


def _category(where: str, table: tuple[tuple[str, tuple[str, ...]], ...] = _CATEGORIES) -> str:
    return next((c for c, keys in table if any(k in where for k in keys)), "other")


def _where(key: tuple[str, int, str]) -> str:
    file, line, func = key
    return f"{Path(file).name}:{line}({func})" if line else func


def _profile(fn: Callable[[], object]) -> dict[str, Any]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = max(sum(v[2] for v in table.values()), 1e-9)
    rows = []
    shares: dict[str, float] = {c: 0.0 for c, _ in _CATEGORIES} | {"other": 0.0}
    for key, (_cc, nc, tt, ct, callers) in table.items():
        where = _where(key)
        rows.append({"function": where, "calls": nc, "tottime_s": tt, "cumtime_s": ct})
        own = _category(where)
        if key[0] != "~" or not callers:
            shares[own] += tt
            continue
        for caller, info in callers.items():
            cat = _category(_where(caller))
            if cat == "other":
                cat = _category(where, _BUILTIN_FALLBACK)
            shares[cat] += info[2]
    rows.sort(key=lambda r: -r["tottime_s"])
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
    return {
        "total_s": total,
        "share": {k: v / total for k, v in shares.items() if v},
        "top": rows[:12],
        "text": buf.getvalue(),
    }


def profile_missed(cfg: Config, lib: Library, rep: Report, work: Path) -> None:
    if any(m.startswith("replay") for m in rep.missed) and lib.read_replay is not None:
        for variant in gen.VARIANTS:
            ds = resume_dataset(variant, cfg.resume_mb[1] if len(cfg.resume_mb) > 1 else 1)
            rep.profiles[f"read_replay-{variant}"] = _profile(
                lambda ds=ds: lib.read_replay(ds.path)
            )
    if any(m.startswith(("write", "append")) for m in rep.missed) and lib.writer is not None:
        msgs = gen.conversation(cfg.write_n, "ascii")
        d = work / "profile-write"
        d.mkdir()

        def write() -> None:
            w = lib.writer.create(d, session_id="profile")
            for m in msgs:
                w.append(m)
            w.stop(StopKind.PAUSED, reason="bench")
            w.close()

        # cProfile sees the calling thread only: append, drain waits and the stop's rebuild;
        # the worker thread's writes show up as time spent waiting in drain.
        rep.profiles["writer"] = _profile(write)
    if "list_sessions" in rep.missed and lib.list_sessions is not None:
        root = listing_root(cfg.list_n)
        rep.profiles["list_sessions"] = _profile(lambda: list(lib.list_sessions(root)))
    for name, p in rep.profiles.items():
        share = ", ".join(
            f"{k} {v:.0%}" for k, v in sorted(p["share"].items(), key=lambda kv: -kv[1])
        )
        print(f"\nprofile {name}: {p['total_s']:.2f} s in profiled functions; {share}")
        for r in p["top"][:8]:
            print(f"  {r['tottime_s']:7.3f} s  {r['calls']:>9,}  {r['function']}")


# --- main ----------------------------------------------------------------------------------------


def section_import(cfg: Config, rep: Report, work: Path) -> None:
    """Codex and Claude Code files imported, against json.loads (benchmarks/importing.py)."""

    def add(section: str, case: str, value: str, vs: str, r: float, goal: str, ok: bool) -> None:
        rep.add(Row(section, case, value, vs, r, goal, status_of(ok)))
        if not ok:
            rep.missed.append(f"{section}: {case}")

    rep.raw["import"] = importing.section_import(cfg.quick, add, work)


SECTIONS = ("write", "resume", "stop", "memory", "scaling", "import", "fleet")


def section_fleet(cfg: Config, rep: Report) -> None:
    """The object-storage rows (benchmarks/fleet.py)."""
    from benchmarks.fleet import run_fleet

    def add(
        case: str, value: str, vs: str, ratio: float | None, goal: str, ok: bool | None
    ) -> None:
        status = "info" if ok is None else status_of(ok)
        rep.add(Row("fleet", case, value, vs, ratio, goal, status))
        if ok is False:
            rep.missed.append(f"fleet: {case}")

    run_fleet(cfg.quick, add, rep.raw)


def environment(cfg: Config, lib: Library) -> dict[str, Any]:
    try:
        commit = subprocess.run(
            [shutil.which("git") or "/usr/bin/git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if cfg.quick else "full",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "commit": commit,
        "versions": peers.peer_versions(),
        "library_missing": lib.missing,
        "config": asdict(cfg),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="small sizes: a fast check")
    ap.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections among {','.join(SECTIONS)}",
    )
    ap.add_argument("--no-profile", action="store_true", help="skip profiling missed goals")
    ap.add_argument("--out", type=Path, default=RESULTS / "latest.json")
    ap.add_argument(
        "--save-baseline",
        action="store_true",
        help="replace this mode's committed baseline (benchmarks/results/baseline.json)",
    )
    ap.add_argument("--child-memory", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_memory:
        _child_memory(args.child_memory)
        return 0
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s) {sorted(unknown)}: choose among {', '.join(SECTIONS)}")
    cfg = QUICK if args.quick else FULL
    lib = Library()
    rep = Report()
    env = environment(cfg, lib)
    print(
        f"rollout-ledger benchmark ({env['mode']}), Python {env['python']}, {env['cpus']} cpus, "
        f"commit {env['commit'] or '?'}"
    )
    for name, why in lib.missing.items():
        print(f"  not available: {name} ({why})")
    print("ratios compare cases measured in this run; medians of interleaved repetitions\n")
    print(header())
    datasets.data_root().mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=datasets.data_root(), prefix="tmp-") as tmp:
        work = Path(tmp)
        runners: dict[str, Callable[[], None]] = {
            "write": lambda: section_write(cfg, lib, rep, work),
            "resume": lambda: section_resume(cfg, lib, rep),
            "stop": lambda: section_stop(cfg, lib, rep),
            "memory": lambda: section_memory(cfg, lib, rep),
            "scaling": lambda: section_scaling(cfg, lib, rep, work),
            "import": lambda: section_import(cfg, rep, work),
            "fleet": lambda: section_fleet(cfg, rep),
        }
        for s in only:
            t0 = time.perf_counter()
            try:
                runners[s]()
            except Exception as exc:  # one broken section must not lose the others' figures
                rep.errors[s] = traceback.format_exc()
                rep.add(Row(s, "section failed", f"{type(exc).__name__}: {exc}", status="ERROR"))
            rep.raw.setdefault("section_seconds", {})[s] = time.perf_counter() - t0
        if rep.missed and not args.no_profile:
            try:
                profile_missed(cfg, lib, rep, work)
            except Exception:  # a profile is a diagnosis; the figures above stand without it
                rep.errors["profile"] = traceback.format_exc()
    elapsed = time.perf_counter() - t_start
    print(f"\nmissed goals: {', '.join(rep.missed) or 'none'}; took {elapsed:.0f} s")
    for name, tb in rep.errors.items():
        print(f"\nsection {name} failed:\n{tb}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "environment": env,
        "elapsed_s": elapsed,
        "rows": [asdict(r) for r in rep.rows],
        "missed": rep.missed,
        "errors": rep.errors,
        "raw": rep.raw,
        "profiles": rep.profiles,
    }
    args.out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")
    _guard(rep, env, save=args.save_baseline, partial=set(only) != set(SECTIONS))
    return 0


def _guard(rep: Report, env: dict[str, Any], *, save: bool, partial: bool) -> None:
    """Print which goals moved since the committed baseline of this mode (ADR 0066)."""
    path = RESULTS / "baseline.json"
    mode = env["mode"]
    goals = guard.goals_of(rep.rows)
    baseline = guard.load_baseline(path, mode)
    if save:
        guard.save_baseline(path, mode, goals, env)
        print(f"saved the {mode} baseline in {path.name} ({len(goals)} goals)")
    if baseline is None:
        print(f"\nno {mode} baseline in {path.name}: nothing to compare with")
        return
    moved = guard.compare(goals, baseline)
    if partial:  # sections not run are not regressions
        moved = [m for m in moved if m.what != "not measured in this run"]
    when = baseline.get("environment", {}).get("commit") or "?"
    if not moved:
        print(f"\nno goal moved since the {mode} baseline (commit {when})")
        return
    print(f"\ngoals moved since the {mode} baseline (commit {when}):")
    for m in moved:
        print(m)


if __name__ == "__main__":
    sys.exit(main())
