"""Anthropic blocks built from ledger values: one builder for both directions."""

from __future__ import annotations

from typing import Any

from ledger.messages import (
    ContentPart,
    MediaPart,
    Message,
    OpaquePart,
    Reasoning,
    ReasoningKind,
    TextPart,
    ToolCall,
)
from ledger.providers._common import (
    Outbox,
    args_object,
    opaque_value,
)
from ledger.providers.residue import apply, read_extra

__all__ = [
    "SHAPE",
    "PROVIDER",
    "blocks",
    "kind",
    "block_of",
    "result_block",
    "thinking_block",
    "use_block",
]

SHAPE = "anthropic"
PROVIDER = "anthropic"


def blocks(m: Message, box: Outbox, i: int) -> list[dict[str, Any]]:
    content = m.content
    if content is None or isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content:
        block = block_of(part)
        if isinstance(part, TextPart) and part.signature is not None:
            box.leave(i, "signature", "Anthropic text blocks carry no signature")
        if block is None:
            box.leave(i, "content part", f"Anthropic has no block for {kind(part)}")
        elif block.get("type") == "text" and block.get("text") == "":
            continue  # Anthropic refuses empty text blocks; an empty part says nothing
        else:
            blocks.append(block)
    return blocks


def kind(part: ContentPart) -> str:
    if isinstance(part, MediaPart):
        return f"media of type {part.media_type}"
    return f"an item of {part.provider or 'another API'}" if isinstance(part, OpaquePart) else "it"


def block_of(part: ContentPart) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        block: dict[str, Any] = {"type": "text", "text": part.text}
    elif isinstance(part, MediaPart):
        image = part.media_type.startswith("image/")
        if not image and part.media_type != "application/pdf":
            return None
        source = (
            {"type": "base64", "media_type": part.media_type, "data": part.data}
            if part.data is not None
            else {"type": "url", "url": part.url}
        )
        block = {"type": "image" if image else "document", "source": source}
    else:
        return opaque_value(part) if part.provider == PROVIDER else None
    return apply(block, read_extra(part.extra, SHAPE))


def result_block(m: Message, box: Outbox | None = None, i: int = 0) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or ""}
    if isinstance(m.content, str):
        block["content"] = m.content
    elif m.content is not None:
        block["content"] = blocks(m, box, i) if box else [block_of(p) for p in m.content]
    if m.is_error:
        block["is_error"] = True
    return block


def thinking_block(r: Reasoning) -> dict[str, Any] | None:
    if r.kind is ReasoningKind.THINKING and r.signature is not None:
        block = {"type": "thinking", "thinking": r.text or "", "signature": r.signature}
    elif r.kind is ReasoningKind.REDACTED and r.encrypted is not None:
        block = {"type": "redacted_thinking", "data": r.encrypted}
    else:
        return None
    return apply(block, read_extra(r.extra, SHAPE))


def use_block(call: ToolCall) -> dict[str, Any]:
    args = args_object(call.arguments)
    block = {"type": "tool_use", "id": call.id, "name": call.name, "input": args or {}}
    return apply(block, read_extra(call.extra, SHAPE))
