"""The peers and the floors the library is measured against, each as one small callable.

Every function does one unit of work on data prepared beforehand and returns the seconds its
timed part took, so that the harness can interleave cases and compare them in one run.

- plain JSONL: ``json.dumps`` + ``write`` + ``flush`` per line; ``json.loads`` per line.
- ``openai-agents`` ``SQLiteSession``: ``add_items`` once per message; ``get_items``.
- LangGraph ``SqliteSaver``: a checkpoint holding the whole message list after every step, as a
  ``StateGraph`` over ``MessagesState`` writes it; the last checkpoint loaded with
  ``get_tuple``. The saver is driven directly, without a graph around it: that spares the peer
  its scheduling overhead, so its figures are a lower bound of its real cost.
- the floors: ``msgspec`` encoding of the same records into one buffer and one write; a bare
  typed decode of the same file into the record union, line by line, plus sha256 of its bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from ledger.records import Record

__all__ = [
    "PeerMissingError",
    "floor_read",
    "read_back_floor",
    "decode_floor",
    "floor_write",
    "json_read",
    "json_write",
    "langgraph_fill",
    "langgraph_read",
    "langgraph_write",
    "peer_versions",
    "sqlite_fill",
    "sqlite_read",
    "sqlite_write",
]


class PeerMissingError(RuntimeError):
    """A peer's package is not installed (run ``make bench``, which installs the extra)."""


def peer_versions() -> dict[str, str | None]:
    """Installed versions of the peers (``None`` when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for dist in (
        "msgspec",
        "openai-agents",
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-checkpoint-sqlite",
        "langchain-core",
    ):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


# --- plain JSONL ---------------------------------------------------------------------------------


def json_write(path: Path, dicts: Sequence[dict[str, Any]], ts: str) -> float:
    """Write one line per message with ``json.dumps`` and flush after every line."""
    with open(path, "w", encoding="utf-8") as f:
        t0 = time.perf_counter()
        for seq, d in enumerate(dicts, 2):
            f.write(json.dumps({"type": "message", "seq": seq, "ts": ts, "message": d}) + "\n")
            f.flush()
        return time.perf_counter() - t0


def json_read(path: Path) -> float:
    """Parse every line of a rollout with ``json.loads`` (no types, no checks, no state)."""
    loads = json.loads
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        for line in f:
            loads(line)
    return time.perf_counter() - t0


# --- the floors ----------------------------------------------------------------------------------


_floor_encoder = msgspec.json.Encoder(order="deterministic")
_floor_decoder: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)


def floor_write(path: Path, records: Sequence[Record]) -> float:
    """Encode already-built records into one buffer and write it with one call."""
    encode_into = _floor_encoder.encode_into
    with open(path, "wb") as f:
        t0 = time.perf_counter()
        buf = bytearray()
        for r in records:
            encode_into(r, buf, -1)
            buf += b"\n"
        f.write(buf)
        f.flush()
        return time.perf_counter() - t0


def floor_read(path: Path) -> float:
    """Decode every line into the typed record union and sha256 the file's bytes."""
    decode = _floor_decoder.decode
    t0 = time.perf_counter()
    h = hashlib.sha256()
    update = h.update
    with open(path, "rb") as f:
        for line in f:
            decode(line)
            update(line)
    h.hexdigest()
    return time.perf_counter() - t0


def read_back_floor(path: Path) -> float:
    """Read a file once, into one reused buffer, with sha256 and CRC-32 of every byte: what a
    read-back of it (SPEC rule 1) costs in reading and hashing, with no line found, nothing
    decoded and nothing folded. All of it runs without the interpreter's lock."""
    buf = bytearray(1 << 17)
    view = memoryview(buf)
    t0 = time.perf_counter()
    h = hashlib.sha256()
    crc = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
            crc = zlib.crc32(view[:n], crc)
    h.hexdigest()
    return time.perf_counter() - t0


def decode_floor(path: Path) -> float:
    """Decode a file's lines into typed records and encode them again, one call each per
    block of whole lines: the work a read-back must do while it holds the interpreter's lock,
    since it rebuilds the conversation from the file (SPEC rule 1) and checks that the records
    come back as written (ADR 0052). Reading and hashing are left out (see
    :func:`read_back_floor`)."""
    data = path.read_bytes()
    decode_lines = _floor_decoder.decode_lines
    encode_lines = _floor_encoder.encode_lines
    view = memoryview(data)
    spent = 0.0
    start = 0
    while start < len(data):
        cut = data.find(b"\n", start + (1 << 20) - 1)
        end = len(data) if cut < 0 else cut + 1
        t0 = time.perf_counter()
        encode_lines(decode_lines(view[start:end]))
        spent += time.perf_counter() - t0
        start = end
    return spent


# --- openai-agents SQLiteSession ------------------------------------------------------------------


def _sqlite_session() -> Any:
    try:
        from agents.memory import SQLiteSession
    except ImportError as exc:
        raise PeerMissingError(f"openai-agents is not installed ({exc})") from None
    return SQLiteSession


def sqlite_write(db: Path, items_per_message: Sequence[list[dict[str, Any]]]) -> float:
    """``add_items`` once per message, as an agent loop records each message as it comes."""
    cls = _sqlite_session()

    async def run() -> float:
        session = cls("bench", db)
        try:
            add = session.add_items
            t0 = time.perf_counter()
            for items in items_per_message:
                await add(items)
            return time.perf_counter() - t0
        finally:
            session.close()

    return asyncio.run(run())


def sqlite_fill(db: Path, items_per_message: Sequence[list[dict[str, Any]]]) -> None:
    """Store a whole conversation at once (preparing a read, not timed)."""
    cls = _sqlite_session()

    async def run() -> None:
        session = cls("bench", db)
        try:
            await session.add_items([i for items in items_per_message for i in items])
        finally:
            session.close()

    asyncio.run(run())


def sqlite_read(db: Path) -> tuple[float, int]:
    """Load the whole session with ``get_items``; returns (seconds, items)."""
    cls = _sqlite_session()

    async def run() -> tuple[float, int]:
        session = cls("bench", db)
        try:
            t0 = time.perf_counter()
            items = await session.get_items()
            return time.perf_counter() - t0, len(items)
        finally:
            session.close()

    return asyncio.run(run())


# --- LangGraph SqliteSaver -----------------------------------------------------------------------


def _saver(db: Path) -> tuple[Any, sqlite3.Connection]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        raise PeerMissingError(f"langgraph-checkpoint-sqlite is not installed ({exc})") from None
    conn = sqlite3.connect(db, check_same_thread=False)
    return SqliteSaver(conn), conn


_CONFIG = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}


def langgraph_write(db: Path, lc_messages: Sequence[Any]) -> float:
    """After every message, write a checkpoint whose state is the whole message list so far."""
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    saver, conn = _saver(db)
    try:
        saver.setup()
        config: Any = _CONFIG
        ckpt = empty_checkpoint()
        t0 = time.perf_counter()
        for step in range(1, len(lc_messages) + 1):
            ckpt = create_checkpoint(ckpt, None, step)
            ckpt["channel_values"] = {"messages": list(lc_messages[:step])}
            ckpt["channel_versions"] = {"messages": step}
            config = saver.put(
                config, ckpt, {"source": "loop", "step": step, "parents": {}}, {"messages": step}
            )
        return time.perf_counter() - t0
    finally:
        conn.close()


def langgraph_fill(db: Path, lc_messages: Sequence[Any]) -> None:
    """Store one checkpoint holding the whole conversation (preparing a read, not timed)."""
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    saver, conn = _saver(db)
    try:
        ckpt = create_checkpoint(empty_checkpoint(), None, 1)
        ckpt["channel_values"] = {"messages": list(lc_messages)}
        ckpt["channel_versions"] = {"messages": 1}
        saver.put(_CONFIG, ckpt, {"source": "loop", "step": 1, "parents": {}}, {"messages": 1})
    finally:
        conn.close()


def langgraph_read(db: Path) -> tuple[float, int]:
    """Load the latest checkpoint and its message list; returns (seconds, messages)."""
    saver, conn = _saver(db)
    try:
        t0 = time.perf_counter()
        tup = saver.get_tuple(_CONFIG)
        n = len(tup.checkpoint["channel_values"]["messages"])
        return time.perf_counter() - t0, n
    finally:
        conn.close()
