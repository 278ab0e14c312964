"""The path through a Claude Code transcript: from its last message back along ``parentUuid``
(and ``logicalParentUuid`` across a compaction), with the pseudo-branches that belong to it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["blocks", "leaf", "link_fault", "message", "path"]

_LINKS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid", "sessionId", "agentId")


def link_fault(o: dict[str, Any]) -> str | None:
    """What is wrong with the fields that place a line in its conversation, if anything.

    The path, the merging of block lines and the sidechains use these values as keys: a line
    where one is not a string is damaged on its own, before it could stop the whole file.
    """
    if not isinstance(o.get("type"), str):
        return f"type: expected a string, got {type(o.get('type')).__name__}"
    found = [(k, o.get(k)) for k in _LINKS] + [("message.id", message(o).get("id"))]
    found += [(f"content[].{k}", b.get(k)) for b in blocks(o) for k in ("id", "tool_use_id")]
    for key, value in found:
        if value is not None and not isinstance(value, str):
            return f"{key}: expected a string, got {type(value).__name__}"
    return None


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


def path(lines: list[tuple[int, Any]], leaf: str | None, damaged: Collection[int] = ()) -> set[int]:
    """Line numbers of the conversation lines on the path to ``leaf``, with the results of
    calls on it and the other block lines of responses on it.

    A parent that is missing when a damaged line comes before the child (the parent was most
    likely that line) is bridged to the last conversation line before the damaged one, so
    that one unreadable line does not turn the history before it into an abandoned branch.
    """
    by_uuid = {o.get("uuid"): (n, o) for n, o in lines if isinstance(o.get("uuid"), str)}
    talk = [(n, o["uuid"]) for n, o in lines if o.get("type") in ("user", "assistant")]
    talk = [(n, u) for n, u in talk if isinstance(u, str)]
    on: set[int] = set()
    seen: set[str] = set()
    u = leaf
    while isinstance(u, str) and u in by_uuid and u not in seen:
        seen.add(u)
        n, o = by_uuid[u]
        on.add(n)
        u = o.get("parentUuid") or o.get("logicalParentUuid")
        if isinstance(u, str) and u not in by_uuid:
            cut = max((d for d in damaged if d < n), default=None)
            u = next((v for m, v in reversed(talk) if cut is not None and m < cut), u)
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
