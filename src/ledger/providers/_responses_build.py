"""OpenAI Responses items and parts built from ledger values: one builder for both directions."""

from __future__ import annotations

from typing import Any

from ledger.messages import (
    ContentPart,
    MediaPart,
    Message,
    OpaquePart,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
)
from ledger.providers._common import Outbox, opaque_value
from ledger.providers.residue import apply, read_extra

__all__ = [
    "SHAPE",
    "OPAQUE",
    "part_out",
    "content_out",
    "message_out",
    "output_out",
    "item_out",
    "reasoning_out",
    "call_out",
]

SHAPE = "openai_responses"
OPAQUE = "openai.responses"  # the provider label of items and parts kept whole


def part_out(part: ContentPart, assistant: bool) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        out: dict[str, Any] = {"type": "output_text" if assistant else "input_text"}
        out["text"] = part.text
    elif isinstance(part, MediaPart) and part.media_type.startswith("image/"):
        url = part.url if part.url is not None else f"data:{part.media_type};base64,{part.data}"
        out = {"type": "input_image", "image_url": url}
    elif isinstance(part, OpaquePart):
        return opaque_value(part) if part.provider == OPAQUE else None
    else:
        return None
    return apply(out, read_extra(part.extra, SHAPE))


def content_out(
    content: str | tuple[ContentPart, ...] | None, assistant: bool, box: Outbox | None, i: int
) -> str | list[dict[str, Any]]:
    if content is None or isinstance(content, str):
        return content or ""
    out = []
    for part in content:
        built = part_out(part, assistant)
        if built is None and box is not None:
            box.leave(i, "content part", "no Responses content part holds it")
        elif built is not None:
            out.append(built)
    return out


def message_out(m: Message, box: Outbox | None, i: int) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role.value}
    if m.item_id is not None:
        out["id"] = m.item_id
    out["content"] = content_out(m.content, m.role is Role.ASSISTANT, box, i)
    return out


def output_out(m: Message, box: Outbox | None, i: int) -> dict[str, Any]:
    custom = read_extra(m.extra, SHAPE).get("v") == "custom"
    out: dict[str, Any] = {"type": "custom_tool_call_output" if custom else "function_call_output"}
    if m.item_id is not None:
        out["id"] = m.item_id
    out["call_id"] = m.tool_call_id or ""
    out["output"] = content_out(m.content, False, box, i)
    if box is not None and m.is_error:
        box.leave(i, "error flag", "Responses tool outputs have no error flag")
    return out


def item_out(parts: tuple[ContentPart, ...], form: bool, item_id: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "message"}
    if item_id is not None:
        out["id"] = item_id
    out["role"] = "assistant"
    text = parts[0].text if form and parts and isinstance(parts[0], TextPart) else None
    out["content"] = text if text is not None else content_out(parts, True, None, 0)
    return out


def reasoning_out(r: Reasoning) -> dict[str, Any] | None:
    if r.item_id is None:
        return None
    out: dict[str, Any] = {"type": "reasoning", "id": r.item_id}
    out["summary"] = [{"type": "summary_text", "text": t} for t in r.summary]
    if r.encrypted is not None:
        out["encrypted_content"] = r.encrypted
    return apply(out, read_extra(r.extra, SHAPE))


def call_out(call: ToolCall, keep_id: bool = True) -> dict[str, Any]:
    res = read_extra(call.extra, SHAPE)
    custom = res.get("v") == "custom"
    out: dict[str, Any] = {"type": "custom_tool_call" if custom else "function_call"}
    if call.item_id is not None:
        out["id"] = call.item_id
    out["call_id"] = call.id
    out["name"] = call.name
    out["input" if custom else "arguments"] = call.arguments
    out = apply(out, res)
    if not keep_id:
        out.pop("id", None)
    return out
