"""The OpenAI Agents SDK ``Session`` protocol over a rollout (extra ``openai-agents``).

The SDK hands a session its items in the Responses input shape; they are recorded through
:mod:`ledger.providers.openai_responses`, so reasoning items (with ``encrypted_content``),
function calls and their ids come back byte for byte, in another process too. Items are never
rewritten: ``pop_item`` and ``clear_session`` append a ``compacted`` record holding what
remains (ADR 0103), and replay starts from the last one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ledger import Durability, RolloutWriter, StopKind
from ledger.providers import openai_responses
from replay.replay import read_replay

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import SessionSettings

__all__ = ["RolloutSession"]


class RolloutSession:
    """An Agents SDK session whose history is a rollout: ``Runner.run(..., session=s)``.

    Make one with :meth:`create` (a new rollout under a directory) or :meth:`open` (resume the
    rollout at a path); :meth:`close` pauses the session and releases the file.
    """

    session_settings: SessionSettings | None = None

    def __init__(self, writer: RolloutWriter) -> None:
        self._writer = writer
        self.session_id: str = writer.session_id
        self._lock = asyncio.Lock()

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        durability: Durability = Durability.DRAIN,
    ) -> RolloutSession:
        """A session in a new rollout under ``directory``."""
        writer = RolloutWriter.create(
            directory, session_id=session_id, agent_name=agent_name, durability=durability
        )
        return cls(writer)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RolloutSession:
        """The session of the rollout at ``path``, to continue it."""
        return cls(RolloutWriter.open(path))

    @property
    def path(self) -> os.PathLike[str]:
        """The rollout file."""
        return self._writer.path

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history in order; with ``limit``, its last ``limit`` items."""
        async with self._lock:
            items = await asyncio.to_thread(self._read)
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record ``items`` after the history (nothing is written if one is malformed)."""
        plain = [_plain(item) for item in items]
        messages = openai_responses.to_ledger({"input": plain})
        async with self._lock:
            for m in messages:
                self._writer.append(m)

    async def pop_item(self) -> TResponseInputItem | None:
        """Take the last item off the history: a ``compacted`` record holds the rest."""
        async with self._lock:
            items = await asyncio.to_thread(self._read)
            if not items:
                return None
            rest = openai_responses.to_ledger({"input": items[:-1]})
            self._writer.compacted(rest, summary="pop_item")
            last: TResponseInputItem = items[-1]
            return last

    async def clear_session(self) -> None:
        """Empty the history: a ``compacted`` record with no messages."""
        async with self._lock:
            self._writer.compacted((), summary="clear_session")

    def close(self, kind: StopKind = StopKind.PAUSED, reason: str = "") -> None:
        """Stop the rollout (paused by default, so that it can be resumed) and release it."""
        self._writer.stop(kind, reason=reason)
        self._writer.close()

    def _read(self) -> list[Any]:
        self._writer.drain()  # read your own writes (ADR 0025)
        messages = read_replay(self._writer.path).messages
        items = openai_responses.from_ledger(messages)["input"]
        return list(items)


def _plain(item: Any) -> dict[str, Any]:
    # The Runner hands over dicts; an SDK model object is dumped the way the SDK replays it.
    if isinstance(item, Mapping):
        return dict(item)
    dumped: dict[str, Any] = item.model_dump(exclude_unset=True, mode="json")
    return dumped
