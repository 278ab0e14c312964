"""The history operations of the writer: fork a session, rewind one (ADRs 0130-0131).

A mixin of :class:`~ledger.writer.RolloutWriter`. ``fork`` reads its source through
:func:`ledger.lineage.plan_fork` and starts a new rollout whose ``session_meta`` names its
origin; ``rewind`` appends one record under the op lock, as ``compacted`` does, after the rule
of :mod:`ledger.history` accepted its target.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ledger.codec import encode_record
from ledger.history import RewindTargets
from ledger.lineage import Locator, plan_fork
from ledger.messages import Message
from ledger.records import ForkOrigin, Rewind
from ledger.writer_errors import DEFAULT_DURABILITY, Durability

if TYPE_CHECKING:
    from ledger.batching import BatchQueue

__all__ = ["HistoryForms"]


class HistoryForms:
    """``fork``, ``fork_origin`` and ``rewind``."""

    _path: Path
    _origin: ForkOrigin | None
    _targets: RewindTargets
    _decode: set[int] | None
    _op_lock: threading.RLock
    _q: BatchQueue

    if TYPE_CHECKING:  # what the writer provides

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
        ) -> Self: ...

        def compacted(self, messages: Iterable[Message], summary: str | None = None) -> None: ...

        def _guard(self, what: str) -> None: ...

        def _check_usable(self) -> None: ...

        def _enqueue(self, lines: list[bytes]) -> None: ...

    @classmethod
    def fork(
        cls,
        source: str | os.PathLike[str],
        directory: str | os.PathLike[str] | None = None,
        *,
        at: int | None = None,
        copy: bool = False,
        session_id: str | None = None,
        agent_name: str | None = None,
        meta: Mapping[str, Any] | None = None,
        durability: Durability | str = DEFAULT_DURABILITY,
        locate: Locator | None = None,
    ) -> Self:
        """Start a new session that continues the conversation of the rollout ``source`` as it
        was at record ``at`` (its last record when ``None``), in ``directory`` (the source's
        by default). ADR 0130.

        The fork's ``session_meta`` records the origin: the source session id, the record, the
        digest and message count of the source's conversation there, and where the source was.
        Nothing is copied: replay reads the source up to that record and checks it against the
        digest. With ``copy=True`` the inherited conversation (the source's own sources
        included, found by ``locate``) is written into the fork as a ``compacted`` record, so
        that the fork never needs its source. ``agent_name`` defaults to the source's; the rest
        is as :meth:`create`. Raises :class:`ForkError` when the source cannot be forked there.
        """
        plan = plan_fork(
            Path(source), directory, at=at, copy=copy, agent_name=agent_name, locate=locate
        )
        writer = cls._create(
            plan.directory,
            session_id=session_id,
            agent_name=plan.agent_name,
            meta=meta,
            durability=durability,
            fork=plan.origin,
        )
        if plan.copied is not None:
            writer.compacted(plan.copied, summary=plan.summary)
        return writer

    @property
    def fork_origin(self) -> ForkOrigin | None:
        """Where the session was forked from, as its ``session_meta`` records (ADR 0130)."""
        return self._origin

    def rewind(self, to: int, reason: str = "") -> None:
        """Record that the conversation continues from its state at record ``to`` (ADR 0131).

        The records after ``to`` stay in the file; replay leaves their messages out of the
        conversation and the checkpoint digest, and keeps them, marked abandoned, for display.
        ``to`` must name a record of the current conversation: from seq 1 (an empty
        conversation) or the last compaction, up to the last record, and not one an earlier
        rewind abandoned; otherwise ``ValueError`` says why and nothing is written. Never
        waits for disk.
        """
        if type(to) is not int:
            raise TypeError(f"rewind(to=...) takes a record's seq (an int), not {to!r}")
        if not isinstance(reason, str):
            raise TypeError(f"rewind(reason=...) takes a str, not {type(reason).__name__}")
        self._guard("rewind")
        with self._op_lock:
            self._check_usable()
            seq = self._q.next_seq()
            problem = self._targets.problem(to, seq)
            if problem is not None:
                raise ValueError(f"{self._path}: cannot rewind to seq {to}: {problem}")
            record = Rewind(seq=seq, ts=datetime.now(UTC), to=to, reason=reason)
            self._decode = None  # a rewind is folded by the reducer alone (ADR 0164)
            self._enqueue([encode_record(record)])
            self._targets.rewound(to, seq)  # after the put, as in compacted()
