"""The background worker of a writer: a queue of encoded records written in batches.

A batch is at most :data:`MAX_BATCH_RECORDS` records or waits at most :data:`MAX_BATCH_DELAY`
seconds for more, whichever comes first, and goes to the file as one buffer (ADR 0021); the
batches due at once (a worker behind its caller, a drain) go in one system call.
The worker never closes the descriptor: its writer does, after :meth:`BatchQueue.join`.

Interruption safety (ADR 0055): a ``KeyboardInterrupt`` or a signal handler's exception can
land between any two bytecodes of the caller's thread. So the caller's thread changes exactly
one thing when it enqueues, in one atomic step (``deque.extend``); every count (records taken,
written, the next sequence number) and the writer's witness of its own records (ADR 0052) are
kept by the worker, which no signal interrupts.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from ledger.batch_writes import OwnRecords, slices, synced, whole_batches, writev_all

__all__ = [
    "MAX_BATCH_DELAY",
    "MAX_BATCH_RECORDS",
    "TURN_BYTES",
    "TURN_RECORDS",
    "BatchQueue",
]

MAX_BATCH_RECORDS: Final = 32
"""A batch never holds more records than this."""

MAX_BATCH_DELAY: Final = 0.020
"""Seconds a record may wait in the queue for its batch to fill before it is written."""

TURN_BYTES: Final = 16 << 20
"""The worker takes no further batch in one turn once it holds this many bytes."""

TURN_RECORDS: Final = 8 * MAX_BATCH_RECORDS
"""Nor once it holds this many records (taking them holds the lock ``append`` needs)."""

_NL: Final = b"\n"


class BatchQueue:
    """Encoded records waiting for the worker thread, and what it has written so far.

    ``fail`` turns an exception of the worker (or of a drain) into the writer's error; it is
    called with the queue's lock held and must not take it. Once an error is set nothing more
    is written.
    """

    def __init__(
        self,
        fd: int,
        *,
        name: str,
        next_seq: int,
        size: int,
        fsync_each_batch: bool,
        fail: Callable[[BaseException], BaseException],
        own_seed: int = 0,
    ) -> None:
        self._fd = fd
        self._fsync_each_batch = fsync_each_batch
        self._fail = fail
        self._lock = threading.Lock()
        self.cond = threading.Condition(self._lock)
        self.queue: deque[bytes] = deque()
        self.first_seq = next_seq
        self.taken = 0  # records the worker took from the queue (written or being written)
        self.written = 0
        self.good_size = size
        self.flush_wanted = 0
        self.closing = False
        self.error: BaseException | None = None
        self.own = OwnRecords(next_seq, own_seed)
        self._waiters: list[tuple[int, threading.Lock]] = []  # drains: (target, lock to release)
        # Test seams (ledger.testing): while ``hold`` is set, the worker writes nothing until a
        # drain asks for it; ``write`` is how a batch reaches the file (faults are injected here).
        self.hold = False
        self.write: Callable[[int, Sequence[bytes | memoryview]], int] = writev_all
        self.thread = threading.Thread(target=self._run, name=f"rollout-writer:{name}", daemon=True)

    def start(self) -> None:
        """Start the worker thread (raises ``RuntimeError`` when the system refuses a thread)."""
        self.thread.start()

    def next_seq(self) -> int:
        """The sequence number the next record put will carry."""
        with self._lock:
            return self.first_seq + self.taken + len(self.queue)

    def put(self, lines: list[bytes]) -> None:
        """Enqueue encoded records (without line ends), in order: one atomic step."""
        with self._lock:
            if self.error is not None:
                return  # failed: nothing more is written, and the next entry point raises
            queue = self.queue
            before = len(queue)
            queue.extend(lines)
            # Wake the worker only when it may be waiting for this: the queue was empty, or it
            # just reached a full batch. Notifying on every append costs more than the append.
            if before == 0 or before < MAX_BATCH_RECORDS <= before + len(lines):
                self.cond.notify()

    def wait_written(self) -> BaseException | None:
        """Wait until everything enqueued so far is written; the error if writing failed."""
        # The caller waits on a lock of its own, which the worker releases, and never in
        # Condition.wait: an interruption (a second Ctrl-C, a signal handler that raises) that
        # lands while Condition.wait takes the queue's lock back left the with-block to release
        # a lock this thread did not hold, perhaps while the worker held it (ADR 0055).
        waiter = threading.Lock()
        waiter.acquire()
        with self._lock:
            target = self.taken + len(self.queue)
            if self.written >= target or self.error is not None:
                return self.error
            self.flush_wanted = max(self.flush_wanted, target)
            entry = (target, waiter)
            self._waiters.append(entry)
            self.cond.notify_all()
        try:
            while True:
                released = waiter.acquire(True, 1.0)
                with self._lock:
                    if self.written >= target or self.error is not None:
                        return self.error
                    # The timeout only guards against a worker that died without reporting (it
                    # catches every exception, so only an interpreter shutdown does that).
                    if not released and not self.thread.is_alive():
                        self.error = self._fail(
                            RuntimeError("the writer thread is gone (interpreter shutdown?)")
                        )
                        self._notify()
                        return self.error
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def _notify(self) -> None:
        """Wake the worker, and every drain whose records are written (all of them once the
        writer has failed); the lock is held."""
        self.cond.notify_all()
        waiters = self._waiters
        if waiters:
            failed = self.error is not None
            for entry in [w for w in waiters if failed or w[0] <= self.written]:
                waiters.remove(entry)
                entry[1].release()

    def own_records(self) -> tuple[int, int, int, int]:
        """``(first seq, count, CRC-32, seed)`` of the records written since the writer took the
        file up, or since its last read-back (:meth:`restart_own`)."""
        with self._lock:
            return self.own.snapshot()

    def restart_own(self, seq: int, seed: int) -> None:
        """Count the writer's own records from ``seq`` on, their CRC-32 continuing ``seed`` (that
        of the bytes before them): the records before it were read back. Only with nothing
        queued or being written (after a drain, appends held off)."""
        with self._lock:
            assert not self.queue
            assert self.written == self.taken
            self.own = OwnRecords(seq, seed)

    def join(self) -> None:
        """Let the worker write what is queued (unless failed) and end; wait for it."""
        with self._lock:
            self.closing = True
            self._notify()
        if self.thread.is_alive():
            self.thread.join()

    def take_all(self) -> list[bytes]:
        """Stop the worker without writing what is queued; return the queued records."""
        with self._lock:
            lines = list(self.queue)
            self.queue.clear()
            self.closing = True
            self._notify()
        if self.thread.is_alive():
            self.thread.join()
        return lines

    def fail_now(self, exc: BaseException) -> BaseException:
        """Record a failure seen outside the worker (a drain's fsync); the writer's error."""
        with self._lock:
            if self.error is None:
                self.error = self._fail(exc)
                self.queue.clear()
            self._notify()
            return self.error

    def _take_batches(self) -> tuple[list[list[bytes]], list[int]] | None:
        """Wait for the next batch, and take with it every further batch that is due now: the
        full ones queued behind it, and the last partial one when a drain or close asks for it
        (what successive turns would take at once), up to :data:`TURN_BYTES` or
        :data:`TURN_RECORDS` (None: closing and nothing left, or failed)."""
        cond = self.cond
        monotonic = time.monotonic
        with cond:
            while not self.queue:
                if self.closing or self.error is not None:
                    return None
                cond.wait()
            deadline = monotonic() + MAX_BATCH_DELAY
            while (
                len(self.queue) < MAX_BATCH_RECORDS
                and self.flush_wanted <= self.written
                and not self.closing
            ):
                remaining = deadline - monotonic()
                if remaining <= 0:
                    break
                cond.wait(remaining)
            while self.hold and self.flush_wanted <= self.written and not self.closing:
                cond.wait()
            if self.error is not None:
                return None  # a drain's fsync failed meanwhile: nothing more is written
            if not self.queue:
                return None if self.closing else ([], [])  # taken by take_all meanwhile
            batches = [self._pop_batch()]
        sizes = [_framed(batches[0])]  # each batch's bytes in the file, line ends included
        size = sizes[0]
        records = len(batches[0])
        # The further batches are taken one lock hold each: the caller's appends wait for this
        # lock, and a long hold also made them wait a switch interval for the interpreter's.
        while size < TURN_BYTES and records < TURN_RECORDS:
            with self._lock:
                n = len(self.queue)
                if (
                    not n
                    or self.error is not None
                    # A partial batch nobody waits for keeps its own 20 ms.
                    or (
                        n < MAX_BATCH_RECORDS
                        and not (self.closing or self.flush_wanted > self.taken)
                    )
                    # A held worker writes no further than the drain that let it go asked.
                    or (self.hold and self.flush_wanted <= self.taken)
                ):
                    break
                batch = self._pop_batch()
            batches.append(batch)
            sizes.append(_framed(batch))
            size += sizes[-1]
            records += len(batch)
        return batches, sizes

    def _pop_batch(self) -> list[bytes]:
        """The next batch from the queue; the lock is held."""
        popleft = self.queue.popleft
        batch = [popleft() for _ in range(min(MAX_BATCH_RECORDS, len(self.queue)))]
        self.taken += len(batch)
        return batch

    def _run(self) -> None:
        fd = self._fd
        per_batch = self._fsync_each_batch
        while True:
            turn = self._take_batches()
            if turn is None:
                return
            batches, sizes = turn
            if not batches:
                continue
            # The batches of a turn are joined into one buffer and go out in one system call,
            # one slice per batch: every time this thread gives the interpreter's lock up (to
            # write, to wait, or in a CRC-32 over more than 5 KiB) it waits up to the switch
            # interval (5 ms) to get it back while the caller appends, so a worker that wrote
            # one batch per turn fell behind and left most of a large session to the drain.
            records = [line for batch in batches for line in batch]
            data = _NL.join([*records, b""])
            wrote = False
            try:
                self.write(fd, slices(data, sizes))
                wrote = True
                if per_batch:
                    os.fsync(fd)
            except BaseException as exc:  # any failure must reach the caller, not die here
                # The batches the failed write did put in the file whole are kept and counted,
                # as when each batch had its own write: only the rest is cut back and lost.
                if not wrote:
                    done = whole_batches(batches, sizes, self._landed())
                    if done[0] and per_batch and not synced(fd):
                        done = (0, 0)  # counted as written means synced, at this durability
                    self._publish(data, done)
                with self._lock:
                    if self.error is None:
                        self.error = self._fail(exc)
                        self.queue.clear()
                    self._notify()
                return
            self._publish(data, (len(records), len(data)))

    def _publish(self, data: bytes, done: tuple[int, int]) -> None:
        """Count the first ``done[0]`` records of ``data`` (its first ``done[1]`` bytes) as
        written."""
        count, size = done
        if not count:
            return
        # Only this thread changes ``written`` and ``own``: the witness is computed without
        # the lock (appends go on meanwhile) and published with the counts.
        own = self.own.copy()
        own.add_lines(data if size == len(data) else memoryview(data)[:size], count)
        with self._lock:
            if self.error is not None:
                # The writer failed while this turn was writing (a drain's fsync): its failure
                # cut the file back to what was counted, and this turn's bytes, written after
                # that cut, go too, so that "records after seq N were not written" stays true.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self.good_size)
                self._notify()
                return
            self.own = own
            self.good_size += size
            self.written += count
            self._notify()

    def _landed(self) -> int:
        """How many bytes the file holds past what was written before this turn."""
        try:
            return max(0, os.fstat(self._fd).st_size - self.good_size)
        except OSError:
            return 0


def _framed(batch: list[bytes]) -> int:
    return sum(map(len, batch)) + len(batch)
