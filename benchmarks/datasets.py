"""Sealed rollout files for the benchmark, and the cache that keeps them between runs.

Files are written with the library's own encoder (``encode_line``, ``message_records``) and
sealed with a checkpoint computed by ``checkpoint_digest``, exactly as the writer's terminal path
would seal them. Each is built once under ``benchmarks/data/`` and found again by its key.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import msgspec

from benchmarks.gen import BASE_TS, GEN_VERSION
from ledger import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Compacted,
    Message,
    SessionMeta,
    StopKind,
    Terminal,
    checkpoint_digest,
    encode_line,
    message_records,
    rollout_filename,
)

__all__ = [
    "write_rollout",
    "Dataset",
    "data_root",
    "dataset",
]


# --- rollout files -------------------------------------------------------------------------------


def _meta(
    session_id: str,
    started: datetime,
    agent_name: str | None = None,
    parent: str | None = None,
    delegation: str | None = None,
) -> SessionMeta:
    return SessionMeta(
        seq=1,
        ts=started,
        format_version=FORMAT_VERSION,
        session_id=session_id,
        started_at=started,
        agent_name=agent_name,
        parent_session_id=parent,
        delegation_id=delegation,
        model="gpt-bench",
        provider="openai",
        cwd="/srv/project",
        project="bench",
    )


def write_rollout(
    directory: Path,
    session_id: str,
    messages: Callable[[], Iterable[Message]],
    *,
    compact_keep: int | None = None,
    tail_after_compaction: Iterable[Message] = (),
    stop: StopKind = StopKind.PAUSED,
    agent_name: str | None = None,
    parent: str | None = None,
    delegation: str | None = None,
    after_stop: Iterable[Message] = (),
) -> Path:
    """Write a sealed rollout of ``messages()`` (called twice: body, digest) into ``directory``.

    With ``compact_keep``, a ``compacted`` record keeping the last ``compact_keep`` messages
    follows the body, then ``tail_after_compaction``: the replayed window is that small part.
    With ``after_stop``, those messages follow the terminal record: a session resumed after its
    stop and then killed, so the last checkpoint is no longer at the tail.
    The file is written under a temporary name and renamed, so a cached file is always whole.
    """
    directory.mkdir(parents=True, exist_ok=True)
    name = rollout_filename(BASE_TS, session_id, agent_name)
    path = directory / name
    tmp = directory / (name + ".part")
    ts = BASE_TS
    seq = 1
    buf = bytearray()
    kept: list[Message] = []
    tail = list(tail_after_compaction)
    with open(tmp, "wb") as f:
        buf += encode_line(_meta(session_id, BASE_TS, agent_name, parent, delegation))
        for m in messages():
            seq += 1
            for rec in message_records(m, first_seq=seq, ts=ts):
                buf += encode_line(rec)
                seq = rec.seq
            if compact_keep is not None:
                kept.append(m)
                if len(kept) > 2 * compact_keep:
                    del kept[:-compact_keep]
            if len(buf) >= 1 << 22:
                f.write(buf)
                buf.clear()
        if compact_keep is not None:
            window = tuple(kept[-compact_keep:])
            seq += 1
            buf += encode_line(Compacted(seq=seq, ts=ts, messages=window, summary="compacted"))
            for m in tail:
                seq += 1
                for rec in message_records(m, first_seq=seq, ts=ts):
                    buf += encode_line(rec)
                    seq = rec.seq
            rebuilt = window + tuple(tail)
            digest = checkpoint_digest(tail, compacted=window)
            count = len(rebuilt)
        else:
            counter = _Counting(messages())
            digest = checkpoint_digest(counter)
            count = counter.n
        end = ts + timedelta(seconds=1)
        buf += encode_line(AgentCheckpoint(seq=seq + 1, ts=end, digest=digest, message_count=count))
        buf += encode_line(Terminal(seq=seq + 2, ts=end, stop_kind=stop.value, reason="bench"))
        seq += 2
        for m in after_stop:
            seq += 1
            for rec in message_records(m, first_seq=seq, ts=end):
                buf += encode_line(rec)
                seq = rec.seq
        f.write(buf)
    os.replace(tmp, path)
    return path


class _Counting:
    """An iterable that counts what passes through it (for the checkpoint's message count)."""

    def __init__(self, it: Iterable[Message]) -> None:
        self._it = it
        self.n = 0

    def __iter__(self) -> Iterator[Message]:
        for m in self._it:
            self.n += 1
            yield m


# --- the cache -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """One cached rollout file and what it holds."""

    path: Path
    messages: int
    bytes: int


def data_root() -> Path:
    """Where generated data is cached (gitignored); ``BENCH_DATA`` overrides it."""
    env = os.environ.get("BENCH_DATA")
    return Path(env) if env else Path(__file__).resolve().parent / "data"


def _key(*parts: object) -> str:
    text = "-".join(str(p) for p in (f"g{GEN_VERSION}", *parts))
    return text + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def dataset(key_parts: tuple[object, ...], build: Callable[[Path], Path]) -> Dataset:
    """Return the cached dataset named by ``key_parts``, building it once with ``build(dir)``."""
    d = data_root() / _key(*key_parts)
    manifest = d / "manifest.json"
    if manifest.exists():
        info = json.loads(manifest.read_text())
        path = d / info["file"]
        if path.exists() and path.stat().st_size == info["bytes"]:
            return Dataset(path=path, messages=info["messages"], bytes=info["bytes"])
    path = build(d)
    messages = _count_messages(path)
    info = {"file": path.name, "bytes": path.stat().st_size, "messages": messages}
    manifest.write_text(json.dumps(info))
    return Dataset(path=path, messages=messages, bytes=info["bytes"])


def _count_messages(path: Path) -> int:
    # The messages replay rebuilds: the last checkpoint's count plus the messages after it
    # (a session resumed after its stop point and killed has some).
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - (1 << 22)))
        lines = f.read().splitlines()
    after = 0
    for line in reversed(lines):
        if line.startswith(b'{"type":"message"'):
            after += 1
        elif line.startswith(b'{"type":"agent_checkpoint"'):
            return int(msgspec.json.decode(line)["message_count"]) + after
    raise ValueError(f"{path}: no checkpoint in the last 4 MB")
