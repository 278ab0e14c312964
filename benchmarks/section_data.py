"""The files the benchmark's sections read, each built once and cached (``datasets.py``): the
rollouts that resume, stop and memory time, the directory the listing walks."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import datasets, gen
from benchmarks.config import MB
from ledger import Message, StopKind, message_records
from ledger.records import Record

__all__ = [
    "records_of",
    "encoded",
    "resume_dataset",
    "big_dataset",
    "window_dataset",
    "listing_root",
]


def records_of(messages: Sequence[Message]) -> list[Record]:
    """The records of ``messages`` numbered as a writer numbers them, after the session meta."""
    out: list[Record] = []
    seq = 2
    for m in messages:
        for r in message_records(m, first_seq=seq, ts=gen.BASE_TS):
            out.append(r)
        seq = out[-1].seq + 1
    return out


def encoded(msgs: Sequence[Message]) -> bytes:
    """The lines of those records: the bytes ``msgs`` take in a rollout."""
    from ledger import encode_line

    return b"".join(encode_line(r) for r in records_of(msgs))


def resume_dataset(variant: str, mb: int) -> datasets.Dataset:
    """The cached sealed rollout of about ``mb`` MB for ``variant``."""

    def build(d: Path) -> Path:
        msgs = gen.messages_for_bytes(variant, mb * MB)
        return datasets.write_rollout(d, f"resume-{variant}-{mb}", lambda: msgs)

    return datasets.dataset(("resume", variant, mb), build)


def big_dataset(mb: int, killed_after_resume: int = 0) -> datasets.Dataset:
    """A sealed rollout of about ``mb`` MB made by cycling a 20 MB conversation.

    With ``killed_after_resume``, that many messages follow the terminal record (resumed, then
    killed): the stop point is no longer the last line.
    """

    def build(d: Path) -> Path:
        base = gen.messages_for_bytes("ascii", 20 * MB)
        per = sum(len(encoded([m])) for m in base[:2000]) / 2000
        total = int(mb * MB / per)

        def messages() -> Any:
            import itertools

            return itertools.islice(itertools.cycle(base), total)

        after = gen.conversation(killed_after_resume, "ascii", seed=3)
        return datasets.write_rollout(d, f"big-{mb}", messages, after_stop=after)

    if killed_after_resume:
        return datasets.dataset(("big", mb, "killed", killed_after_resume), build)
    return datasets.dataset(("big", mb), build)


def listing_root(n: int) -> Path:
    """A directory of ``n`` small sealed rollouts (some children, some killed), built once."""
    root = datasets.data_root() / datasets._key("list", n)
    done = root / ".done"
    if done.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    sessions = root / "sessions"
    base = gen.conversation(12, "ascii")
    for i in range(n):
        k = 3 + i % 9
        datasets.write_rollout(
            sessions,
            f"s{i:06d}",
            lambda k=k: base[:k],
            stop=(StopKind.PAUSED, StopKind.COMPLETED, StopKind.FAILED)[i % 3],
            agent_name="reviewer" if i % 4 == 0 else None,
            parent=f"s{i - 1:06d}" if i % 4 == 0 else None,
            delegation="call_" + str(i) if i % 4 == 0 else None,
        )
    done.touch()
    return root


def window_dataset(mb: int) -> datasets.Dataset:
    """A sealed rollout of about ``mb`` MB whose last ``compacted`` record leaves 50 messages."""

    def build(d: Path) -> Path:
        msgs = gen.messages_for_bytes("ascii", mb * MB)
        tail = gen.conversation(30, "ascii", seed=7)
        return datasets.write_rollout(
            d, f"window-{mb}", lambda: msgs, compact_keep=20, tail_after_compaction=tail
        )

    return datasets.dataset(("window", mb), build)
