"""The batched rollout writer: one file, one writer, one background worker, one terminal path.

``append`` only encodes and enqueues (it never waits for the disk); a background thread writes
batches (ADR 0021, :mod:`ledger.batching`). ``drain`` returns once everything enqueued before it
is in the file at the chosen :class:`Durability` (ADR 0020). ``stop`` is the only place that
writes a checkpoint: it drains, reads the file back through the descriptor the writer holds,
digests the conversation the file holds by the rule of :mod:`ledger.digest` (ADR 0063), and
appends the checkpoint and the terminal record (SPEC rules 1, 2 and 9; ADRs 0025 and 0027). The
read-back is also the writer's check of its own work: a checkpoint is never written over damage
the read-back meets, or over bytes that are not the ones the writer wrote (ADR 0052). When those
bytes are, by their CRC-32, the writer's own lines of messages and notes, they are folded from
their envelopes without being decoded (ADR 0164); a value that decoding would then lose is
reported by replay, which never calls it verified.

Lock discipline (ADR 0051): ``_op_lock`` orders the operations that assign sequence numbers;
``_io_lock`` guards the descriptor's life, so that no drain, read-back or close ever acts on a
descriptor another thread closed (and the system may have given to another file). Where both
are taken, ``_op_lock`` comes first.

This module holds the writer's state, the paths that enqueue (their records are made by
:mod:`ledger.writer_lines`) and the drain; the class composes the rest: ``create`` and ``open``
(:mod:`ledger.writer_start`), ``stop`` (:mod:`ledger.writer_stop`), ``close`` and the ``with``
block (:mod:`ledger.writer_life`), the asyncio forms (:mod:`ledger.writer_async`), ``fork`` and
``rewind`` (:mod:`ledger.writer_history`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from ledger import locking
from ledger.batching import MAX_BATCH_DELAY, MAX_BATCH_RECORDS, BatchQueue
from ledger.codec import encode_record
from ledger.history import RewindTargets
from ledger.messages import Message
from ledger.readback import ReadMark
from ledger.reader import DEFAULT_MAX_LINE_BYTES
from ledger.records import (
    DESCRIPTION_TYPES,
    Compacted,
    Description,
    ForkOrigin,
    Terminal,
)
from ledger.tail import FILE_MODE, TailRepair
from ledger.writer_args import messages_arg
from ledger.writer_async import AsyncForms
from ledger.writer_errors import (
    Durability,
    ForkError,
    ReadBackError,
    RolloutExistsError,
    WriterBusyError,
    WriterClosedError,
    WriterError,
    WriterFailedError,
)
from ledger.writer_history import HistoryForms
from ledger.writer_life import LifeForms, track
from ledger.writer_lines import lines_of
from ledger.writer_start import StartForms
from ledger.writer_stop import StopForms

__all__ = [
    "FILE_MODE",
    "MAX_BATCH_DELAY",
    "MAX_BATCH_RECORDS",
    "Durability",
    "ForkError",
    "ReadBackError",
    "RolloutExistsError",
    "RolloutWriter",
    "TailRepair",
    "WriterBusyError",
    "WriterClosedError",
    "WriterError",
    "WriterFailedError",
]


def _now() -> datetime:
    return datetime.now(UTC)


class RolloutWriter(StartForms, StopForms, LifeForms, AsyncForms, HistoryForms):
    """The only writer of one rollout file. Build it with :meth:`create` or :meth:`open`."""

    def __init__(
        self,
        *,
        path: Path,
        fd: int,
        session_id: str,
        agent_name: str | None,
        next_seq: int,
        size: int,
        durability: Durability,
        repair: TailRepair | None = None,
        stopped: bool = False,
        targets: RewindTargets | None = None,
        origin: ForkOrigin | None = None,
        mark: ReadMark | None = None,
    ) -> None:
        # ``stopped``: nothing this writer must account for at close (a reopened file is left
        # as found unless records are appended; a new one is not, ADR 0053).
        # Use create() or open(): they take the lock and write or read the session_meta.
        self._path = path
        self._fd: int | None = fd
        self._session_id = session_id
        self._agent_name = agent_name
        self._durability = durability
        self._repair = repair
        self._pid = os.getpid()
        self._forked = False
        self._op_lock = threading.RLock()
        self._io_lock = threading.RLock()
        self._base_seq = next_seq - 1
        self._closed = False
        self._error_raised_on_close = False
        self._stopped: Terminal | None = None
        self._unstopped = not stopped
        self._stop_task: asyncio.Future[Terminal] | None = None
        self._targets = targets or RewindTargets()
        self._origin = origin
        self._mark = mark or ReadMark()  # what the last read of the file established
        # The seqs of the records put since that read that a read-back must decode (ADR 0164);
        # None after a record that makes it decode everything it reads.
        self._decode: set[int] | None = set()
        self._q = BatchQueue(
            fd,
            name=path.name,
            next_seq=next_seq,
            size=size,
            fsync_each_batch=durability is Durability.BATCH,
            fail=self._describe_failure,
            own_seed=self._mark.crc,
        )

    def _start(self) -> None:
        try:
            self._q.start()
        except RuntimeError as exc:
            raise WriterError(
                f"could not start the writer thread of {self._path} ({exc}); the lock and the "
                "file were released: free resources (threads, memory) and try again",
                self._path,
            ) from exc
        locking.register(self)
        locking.untrack(self._q._fd)  # the writer forgets its descriptor in a child from now on
        track(self)

    # --- what a writer is ---------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The rollout file (absolute, as it was named when the writer was made)."""
        return self._path

    @property
    def session_id(self) -> str:
        """The session this rollout records."""
        return self._session_id

    @property
    def agent_name(self) -> str | None:
        """The agent name of the session, when it has one."""
        return self._agent_name

    @property
    def durability(self) -> Durability:
        """How far a write goes before it counts as done."""
        return self._durability

    @property
    def repair(self) -> TailRepair | None:
        """The repair :meth:`open` made to a torn last line, or ``None``."""
        return self._repair

    @property
    def next_seq(self) -> int:
        """The sequence number the next record will carry."""
        return self._q.next_seq()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    @property
    def stopped(self) -> Terminal | None:
        """The terminal record of the last :meth:`stop`, or ``None`` if not stopped since the
        last record was appended."""
        return self._stopped

    # --- the hot path -------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Enqueue ``message`` (its reasoning blocks first, one record each); never waits for disk.

        Sequence numbers follow the order of the calls, across threads.
        """
        if type(message) is not Message:
            raise TypeError(
                f"append() takes a ledger.Message, not {type(message).__name__}; convert a "
                "provider's message with ledger.providers"
            )
        self._guard("append")
        ts = _now()
        with self._op_lock:
            self._check_usable()
            seq = self._q.next_seq()
            lines = lines_of(message, seq, ts)
            if message.is_anchored or message.truncation_marker is not None:
                # Its digest item is not its member as written (ADR 0063).
                self._decode_too(range(seq, seq + len(lines)))
            self._enqueue(lines)

    def compacted(
        self,
        messages: Iterable[Message],
        summary: str | None = None,
        *,
        extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET,
    ) -> None:
        """Record that the conversation was compacted to ``messages`` (reasoning kept inline).

        ``extra`` keeps, verbatim, what the compaction said about itself (ADR 0125).
        """
        kept = messages_arg(messages, "compacted()")
        if summary is not None and not isinstance(summary, str):
            raise TypeError(
                f"compacted(summary=...) takes a str or None, not {type(summary).__name__}"
            )
        self._guard("compacted")
        with self._op_lock:
            self._check_usable()
            seq = self._q.next_seq()
            record = Compacted(seq=seq, ts=_now(), messages=kept, summary=summary, extra=extra)
            self._decode_too((seq,))
            self._enqueue([encode_record(record)])
            # After the put: an interruption between the two leaves the writer's rule more
            # permissive than the file, and the read-back then refuses a checkpoint over a
            # rewind the file does not allow (ADR 0131), never the reverse.
            self._targets.compacted(seq)

    def note(self, record: Description) -> None:
        """Enqueue a record that describes the session without entering its conversation:
        ``usage``, ``turn``, ``event`` or ``meta_update`` (format 2, ADRs 0121-0124).

        Its ``seq`` and ``ts`` are the writer's: the values ``record`` was built with are
        replaced. Never waits for disk.
        """
        if type(record) not in DESCRIPTION_TYPES:
            raise TypeError(
                f"note() takes a {', '.join(t.__name__ for t in DESCRIPTION_TYPES)} record, not "
                f"{type(record).__name__}; messages go through append()"
            )
        self._guard("note")
        with self._op_lock:
            self._check_usable()
            stamped = msgspec.structs.replace(record, seq=self._q.next_seq(), ts=_now())
            self._enqueue([encode_record(stamped)])

    def _decode_too(self, seqs: Iterable[int]) -> None:
        # Caller holds _op_lock. Before the put: interrupted between the two, a read-back only
        # decodes more than it must.
        if self._decode is not None:
            self._decode.update(seqs)

    def _enqueue(self, lines: list[bytes]) -> None:
        # Caller holds _op_lock, so sequence numbers and queue order agree. The put is the one
        # change of state, made in one step, so an interruption leaves all or nothing (ADR 0055).
        for line in lines:
            if len(line) > DEFAULT_MAX_LINE_BYTES:
                raise ValueError(
                    f"this record encodes to {len(line)} bytes, over the {DEFAULT_MAX_LINE_BYTES}"
                    f"-byte line limit of the reader, which would skip it; nothing was written "
                    "(shorten the content, or store large outputs elsewhere and refer to them)"
                )
        self._stopped = None
        self._unstopped = True
        self._q.put(lines)

    # --- drain --------------------------------------------------------------------------------

    def drain(self) -> None:
        """Return once every record enqueued before this call is in the file.

        With :attr:`Durability.DRAIN` (the default) the file is also ``fsync``-ed. Raises
        :class:`WriterFailedError` if the worker could not write, :class:`WriterClosedError`
        once the writer is closed (even when the close happens while the drain waits).
        """
        self._guard("drain")
        with self._io_lock:
            self._check_usable()
            self._drain_locked()

    def _drain_locked(self) -> None:
        # Caller holds _io_lock: the descriptor stays open until this returns.
        error = self._q.wait_written()
        if error is not None:
            raise error
        fd = self._fd
        if fd is None:  # closed while this waited (by a path no guard stops)
            raise WriterClosedError(f"the writer of {self._path} is closed", self._path)
        try:
            if self._durability is Durability.DRAIN:
                os.fsync(fd)
            if os.fstat(fd).st_nlink == 0:
                raise FileNotFoundError(2, "the file was removed while being written")
        except OSError as exc:
            raise self._q.fail_now(exc) from exc

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        q = self._q  # no lock: a repr may be asked for while this thread holds it
        return (
            f"<RolloutWriter {state} {self._path} next_seq={q.first_seq + q.taken + len(q.queue)}>"
        )
