"""The path through a Claude Code transcript: from its last message back along ``parentUuid``
(and ``logicalParentUuid`` across a compaction), with the pseudo-branches that belong to it."""

from __future__ import annotations

from typing import Any

__all__ = ["blocks", "leaf", "message", "path"]


def message(o: dict[str, Any]) -> dict[str, Any]:
    m = o.get("message")
    return m if isinstance(m, dict) else {}


def leaf(lines: list[tuple[int, Any]]) -> str | None:
    uuids = {o.get("uuid") for _, o in lines}
    for _, o in reversed(lines):
        if o.get("type") == "last-prompt" and o.get("leafUuid") in uuids:
            return str(o["leafUuid"])
    for _, o in reversed(lines):
        if o.get("type") in ("user", "assistant") and isinstance(o.get("uuid"), str):
            return str(o["uuid"])
    return None


def path(lines: list[tuple[int, Any]], leaf: str | None) -> set[int]:
    """Line numbers of the conversation lines on the path to ``leaf``, with the results of
    calls on it and the other block lines of responses on it."""
    by_uuid = {o.get("uuid"): (n, o) for n, o in lines if isinstance(o.get("uuid"), str)}
    on: set[int] = set()
    seen: set[str] = set()
    u = leaf
    while isinstance(u, str) and u in by_uuid and u not in seen:
        seen.add(u)
        n, o = by_uuid[u]
        on.add(n)
        u = o.get("parentUuid") or o.get("logicalParentUuid")
    ids = {message(o).get("id") for n, o in lines if n in on and o.get("type") == "assistant"}
    calls: set[str] = set()
    for n, o in lines:
        if o.get("type") == "assistant" and message(o).get("id") in ids:
            on.add(n)
            calls.update(str(b.get("id")) for b in blocks(o) if b.get("type") == "tool_use")
    for n, o in lines:
        if o.get("type") == "user" and any(
            b.get("type") == "tool_result" and b.get("tool_use_id") in calls for b in blocks(o)
        ):
            on.add(n)
    return on


def blocks(o: dict[str, Any]) -> list[dict[str, Any]]:
    c = message(o).get("content")
    return [b for b in c if isinstance(b, dict)] if isinstance(c, list) else []
