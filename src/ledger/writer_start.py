"""How a writer comes to be: ``create`` starts a new rollout, ``open`` takes up an existing one
(ADRs 0016, 0022, 0051 and 0055), and a writer whose caller is gone is undone. A mixin of
:class:`~ledger.writer.RolloutWriter`, apart because these paths run once, before there is a
writer, and work on the file (its name, its head, its lock) through :mod:`ledger.writer_files`,
whose clean-up blocks they build and start the writer in, so that a failure leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ledger.codec import encode_line
from ledger.context import delegation_coordinates
from ledger.history import RewindTargets
from ledger.naming import rollout_filename
from ledger.readback import ReadMark, mark_of_created, mark_of_open
from ledger.records import FORMAT_VERSION, ForkOrigin, SessionMeta
from ledger.tail import TailRepair
from ledger.writer_args import split_meta
from ledger.writer_errors import (
    DEFAULT_DURABILITY,
    Durability,
    RolloutExistsError,
    durability_arg,
)
from ledger.writer_files import new_rollout, session_rollout, taken_rollout

if TYPE_CHECKING:
    from ledger.batching import BatchQueue

__all__ = ["StartForms"]


def _now() -> datetime:
    return datetime.now(UTC)


class StartForms:
    """``create``, ``open`` and the undoing of a writer nobody is left to use."""

    _path: Path
    _unstopped: bool
    _op_lock: threading.RLock
    _q: BatchQueue

    if TYPE_CHECKING:  # what the writer provides

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
        ) -> None: ...

        def _start(self) -> None: ...

        def _close(self, why: str) -> None: ...

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
                mark=mark_of_created(fd, len(line)),
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
                mark=mark_of_open(read, state),
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
