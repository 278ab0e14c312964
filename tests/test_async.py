"""The async read functions never block the event loop, and return what the blocking ones do."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ledger import FORMAT_VERSION, Message, MessageRecord, Role, SessionMeta, StopKind, encode_line
from replay import (
    alist_sessions,
    aread_replay,
    aread_stop_facts,
    list_sessions,
    read_replay,
    read_stop_facts,
)
from rollout_files import START, RolloutBuilder, conversation

MIB = 1 << 20


def big_rollout(directory: Path, mib: int) -> Path:
    """A rollout of ``mib`` one-MiB user messages, written fast from one encoded line."""
    path = directory / "big.jsonl"
    meta = SessionMeta(
        seq=1, ts=START, format_version=FORMAT_VERSION, session_id="big", started_at=START
    )
    line = encode_line(
        MessageRecord(seq=2, ts=START, message=Message(role=Role.USER, content="x" * MIB))
    )
    head, tail = line.split(b'"seq":2,', 1)
    with path.open("wb") as f:
        f.write(encode_line(meta))
        for seq in range(2, mib + 2):
            f.write(head + b'"seq":%d,' % seq + tail)
    return path


def test_the_loop_keeps_ticking_during_a_200_mb_replay(tmp_path: Path) -> None:
    """A ticker task runs again and again while aread_replay reads, decodes 200 MB."""
    path = big_rollout(tmp_path, 200)

    async def main() -> tuple[int, int]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # the ticker is waiting on its first sleep
        before = ticks
        rep = await aread_replay(path)
        during = ticks - before
        stop.set()
        await task
        return during, len(rep.messages)

    during, messages = asyncio.run(main())
    assert messages == 200
    # On the loop, the read would let the ticker run zero times until it returned.
    assert during >= 3


def test_async_forms_return_what_the_blocking_ones_return(tmp_path: Path) -> None:
    """aread_replay, aread_stop_facts and alist_sessions equal their blocking twins."""
    path = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).write()

    async def main() -> tuple[object, object, object]:
        return (
            await aread_replay(path, max_messages=2),
            await aread_stop_facts(path),
            await alist_sessions(tmp_path),
        )

    rep, facts, listing = asyncio.run(main())
    assert rep == read_replay(path, max_messages=2)
    assert facts == read_stop_facts(path)
    assert listing == list_sessions(tmp_path)


def test_async_forms_raise_what_the_blocking_ones_raise(tmp_path: Path) -> None:
    """Errors cross the thread unchanged: a missing file, a bad parameter."""
    with pytest.raises(FileNotFoundError):
        asyncio.run(aread_replay(tmp_path / "missing.jsonl"))
    path = RolloutBuilder(tmp_path).extend(conversation()).write()
    with pytest.raises(TypeError, match="max_messages"):
        asyncio.run(aread_replay(path, max_messages=2.5))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scan_budget"):
        asyncio.run(aread_stop_facts(path, scan_budget="1"))  # type: ignore[arg-type]
