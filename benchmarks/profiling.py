"""Profiles of missed goals: where the time of a missed row goes, by the library's hot paths."""

from __future__ import annotations

import cProfile
import io
import pstats
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import gen
from benchmarks.config import Config
from benchmarks.library import Library
from benchmarks.report import Report
from benchmarks.section_data import listing_root, resume_dataset
from ledger import StopKind

__all__ = ["profile_missed"]


# Where the time goes, by the hot paths named in the issue. A Python function belongs to the
# first category one of whose keys its "file:line(name)" contains; a built-in (msgspec's encode,
# hashlib, file reads) is charged to the categories of its callers, in proportion, since
# "msgspec encode" alone cannot say whether the digest or the token estimate asked for it.
_CATEGORIES = (
    ("token estimate", ("estimate_tokens",)),
    ("digest (canonical encode + sha256)", ("digest.py",)),
    (
        "writer encode (records, lines)",
        ("message_records", "encode_line", "encode_record", "split_message", "lines_of"),
    ),
    ("stop read-back (own lines: envelopes, CRC)", ("readback.py", "readback_lines.py")),
    (
        "writer queue / batches / fsync",
        ("writer.py", "writer_start.py", "writer_stop.py", "writer_lines.py"),
    ),
    (
        "decode (read, split, typed decode)",
        ("reader.py", "framing.py", "sources.py", "codec.py", "messages.py", "records.py"),
    ),
    ("reducer step", ("reducer.py", "reducer_facts.py")),
    ("replay bookkeeping (verify, degradations)", ("replay.py",)),
    ("stop facts (tail scan)", ("stop.py",)),
    (
        "listing (paths, open, stat, sort)",
        ("sessions.py", "session_entry.py", "walk.py", "naming.py", "pathlib", "genericpath"),
    ),
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
