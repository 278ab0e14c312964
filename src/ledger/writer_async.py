"""The asyncio forms of the writer: each runs the blocking work in a thread, off the loop.

A mixin of :class:`~ledger.writer.RolloutWriter`. Cancellation is handled where it matters
(ADRs 0051 and 0055): a cancelled ``astop`` still completes, and ``async with`` waits for it
rather than writing a second stop point; a cancelled ``acreate``/``aopen`` undoes the writer it
was making once it arrives.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ledger.records import ErrorDetail, StopKind, Terminal
from ledger.writer_errors import DEFAULT_DURABILITY, Durability

if TYPE_CHECKING:
    pass

__all__ = ["AsyncForms"]

log = logging.getLogger("ledger.writer")

_W = TypeVar("_W", bound="AsyncForms")


class AsyncForms:
    """``acreate``, ``aopen``, ``adrain``, ``astop``, ``aclose`` and ``async with``."""

    _stop_task: asyncio.Future[Terminal] | None

    if TYPE_CHECKING:  # what the writer provides

        @classmethod
        def create(
            cls,
            directory: str | os.PathLike[str],
            *,
            session_id: str | None = None,
            agent_name: str | None = None,
            meta: Mapping[str, Any] | None = None,
            durability: Durability | str = DEFAULT_DURABILITY,
        ) -> Self: ...

        @classmethod
        def open(
            cls, path: str | os.PathLike[str], *, durability: Durability | str = DEFAULT_DURABILITY
        ) -> Self: ...

        def drain(self) -> None: ...

        def stop(
            self,
            kind: StopKind | str,
            reason: str = "",
            error: ErrorDetail | BaseException | None = None,
        ) -> Terminal: ...

        def close(self) -> None: ...

        def _discard(self) -> None: ...

        def __exit__(
            self,
            exc_type: type[BaseException] | None,
            exc: BaseException | None,
            tb: TracebackType | None,
        ) -> None: ...

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
        """:meth:`create` without blocking the event loop (the context's coordinates go along).

        Cancelled before it returns, it leaves nothing behind: the rollout it was making is
        removed once made (nothing was recorded in it), and its lock released (ADR 0055).
        """
        task = asyncio.ensure_future(
            asyncio.to_thread(
                cls.create,
                directory,
                session_id=session_id,
                agent_name=agent_name,
                meta=meta,
                durability=durability,
            )
        )
        return await _unless_cancelled(task, lambda w: w._discard())

    @classmethod
    async def aopen(
        cls, path: str | os.PathLike[str], *, durability: Durability | str = DEFAULT_DURABILITY
    ) -> Self:
        """:meth:`open` without blocking the event loop; cancelled before it returns, the writer
        it was making is closed once made (nothing written), so the file is not left locked."""
        task = asyncio.ensure_future(asyncio.to_thread(cls.open, path, durability=durability))
        return await _unless_cancelled(task, lambda w: w.close())

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


async def _unless_cancelled(task: asyncio.Future[_W], undo: Callable[[_W], None]) -> _W:
    """Await ``task``; if the caller is cancelled first, ``undo`` the writer it makes."""
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:

        def later(done: asyncio.Future[_W]) -> None:
            if not done.cancelled() and done.exception() is None:
                try:
                    undo(done.result())
                except Exception as exc:  # nobody is left to tell but the log
                    log.error("could not release a writer whose caller was cancelled: %s", exc)

        task.add_done_callback(later)
        raise
