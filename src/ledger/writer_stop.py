"""The stop point, the writer's one terminal path: ``stop`` drains, reads the file back through
the writer's descriptor (:mod:`ledger.readback`), and appends the checkpoint of the conversation
rebuilt from it and the terminal record, or a ``failed`` terminal record when the read-back
finds damage or a record that did not come back as written (SPEC rules 1, 2 and 9; ADRs 0025,
0027, 0052 and 0063). A mixin of :class:`~ledger.writer.RolloutWriter`, apart because it is the
only writer path that reads the file; it takes the writer's locks in the writer's order (ADR
0051).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.codec import encode_record
from ledger.readback import ReadMark, read_back
from ledger.records import AgentCheckpoint, ErrorDetail, StopKind, Terminal
from ledger.writer_args import error_detail, stop_kind
from ledger.writer_errors import ReadBackError, WriterError

if TYPE_CHECKING:
    from ledger.batching import BatchQueue

__all__ = ["StopForms"]


class StopForms:
    """``stop`` and the checkpoint it writes."""

    _path: Path
    _fd: int | None
    _stopped: Terminal | None
    _unstopped: bool
    _mark: ReadMark
    _decode: set[int] | None
    _op_lock: threading.RLock
    _io_lock: threading.RLock
    _q: BatchQueue

    if TYPE_CHECKING:  # what the writer provides

        def _guard(self, what: str) -> None: ...

        def _check_usable(self) -> None: ...

        def _enqueue(self, lines: list[bytes]) -> None: ...

        def _drain_locked(self) -> None: ...

    def stop(
        self,
        kind: StopKind | str,
        reason: str = "",
        error: ErrorDetail | BaseException | None = None,
    ) -> Terminal:
        """Write the stop point: drain, checkpoint the conversation rebuilt from the file, and
        the terminal record; drain again. Returns the terminal record written.

        The checkpoint digest is computed over the conversation the *whole file* holds, read
        back through the descriptor this writer holds after a drain (never an in-memory list):
        the bytes after the writer's last read are folded into what that read established, by
        the reducer replay uses, or, when they are by their CRC-32 the writer's own lines of
        messages and notes, from their envelopes without decoding them (ADR 0164). When the
        read-back meets damage, or bytes that are not the ones this writer wrote, no checkpoint
        is written: a ``failed`` terminal record says why and :class:`ReadBackError` is raised.
        A value that decoding would lose is caught here only when the stop decodes; otherwise
        replay reports it and never calls the conversation verified. Can run again after more
        appends (resume): the last checkpoint wins.
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
                covered, problem, mark = read_back(
                    self._fd, self._q.own_records(), seq - 1, self._mark, decode=self._decode
                )
            except OSError as exc:
                raise WriterError(
                    f"could not read back {self._path} to checkpoint it ({exc}); nothing "
                    "was written for this stop: fix the cause and call stop() again",
                    self._path,
                ) from exc
            ts = datetime.now(UTC)
            if covered is not None:
                digest, message_count = covered
                terminal = Terminal(
                    seq=seq + 1, ts=ts, stop_kind=kind.value, reason=reason, error=detail
                )
                checkpoint = AgentCheckpoint(
                    seq=seq,
                    ts=ts,
                    digest=digest,
                    message_count=message_count,
                )
                lines = [encode_record(checkpoint), encode_record(terminal)]
                # The next read-back starts where this one ended; what follows is counted anew.
                # The witness first: interrupted between the two, the old mark still holds (a
                # read-back from it counts only records from ``seq`` on), whereas a new mark
                # with the old witness would refuse the next checkpoint of a correct file.
                self._q.restart_own(seq, mark.crc)
                self._decode = set()
                self._mark = mark
            else:
                assert problem is not None
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
