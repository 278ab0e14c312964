"""The batched rollout writer: one file, one writer, one background worker, one terminal path.

``append`` only encodes and enqueues (it never waits for the disk); a background thread writes
batches (ADR 0021, :mod:`ledger.batching`). ``drain`` returns once everything enqueued before it
is in the file at the chosen :class:`Durability` (ADR 0020). ``stop`` is the only place that
writes a checkpoint: it drains, rebuilds the conversation from the whole file, read back
through the descriptor the writer holds, with the reader and reducer replay uses, digests it
with :func:`~ledger.digest.checkpoint_digest`, and appends the checkpoint and the terminal record
(SPEC rules 1, 2 and 9; ADRs 0025 and 0027). The read-back is also the writer's check of its own
work: a checkpoint is never written over damage or over a record that did not come back as it
was written (ADR 0052).

Lock discipline (ADR 0051): ``_op_lock`` orders the operations that assign sequence numbers;
``_io_lock`` guards the descriptor's life, so that no drain, read-back or close ever acts on a
descriptor another thread closed (and the system may have given to another file). Where both
are taken, ``_op_lock`` comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import io
import logging
import os
import stat
import threading
import traceback
import uuid
import weakref
import zlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import msgspec

from ledger import locking
from ledger.batching import MAX_BATCH_DELAY, MAX_BATCH_RECORDS, BatchQueue, writev_all
from ledger.codec import encode_line, encode_record, message_records
from ledger.context import delegation_coordinates
from ledger.damage import Degradation
from ledger.digest import checkpoint_digest
from ledger.messages import Message, raw_json
from ledger.naming import rollout_filename
from ledger.reader import CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES, PreadFile, rebuild_stream
from ledger.records import (
    FORMAT_VERSION,
    RECORD_TYPES,
    AgentCheckpoint,
    Compacted,
    ErrorDetail,
    MessageRecord,
    Record,
    SessionMeta,
    StopKind,
    Terminal,
)
from ledger.reducer import Entry, ReplayState
from ledger.tail import FILE_MODE, TailRepair, check_head, repair_tail

__all__ = [
    "FILE_MODE",
    "MAX_BATCH_DELAY",
    "MAX_BATCH_RECORDS",
    "Durability",
    "ReadBackError",
    "RolloutExistsError",
    "RolloutWriter",
    "TailRepair",
    "WriterBusyError",
    "WriterClosedError",
    "WriterError",
    "WriterFailedError",
]

_META_STR_KEYS: Final = ("model", "provider", "cwd", "project")

log = logging.getLogger("ledger.writer")


class Durability(Enum):
    """How far a write goes before the writer counts it as done (ADR 0020)."""

    OS = "os"
    """Hand each batch to the operating system: survives the process being killed, not a crash
    of the machine."""
    BATCH = "batch"
    """``fsync`` after every batch: survives a machine crash up to the last batch, costs one
    ``fsync`` per batch."""
    DRAIN = "drain"
    """``fsync`` when :meth:`RolloutWriter.drain` (and so ``stop`` and ``close``) runs: what was
    drained survives a machine crash. The default."""


DEFAULT_DURABILITY: Final = Durability.DRAIN


class WriterError(Exception):
    """Base of the errors a :class:`RolloutWriter` raises; ``path`` names the rollout."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)


class WriterBusyError(WriterError):
    """Another writer (in this process or another) holds the rollout's lock."""


class WriterFailedError(WriterError):
    """Writing the rollout failed (disk full, permission, file removed); the cause is chained.

    The file stays readable up to its last complete record; records not yet written are lost
    and the writer accepts nothing more: close it and resume with :meth:`RolloutWriter.open`.
    """


class WriterClosedError(WriterError):
    """The writer was closed (or failed) and takes no more records."""


class RolloutExistsError(WriterError, FileExistsError):
    """A new rollout would overwrite an existing file; rollouts are never clobbered."""


class ReadBackError(WriterError):
    """``stop`` read the file back and it does not hold what this writer wrote, or is damaged.

    No checkpoint was written: a ``failed`` terminal record with the same reason was appended
    instead, so that the loss is on record and the session is never resumed as if whole.
    """


def _now() -> datetime:
    return datetime.now(UTC)


_OWN_TYPES: Final = frozenset(RECORD_TYPES)


class RolloutWriter:
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
        self._next_seq = next_seq
        self._base_seq = next_seq - 1
        self._closed = False
        self._error_raised_on_close = False
        self._stopped: Terminal | None = None
        self._unstopped = not stopped
        self._stop_task: asyncio.Future[Terminal] | None = None
        # What this writer wrote since it opened the file (or since its last compaction, which
        # is where a read-back starts): the first seq, how many records, their CRC-32.
        self._own_first = next_seq
        self._own_count = 0
        self._own_crc = 0
        self._q = BatchQueue(
            fd,
            name=path.name,
            size=size,
            fsync_each_batch=durability is Durability.BATCH,
            fail=self._describe_failure,
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
        _live.add(self)

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        meta: Mapping[str, Any] | None = None,
        durability: Durability | str = DEFAULT_DURABILITY,
    ) -> Self:
        """Start a new rollout in ``directory`` and write its ``session_meta`` (seq 1).

        The file is named ``<date>_<time>_<session_id>[_<agent_name>].jsonl`` (any framework key
        works as ``session_id``: it is escaped in the name, ADR 0016) and created exclusively:
        an existing file is never overwritten. ``session_id`` defaults to a new UUID. The
        delegation coordinates come from :mod:`ledger.context`. In ``meta``, the keys
        ``model``, ``provider``, ``cwd`` and ``project`` (strings) fill the fields of the same
        name; every other key goes, as JSON, into ``extra``.
        """
        durability = _durability(durability)
        if session_id is None:
            session_id = str(uuid.uuid4())
        fields, extra = _split_meta(meta)
        started_at = _now()
        name = rollout_filename(started_at, session_id, agent_name)
        parent, delegation = delegation_coordinates()
        record = SessionMeta(
            seq=1,
            ts=started_at,
            format_version=FORMAT_VERSION,
            session_id=session_id,
            started_at=started_at,
            agent_name=agent_name,
            parent_session_id=parent,
            delegation_id=delegation,
            extra=extra,
            **fields,
        )
        line = encode_line(record)
        directory = Path(directory)
        if not os.fspath(directory):
            raise ValueError("directory is empty: pass the directory that holds the rollouts")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        try:
            fd = os.open(
                path,
                os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC,
                FILE_MODE,
            )
        except FileExistsError:
            raise RolloutExistsError(
                f"{path} already exists: a rollout is never overwritten; pass another "
                "session_id or continue that session with RolloutWriter.open()",
                path,
            ) from None
        # The path is absolute from here on, so that a later chdir() cannot change what it names.
        path = path.absolute()
        try:
            locking.acquire(fd, path, WriterBusyError)
            writev_all(fd, [line])
            if durability is not Durability.OS:
                os.fsync(fd)
                _fsync_dir(directory)
            writer = cls(
                path=path,
                fd=fd,
                session_id=session_id,
                agent_name=agent_name,
                next_seq=2,
                size=len(line),
                durability=durability,
            )
            writer._start()
        except BaseException:
            # The file is ours (created exclusively) and holds no session yet: a half-made
            # rollout would only show up later as a damaged session.
            with contextlib.suppress(OSError):
                path.unlink()
            locking.release(fd)
            os.close(fd)
            raise
        return writer

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, durability: Durability | str = DEFAULT_DURABILITY
    ) -> Self:
        """Continue the session of the existing rollout at ``path`` (resume).

        Nothing is touched unless ``path`` is a regular file whose first line is a
        ``session_meta`` this library can continue (ADR 0051). Sequence numbers continue after
        the last complete record. What a killed writer left at the end is repaired first (ADR
        0022): a complete record that lacks only its line end gets one; an incomplete line, and
        reasoning records whose message was never written, are cut off and kept byte for byte
        in a ``.torn`` sidecar. The repair is logged as a warning and kept in :attr:`repair`.
        """
        durability = _durability(durability)
        path = Path(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
        except FileNotFoundError:
            raise WriterError(
                f"{path} does not exist: start a new rollout with RolloutWriter.create()", path
            ) from None
        path = path.absolute()
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise WriterError(
                    f"{path} is not a rollout: it is not a regular file (a FIFO, device or "
                    "directory); nothing was read or written",
                    path,
                )
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            locking.acquire(fd, path, WriterBusyError)
            head = check_head(fd)
            if isinstance(head, str):
                raise WriterError(
                    f"{path} is not a rollout this library can continue: {head}; nothing was "
                    "changed. Start a new rollout with RolloutWriter.create()",
                    path,
                )
            repair = repair_tail(fd, path)
            if repair is not None:
                log.warning("repaired the tail of %s: %s", path, repair)
                if durability is not Durability.OS:
                    os.fsync(fd)
            with io.BufferedReader(PreadFile(fd), CHUNK_BYTES) as f:
                state = rebuild_stream(f, from_last_compaction=True)
            assert state.meta is not None  # the head was checked above
            size = os.fstat(fd).st_size
            writer = cls(
                path=path,
                fd=fd,
                session_id=state.meta.session_id,
                agent_name=state.meta.agent_name,
                next_seq=(state.last_seq or 0) + 1,
                size=size,
                durability=durability,
                repair=repair,
                stopped=True,
            )
            writer._start()
        except BaseException:
            locking.release(fd)
            os.close(fd)
            raise
        return writer

    @classmethod
    async def acreate(
        cls,
        directory: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        meta: Mapping[str, Any] | None = None,
        durability: Durability | str = DEFAULT_DURABILITY,
    ) -> Self:
        """:meth:`create` without blocking the event loop (the context's coordinates go along)."""
        return await asyncio.to_thread(
            cls.create,
            directory,
            session_id=session_id,
            agent_name=agent_name,
            meta=meta,
            durability=durability,
        )

    @classmethod
    async def aopen(
        cls, path: str | os.PathLike[str], *, durability: Durability | str = DEFAULT_DURABILITY
    ) -> Self:
        """:meth:`open` without blocking the event loop."""
        return await asyncio.to_thread(cls.open, path, durability=durability)

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
        with self._op_lock:
            return self._next_seq

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
        ts = _now()
        with self._op_lock:
            self._check_usable()
            if message.reasoning:
                lines = [
                    encode_record(r)
                    for r in message_records(message, first_seq=self._next_seq, ts=ts)
                ]
            else:
                # The common case, without the generator: one message, one record.
                lines = [encode_record(MessageRecord(seq=self._next_seq, ts=ts, message=message))]
            self._enqueue(lines)

    def compacted(self, messages: Iterable[Message], summary: str | None = None) -> None:
        """Record that the conversation was compacted to ``messages`` (reasoning kept inline)."""
        kept = _messages_arg(messages, "compacted()")
        if summary is not None and not isinstance(summary, str):
            raise TypeError(
                f"compacted(summary=...) takes a str or None, not {type(summary).__name__}"
            )
        with self._op_lock:
            self._check_usable()
            record = Compacted(seq=self._next_seq, ts=_now(), messages=kept, summary=summary)
            line = encode_record(record)
            # A read-back starts at the last compaction: count this writer's records from here.
            self._own_first, self._own_count, self._own_crc = self._next_seq, 0, 0
            self._enqueue([line])

    def _enqueue(self, lines: list[bytes]) -> None:
        # Caller holds _op_lock, so sequence numbers and queue order agree.
        crc = self._own_crc
        for line in lines:
            if len(line) > DEFAULT_MAX_LINE_BYTES:
                raise ValueError(
                    f"this record encodes to {len(line)} bytes, over the {DEFAULT_MAX_LINE_BYTES}"
                    f"-byte line limit of the reader, which would skip it; nothing was written "
                    "(shorten the content, or store large outputs elsewhere and refer to them)"
                )
            crc = zlib.crc32(line, crc)
        self._q.put(lines)
        self._own_crc = crc
        self._own_count += len(lines)
        self._next_seq += len(lines)
        self._stopped = None
        self._unstopped = True

    # --- drain --------------------------------------------------------------------------------

    def drain(self) -> None:
        """Return once every record enqueued before this call is in the file.

        With :attr:`Durability.DRAIN` (the default) the file is also ``fsync``-ed. Raises
        :class:`WriterFailedError` if the worker could not write, :class:`WriterClosedError`
        once the writer is closed (even when the close happens while the drain waits).
        """
        with self._io_lock:
            self._check_usable()
            self._drain_locked()

    def _drain_locked(self) -> None:
        # Caller holds _io_lock: the descriptor stays open until this returns.
        error = self._q.wait_written()
        if error is not None:
            raise error
        fd = self._fd
        assert fd is not None
        try:
            if self._durability is Durability.DRAIN:
                os.fsync(fd)
            if os.fstat(fd).st_nlink == 0:
                raise FileNotFoundError(2, "the file was removed while being written")
        except OSError as exc:
            raise self._fail_now(exc) from exc

    # --- the terminal path --------------------------------------------------------------------

    def stop(
        self,
        kind: StopKind | str,
        reason: str = "",
        error: ErrorDetail | BaseException | None = None,
    ) -> Terminal:
        """Write the stop point: drain, checkpoint the conversation rebuilt from the file, and
        the terminal record; drain again. Returns the terminal record written.

        The checkpoint digest is computed over the messages rebuilt from the *whole file*, read
        back through the descriptor this writer holds, by the reader and reducer replay uses
        (never an in-memory list), after a drain. When that read-back reports damage, or does
        not give back every record this writer wrote as it wrote it, no checkpoint is written: a
        ``failed`` terminal record says why and :class:`ReadBackError` is raised. Can run again
        after more appends (resume): the last checkpoint wins.
        """
        kind = _stop_kind(kind)
        if not isinstance(reason, str):
            raise TypeError(f"stop(reason=...) takes a str, not {type(reason).__name__}")
        detail = _error_detail(error)
        with self._op_lock:
            self._check_usable()
            with self._io_lock:
                self._drain_locked()
                try:
                    state, problem = self._read_back()
                except OSError as exc:
                    raise WriterError(
                        f"could not read back {self._path} to checkpoint it ({exc}); nothing "
                        "was written for this stop: fix the cause and call stop() again",
                        self._path,
                    ) from exc
                ts = _now()
                if problem is None:
                    terminal = Terminal(
                        seq=self._next_seq + 1,
                        ts=ts,
                        stop_kind=kind.value,
                        reason=reason,
                        error=detail,
                    )
                    checkpoint = AgentCheckpoint(
                        seq=self._next_seq,
                        ts=ts,
                        digest=checkpoint_digest(state.messages),
                        message_count=len(state.messages),
                    )
                    lines = [encode_record(checkpoint), encode_record(terminal)]
                else:
                    terminal = Terminal(
                        seq=self._next_seq,
                        ts=ts,
                        stop_kind=StopKind.FAILED.value,
                        reason=f"no checkpoint: {problem} (asked to stop as {kind}: {reason})",
                        error=ErrorDetail(type="ReadBackError", message=problem),
                    )
                    lines = [encode_record(terminal)]
                self._enqueue(lines)
                self._drain_locked()
                self._stopped = terminal
                self._unstopped = False
            if problem is not None:
                raise ReadBackError(
                    f"{self._path}: {problem}; a failed terminal record was written instead of a "
                    "checkpoint: the session is not resumable as-is (replay it to see the damage, "
                    "or hand off)",
                    self._path,
                )
            return terminal

    def _read_back(self) -> tuple[ReplayState, str | None]:
        """Rebuild the file through our descriptor and check this writer's records in it."""
        first, want_count, want_crc = self._own_first, self._own_count, self._own_crc
        got = [0, 0]  # records of ours read back, their CRC-32 re-encoded

        def tap(entries: Sequence[Entry]) -> None:
            for entry in entries:
                if type(entry) in _OWN_TYPES:
                    record: Record = entry  # type: ignore[assignment]
                    if record.seq >= first:
                        got[0] += 1
                        got[1] = zlib.crc32(encode_record(record), got[1])

        assert self._fd is not None
        with io.BufferedReader(PreadFile(self._fd), CHUNK_BYTES) as f:
            state = rebuild_stream(f, from_last_compaction=True, tap=tap)
        damage = [d for d in state.degraded if d.is_damage]
        if damage:
            return state, _describe_damage(damage)
        if state.last_seq != self._next_seq - 1:
            return state, (
                f"the file read back ends at seq {state.last_seq}, but this writer wrote up to "
                f"seq {self._next_seq - 1}"
            )
        if (got[0], got[1]) != (want_count, want_crc):
            return state, (
                f"the {want_count} record(s) this writer wrote from seq {first} did not come "
                f"back as written ({got[0]} read back, content differs): a value was lost "
                "between encoding and decoding"
            )
        return state, None

    # --- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the worker and release the lock and the file. Idempotent.

        Records appended since the last stop are not left looking like a kill: they get a stop
        point of kind :attr:`StopKind.CLOSED` first (ADR 0053). Raises
        :class:`WriterFailedError` (once) if a write failed; the lock and the file are released
        either way. In a child process forked while the writer was
        open, ``close`` does nothing: the parent still owns the file (ADR 0051).
        """
        if self._forked:
            return
        with self._op_lock:
            if self._closed:
                return
            pending: BaseException | None = None
            if self._unstopped and self._q.error is None:
                try:
                    self.stop(StopKind.CLOSED, reason="closed without stop()")
                except WriterError as exc:
                    pending = exc
            with self._io_lock:
                try:
                    self._drain_locked()
                except WriterError as exc:
                    pending = pending or exc
                self._q.join()
                self._release()
            _live.discard(self)
            if (
                isinstance(pending, WriterFailedError) and not self._error_raised_on_close
            ) or isinstance(pending, ReadBackError):
                self._error_raised_on_close = True
                raise pending

    def _release(self) -> None:
        # Caller holds _io_lock.
        fd, self._fd = self._fd, None
        self._closed = True
        if fd is not None:
            locking.release(fd)
            os.close(fd)

    def _forget_after_fork(self) -> None:
        # In a forked child (only this thread runs): drop our copy of the descriptor without
        # unlocking, so the parent's lock stays held by the parent alone and ends with it.
        self._forked = True
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _abandon(self) -> list[bytes]:
        """Stop as a killed process would: nothing queued is written, no stop point, no unlock.

        The descriptor is closed (which releases the lock, as the death of the process would).
        Returns the encoded records that were still queued. For tests of recovery
        (:mod:`ledger.testing`), never for production use.
        """
        with self._io_lock:
            lines = self._q.take_all()
            fd, self._fd = self._fd, None
            self._closed = True
            if fd is not None:
                os.close(fd)
        _live.discard(self)
        return lines

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # ADR 0023: leaving by an exception records it as the stop point, unless the block
        # already stopped; leaving normally closes (which records CLOSED if not stopped).
        if self._forked:
            return
        with self._op_lock:
            stopped = self._stopped is not None or not self._unstopped
            if exc is not None and not _clean_exit(exc) and not stopped and not self._closed:
                try:
                    self.stop(_exit_kind(exc), reason=_exit_reason(exc), error=exc)
                except Exception as stop_exc:  # the block's own exception must win
                    log.error("could not record the stop point of %s: %s", self._path, stop_exc)
                    exc.add_note(
                        f"rollout {self._path}: the stop point was not written: {stop_exc}"
                    )
            if exc is None:
                self.close()
                return
            try:
                self.close()
            except WriterError as close_exc:
                exc.add_note(f"rollout {self._path}: closing failed: {close_exc}")

    # --- asyncio ------------------------------------------------------------------------------

    async def adrain(self) -> None:
        """:meth:`drain` without blocking the event loop."""
        await asyncio.to_thread(self.drain)

    async def astop(
        self,
        kind: StopKind | str,
        reason: str = "",
        error: ErrorDetail | BaseException | None = None,
    ) -> Terminal:
        """:meth:`stop` without blocking the event loop.

        Cancelling the caller does not cancel the stop: it completes, and ``async with`` waits
        for it rather than writing a second stop point (ADR 0051).
        """
        task = asyncio.ensure_future(asyncio.to_thread(self.stop, kind, reason, error))
        self._stop_task = task
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        """:meth:`close` without blocking the event loop."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        cancelled = False
        task = self._stop_task
        while task is not None and not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                cancelled = True  # finish the stop already asked for, then honour the cancel
            except Exception:  # its caller got it (or was cancelled before)
                break
        exit_task = asyncio.ensure_future(asyncio.to_thread(self.__exit__, exc_type, exc, tb))
        while not exit_task.done():
            try:
                await asyncio.shield(exit_task)
            except asyncio.CancelledError:
                cancelled = True
        exit_task.result()
        if cancelled and not isinstance(exc, asyncio.CancelledError):
            raise asyncio.CancelledError

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RolloutWriter {state} {self._path} next_seq={self._next_seq}>"

    # --- failures -----------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._forked:
            raise WriterError(
                f"this writer of {self._path} belongs to process {self._pid}; a child forked "
                "from it cannot use it. The parent closes it; a child that must record opens a "
                "rollout of its own",
                self._path,
            )
        error = self._q.error
        if error is not None:
            raise error
        if self._closed:
            raise WriterClosedError(f"the writer of {self._path} is closed", self._path)

    def _fail_now(self, exc: BaseException) -> BaseException:
        q = self._q
        with q.cond:
            if q.error is None:
                q.error = self._describe_failure(exc)
                q.queue.clear()
            q.cond.notify_all()
            return q.error

    def _describe_failure(self, exc: BaseException) -> WriterFailedError:
        """The writer's error for a failed write; cut a partial line back so the file stays
        readable. Called once, with the queue's lock held, while the descriptor is open."""
        errno_ = getattr(exc, "errno", None)
        what = os.strerror(errno_) if errno_ else f"{type(exc).__name__}: {exc}"
        error = WriterFailedError(
            f"writing the rollout {self._path} failed ({what}); records after seq "
            f"{self._base_seq + self._q.written} were not written. The file is readable up "
            "to its last complete record: close this writer and resume with "
            "RolloutWriter.open() once the cause is fixed",
            self._path,
        )
        error.__cause__ = exc
        fd = self._fd
        if fd is not None:
            try:
                if os.fstat(fd).st_size > self._q.good_size:
                    os.ftruncate(fd, self._q.good_size)
            except OSError:
                # The reader reports a torn last line as such; nothing more can be done here.
                pass
        return error


# --- writers still open when the interpreter exits ----------------------------------------------

_live: weakref.WeakSet[RolloutWriter] = weakref.WeakSet()


def _close_at_exit() -> None:
    for writer in list(_live):
        if writer._pid != os.getpid():
            continue
        try:
            with writer._op_lock:
                if writer._unstopped and not writer._closed and writer._q.error is None:
                    writer.stop(StopKind.CLOSED, reason="the process exited with the writer open")
            writer.close()
        except Exception as exc:
            log.error("could not close %s at exit: %s", writer.path, exc)


import atexit  # noqa: E402 - registered here, next to what it runs

atexit.register(_close_at_exit)


# --- helpers ------------------------------------------------------------------------------------


def _fsync_dir(directory: Path) -> None:
    # So that the new file's name survives a crash as well as its content.
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _describe_damage(damage: list[Degradation]) -> str:
    more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
    return f"the file read back reports damage: {damage[0]}{more}"


def _messages_arg(messages: Iterable[Message], where: str) -> tuple[Message, ...]:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise TypeError(
            f"{where} takes an iterable of ledger.Message, not {type(messages).__name__}"
        )
    kept = tuple(messages)
    for i, m in enumerate(kept):
        if type(m) is not Message:
            raise TypeError(f"{where} takes ledger.Message values; item {i} is {type(m).__name__}")
    return kept


def _durability(value: object) -> Durability:
    if isinstance(value, Durability):
        return value
    if isinstance(value, str):
        try:
            return Durability(value)
        except ValueError:
            pass
    known = ", ".join(f"Durability.{d.name}" for d in Durability)
    raise ValueError(f"durability {value!r} is not a Durability; use one of {known}")


def _split_meta(meta: Mapping[str, Any] | None) -> tuple[dict[str, str], Any]:
    if meta is None:
        return {}, msgspec.UNSET
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a mapping, not {type(meta).__name__}")
    fields: dict[str, str] = {}
    rest: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str):
            raise TypeError(f"meta keys must be str, not {type(key).__name__} ({key!r})")
        if key in _META_STR_KEYS:
            if not isinstance(value, str):
                raise TypeError(f"meta[{key!r}] must be a str, not {type(value).__name__}")
            fields[key] = value
        else:
            rest[key] = value
    if not rest:
        return fields, msgspec.UNSET
    try:
        return fields, raw_json(rest)
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise TypeError(f"meta values other than {_META_STR_KEYS} must be JSON: {exc}") from None


def _stop_kind(kind: object) -> StopKind:
    if isinstance(kind, StopKind):
        return kind
    if isinstance(kind, str):
        try:
            return StopKind(kind)
        except ValueError:
            pass
    known = ", ".join(f"StopKind.{k.name}" for k in StopKind)
    raise ValueError(f"stop kind {kind!r} is not a StopKind; use one of {known}")


def _error_detail(error: ErrorDetail | BaseException | None) -> ErrorDetail | None:
    if error is None or isinstance(error, ErrorDetail):
        return error
    if isinstance(error, BaseException):
        return ErrorDetail(
            type=type(error).__qualname__,
            message=_safe_str(error),
            traceback=_safe_text("".join(traceback.format_exception(error))) or None,
        )
    raise TypeError(f"error must be an ErrorDetail or an exception, not {type(error).__name__}")


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not lose the stop point
        return f"<{type(exc).__qualname__}: its message could not be read>"
    return _safe_text(text)


def _safe_text(text: str) -> str:
    # Lone surrogates cannot be written as UTF-8; keep them visible as escapes.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clean_exit(exc: BaseException) -> bool:
    """``sys.exit(0)`` (or ``sys.exit()``) and a generator closing: not a failure of the session."""
    if isinstance(exc, SystemExit):
        return exc.code is None or exc.code == 0
    return isinstance(exc, GeneratorExit)


def _exit_kind(exc: BaseException) -> StopKind:
    if isinstance(exc, asyncio.CancelledError):
        return StopKind.CANCELLED
    if isinstance(exc, KeyboardInterrupt):
        return StopKind.INTERRUPTED
    return StopKind.ERROR


def _exit_reason(exc: BaseException) -> str:
    name = type(exc).__qualname__
    if isinstance(exc, SystemExit):
        return f"left the writer's block by sys.exit({exc.code!r})"
    text = _safe_str(exc)
    return (
        f"left the writer's block by {name}: {text}"
        if text
        else f"left the writer's block by {name}"
    )
