"""Async forms of the read functions, for asyncio frameworks: the event loop never waits on disk.

Each runs its blocking twin in a worker thread (:func:`asyncio.to_thread`), so the loop keeps
serving other tasks while a large rollout is read, decoded and digested. They take the same
arguments, return the same values and raise the same errors. Cancelling the awaiting task
stops the wait, not the read: the thread finishes its file and its result is dropped.
``asyncio`` is imported on first call, so that ``import replay`` does not pay for it.
"""

from __future__ import annotations

import os

from replay.replay import Replay, TokenCounter, read_replay
from replay.sessions import SessionEntry, list_sessions
from replay.stop import DEFAULT_SCAN_BUDGET, StopFacts, read_stop_facts

__all__ = ["alist_sessions", "aread_replay", "aread_stop_facts"]


async def aread_replay(
    path: str | os.PathLike[str],
    *,
    token_budget: float | None = None,
    max_messages: int | None = None,
    token_counter: TokenCounter | None = None,
    whole_file: bool = False,
    root: str | os.PathLike[str] | None = None,
) -> Replay:
    """:func:`~replay.read_replay` off the event loop."""
    import asyncio

    return await asyncio.to_thread(
        read_replay,
        path,
        token_budget=token_budget,
        max_messages=max_messages,
        token_counter=token_counter,
        whole_file=whole_file,
        root=root,
    )


async def aread_stop_facts(
    path: str | os.PathLike[str], *, scan_budget: int = DEFAULT_SCAN_BUDGET
) -> StopFacts:
    """:func:`~replay.read_stop_facts` off the event loop."""
    import asyncio

    return await asyncio.to_thread(read_stop_facts, path, scan_budget=scan_budget)


async def alist_sessions(
    root: str | os.PathLike[str], *, trash: bool = False
) -> tuple[SessionEntry, ...]:
    """:func:`~replay.list_sessions` off the event loop."""
    import asyncio

    return await asyncio.to_thread(list_sessions, root, trash=trash)
