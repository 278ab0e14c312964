"""The writer's life after it opened: closing, the ``with`` block, and what refuses a call
(ADRs 0023, 0051, 0053, 0055).

A mixin of :class:`~ledger.writer.RolloutWriter`, as the asyncio and history forms are: the
lock discipline is the writer's (ADR 0051), and nothing here takes a lock in another order.
Writers still open when the interpreter exits are closed here too, each recording ``closed``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from ledger import locking
from ledger.records import ErrorDetail, StopKind, Terminal
from ledger.writer_args import clean_exit, error_detail, exit_kind, exit_reason
from ledger.writer_errors import (
    ReadBackError,
    WriterClosedError,
    WriterError,
    WriterFailedError,
)

if TYPE_CHECKING:
    from ledger.batching import BatchQueue

__all__ = ["LifeForms", "track"]

log = logging.getLogger("ledger.writer")


class LifeForms:
    """``close``, the ``with`` block, the guards and the description of a failed write."""

    _path: Path
    _fd: int | None
    _pid: int
    _forked: bool
    _closed: bool
    _error_raised_on_close: bool
    _stopped: Terminal | None
    _unstopped: bool
    _base_seq: int
    _op_lock: threading.RLock
    _io_lock: threading.RLock
    _q: BatchQueue

    if TYPE_CHECKING:  # what the writer provides

        def _stop(self, kind: StopKind, reason: str, detail: ErrorDetail | None) -> Terminal: ...

        def _drain_locked(self) -> None: ...

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
        self._guard("close")
        with self._op_lock:
            self._close("closed without stop()")

    def _close(self, why: str) -> None:
        # Caller holds _op_lock.
        if self._closed:
            return
        pending: BaseException | None = None
        if self._unstopped and self._q.error is None:
            try:
                self._stop(StopKind.CLOSED, why, None)
            except WriterError as exc:
                pending = exc
        interrupted: BaseException | None = None
        with self._io_lock:
            try:
                self._drain_locked()
            except WriterError as exc:
                pending = pending or exc
            # The worker must end before the descriptor closes (a number closed under it could be
            # reused by another file), and an interruption here (a second Ctrl-C) must not leave
            # a writer half closed: it is raised once the writer is closed.
            while True:
                try:
                    self._q.join()
                    break
                except BaseException as exc:
                    interrupted = interrupted or exc
                    if not self._q.thread.is_alive():
                        break
            self._release()
        _live.discard(self)
        if interrupted is not None:
            raise interrupted
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
            if exc is not None and not clean_exit(exc) and not stopped and not self._closed:
                try:
                    self._stop(exit_kind(exc), exit_reason(exc), error_detail(exc))
                except Exception as stop_exc:  # the block's own exception must win
                    log.error("could not record the stop point of %s: %s", self._path, stop_exc)
                    exc.add_note(
                        f"rollout {self._path}: the stop point was not written: {stop_exc}"
                    )
            if exc is None:
                self._close("closed without stop()")
                return
            try:
                self._close("closed without stop()")
            except WriterError as close_exc:
                exc.add_note(f"rollout {self._path}: closing failed: {close_exc}")

    # --- failures -----------------------------------------------------------------------------

    def _guard(self, what: str) -> None:
        """Refuse, before taking any lock, a call this writer cannot serve safely (ADR 0055)."""
        if self._forked:
            raise WriterError(
                f"this writer of {self._path} belongs to process {self._pid}; a child forked "
                "from it cannot use it. The parent closes it; a child that must record opens a "
                "rollout of its own",
                self._path,
            )
        if self._op_lock._is_owned() or self._io_lock._is_owned():  # type: ignore[attr-defined]
            raise WriterError(
                f"{what}() was called on the writer of {self._path} while this thread is inside "
                "another call of the same writer (from a signal handler?). A handler must not "
                "call the writer: let it raise (KeyboardInterrupt, or an exception of your own) "
                "so that leaving the writer's `with` block records the stop point, or set a flag "
                "that the agent's loop checks",
                self._path,
            )

    def _check_usable(self) -> None:
        error = self._q.error
        if error is not None:
            raise error
        if self._closed:
            raise WriterClosedError(f"the writer of {self._path} is closed", self._path)

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

_live: weakref.WeakSet[LifeForms] = weakref.WeakSet()


def track(writer: LifeForms) -> None:
    """Close ``writer`` when the interpreter exits, if it is still open then."""
    _live.add(writer)


def _close_at_exit() -> None:
    for writer in list(_live):
        if writer._pid != os.getpid():
            continue
        try:
            with writer._op_lock:
                writer._close("the process exited with the writer open")
        except Exception as exc:
            log.error("could not close %s at exit: %s", writer._path, exc)


import atexit  # noqa: E402 - registered here, next to what it runs

atexit.register(_close_at_exit)
