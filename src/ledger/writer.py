"""The batched rollout writer: one file, one writer, one background worker, one terminal path.

``append`` only encodes and enqueues (it never waits for the disk); a background thread writes
batches of at most :data:`MAX_BATCH_RECORDS` records or :data:`MAX_BATCH_DELAY` seconds,
whichever comes first, each batch as one ``os.write`` (ADR 0021). ``drain`` returns once
everything enqueued before it is in the file at the chosen :class:`Durability` (ADR 0020).
``stop`` is the only place that writes a checkpoint: it drains, rebuilds the conversation from
the whole file through the same reader and reducer replay uses, digests it with
:func:`~ledger.digest.checkpoint_digest`, and appends the checkpoint and the terminal record
(SPEC rules 1, 2 and 9; ADRs 0025 and 0027).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import attrs
import msgspec

from ledger.codec import (
    RecordDecodeError,
    decode_record,
    encode_line,
    encode_record,
    message_records,
)
from ledger.context import current_delegation_id, current_rollout_session_id
from ledger.digest import checkpoint_digest
from ledger.messages import Message, raw_json
from ledger.naming import rollout_filename
from ledger.reader import rebuild
from ledger.records import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Compacted,
    ErrorDetail,
    MessageRecord,
    ReasoningRecord,
    SessionMeta,
    StopKind,
    Terminal,
)

__all__ = [
    "FILE_MODE",
    "MAX_BATCH_DELAY",
    "MAX_BATCH_RECORDS",
    "Durability",
    "RolloutExistsError",
    "RolloutWriter",
    "TailRepair",
    "WriterBusyError",
    "WriterClosedError",
    "WriterError",
    "WriterFailedError",
]

MAX_BATCH_RECORDS: Final = 32
"""A batch never holds more records than this."""

MAX_BATCH_DELAY: Final = 0.020
"""Seconds a record may wait in the queue for its batch to fill before it is written."""

FILE_MODE: Final = 0o600
"""Rollouts hold whole conversations (prompts, tool output, secrets a tool printed): they are
readable by their owner only, whatever the umask; widen it with ``chmod`` where that is wanted."""

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


@attrs.frozen
class TailRepair:
    """What :meth:`RolloutWriter.open` did to the last line left by a writer that was killed.

    ``kind`` is ``"newline_added"`` (a complete record lacked only its line end),
    ``"torn_line_moved"`` (an incomplete line was cut off the file and kept, byte for byte, in
    ``sidecar``) or ``"orphan_reasoning_moved"`` (reasoning records whose message was never
    written, and anything after them, were cut off and kept in ``sidecar``). ``offset`` is where
    the cut (or the completed line) starts; ``size`` the number of bytes concerned.
    """

    kind: str
    offset: int
    size: int
    sidecar: Path | None = None

    def __str__(self) -> str:
        if self.kind == "newline_added":
            return f"added the missing line end after the complete record at byte {self.offset}"
        what = (
            "an incomplete last line"
            if self.kind == "torn_line_moved"
            else "reasoning records left without their message"
        )
        return f"moved {what} ({self.size} bytes at byte {self.offset}) to {self.sidecar}"


def _now() -> datetime:
    return datetime.now(UTC)


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
    ) -> None:
        # Use create() or open(): they take the lock and write or read the session_meta.
        self._path = path
        self._fd = fd
        self._session_id = session_id
        self._agent_name = agent_name
        self._durability = durability
        self._repair = repair
        # _op_lock serialises the operations that assign sequence numbers (append, compacted,
        # stop) so that stop's drain-rebuild-checkpoint sees no record slip in between.
        self._op_lock = threading.RLock()
        # _cond guards the queue and the counters shared with the worker.
        self._qlock = threading.Lock()
        self._cond = threading.Condition(self._qlock)
        # Encoded records without their line ends; the worker frames a batch in one join.
        self._queue: deque[bytes] = deque()
        self._next_seq = next_seq
        self._base_seq = next_seq - 1
        self._enqueued = 0
        self._written = 0
        self._good_size = size
        self._flush_wanted = 0
        self._closing = False
        self._closed = False
        self._error: WriterFailedError | None = None
        self._error_raised_on_close = False
        self._stopped: Terminal | None = None
        # A test seam: while set, the worker writes nothing until a drain asks for it, so a test
        # can hold records in the queue deterministically.
        self._hold = False
        self._worker = threading.Thread(
            target=self._run, name=f"rollout-writer:{path.name}", daemon=True
        )
        self._worker.start()

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        meta: Mapping[str, Any] | None = None,
        durability: Durability = DEFAULT_DURABILITY,
    ) -> Self:
        """Start a new rollout in ``directory`` and write its ``session_meta`` (seq 1).

        The file is named ``<date>_<time>_<session_id>[_<agent_name>].jsonl`` and created
        exclusively: an existing file is never overwritten. ``session_id`` defaults to a new
        UUID. The parent session id and delegation id come from :mod:`ledger.context`. In
        ``meta``, the keys ``model``, ``provider``, ``cwd`` and ``project`` (strings) fill the
        fields of the same name; every other key goes, as JSON, into ``extra``.
        """
        if session_id is None:
            session_id = str(uuid.uuid4())
        fields, extra = _split_meta(meta)
        started_at = _now()
        name = rollout_filename(started_at, session_id, agent_name)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        record = SessionMeta(
            seq=1,
            ts=started_at,
            format_version=FORMAT_VERSION,
            session_id=session_id,
            started_at=started_at,
            agent_name=agent_name,
            parent_session_id=current_rollout_session_id(),
            delegation_id=current_delegation_id(),
            extra=extra,
            **fields,
        )
        line = encode_line(record)
        try:
            fd = os.open(
                path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC,
                FILE_MODE,
            )
        except FileExistsError:
            raise RolloutExistsError(
                f"{path} already exists: a rollout is never overwritten; pass another "
                "session_id or continue that session with RolloutWriter.open()",
                path,
            ) from None
        try:
            _lock(fd, path)
            _write_all(fd, line)
            if durability is not Durability.OS:
                os.fsync(fd)
                _fsync_dir(directory)
        except BaseException:
            # The file is ours (created exclusively) and holds no complete session_meta: a
            # half-made rollout would only show up later as a damaged session.
            with contextlib.suppress(OSError):
                path.unlink()
            os.close(fd)
            raise
        return cls(
            path=path,
            fd=fd,
            session_id=session_id,
            agent_name=agent_name,
            next_seq=2,
            size=len(line),
            durability=durability,
        )

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, durability: Durability = DEFAULT_DURABILITY
    ) -> Self:
        """Continue the session of the existing rollout at ``path`` (resume).

        Sequence numbers continue after the last complete record. What a killed writer left at
        the end is repaired first (ADR 0022): a complete record that lacks only its line end
        gets one; an incomplete line, and reasoning records whose message was never written,
        are cut off and kept byte for byte in ``<name>.torn``. The repair is logged as a
        warning and kept in :attr:`repair`.
        """
        path = Path(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        except FileNotFoundError:
            raise WriterError(
                f"{path} does not exist: start a new rollout with RolloutWriter.create()", path
            ) from None
        try:
            _lock(fd, path)
            repair = _repair_tail(fd, path)
            if repair is not None:
                log.warning("repaired the tail of %s: %s", path, repair)
                if durability is not Durability.OS:
                    os.fsync(fd)
            state = rebuild(path, from_last_compaction=True)
            if state.meta is None:
                raise WriterError(
                    f"{path} is not a rollout: it has no session_meta record; "
                    "start a new rollout with RolloutWriter.create()",
                    path,
                )
            size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        return cls(
            path=path,
            fd=fd,
            session_id=state.meta.session_id,
            agent_name=state.meta.agent_name,
            next_seq=(state.last_seq or 0) + 1,
            size=size,
            durability=durability,
            repair=repair,
        )

    # --- what a writer is ---------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The rollout file."""
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
        if not isinstance(message, Message):
            raise TypeError(f"append() takes a ledger.Message, not {type(message).__name__}")
        ts = _now()
        with self._op_lock:
            self._check_open()
            if message.reasoning:
                lines = [
                    encode_record(r)
                    for r in message_records(message, first_seq=self._next_seq, ts=ts)
                ]
            else:
                # The common case, without the generator: one message, one record.
                lines = [encode_record(MessageRecord(seq=self._next_seq, ts=ts, message=message))]
            self._enqueue(lines)
            self._stopped = None

    def compacted(self, messages: Iterable[Message], summary: str | None = None) -> None:
        """Record that the conversation was compacted to ``messages`` (reasoning kept inline)."""
        kept = tuple(messages)
        for m in kept:
            if not isinstance(m, Message):
                raise TypeError(f"compacted() takes ledger.Message values, not {type(m).__name__}")
        with self._op_lock:
            self._check_open()
            record = Compacted(seq=self._next_seq, ts=_now(), messages=kept, summary=summary)
            self._enqueue([encode_record(record)])
            self._stopped = None

    def _enqueue(self, lines: list[bytes]) -> None:
        # Caller holds _op_lock, so sequence numbers and queue order agree.
        n = len(lines)
        with self._qlock:
            queue = self._queue
            before = len(queue)
            queue.extend(lines)
            self._enqueued += n
            # Wake the worker only when it may be waiting for this: the queue was empty, or
            # it just reached a full batch. Notifying on every append costs more than the
            # append itself once the worker lags behind.
            if before == 0 or before < MAX_BATCH_RECORDS <= before + n:
                self._cond.notify()
        self._next_seq += n

    # --- drain --------------------------------------------------------------------------------

    def drain(self) -> None:
        """Return once every record enqueued before this call is in the file.

        With :attr:`Durability.DRAIN` (the default) the file is also ``fsync``-ed. Raises
        :class:`WriterFailedError` if the worker could not write.
        """
        self._check_open()
        self._drain()

    def _drain(self) -> None:
        cond = self._cond
        with cond:
            target = self._enqueued
            if self._written < target and self._error is None:
                self._flush_wanted = max(self._flush_wanted, target)
                cond.notify_all()
                while self._written < target and self._error is None:
                    # The timeout only guards against a worker that died without reporting
                    # (it catches every Exception, so only an interpreter shutdown does that).
                    if not cond.wait(1.0) and not self._worker.is_alive():
                        self._error = WriterFailedError(
                            f"the writer thread of {self._path} is gone; records after seq "
                            f"{self._base_seq + self._written} were not written",
                            self._path,
                        )
            error = self._error
        if error is not None:
            raise error
        try:
            if self._durability is Durability.DRAIN:
                os.fsync(self._fd)
            if os.fstat(self._fd).st_nlink == 0:
                raise FileNotFoundError(errno.ENOENT, "the file was removed while being written")
        except OSError as exc:
            raise self._fail(exc) from exc

    # --- the terminal path --------------------------------------------------------------------

    def stop(
        self,
        kind: StopKind,
        reason: str = "",
        error: ErrorDetail | BaseException | None = None,
    ) -> Terminal:
        """Write the stop point: drain, checkpoint the conversation rebuilt from the file, and
        the terminal record; drain again. Returns the terminal record written.

        The checkpoint digest is computed over the messages rebuilt from the *whole file* by
        the reader and reducer replay uses (never an in-memory list), after a drain, so that
        it covers every record written before it. Can run again after more appends (resume):
        the last checkpoint wins.
        """
        kind = _stop_kind(kind)
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, not {type(reason).__name__}")
        detail = _error_detail(error)
        with self._op_lock:
            self._check_open()
            self._drain()
            try:
                state = rebuild(self._path, from_last_compaction=True)
            except OSError as exc:
                raise WriterError(
                    f"could not read back {self._path} to checkpoint it ({exc}); nothing was "
                    "written for this stop: fix the cause and call stop() again",
                    self._path,
                ) from exc
            ts = _now()
            checkpoint = AgentCheckpoint(
                seq=self._next_seq,
                ts=ts,
                digest=checkpoint_digest(state.messages),
                message_count=len(state.messages),
            )
            terminal = Terminal(
                seq=self._next_seq + 1, ts=ts, stop_kind=kind.value, reason=reason, error=detail
            )
            self._enqueue([encode_record(checkpoint), encode_record(terminal)])
            self._drain()
            self._stopped = terminal
            return terminal

    # --- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Drain, stop the worker and release the lock. Idempotent.

        Raises :class:`WriterFailedError` (once) if a write failed and was not reported yet;
        the lock and the file are released either way.
        """
        with self._op_lock:
            if self._closed:
                return
            pending: WriterFailedError | None = None
            try:
                self._drain()
            except WriterFailedError as exc:
                pending = exc
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._worker.join()
            self._closed = True
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
            if pending is not None and not self._error_raised_on_close:
                self._error_raised_on_close = True
                raise pending

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # ADR 0023: leaving by an exception records it as the stop point, unless the block
        # already stopped; leaving normally only closes (the caller says how a session stops).
        if exc is not None and self._stopped is None and not self._closed:
            try:
                self.stop(_exit_kind(exc), reason=_exit_reason(exc), error=exc)
            except Exception as stop_exc:  # the block's own exception must win
                log.error("could not record the stop point of %s: %s", self._path, stop_exc)
                exc.add_note(f"rollout {self._path}: the stop point was not written: {stop_exc}")
                with contextlib.suppress(WriterError):
                    self.close()
                return
        if exc is not None:
            try:
                self.close()
            except WriterError as close_exc:
                exc.add_note(f"rollout {self._path}: closing failed: {close_exc}")
            return
        self.close()

    # --- asyncio ------------------------------------------------------------------------------

    async def adrain(self) -> None:
        """:meth:`drain` without blocking the event loop."""
        await asyncio.to_thread(self.drain)

    async def astop(
        self,
        kind: StopKind,
        reason: str = "",
        error: ErrorDetail | BaseException | None = None,
    ) -> Terminal:
        """:meth:`stop` without blocking the event loop."""
        return await asyncio.to_thread(self.stop, kind, reason, error)

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
        await asyncio.to_thread(self.__exit__, exc_type, exc, tb)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RolloutWriter {state} {self._path} next_seq={self._next_seq}>"

    # --- the worker ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise WriterClosedError(f"the writer of {self._path} is closed", self._path)

    def _take_batch(self) -> list[bytes] | None:
        """Wait for the next batch (None: closing and nothing left)."""
        cond = self._cond
        monotonic = time.monotonic
        with cond:
            while not self._queue:
                if self._closing or self._error is not None:
                    return None
                cond.wait()
            deadline = monotonic() + MAX_BATCH_DELAY
            while (
                len(self._queue) < MAX_BATCH_RECORDS
                and self._flush_wanted <= self._written
                and not self._closing
            ):
                remaining = deadline - monotonic()
                if remaining <= 0:
                    break
                cond.wait(remaining)
            while self._hold and self._flush_wanted <= self._written and not self._closing:
                cond.wait()
            queue = self._queue
            batch = [queue.popleft() for _ in range(min(MAX_BATCH_RECORDS, len(queue)))]
        batch.append(b"")
        return batch

    def _run(self) -> None:
        fd = self._fd
        per_batch = self._durability is Durability.BATCH
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            n = len(batch) - 1  # the last item is the empty one that ends the last line
            data = b"\n".join(batch)
            try:
                _write_all(fd, data)
                if per_batch:
                    os.fsync(fd)
            except Exception as exc:  # any failure must reach the caller, not die here
                self._fail(exc)
                return
            with self._cond:
                self._good_size += len(data)
                self._written += n
                self._cond.notify_all()

    def _fail(self, exc: Exception) -> WriterFailedError:
        """Record a write failure once; cut a partial line back so the file stays readable."""
        with self._cond:
            if self._error is not None:
                return self._error
            errno_ = getattr(exc, "errno", None)
            what = os.strerror(errno_) if errno_ else f"{type(exc).__name__}: {exc}"
            error = WriterFailedError(
                f"writing the rollout {self._path} failed ({what}); records after seq "
                f"{self._base_seq + self._written} were not written. The file is readable up "
                "to its last complete record: close this writer and resume with "
                "RolloutWriter.open() once the cause is fixed",
                self._path,
            )
            error.__cause__ = exc
            self._error = error
            self._queue.clear()
            try:
                if os.fstat(self._fd).st_size > self._good_size:
                    os.ftruncate(self._fd, self._good_size)
            except OSError:
                # The reader reports a torn last line as such; nothing more can be done here.
                pass
            self._cond.notify_all()
            return error


# --- helpers ------------------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n == 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[n:]


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise WriterBusyError(
            f"{path} is locked: another writer holds it (in this process or another); "
            "a rollout has exactly one writer at a time. Close the other writer first",
            path,
        ) from None


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


_TAIL_CHUNK: Final = 1 << 16


def _line_start(fd: int, end: int) -> int:
    """The offset where the line holding the byte before ``end`` starts (searching backwards)."""
    pos = end
    while pos > 0:
        lo = max(0, pos - _TAIL_CHUNK)
        nl = os.pread(fd, pos - lo, lo).rfind(b"\n")
        if nl >= 0:
            return lo + nl + 1
        pos = lo
    return 0


def _repair_tail(fd: int, path: Path) -> TailRepair | None:
    """Make the file end with a complete message (ADR 0022).

    A torn last line, and reasoning records at the very end (their message was never
    written), are moved byte for byte to a sidecar file; a complete last record lacking only
    its line end gets one.
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return None
    cut: int | None = None
    newline_at: int | None = None
    if os.pread(fd, 1, size - 1) != b"\n":
        start = _line_start(fd, size)
        try:
            decode_record(_pread_all(fd, size - start, start))
        except RecordDecodeError:
            cut = start
        else:
            _write_all(fd, b"\n")
            newline_at = start
            size += 1
    # Reasoning records belong to the message after them; at the end of the file that message
    # was never written, and left there they would attach to the next assistant message.
    orphans_at: int | None = None
    end = size if cut is None else cut
    while end > 0:
        start = _line_start(fd, end - 1)
        try:
            record = decode_record(_pread_all(fd, end - start, start))
        except RecordDecodeError:
            break
        if not isinstance(record, ReasoningRecord):
            break
        orphans_at = end = start
    if orphans_at is not None:
        cut = orphans_at
    if cut is None:
        if newline_at is None:
            return None
        return TailRepair(kind="newline_added", offset=newline_at, size=size - 1 - newline_at)
    moved = _pread_all(fd, size - cut, cut)
    sidecar = _sidecar_path(path)
    with open(os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as f:
        f.write(moved)
        f.flush()
        os.fsync(f.fileno())
    os.ftruncate(fd, cut)
    kind = "torn_line_moved" if orphans_at is None else "orphan_reasoning_moved"
    return TailRepair(kind=kind, offset=cut, size=len(moved), sidecar=sidecar)


def _pread_all(fd: int, n: int, offset: int) -> bytes:
    parts = []
    while n > 0:
        chunk = os.pread(fd, min(n, 1 << 24), offset)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _sidecar_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".torn")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.torn.{n}")
        n += 1
    return candidate


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
    except (TypeError, msgspec.EncodeError) as exc:
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
            message=str(error),
            traceback="".join(traceback.format_exception(error)) or None,
        )
    raise TypeError(f"error must be an ErrorDetail or an exception, not {type(error).__name__}")


def _exit_kind(exc: BaseException) -> StopKind:
    if isinstance(exc, asyncio.CancelledError):
        return StopKind.CANCELLED
    if isinstance(exc, KeyboardInterrupt):
        return StopKind.INTERRUPTED
    return StopKind.ERROR


def _exit_reason(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__qualname__
    return (
        f"left the writer's block by {name}: {text}"
        if text
        else f"left the writer's block by {name}"
    )
