"""Section 1, write: ``RolloutWriter`` appending and stopping, against plain JSONL, the peers and
the floor; its phases, its durability at the plain writer's level, and ``append()`` latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import gen, peer_shapes, peers
from benchmarks.config import GOAL_APPEND_P99_US, GOAL_WRITE_DEFAULT, GOAL_WRITE_OS, MB, Config
from benchmarks.library import Library
from benchmarks.report import Report, Row, status_of
from benchmarks.section_data import encoded, records_of
from benchmarks.timing import interleaved, med, pct
from ledger import Message, StopKind

__all__ = ["section_write"]


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
    phases: dict[str, list[float]] = {
        "append": [],
        "drain": [],
        "stop": [],
        "os_stream": [],
        "read_floor": [],
        "decode_floor": [],
    }
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
        # Untimed for the case: the floors of reading the sealed file back (ADR 0163).
        phases["read_floor"].append(peers.read_back_floor(w.path))
        phases["decode_floor"].append(peers.decode_floor(w.path))
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

        def note(label: str, value: str) -> None:
            rep.add(Row(sec, label, value, status="info"))

        def vs_plain(label: str, secs: float) -> None:
            r = per_msg["plain"] / (secs / n)
            rep.add(Row(sec, label, f"{n / secs:,.0f} msg/s", "speedup", r, "info", "info"))

        a = med(phases["append"]) / n * 1e6
        dr = med(phases["drain"])
        s = med(phases["stop"])
        note(
            "  phases: append loop / drain / stop",
            f"{a:.1f} us/msg, {dr * 1e3:.0f} ms, {s * 1e3:.0f} ms",
        )
        streamed = [x + y for x, y in zip(phases["append"], phases["drain"], strict=True)]
        vs_plain("  append+drain (no stop) vs plain", med(streamed))
        # What reading the file back costs at the least (ADR 0163): reading and hashing it,
        # which runs without the interpreter's lock, and decoding it into records and encoding
        # them again (rule 1 and ADR 0052), which holds the lock as the appends do.
        read_floor = med(phases["read_floor"])
        decode_floor = med(phases["decode_floor"])
        note(
            "  read-back floors: read+hash / decode+encode",
            f"{read_floor * 1e3:.0f} ms / {decode_floor * 1e3:.0f} ms",
        )
        vs_plain(
            "  ceiling: appends + decode floor, vs plain", med(phases["append"]) + decode_floor
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
                f"p99 x {GOAL_APPEND_P99_US} us",
                lat["p99"] / GOAL_APPEND_P99_US,
                "<= 1x",
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
