"""Concurrency: many producers, one writer; readers of a file that is being written.

Threads (with a tiny switch interval, to shake out races) and asyncio tasks append to one
writer and to one ``ConversationMemory``; nothing is lost, nothing is duplicated, and each
producer's messages keep their order. Readers replaying, reading stop facts and listing a file
while it is written never crash and only ever see a prefix of what will be written.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ledger import DegradationKind, Message, Reasoning, Role, StopKind
from ledger.memory import ConversationMemory
from ledger.reader import rebuild
from ledger.writer import RolloutWriter, WriterBusyError
from replay import list_sessions, read_replay, read_stop_facts

PRODUCERS = 8
PER_PRODUCER = 150


@pytest.fixture(autouse=True)
def _shaky_switching() -> Iterator[None]:
    """Switch threads as often as possible while a test runs, so that races show."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def produced(k: int, i: int) -> Message:
    """The ``i``-th message of producer ``k``; every third one carries reasoning."""
    if i % 3 == 2:
        return Message(
            role=Role.ASSISTANT,
            content=f"p{k}-{i}",
            reasoning=(Reasoning(text=f"p{k}-{i} thinks"), Reasoning(text=f"p{k}-{i} again")),
        )
    return Message(role=Role.USER, content=f"p{k}-{i}")


def owner(m: Message) -> tuple[int, int]:
    """(producer, index) of a produced message."""
    k, i = str(m.content)[1:].split("-")
    return int(k), int(i)


def run_threads(target: Callable[[int], None], n: int = PRODUCERS) -> None:
    """Run ``target(k)`` in ``n`` threads started together; re-raise the first failure."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            barrier.wait()
            target(k)
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def assert_interleaving(messages: tuple[Message, ...] | list[Message], per: int) -> None:
    """Every producer's messages are all there, once each, in the order it appended them."""
    seen: dict[int, list[int]] = {}
    for m in messages:
        k, i = owner(m)
        assert m == produced(k, i), "a message was altered (reasoning attached elsewhere?)"
        seen.setdefault(k, []).append(i)
    assert sorted(seen) == list(range(PRODUCERS))
    for k, order in seen.items():
        assert order == list(range(per)), f"producer {k}: {order[:10]}..."


def test_threads_appending_to_one_writer_lose_nothing(tmp_path: Path) -> None:
    """Eight threads appending to one writer: every message lands once, in per-thread order."""
    with RolloutWriter.create(tmp_path) as w:

        def produce(k: int) -> None:
            for i in range(PER_PRODUCER):
                w.append(produced(k, i))
                if i % 50 == 49:
                    w.drain()

        run_threads(produce)
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.degraded == ()
    assert len(rep.messages) == PRODUCERS * PER_PRODUCER
    assert_interleaving(rep.messages, PER_PRODUCER)


def test_threads_stopping_while_others_append_keep_every_checkpoint_exact(tmp_path: Path) -> None:
    """Stops racing with appends from other threads still write a checkpoint of the file."""
    with RolloutWriter.create(tmp_path) as w:

        def produce(k: int) -> None:
            for i in range(60):
                w.append(produced(k, i))
                if k == 0 and i % 20 == 19:
                    w.stop(StopKind.PAUSED, reason=f"pause {i}")

        run_threads(produce)
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.degraded == ()
    assert_interleaving(rep.messages, 60)


def test_threads_appending_to_one_memory_lose_nothing() -> None:
    """Eight threads appending to one ConversationMemory: nothing lost, per-thread order kept."""
    memory = ConversationMemory()

    def produce(k: int) -> None:
        for i in range(PER_PRODUCER):
            memory.append(produced(k, i))
            if i % 10 == 0:
                snap = memory.snapshot()
                assert len(snap) <= PRODUCERS * PER_PRODUCER

    run_threads(produce)
    snap = memory.snapshot()
    assert len(snap) == PRODUCERS * PER_PRODUCER
    assert_interleaving(snap, PER_PRODUCER)


def test_memory_bound_to_a_writer_keeps_the_same_order_as_the_file(tmp_path: Path) -> None:
    """A memory bound to a writer and fed by eight threads agrees with its rollout, in order."""
    for rnd in range(4):
        with RolloutWriter.create(tmp_path / str(rnd)) as w:
            memory = ConversationMemory(max_size=10_000, writer=w)
            run_threads(lambda k: [memory.append(produced(k, i)) for i in range(150)])  # noqa: B023
            w.stop(StopKind.PAUSED)
        rep = read_replay(w.path)
        assert rep.verified
        assert rep.messages == memory.snapshot(), f"round {rnd}: memory and file disagree"
        assert_interleaving(rep.messages, 150)


def test_asyncio_tasks_appending_lose_nothing(tmp_path: Path) -> None:
    """Many asyncio tasks appending and draining through the async forms lose nothing."""

    async def main() -> Path:
        w = RolloutWriter.create(tmp_path)
        async with w:

            async def produce(k: int) -> None:
                for i in range(PER_PRODUCER):
                    w.append(produced(k, i))
                    if i % 7 == 0:
                        await asyncio.sleep(0)
                    if i % 40 == 39:
                        await w.adrain()

            await asyncio.gather(*(produce(k) for k in range(PRODUCERS)))
            await w.astop(StopKind.PAUSED)
        return w.path

    path = asyncio.run(main())
    rep = read_replay(path)
    assert rep.verified
    assert rep.degraded == ()
    assert_interleaving(rep.messages, PER_PRODUCER)


# Damage a reader may see in a file whose writer is still writing: the batch being written may
# not have reached its end yet.
IN_PROGRESS = frozenset(
    {
        DegradationKind.TORN_TAIL,
        DegradationKind.ORPHAN_REASONING,
        DegradationKind.NO_CHECKPOINT,
        DegradationKind.AFTER_CHECKPOINT,
    }
)


def test_readers_of_a_file_being_written_see_a_prefix(tmp_path: Path) -> None:
    """Replaying, reading stop facts and listing while a writer writes never fails."""
    w = RolloutWriter.create(tmp_path)
    total = 1500
    done = threading.Event()
    reads = {"replay": 0, "stop": 0, "list": 0, "rebuild": 0}

    def write() -> None:
        try:
            for i in range(total):
                w.append(produced(i % PRODUCERS, i // PRODUCERS))
                if i % 97 == 0:
                    w.drain()
                if i % 500 == 499:
                    w.stop(StopKind.PAUSED)
            w.stop(StopKind.COMPLETED)
        finally:
            done.set()

    def read(k: int) -> None:
        while not done.is_set():
            if k == 0:
                rep = read_replay(w.path)
                assert {d.kind for d in rep.degraded} <= IN_PROGRESS, rep.degraded
                got = rep.messages
                assert got == tuple(
                    produced(i % PRODUCERS, i // PRODUCERS) for i in range(len(got))
                )
                reads["replay"] += 1
            elif k == 1:
                facts = read_stop_facts(w.path)
                assert facts.kind in (None, StopKind.PAUSED, StopKind.COMPLETED)
                reads["stop"] += 1
            elif k == 2:
                [entry] = list_sessions(tmp_path)
                assert entry.session_id == w.session_id
                reads["list"] += 1
            else:
                state = rebuild(w.path)
                assert {d.kind for d in state.degraded} <= IN_PROGRESS
                reads["rebuild"] += 1

    writer_thread = threading.Thread(target=write)
    writer_thread.start()
    try:
        run_threads(read, 4)
    finally:
        writer_thread.join()
        w.close()
    rep = read_replay(w.path)
    assert rep.verified
    assert len(rep.messages) == total
    assert read_stop_facts(w.path).kind == StopKind.COMPLETED
    assert all(n > 0 for n in reads.values()), reads


def test_racing_opens_of_one_file_let_exactly_one_writer_in(tmp_path: Path) -> None:
    """Eight threads opening the same rollout at once: one gets it, the others are refused."""
    with RolloutWriter.create(tmp_path) as first:
        first.append(produced(0, 0))
    path = first.path
    winners: list[RolloutWriter] = []
    refused: list[WriterBusyError] = []
    lock = threading.Lock()

    def try_open(k: int) -> None:
        try:
            w = RolloutWriter.open(path)
        except WriterBusyError as exc:
            with lock:
                refused.append(exc)
            return
        with lock:
            winners.append(w)

    run_threads(try_open)
    try:
        assert len(winners) == 1
        assert len(refused) == PRODUCERS - 1
        assert all(str(path) in str(e) for e in refused)
    finally:
        for w in winners:
            w.close()
