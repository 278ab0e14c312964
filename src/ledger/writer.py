"""The batched rollout writer: one file, one writer, one background worker, one terminal path.

``append`` only encodes and enqueues (it never waits for the disk); a background thread writes
batches (ADR 0021, :mod:`ledger.batching`). ``drain`` returns once everything enqueued before it
is in the file at the chosen :class:`Durability` (ADR 0020). ``stop`` is the only place that
writes a checkpoint: it drains, rebuilds the conversation from the whole file, read back
through the descriptor the writer holds, with the reader and reducer replay uses, digests it
by the rule of :mod:`ledger.digest` (ADR 0063), and appends the checkpoint and the terminal record
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
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Self

import msgspec

from ledger import locking
from ledger.batching import MAX_BATCH_DELAY, MAX_BATCH_RECORDS, BatchQueue
from ledger.codec import encode_line, encode_record, message_records, split_message
from ledger.context import delegation_coordinates
from ledger.history import RewindTargets
from ledger.messages import Message, Reasoning, Role
from ledger.naming import rollout_filename
from ledger.readback import ReadMark, mark_of_open, read_back
from ledger.reader import DEFAULT_MAX_LINE_BYTES
from ledger.records import (
    DESCRIPTION_TYPES,
    FORMAT_VERSION,
    RECORD_TYPES,
    AgentCheckpoint,
    Compacted,
    Description,
    ErrorDetail,
    ForkOrigin,
    MessageRecord,
    ReasoningRecord,
    SessionMeta,
    StopKind,
    Terminal,
)
from ledger.tail import FILE_MODE, TailRepair
from ledger.writer_args import (
    error_detail,
    messages_arg,
    split_meta,
    stop_kind,
)
from ledger.writer_async import AsyncForms
from ledger.writer_errors import (
    DEFAULT_DURABILITY,
    Durability,
    ForkError,
    ReadBackError,
    RolloutExistsError,
    WriterBusyError,
    WriterClosedError,
    WriterError,
    WriterFailedError,
    durability_arg,
)
from ledger.writer_files import new_rollout, session_rollout, taken_rollout
from ledger.writer_history import HistoryForms
from ledger.writer_life import LifeForms, track

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

log = logging.getLogger("ledger.writer")


def _now() -> datetime:
    return datetime.now(UTC)


_OWN_TYPES: Final = frozenset(RECORD_TYPES)
_MESSAGE_RECORD: Final = MessageRecord(
    seq=1, ts=datetime(2000, 1, 1, tzinfo=UTC), message=Message(role=Role.USER)
)
_REASONING_RECORD: Final = ReasoningRecord(
    seq=1, ts=datetime(2000, 1, 1, tzinfo=UTC), reasoning=Reasoning()
)
_replace = msgspec.structs.replace


def _lines_of(message: Message, seq: int, ts: datetime) -> list[bytes]:
    """The encoded records of ``message`` from ``seq`` on: its reasoning blocks, then itself
    (:func:`~ledger.codec.message_records`'s rule). Records are made from templates: the checked
    constructors would only check what is known good (the message and its blocks were checked
    when they were built; seq and ts are the writer's own), at 4 us a record."""
    if not message.reasoning:
        return [encode_record(_replace(_MESSAGE_RECORD, seq=seq, ts=ts, message=message))]
    if message.role != Role.ASSISTANT:
        # The rule and its error are message_records'.
        return [encode_record(r) for r in message_records(message, first_seq=seq, ts=ts)]
    blocks, bare = split_message(message)
    lines = [
        encode_record(_replace(_REASONING_RECORD, seq=seq + k, ts=ts, reasoning=block))
        for k, block in enumerate(blocks)
    ]
    lines.append(
        encode_record(_replace(_MESSAGE_RECORD, seq=seq + len(blocks), ts=ts, message=bare))
    )
    return lines


class RolloutWriter(LifeForms, AsyncForms, HistoryForms):
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
        self._q = BatchQueue(
            fd,
            name=path.name,
            next_seq=next_seq,
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
        locking.untrack(self._q._fd)  # the writer forgets its descriptor in a child from now on
        track(self)

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
        name; every other key goes, as JSON, into ``extra``. A ``session_id`` that already has a
        rollout in ``directory`` is refused (:class:`RolloutExistsError`): continue that session
        with :meth:`open`.
        """
        return cls._create(
            directory,
            session_id=session_id,
            agent_name=agent_name,
            meta=meta,
            durability=durability,
        )

    @classmethod
    def _create(
        cls,
        directory: str | os.PathLike[str],
        *,
        session_id: str | None,
        agent_name: str | None,
        meta: Mapping[str, Any] | None,
        durability: Durability | str,
        fork: ForkOrigin | None = None,
    ) -> Self:
        durability = durability_arg(durability)
        if not isinstance(directory, str | os.PathLike) or not os.fspath(directory):
            raise ValueError(
                f"directory {directory!r} names no directory: pass the directory that holds "
                "the rollouts (`.` for the current one)"
            )
        chosen = session_id is not None
        if session_id is None:
            session_id = str(uuid.uuid4())
        fields, extra = split_meta(meta)
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
            fork=fork,
            **fields,
        )
        line = encode_line(record)
        if chosen:
            existing = session_rollout(Path(directory), session_id, agent_name)
            if existing is not None:
                raise RolloutExistsError(
                    f"session {session_id!r} already has a rollout, {existing}: continue it with "
                    "RolloutWriter.open(path), or pass another session_id (ADR 0055)",
                    existing,
                )
        with new_rollout(Path(directory), name, line, durability) as (path, fd):
            writer = cls(
                path=path,
                fd=fd,
                session_id=session_id,
                agent_name=agent_name,
                next_seq=2,
                size=len(line),
                durability=durability,
                origin=fork,
            )
            writer._start()
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
        durability = durability_arg(durability)
        with taken_rollout(Path(path), durability) as (real, fd, state, repair, read):
            assert state.meta is not None  # taken_rollout checked the head
            size = os.fstat(fd).st_size
            writer = cls(
                path=real,
                fd=fd,
                session_id=state.meta.session_id,
                agent_name=state.meta.agent_name,
                next_seq=(state.last_seq or 0) + 1,
                size=size,
                durability=durability,
                repair=repair,
                stopped=True,
                targets=RewindTargets(state.rewound.base, state.rewound.ranges),
                origin=state.meta.fork,
                mark=mark_of_open(fd, read, state),
            )
            writer._start()
        return writer

    def _discard(self) -> None:
        # A writer made for a caller who is gone: nothing of the session was recorded.
        with self._op_lock:
            self._unstopped = False
            self._close("")
        with contextlib.suppress(OSError):
            if self._q.first_seq == 2 and self._q.taken == 0:
                self._path.unlink()

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
            self._enqueue(_lines_of(message, seq, ts))

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
        assert fd is not None
        try:
            if self._durability is Durability.DRAIN:
                os.fsync(fd)
            if os.fstat(fd).st_nlink == 0:
                raise FileNotFoundError(2, "the file was removed while being written")
        except OSError as exc:
            raise self._q.fail_now(exc) from exc

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
        kind = stop_kind(kind)
        if not isinstance(reason, str):
            raise TypeError(f"stop(reason=...) takes a str, not {type(reason).__name__}")
        detail = error_detail(error)
        self._guard("stop")
        with self._op_lock:
            return self._stop(kind, reason, detail)

    def _stop(self, kind: StopKind, reason: str, detail: ErrorDetail | None) -> Terminal:
        # Caller holds _op_lock (stop, close, leaving the block, the exit hook).
        self._check_usable()
        with self._io_lock:
            self._drain_locked()
            seq = self._q.next_seq()
            try:
                assert self._fd is not None
                state, problem, mark = read_back(
                    self._fd, self._q.own_records(), seq - 1, self._mark
                )
            except OSError as exc:
                raise WriterError(
                    f"could not read back {self._path} to checkpoint it ({exc}); nothing "
                    "was written for this stop: fix the cause and call stop() again",
                    self._path,
                ) from exc
            ts = _now()
            if problem is None:
                terminal = Terminal(
                    seq=seq + 1, ts=ts, stop_kind=kind.value, reason=reason, error=detail
                )
                checkpoint = AgentCheckpoint(
                    seq=seq,
                    ts=ts,
                    digest=state.digest(),
                    message_count=len(state.messages),
                )
                lines = [encode_record(checkpoint), encode_record(terminal)]
                # The next read-back starts where this one ended; what follows is counted anew.
                # The witness first: interrupted between the two, the old mark still holds (a
                # read-back from it counts only records from ``seq`` on), whereas a new mark
                # with the old witness would refuse the next checkpoint of a correct file.
                self._q.restart_own(seq)
                self._mark = mark
            else:
                terminal = Terminal(
                    seq=seq,
                    ts=ts,
                    stop_kind=StopKind.FAILED.value,
                    reason=f"no checkpoint: {problem} (asked to stop as {kind}: {reason})",
                    error=ErrorDetail(type="ReadBackError", message=problem),
                )
                lines = [encode_record(terminal)]
            self._enqueue(lines)
            self._stopped = terminal
            self._unstopped = False
            self._drain_locked()
        if problem is not None:
            raise ReadBackError(
                f"{self._path}: {problem}; a failed terminal record was written instead of a "
                "checkpoint: the session is not resumable as-is (replay it to see the damage, "
                "or hand off)",
                self._path,
            )
        return terminal

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        q = self._q  # no lock: a repr may be asked for while this thread holds it
        return (
            f"<RolloutWriter {state} {self._path} next_seq={q.first_seq + q.taken + len(q.queue)}>"
        )
