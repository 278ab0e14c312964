"""Gemini parts built from ledger values: one builder for both directions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.messages import (
    ContentPart,
    MediaPart,
    Message,
    Reasoning,
    TextPart,
    ToolCall,
)
from ledger.providers._common import (
    Outbox,
    args_object,
    opaque_value,
)
from ledger.providers.residue import apply, read_extra

__all__ = ["SHAPE", "PROVIDER", "part_out", "thought_part", "call_part", "response_part"]

SHAPE = "gemini"
PROVIDER = "google"


def part_out(part: ContentPart, *, signed: bool = True) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        out: dict[str, Any] = {"text": part.text}
        if part.signature is not None and signed:
            out["thoughtSignature"] = part.signature
    elif isinstance(part, MediaPart):
        if part.data is not None:
            out = {"inlineData": {"mimeType": part.media_type, "data": part.data}}
        else:
            out = {"fileData": {"mimeType": part.media_type, "fileUri": part.url}}
    else:
        return opaque_value(part) if part.provider == PROVIDER else None
    return apply(out, read_extra(part.extra, SHAPE))


def thought_part(r: Reasoning) -> dict[str, Any] | None:
    if r.text is None:
        return None
    out: dict[str, Any] = {"text": r.text, "thought": True}
    if r.signature is not None:
        out["thoughtSignature"] = r.signature
    return apply(out, read_extra(r.extra, SHAPE))


def call_part(call: ToolCall, *, signed: bool = True) -> dict[str, Any]:
    res = read_extra(call.extra, SHAPE)
    body: dict[str, Any] = {} if res.get("i") else {"id": call.id}
    body["name"] = call.name
    if call.arguments:
        body["args"] = args_object(call.arguments) or {}
    out: dict[str, Any] = {"functionCall": body}
    if call.signature is not None and signed:
        out["thoughtSignature"] = call.signature
    return apply(out, res)


def response_part(
    m: Message,
    minted: bool,
    names: Mapping[str, str] | None = None,
    box: Outbox | None = None,
    i: int = 0,
) -> dict[str, Any]:
    body: dict[str, Any] = {} if minted else {"id": m.tool_call_id or ""}
    body["name"] = m.name or (names or {}).get(m.tool_call_id or "", "")
    text = m.content if isinstance(m.content, str) else (m.text() if m.content else "")
    if (
        box is not None
        and isinstance(m.content, tuple)
        and len(m.content) != sum(isinstance(p, TextPart) for p in m.content)
    ):
        box.leave(i, "content part", "a function response holds JSON only")
    held = args_object(text)
    body["response"] = held if held is not None else {"result": text}
    return {"functionResponse": body}
