"""One Codex CLI rollout to ledger operations, line by line.

The conversation is the ``response_item`` lines (Responses API input items) and ``compacted``;
they go through the Responses adapter, so encrypted reasoning, item ids, custom tools and
hosted tools go back byte for byte. ``event_msg`` lines are mirrors of those items or
telemetry; turn boundaries, usage and aborts become the format-2 descriptions (ADRs 0121-0124).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.importers._codex_items import (
    MIRRORS,
    exit_status,
    is_placeholder,
    roleless,
    unplace,
    with_id,
    without_id,
)
from ledger.importers._plan import EPOCH, Compaction, Op, merge_extra
from ledger.importers._report import Disposition, Tally
from ledger.messages import Message, Role
from ledger.providers import ProviderError, openai_responses
from ledger.records import Event, EventKind, MetaUpdate, Turn, Usage

__all__ = ["CodexSession", "convert_codex"]

D = Disposition
KEY = "codex"
_ENVELOPES = (
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "token_usage_record",
    "world_state",
)


class CodexSession:
    """The facts of a Codex rollout besides its operations."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.version: str | None = None
        self.started: str | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.cwd: str | None = None
        self.parent: str | None = None
        self.meta: dict[str, Any] = {}
        self.tail = "idle"


def convert_codex(values: tuple[Any, ...], tally: Tally, s: CodexSession) -> list[Op]:
    """The operations of a whole Codex rollout (envelope or legacy lines)."""
    return _Run(values, tally, s).run()


class _Run:
    def __init__(self, values: tuple[Any, ...], tally: Tally, s: CodexSession) -> None:
        self.values = values
        self.tally = tally
        self.s = s
        self.ops: list[Op] = []
        self.items: list[tuple[int, Any]] = []
        self.deferred: list[Op] = []
        self.exit_codes: dict[str, int] = {}
        self.summaries: set[str] = set()  # the summary texts of every reasoning item
        self.turn_slot: tuple[int, dict[str, Any]] | None = None
        self.last_settings: Any = None
        self.last_turn_id: Any = None
        self.last_total: Any = None
        self.usage_records = False
        self.meta_seen = False
        self.model: str | None = None

    def run(self) -> list[Op]:
        for o in self.values:
            if isinstance(o, dict):
                p = o.get("payload")
                if o.get("type") == "token_usage_record":
                    self.usage_records = True
                if (
                    isinstance(p, dict)
                    and p.get("type") == "exec_command_end"
                    and isinstance(p.get("call_id"), str)
                    and type(p.get("exit_code")) is int
                ):
                    self.exit_codes[p["call_id"]] = p["exit_code"]
                if o.get("type") == "response_item" or "payload" not in o:
                    self.summaries.update(_summary_texts(p if "payload" in o else o))
        # Bare items are the legacy layout; in a file of envelopes, a line without a payload
        # is damaged or unknown, never a response item that would enter the conversation.
        enveloped = any(isinstance(o, dict) and "payload" in o for o in self.values)
        for n, o in enumerate(self.values, 1):
            if o is None or not isinstance(o, dict):
                continue
            try:
                if "payload" in o and "type" in o:
                    self.line(n, o.get("type"), o.get("payload"), o)
                elif enveloped:
                    self.stray(n, o)
                else:
                    self.legacy(n, o)
            except Exception as exc:  # one line that cannot be converted never costs the others
                self.tally.mark(n, D.DAMAGED, f"could not be converted ({exc!r})")
        self.flush()
        self.fill_turn(None)
        return [op for op in self.ops if op is not None]

    # --- lines ------------------------------------------------------------------------------

    def line(self, n: int, t: Any, p: Any, o: dict[str, Any]) -> None:
        if t == "response_item" and isinstance(p, dict):
            self.item(n, p)
        elif t == "session_meta" and isinstance(p, dict):
            self.session_meta(n, p)
        elif t == "turn_context" and isinstance(p, dict):
            self.turn_context(n, p)
        elif t == "compacted" and isinstance(p, dict):
            self.compacted(n, p)
        elif t == "event_msg" and isinstance(p, dict):
            self.event(n, p)
        elif t == "token_usage_record" and isinstance(p, dict):
            self.note(n, self.usage(p, p.get("response_id")), "usage")
        elif t == "world_state":
            self.tally.mark(n, D.STATE, "world_state: environment state behind context items")
        else:
            self.tally.mark(n, D.UNKNOWN, f"line type {t!r} is unknown to this importer")

    def stray(self, n: int, o: dict[str, Any]) -> None:
        t = o.get("type")
        if t in _ENVELOPES:
            self.tally.mark(n, D.DAMAGED, f"{t} line without its payload")
        else:
            self.tally.mark(n, D.UNKNOWN, f"line type {t!r} without a payload is unknown")

    def legacy(self, n: int, o: dict[str, Any]) -> None:
        if "record_type" in o:
            self.tally.mark(n, D.STATE, f"record_type {o.get('record_type')!r}: client state")
        elif "type" not in o and "id" in o:
            self.session_meta(n, o)
        else:
            self.item(n, o)

    def item(self, n: int, p: dict[str, Any]) -> None:
        if p.get("type") == "ghost_snapshot":
            self.tally.mark(n, D.STATE, "ghost_snapshot: an undo commit, never sent to the model")
            return
        self.items.append((n, p))

    def session_meta(self, n: int, p: dict[str, Any]) -> None:
        s = self.s
        if self.meta_seen:
            self.note(
                n,
                MetaUpdate(seq=0, ts=EPOCH, extra=_raw({KEY: {"session_meta": p}})),
                "meta_update (a later session_meta: resumed or forked)",
                D.METADATA,
            )
            return
        self.meta_seen = True
        s.session_id = _str(p.get("id"))
        s.started = _str(p.get("timestamp"))
        s.version = _str(p.get("cli_version"))
        s.provider = _str(p.get("model_provider"))
        s.cwd = _str(p.get("cwd"))
        source = p.get("source")
        sub = source.get("subagent") if isinstance(source, dict) else None
        spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None  # or "review"...
        if isinstance(spawn, dict):
            s.parent = _str(spawn.get("parent_thread_id"))
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
        model = _str(p.get("model"))
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
                    turn_id=_str(tid),
                    model=model,
                    settings=_raw(p),
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
            turn_id=_str(task.get("turn_id")),
            model=_str(ctx.get("model")) if ctx else None,
            settings=_raw(ctx) if ctx else msgspec.UNSET,
            extra=_raw({KEY: task}),
        )

    def compacted(self, n: int, p: dict[str, Any]) -> None:
        self.flush()
        summary = _str(p.get("message"))
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
        extra = _raw({KEY: rest}) if rest else msgspec.UNSET
        self.ops.append(Compaction(messages, summary, extra))
        self.tally.mark(n, D.IMPORTED, "compacted")

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
                turn_id=_str(p.get("turn_id")),
                extra=_raw({KEY: p}),
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
                turn_id=_str(p.get("turn_id")),
                extra=_raw({KEY: p}),
            )
            self.note(n, ev, "event")
            self.s.tail = f"interrupted ({p.get('reason')})"
        elif et in ("error", "stream_error"):
            msg = _str(p.get("message")) or ""
            ev = Event(
                seq=0, ts=EPOCH, kind=EventKind.API_ERROR.value, reason=msg, extra=_raw({KEY: p})
            )
            self.note(n, ev, "event")
        elif et == "thread_settings_applied":
            self.note(
                n, MetaUpdate(seq=0, ts=EPOCH, extra=_raw({KEY: p})), "meta_update", D.METADATA
            )
        elif et == "agent_reasoning" and p.get("text") not in self.summaries:
            # An interrupted turn's reasoning that no item holds: kept, outside the conversation
            # (Codex never sends it back), rather than dropped as a mirror of nothing.
            why = "event_msg/agent_reasoning: reasoning no item holds (never sent to the model)"
            self.note(n, MetaUpdate(seq=0, ts=EPOCH, extra=_raw({KEY: p})), why, D.METADATA)
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
            usage = msgspec.structs.replace(usage, extra=_raw({KEY: rest}))
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
            response_id=_str(rid),
            model=self.model,
            input_tokens=n["input_tokens"],
            output_tokens=n["output_tokens"],
            cache_read_tokens=n["cache_read_tokens"],
            reasoning_tokens=n["reasoning_tokens"],
        )

    def note(self, n: int, op: Op, what: str, how: Disposition = D.IMPORTED) -> None:
        # The items before an event are flushed first: the event stays where it was in the
        # file, so a file that grew converts to what it converted to before, and more (ADR 0128).
        self.flush()
        self.ops.append(op)
        self.tally.mark(n, how, what)

    # --- the conversation -------------------------------------------------------------------

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


def _summary_texts(item: Any) -> list[str]:
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return []
    parts = item.get("summary")
    found = [s.get("text") for s in parts if isinstance(s, dict)] if isinstance(parts, list) else []
    return [text for text in found if isinstance(text, str)]


def _target(item: dict[str, Any]) -> str:
    return "reasoning" if item.get("type") == "reasoning" else "message"


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))
