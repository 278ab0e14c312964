"""Codex ``event_msg`` lines and usage records: turn ends, aborts, errors and token counts become
the format-2 descriptions (ADRs 0121-0124); what mirrors a response item is counted as a
duplicate, and reasoning no item holds is kept outside the conversation. Apart from the response
items because an event never enters the conversation: it describes the session around it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ledger.importers._codex_context import ContextLines
from ledger.importers._codex_conversation import KEY, raw, str_or_none
from ledger.importers._codex_items import MIRRORS
from ledger.importers._plan import EPOCH
from ledger.importers._report import Disposition, Tally
from ledger.records import Event, EventKind, MetaUpdate, Turn, Usage

if TYPE_CHECKING:
    from ledger.importers._codex_lines import CodexSession

__all__ = ["EventLines"]

D = Disposition


class EventLines(ContextLines):
    """``event_msg`` lines, ``token_count`` events and ``token_usage_record`` lines."""

    def __init__(self, tally: Tally, s: CodexSession) -> None:
        super().__init__(tally, s)
        self.last_total: Any = None
        self.usage_records = False

    def event(self, n: int, p: dict[str, Any]) -> None:
        et = p.get("type")
        if et == "token_count":
            self.token_count(n, p)
        elif et == "task_started":
            self.flush()
            self.fill_turn(None)
            self.turn_slot = (len(self.ops), p)
            self.ops.append(None)  # type: ignore[arg-type]  # filled by fill_turn
            self.tally.mark(n, D.IMPORTED, "turn")
        elif et == "task_complete":
            self.flush()
            self.fill_turn(None)
            end = Turn(
                seq=0,
                ts=EPOCH,
                boundary="end",
                turn_id=str_or_none(p.get("turn_id")),
                extra=raw({KEY: p}),
            )
            self.note(n, end, "turn")
            self.s.tail = "idle after the turn completed"
        elif et == "turn_aborted":
            self.flush()
            reason = f"turn aborted ({p.get('reason')})"
            ev = Event(
                seq=0,
                ts=EPOCH,
                kind=EventKind.TURN_ABORTED.value,
                reason=reason,
                turn_id=str_or_none(p.get("turn_id")),
                extra=raw({KEY: p}),
            )
            self.note(n, ev, "event")
            self.s.tail = f"interrupted ({p.get('reason')})"
        elif et in ("error", "stream_error"):
            msg = str_or_none(p.get("message")) or ""
            ev = Event(
                seq=0, ts=EPOCH, kind=EventKind.API_ERROR.value, reason=msg, extra=raw({KEY: p})
            )
            self.note(n, ev, "event")
        elif et == "thread_settings_applied":
            self.note(
                n, MetaUpdate(seq=0, ts=EPOCH, extra=raw({KEY: p})), "meta_update", D.METADATA
            )
        elif et == "agent_reasoning" and p.get("text") not in self.summaries:
            # An interrupted turn's reasoning that no item holds: kept, outside the conversation
            # (Codex never sends it back), rather than dropped as a mirror of nothing.
            why = "event_msg/agent_reasoning: reasoning no item holds (never sent to the model)"
            self.note(n, MetaUpdate(seq=0, ts=EPOCH, extra=raw({KEY: p})), why, D.METADATA)
        elif et in MIRRORS:
            self.tally.mark(n, D.DUPLICATE, f"event_msg/{et}: {MIRRORS[et]}")
        else:
            self.tally.mark(n, D.UNKNOWN, f"event_msg/{et} is unknown to this importer")

    def token_count(self, n: int, p: dict[str, Any]) -> None:
        info = p.get("info")
        if self.usage_records:
            self.tally.mark(n, D.DUPLICATE, "token_count: usage comes from token_usage_record")
        elif not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            self.tally.mark(n, D.STATE, "token_count without usage (rate limits only)")
        elif info.get("total_token_usage") == self.last_total:
            self.tally.mark(n, D.DUPLICATE, "token_count: repeats the count before it")
        else:
            self.last_total = info.get("total_token_usage")
            usage = self.usage(info["last_token_usage"], None)
            rest = {k: v for k, v in info.items() if k != "last_token_usage"}
            usage = msgspec.structs.replace(usage, extra=raw({KEY: rest}))
            self.flush()
            self.ops.append(usage)
            self.tally.mark(n, D.IMPORTED, "usage")

    def usage(self, u: dict[str, Any], rid: Any) -> Usage:
        u = u.get("usage", u) if isinstance(u.get("usage"), dict) else u
        pick = {
            "input_tokens": u.get("input_tokens"),
            "output_tokens": u.get("output_tokens"),
            "cache_read_tokens": u.get("cached_input_tokens"),
            "reasoning_tokens": u.get("reasoning_output_tokens"),
        }
        n = {k: v if type(v) is int and v >= 0 else 0 for k, v in pick.items()}
        return Usage(
            seq=0,
            ts=EPOCH,
            response_id=str_or_none(rid),
            model=self.model,
            input_tokens=n["input_tokens"],
            output_tokens=n["output_tokens"],
            cache_read_tokens=n["cache_read_tokens"],
            reasoning_tokens=n["reasoning_tokens"],
        )
