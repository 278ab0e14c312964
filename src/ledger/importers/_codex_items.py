"""Codex response items: what the Responses shape needs around them, and what a tool result's
exit code says (ADR 0127)."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ledger.importers._plan import merge_extra
from ledger.messages import Message, OpaquePart, Reasoning, Role

__all__ = [
    "MIRRORS",
    "exit_status",
    "is_placeholder",
    "roleless",
    "unplace",
    "with_id",
    "without_id",
]

MIRRORS = {
    "agent_reasoning": "mirror of a reasoning item's summary",
    "agent_reasoning_raw_content": "mirror of a reasoning item's content",
    "agent_reasoning_section_break": "UI mark between reasoning sections",
    "agent_message": "mirror of an assistant message item",
    "user_message": "mirror of the typed prompt (a user message item)",
    "item_completed": "typed mirror of a response item",
    "item_started": "typed mirror of a response item",
    "exec_command_begin": "UI trace of a command (the call is a response item)",
    "exec_command_end": "rich result of a command (the output is a response item)",
    "patch_apply_begin": "UI trace of a patch (the call is a response item)",
    "patch_apply_end": "rich result of a patch (the output is a response item)",
    "web_search_begin": "UI trace of a web search (the call is a response item)",
    "web_search_end": "rich result of a web search (the call is a response item)",
    "mcp_tool_call_begin": "UI trace of a tool call (the call is a response item)",
    "mcp_tool_call_end": "rich result of a tool call (the output is a response item)",
    "context_compacted": "marker after a compacted line",
    "entered_review_mode": "UI mode change",
    "exited_review_mode": "UI mode change",
    "plan_update": "UI plan display (the call is a response item)",
    "background_event": "UI notice",
}

_EXIT = re.compile(r"(?:Exit code:|Process exited with code) (-?\d+)")


def exit_status(m: Message, exit_codes: dict[str, int]) -> tuple[bool | None, str]:
    """Codex has no is_error: the command's exit code says it (ADR 0129)."""
    code = exit_codes.get(m.tool_call_id or "")
    if code is not None:
        return code != 0, "exec_command_end.exit_code"
    text = m.text()
    if text.startswith("{"):
        try:
            held = msgspec.json.decode(text)
        except msgspec.DecodeError:
            held = None
        meta = held.get("metadata") if isinstance(held, dict) else None
        if isinstance(meta, dict) and type(meta.get("exit_code")) is int:
            return meta["exit_code"] != 0, "output.metadata.exit_code"
    found = _EXIT.search(text[:2000])
    if found:
        return int(found.group(1)) != 0, "output text"
    return None, ""


def with_id(item: Any) -> Any:
    """Codex before 0.154 writes reasoning items without an id, which the Responses shape
    requires: an empty one stands in while converting, and is taken out again."""
    if not isinstance(item, dict) or item.get("type") != "reasoning" or "id" in item:
        return item
    out: dict[str, Any] = {}
    for k, v in item.items():
        out[k] = v
        if k == "type":
            out["id"] = ""
    return out


def without_id(m: Message) -> Message:
    if not any(r.item_id == "" for r in m.reasoning):
        return m
    blocks = tuple(
        msgspec.structs.replace(r, item_id=None) if r.item_id == "" else r for r in m.reasoning
    )
    return msgspec.structs.replace(m, reasoning=blocks)


def roleless(m: Message) -> Message:
    """Mark a provider item kept whole that had no role (ADR 0125)."""
    if (
        m.role == Role.ASSISTANT
        and isinstance(m.content, tuple)
        and len(m.content) == 1
        and isinstance(m.content[0], OpaquePart)
        and not m.reasoning
        and not m.tool_calls
    ):
        return msgspec.structs.replace(m, extra=merge_extra(m.extra, "ledger", {"role": None}))
    return m


def is_placeholder(value: str | None) -> bool:
    # Empty where a payload must be is a placeholder too (ADR 0126): never sent back as real.
    return value is not None and (value == "" or value.startswith("[REDACTED"))


def unplace(r: Reasoning) -> Reasoning:
    if is_placeholder(r.encrypted):
        return msgspec.structs.replace(r, encrypted=None, placeholder=r.encrypted)
    return r
