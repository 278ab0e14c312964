"""The benchmark's messages in the shapes its peers hold: plain dicts, OpenAI Responses items
(``SQLiteSession``) and LangChain messages (LangGraph)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ledger import Message, Role

__all__ = ["to_plain_dict", "to_openai_items", "to_langchain"]


def to_plain_dict(m: Message) -> dict[str, Any]:
    """The message as the plain dict a framework without this library would hold."""
    out: dict[str, Any] = msgspec.to_builtins(m)
    return out


def to_openai_items(m: Message) -> list[dict[str, Any]]:
    """The message as OpenAI Responses input items (what ``SQLiteSession`` stores)."""
    if m.role in (Role.SYSTEM, Role.USER, Role.DEVELOPER):
        return [{"role": m.role.value, "content": m.text()}]
    if m.role == Role.TOOL:
        return [{"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text()}]
    items: list[dict[str, Any]] = []
    for r in m.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": "rs_" + (m.item_id or "x")[4:],
                "summary": [],
                "content": [{"type": "reasoning_text", "text": r.text or ""}],
                "encrypted_content": r.signature,
            }
        )
    if m.content:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": m.item_id,
                "status": "completed",
                "content": [{"type": "output_text", "text": m.text(), "annotations": []}],
            }
        )
    for c in m.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": c.item_id,
                "call_id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
        )
    return items


def to_langchain(m: Message) -> Any:
    """The message as the LangChain message a LangGraph ``MessagesState`` holds."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if m.role in (Role.SYSTEM, Role.DEVELOPER):
        return SystemMessage(content=m.text())
    if m.role == Role.USER:
        return HumanMessage(content=m.text())
    if m.role == Role.TOOL:
        return ToolMessage(content=m.text(), tool_call_id=m.tool_call_id or "", name=m.name)
    reasoning = [{"text": r.text, "signature": r.signature} for r in m.reasoning]
    return AIMessage(
        content=m.text(),
        id=m.item_id,
        tool_calls=[
            {"name": c.name, "args": json.loads(c.arguments), "id": c.id, "type": "tool_call"}
            for c in m.tool_calls
        ],
        additional_kwargs={"reasoning": reasoning} if reasoning else {},
    )
