"""Codex lines that set the scene of the conversation: ``session_meta`` (the session's facts,
its instructions as the system message; a later one is kept as a ``meta_update``, ADR 0124),
``turn_context`` (a turn start with its settings, ADR 0122) and ``compacted`` (a compaction whose
replacement history goes through the Responses adapter, ADR 0125). Apart from the response items
and the event messages because each of these lines states a context, never an exchange.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ledger.importers._codex_conversation import KEY, Conversation, raw, str_or_none
from ledger.importers._codex_items import roleless
from ledger.importers._plan import EPOCH, Compaction
from ledger.importers._report import Disposition, Tally
from ledger.messages import Message, Role
from ledger.providers import ProviderError, openai_responses
from ledger.records import MetaUpdate, Turn

if TYPE_CHECKING:
    from ledger.importers._codex_lines import CodexSession

__all__ = ["ContextLines"]

D = Disposition


class ContextLines(Conversation):
    """``session_meta``, ``turn_context`` and ``compacted`` lines, and the pending turn start."""

    def __init__(self, tally: Tally, s: CodexSession) -> None:
        super().__init__(tally, s)
        self.turn_slot: tuple[int, dict[str, Any]] | None = None
        self.last_settings: Any = None
        self.last_turn_id: Any = None
        self.meta_seen = False

    def session_meta(self, n: int, p: dict[str, Any]) -> None:
        s = self.s
        if self.meta_seen:
            self.note(
                n,
                MetaUpdate(seq=0, ts=EPOCH, extra=raw({KEY: {"session_meta": p}})),
                "meta_update (a later session_meta: resumed or forked)",
                D.METADATA,
            )
            return
        self.meta_seen = True
        s.session_id = str_or_none(p.get("id"))
        s.started = str_or_none(p.get("timestamp"))
        s.version = str_or_none(p.get("cli_version"))
        s.provider = str_or_none(p.get("model_provider"))
        s.cwd = str_or_none(p.get("cwd"))
        source = p.get("source")
        sub = source.get("subagent") if isinstance(source, dict) else None
        spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None  # or "review"...
        if isinstance(spawn, dict):
            s.parent = str_or_none(spawn.get("parent_thread_id"))
        s.meta = {k: v for k, v in p.items() if k not in ("instructions", "base_instructions")}
        text = p.get("base_instructions") or p.get("instructions")
        if isinstance(text, dict):
            text = text.get("text")
        if isinstance(text, str) and text:
            system = openai_responses.to_ledger({"instructions": text, "input": []})
            self.ops.extend(system)
        self.tally.mark(n, D.METADATA, "session_meta")

    def turn_context(self, n: int, p: dict[str, Any]) -> None:
        self.flush()
        model = str_or_none(p.get("model"))
        if model:
            self.s.model = self.s.model or model
            self.model = model
        tid = p.get("turn_id")
        settings = {k: v for k, v in p.items() if k != "turn_id"}
        if self.turn_slot is not None and self.turn_slot[1].get("turn_id") in (tid, None):
            self.fill_turn(p)
            self.tally.mark(n, D.IMPORTED, "turn")
        elif settings != self.last_settings or tid != self.last_turn_id:
            self.ops.append(
                Turn(
                    seq=0,
                    ts=EPOCH,
                    boundary="start",
                    turn_id=str_or_none(tid),
                    model=model,
                    settings=raw(p),
                )
            )
            self.tally.mark(n, D.IMPORTED, "turn")
        else:
            self.tally.mark(n, D.DUPLICATE, "turn_context: the same settings as the one before")
        self.last_settings, self.last_turn_id = settings, tid

    def fill_turn(self, ctx: dict[str, Any] | None) -> None:
        """Write the pending turn start, with the settings of its turn context when known."""
        if self.turn_slot is None:
            return
        at, task = self.turn_slot
        self.turn_slot = None
        self.ops[at] = Turn(
            seq=0,
            ts=EPOCH,
            boundary="start",
            turn_id=str_or_none(task.get("turn_id")),
            model=str_or_none(ctx.get("model")) if ctx else None,
            settings=raw(ctx) if ctx else msgspec.UNSET,
            extra=raw({KEY: task}),
        )

    def compacted(self, n: int, p: dict[str, Any]) -> None:
        self.flush()
        summary = str_or_none(p.get("message"))
        history = p.get("replacement_history")
        rest = {k: v for k, v in p.items() if k not in ("message", "replacement_history")}
        if isinstance(history, list):
            try:
                messages = tuple(roleless(m) for m in self.convert(history))
            except ProviderError as exc:
                self.tally.mark(n, D.DAMAGED, f"a replacement history the shape refuses: {exc}")
                return
        else:
            messages = (Message(role=Role.USER, content=summary or ""),)
        extra = raw({KEY: rest}) if rest else msgspec.UNSET
        self.ops.append(Compaction(messages, summary, extra))
        self.tally.mark(n, D.IMPORTED, "compacted")
