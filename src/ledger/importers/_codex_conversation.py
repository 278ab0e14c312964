"""Codex response items to the conversation, and the state every kind of Codex line shares. The
``response_item`` lines (Responses API input items) are gathered and converted in batches
through the Responses adapter, so that encrypted reasoning, item ids, custom tools and hosted
tools go back byte for byte; a batch the adapter refuses is converted item by item, so that only
the bad ones are left out. ``note`` flushes the items before a description, so that it stays
where it was in the file (ADR 0128). Apart from the other line kinds because it is the one path
into the conversation, and the base they build on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ledger.importers._codex_items import exit_status, is_placeholder, unplace, with_id, without_id
from ledger.importers._plan import Op, checked_raw, merge_extra
from ledger.importers._report import Disposition, Tally
from ledger.messages import Message, Role
from ledger.providers import ProviderError, openai_responses

if TYPE_CHECKING:
    from ledger.importers._codex_lines import CodexSession

__all__ = ["KEY", "Conversation", "raw", "str_or_none"]

D = Disposition
KEY = "codex"
"""The key under which what a Codex line says beyond the ledger's fields is kept in ``extra``."""


class Conversation:
    """The operations made so far, the response items not yet converted, and their conversion."""

    def __init__(self, tally: Tally, s: CodexSession) -> None:
        self.tally = tally
        self.s = s
        self.ops: list[Op] = []
        self.items: list[tuple[int, Any]] = []
        self.deferred: list[Op] = []
        self.exit_codes: dict[str, int] = {}
        self.summaries: set[str] = set()  # the summary texts of every reasoning item
        self.model: str | None = None

    def item(self, n: int, p: dict[str, Any]) -> None:
        if p.get("type") == "ghost_snapshot":
            self.tally.mark(n, D.STATE, "ghost_snapshot: an undo commit, never sent to the model")
            return
        self.items.append((n, p))

    def note(self, n: int, op: Op, what: str, how: Disposition = D.IMPORTED) -> None:
        # The items before an event are flushed first: the event stays where it was in the
        # file, so a file that grew converts to what it converted to before, and more (ADR 0128).
        self.flush()
        self.ops.append(op)
        self.tally.mark(n, how, what)

    def convert(self, items: list[Any]) -> tuple[Message, ...]:
        made = openai_responses.to_ledger(
            {"input": [with_id(p) for p in items]}, model=self.model, endpoint=self.s.provider
        )
        return tuple(without_id(m) for m in made)

    def flush(self) -> None:
        if not self.items:
            self.ops.extend(self.deferred)
            self.deferred = []
            return
        batch, self.items = self.items, []
        made: list[Message] | tuple[Message, ...]
        try:
            made = self.convert([p for _, p in batch])
        except Exception:  # each item alone, so that only the bad ones are left out
            made = self.one_by_one(batch)
        else:
            for n, p in batch:
                self.tally.mark(
                    n, D.IMPORTED, "reasoning" if p.get("type") == "reasoning" else "message"
                )
        for m in made:
            self.ops.append(self.fix(m))
        self.ops.extend(self.deferred)
        self.deferred = []
        last = batch[-1][1]
        kind = last.get("type")
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self.s.tail = "a tool call without its output (the process stopped mid-call)"
        elif kind == "message" and last.get("role") == "assistant":
            self.s.tail = "idle after the model's answer"
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.s.tail = "after a tool output, before the model's answer"

    def one_by_one(self, batch: list[tuple[int, Any]]) -> list[Message]:
        """A batch the adapter refuses: each item alone, the refused ones reported by line."""
        out: list[Message] = []
        for n, p in batch:
            try:
                out.extend(self.convert([p]))
            except ProviderError as exc:
                self.tally.mark(n, D.DAMAGED, f"a response item the Responses shape refuses: {exc}")
            except Exception as exc:  # never one item's fault for the whole file
                self.tally.mark(
                    n, D.DAMAGED, f"a response item that could not be converted ({exc!r})"
                )
            else:
                self.tally.mark(
                    n, D.IMPORTED, "reasoning" if p.get("type") == "reasoning" else "message"
                )
        return out

    def fix(self, m: Message) -> Message:
        if m.role == Role.TOOL and m.tool_call_id:
            failed, source = exit_status(m, self.exit_codes)
            if failed is not None:
                extra = merge_extra(m.extra, KEY, {"is_error_from": source})
                m = msgspec.structs.replace(m, is_error=failed, extra=extra)
        if any(is_placeholder(r.encrypted) for r in m.reasoning):
            m = msgspec.structs.replace(m, reasoning=tuple(unplace(r) for r in m.reasoning))
        return m


def str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def raw(value: Any) -> msgspec.Raw:
    return checked_raw(value)
