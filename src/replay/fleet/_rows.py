"""One index row per rollout object: its listing entry, its verdict, its counts and its usage.

A row is computed from one streaming read of the object (its tail for the stop facts, then
every line once), so that building the index costs each byte once. It holds the columns SQL
queries want and, beside them, the bytes the listing needs to rebuild the object's entry
exactly (its first line and its stop records as written), so that listing from the index and
listing from the objects give the same entries.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import msgspec

from ledger.codec import encode_read_record
from ledger.messages import Message, Role
from ledger.reader import rebuild_stream
from ledger.records import AgentCheckpoint, Terminal
from ledger.reducer import Entry
from replay.display import in_utc
from replay.fleet._listed import LISTING_CODING, listing_text
from replay.fleet._objects import HEAD_BYTES, open_object
from replay.fleet._store import ObjectInfo, Store, storage_options
from replay.replay import replay_from_state
from replay.sessions import SessionEntry, entry_from_parts
from replay.stop import StopFacts, stop_facts_from_file
from replay.verdict import verify_replay

__all__ = ["COLUMNS", "index_rows", "row_of"]

COLUMNS: Final[Mapping[str, str]] = {
    "path": "VARCHAR",
    "url": "VARCHAR",
    "key": "VARCHAR",
    "size": "BIGINT",
    "version": "VARCHAR",
    "indexed_at": "TIMESTAMPTZ",
    "deleted": "BOOLEAN",
    "day": "DATE",
    "session_id": "VARCHAR",
    "agent_name": "VARCHAR",
    "started_at": "TIMESTAMPTZ",
    "parent_session_id": "VARCHAR",
    "delegation_id": "VARCHAR",
    "model": "VARCHAR",
    "provider": "VARCHAR",
    "project": "VARCHAR",
    "stop_found": "BOOLEAN",
    "stop_kind": "VARCHAR",
    "stop_reason": "VARCHAR",
    "killed": "BOOLEAN",
    "replayable": "BOOLEAN",
    "tier": "VARCHAR",
    "checkpoint_messages": "BIGINT",
    "checkpoint_digest": "VARCHAR",
    "status": "VARCHAR",
    "verified": "BOOLEAN",
    "damage": "BIGINT",
    "messages": "BIGINT",
    "user_messages": "BIGINT",
    "assistant_messages": "BIGINT",
    "tool_messages": "BIGINT",
    "tool_calls": "BIGINT",
    "tool_errors": "BIGINT",
    "compactions": "BIGINT",
    "checkpoints": "BIGINT",
    "terminals": "BIGINT",
    "input_tokens": "BIGINT",
    "output_tokens": "BIGINT",
    "cache_read_tokens": "BIGINT",
    "cache_write_tokens": "BIGINT",
    "reasoning_tokens": "BIGINT",
    "usage_responses": "BIGINT",
    "flags": "VARCHAR[]",
    # What the listing needs to rebuild the entry exactly (ADR 0143).
    "head": "VARCHAR",
    "stop_checkpoint": "VARCHAR",
    "stop_terminal": "VARCHAR",
    "stop_earlier_terminal": "VARCHAR",
    "stop_records_after": "BIGINT",
    "stop_damaged_lines": "BIGINT",
    "stop_bytes_scanned": "BIGINT",
    "stop_exhausted": "BOOLEAN",
    # The entry those rebuild, as the listing's rules gave it (ADR 0159).
    "listing": "VARCHAR",
    "listing_coding": "VARCHAR",
}
"""The index's columns and their DuckDB types, in order."""

_USAGE_IN: Final = ("input_tokens", "prompt_tokens", "promptTokenCount")
_USAGE_OUT: Final = ("output_tokens", "completion_tokens", "candidatesTokenCount")
_usage_decoder = msgspec.json.Decoder()


def _usage(m: Message) -> tuple[int, int] | None:
    """Token usage a provider reported with an assistant message, kept verbatim in ``extra``."""
    if m.extra is msgspec.UNSET:
        return None
    try:
        extra = _usage_decoder.decode(m.extra)
    except msgspec.DecodeError:
        return None
    if not isinstance(extra, dict):
        return None
    usage = extra.get("usage") or extra.get("usageMetadata")
    if not isinstance(usage, dict):
        return None

    def first(keys: Sequence[str]) -> int:
        for k in keys:
            v = usage.get(k)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return 0

    return first(_USAGE_IN), first(_USAGE_OUT)


def _text(record: AgentCheckpoint | Terminal | None) -> str | None:
    return None if record is None else encode_read_record(record).decode()


def row_of(
    info: ObjectInfo,
    key: str,
    entry: SessionEntry,
    *,
    now: datetime,
    stats: Mapping[str, Any],
    head: bytes,
) -> dict[str, Any]:
    """The index row of one object: its entry's columns, ``stats`` and the rebuild fields."""
    meta = entry.meta
    stop = entry.stop
    cp = stop.checkpoint
    started = entry.started_at
    return {
        "path": info.path,
        "url": str(info.url),
        "key": key,
        "size": info.size,
        "version": info.version,
        "indexed_at": now,
        "deleted": False,
        "day": in_utc(started).date() if started is not None else None,
        "session_id": entry.session_id,
        "agent_name": entry.agent_name,
        "started_at": started,
        "parent_session_id": entry.parent_session_id,
        "delegation_id": entry.delegation_id,
        "model": meta.model if meta is not None else None,
        "provider": meta.provider if meta is not None else None,
        "project": meta.project if meta is not None else None,
        "stop_found": stop.found,
        "stop_kind": stop.stop_kind,
        "stop_reason": stop.reason,
        "killed": stop.killed,
        "replayable": entry.eligibility.replayable,
        "tier": str(entry.eligibility.tier),
        "checkpoint_messages": cp.message_count if cp is not None else None,
        "checkpoint_digest": cp.digest if cp is not None else None,
        **stats,
        "flags": [str(f) for f in entry.flags],
        "head": head.decode("utf-8", "replace"),
        "stop_checkpoint": _text(cp),
        "stop_terminal": _text(stop.terminal),
        "stop_earlier_terminal": _text(stop.earlier_terminal),
        "stop_records_after": stop.records_after,
        "stop_damaged_lines": stop.damaged_lines,
        "stop_bytes_scanned": stop.bytes_scanned,
        "stop_exhausted": stop.exhausted,
        "listing": listing_text(info.path, info.size, info.version, entry),
        "listing_coding": LISTING_CODING,
    }


def _first_line(data: bytes) -> bytes:
    end = data.find(b"\n")
    return data if end < 0 else data[: end + 1]


def _read_row(store: Store, info: ObjectInfo, now: datetime) -> dict[str, Any]:
    types: Counter[type] = Counter()

    def tap(batch: Sequence[Entry]) -> None:
        types.update(type(e) for e in batch)

    with open_object(str(info.url)) as f:
        size = f.seek(0, os.SEEK_END)
        stop: StopFacts = stop_facts_from_file(f, size)
        f.seek(0)
        head = f.read(HEAD_BYTES)
        while b"\n" not in head and len(head) < 4 * 1024 * 1024:
            more = f.read(HEAD_BYTES)
            if not more:
                break
            head += more
        head = _first_line(head)
        state = rebuild_stream(f, tap=tap)
    rep = replay_from_state(state, info.url, stop=stop)
    verification = verify_replay(rep)
    messages = rep.messages
    roles = Counter(m.role for m in messages)
    totals = state.usage
    # The format's usage records (ADR 0121), each response once; a file without any (written
    # before them, or by a framework that keeps the provider's usage in the message) may still
    # carry a provider's `usage` verbatim in its assistant messages.
    usage = (
        [(totals.input_tokens, totals.output_tokens)]
        if totals.responses
        else [u for u in (_usage(m) for m in messages if m.role == Role.ASSISTANT) if u]
    )
    stats = {
        "status": str(verification.verdict),
        "verified": rep.verified,
        "damage": len(rep.damage),
        "messages": rep.total_messages,
        "user_messages": roles[Role.USER],
        "assistant_messages": roles[Role.ASSISTANT],
        "tool_messages": roles[Role.TOOL],
        "tool_calls": sum(len(m.tool_calls) for m in messages),
        "tool_errors": sum(1 for m in messages if m.role == Role.TOOL and m.is_error),
        "compactions": rep.compactions,
        "checkpoints": types[AgentCheckpoint],
        "terminals": types[Terminal],
        "input_tokens": sum(u[0] for u in usage) if usage else None,
        "output_tokens": sum(u[1] for u in usage) if usage else None,
        "cache_read_tokens": totals.cache_read_tokens if totals.responses else None,
        "cache_write_tokens": totals.cache_write_tokens if totals.responses else None,
        "reasoning_tokens": totals.reasoning_tokens if totals.responses else None,
        "usage_responses": totals.responses or len(usage),
    }
    entry = entry_from_parts(info.url, size=size, head=head, stop=stop)
    if size != info.size:
        raise OSError(f"{info.url}: the object changed while it was indexed; index again")
    return row_of(info, store.key(info.path), entry, now=now, stats=stats, head=head)


def index_rows(
    url: str, options: Mapping[str, Any], infos: Sequence[ObjectInfo], now: datetime
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The rows of a batch of objects under the root ``url``, and ``(url, error)`` per failure.

    A plain function of plain values, so that a Dask worker can run it: it opens the store
    itself with ``options``.
    """
    from replay.fleet._store import open_store

    rows: list[dict[str, Any]] = []
    errors: list[tuple[str, str]] = []
    with storage_options(**options):
        store = open_store(url)
        for info in infos:
            try:
                rows.append(_read_row(store, info, now))
            except PermissionError:
                raise
            except OSError as exc:
                errors.append((str(info.url), exc.strerror or str(exc)))
    return rows, errors
