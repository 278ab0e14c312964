"""Test seams of :class:`~ledger.writer.RolloutWriter`, for this project's tests and for yours.

A framework that builds on the writer tests what happens when records sit in the queue, when
the disk fails mid-batch, or when the process dies between two writes. These functions reach
into the writer so that such tests never touch its private fields:

- :func:`hold` keeps queued records out of the file until a drain asks for them;
- :func:`queued` shows what is queued; :func:`abandon` stops a writer as a kill would;
- :func:`intercept_writes`, :func:`fail_writes` and :func:`stall_writes` replace how one
  writer's batches reach the file (never the process-wide ``os`` functions);
- :func:`wait_failed` waits until a failing write has been noticed;
- :class:`ledger.testing.contract.WriterContract` is the test case every writer passes (it
  needs pytest, so it lives in its own module).
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import os
import threading
from collections.abc import Callable, Iterator, Sequence

from ledger.batch_writes import writev_all
from ledger.writer import RolloutWriter

__all__ = [
    "WriteBatch",
    "abandon",
    "fail_writes",
    "hold",
    "intercept_writes",
    "queued",
    "stall_writes",
    "wait_failed",
]

WriteBatch = Callable[[int, Sequence[bytes | memoryview]], int]
"""How a batch reaches the file: ``(fd, buffers) -> bytes written`` (all of them, or raise)."""


@contextlib.contextmanager
def hold(writer: RolloutWriter) -> Iterator[RolloutWriter]:
    """Inside the block, the worker writes nothing until a drain (or stop, close) asks for it."""
    q = writer._q
    with q.cond:
        q.hold = True
    try:
        yield writer
    finally:
        with q.cond:
            q.hold = False
            q.cond.notify_all()


def queued(writer: RolloutWriter) -> tuple[bytes, ...]:
    """The encoded records waiting in the queue (without line ends), oldest first."""
    q = writer._q
    with q.cond:
        return tuple(q.queue)


def abandon(writer: RolloutWriter) -> list[bytes]:
    """Stop ``writer`` as a killed process would: what is queued is not written, there is no
    stop point, and the file is closed (which releases the lock, as the death would).

    Returns the queued records, each with its line end: what the process was about to write.
    """
    return [line + b"\n" for line in writer._abandon()]


@contextlib.contextmanager
def intercept_writes(
    writer: RolloutWriter, write: Callable[[int, Sequence[bytes | memoryview], WriteBatch], int]
) -> Iterator[None]:
    """Route the writer's batch writes through ``write(fd, buffers, real_write)`` in the block."""
    q = writer._q
    real = q.write
    q.write = lambda fd, buffers: write(fd, buffers, real)
    try:
        yield
    finally:
        q.write = real


@contextlib.contextmanager
def fail_writes(
    writer: RolloutWriter, error: int = errno_codes.ENOSPC, *, after: int = 0, partial: int = 0
) -> Iterator[None]:
    """Let ``after`` batch writes through, then write ``partial`` bytes of the next one and fail
    it, and every later one, with ``OSError(error)`` (a full disk by default)."""
    state = {"calls": 0, "partial": partial}

    def write(fd: int, buffers: Sequence[bytes | memoryview], real: WriteBatch) -> int:
        state["calls"] += 1
        if state["calls"] <= after:
            return real(fd, buffers)
        if state["partial"]:
            data = b"".join(buffers)[: state["partial"]]
            state["partial"] = 0
            writev_all(fd, [data])
        raise OSError(error, os.strerror(error))

    with intercept_writes(writer, write):
        yield


def stall_writes(
    writer: RolloutWriter, *, after: int, cut: Callable[[bytes], int]
) -> threading.Event:
    """Let ``after`` batch writes through, then write the first ``cut(batch)`` bytes of the next
    batch and block the worker for good: a process killed in the middle of a write.

    Returns an event set once the partial write is in the file. Not undone: kill the process.
    """
    stalled = threading.Event()
    calls = [0]
    q = writer._q
    real = q.write

    def write(fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        calls[0] += 1
        if calls[0] <= after:
            return real(fd, buffers)
        data = b"".join(buffers)
        writev_all(fd, [data[: cut(data)]])
        stalled.set()
        threading.Event().wait()
        raise OSError(errno_codes.EIO, "unreachable")

    q.write = write
    return stalled


def wait_failed(writer: RolloutWriter, timeout: float = 10.0) -> BaseException:
    """Ask the worker to write what is queued and wait until a write has failed; return the
    writer's error without raising it (a drain would be an entry point of its own)."""
    q = writer._q
    with q.cond:
        q.flush_wanted = q.taken + len(q.queue)
        q.cond.notify_all()
        if not q.cond.wait_for(lambda: q.error is not None, timeout):
            raise TimeoutError(f"no write of {writer.path} failed within {timeout} s")
        assert q.error is not None
        return q.error
