"""OpenAI Chat Completions (and compatible servers): ``{"messages"}`` to ledger messages and back.

One Chat message is one ledger message. Compatible providers' ``reasoning_content`` and
``reasoning`` fields become reasoning blocks whose origin is the provider named by the caller
(``provider="deepseek"``), and go back only to it; everything else a message or part holds
beyond the typed fields (``refusal``, ``audio``, ``annotations``, a part's ``detail``) is kept
verbatim (ADR 0100).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ledger.messages import (
    ContentPart,
    MediaPart,
    Message,
    Reasoning,
    ReasoningKind,
    Role,
    TextPart,
    ToolCall,
)
from ledger.providers import _shapes as s
from ledger.providers._check import check, fail, located
from ledger.providers._common import Outbox, at, extras_of, opaque, opaque_value, with_residue
from ledger.providers._conversion import Conversion, Target, warn_left_out
from ledger.providers.residue import Residue, apply, diff, read_extra, with_extra

__all__ = ["SHAPE", "export", "from_ledger", "response_to_ledger", "target", "to_ledger"]

SHAPE = "openai_chat"
_API = "chat.completions"
_FIELDS = ("reasoning_content", "reasoning")
_CALL_TYPED = ("id", "function.name", "function.arguments", "custom.name", "custom.input")
_OPAQUE = "openai.chat"  # the provider label of parts kept whole (not a Responses item)
_DATA_URL = re.compile(r"data:(?P<type>[^;,]+);base64,(?P<data>.*)", re.DOTALL)


def target(
    provider: str = "openai", model: str | None = None, endpoint: str | None = None
) -> Target:
    """A Chat Completions server; reasoning text is unsigned, so only the provider must match."""
    return Target(provider, _API, model, endpoint, binds_model=False)


# --- to the ledger -------------------------------------------------------------------------


def to_ledger(
    request: Mapping[str, Any],
    *,
    provider: str = "openai",
    model: str | None = None,
    endpoint: str | None = None,
) -> tuple[Message, ...]:
    """The ``messages`` of a Chat Completions request as ledger messages."""
    check(request, s.ChatRequest, "")
    goal = target(provider, model, endpoint)
    return tuple(
        _message(msg, at("messages", i), goal) for i, msg in enumerate(request["messages"])
    )


def response_to_ledger(
    completion: Mapping[str, Any],
    *,
    provider: str = "openai",
    endpoint: str | None = None,
    choice: int = 0,
) -> Message:
    """The message of one choice of a chat completion, as the assistant message to append."""
    choices = completion.get("choices") if isinstance(completion, Mapping) else None
    if not isinstance(choices, list) or not 0 <= choice < len(choices):
        raise fail(at("choices", choice), "a choice holding a message")
    chosen = choices[choice]
    if not isinstance(chosen, dict) or "message" not in chosen:
        raise fail(at(at("choices", choice), "message"), "an object")
    model = completion.get("model") if isinstance(completion.get("model"), str) else None
    goal = target(provider, model, endpoint)
    message = _message(chosen["message"], at(at("choices", choice), "message"), goal)
    meta = {k: v for k, v in completion.items() if k != "choices"}
    meta["choice"] = {k: v for k, v in chosen.items() if k != "message"}
    residue = read_extra(message.extra, SHAPE) | {"r": meta}
    return msgspec.structs.replace(message, extra=with_extra(residue, SHAPE, "response"))


def _message(msg: Any, path: str, goal: Target) -> Message:
    with located(path):
        return _checked_message(msg, path, goal)


def _checked_message(msg: Any, path: str, goal: Target) -> Message:
    shape = check(msg, s.ChatMessage, path)
    content = msg.get("content")
    if isinstance(content, list):
        content = tuple(_part(p, at(at(path, "content"), j)) for j, p in enumerate(content))
    assistant = shape.role == "assistant"
    origin = goal.origin() if assistant else None
    # Only the model reasons: these fields on another role are kept verbatim, never typed.
    fields = _FIELDS if assistant else ()
    reasoning = tuple(
        Reasoning(text=msg[f], origin=origin, extra=_field_extra(f)) for f in fields if f in msg
    )
    calls = tuple(
        _call(c, at(at(path, "tool_calls"), j)) for j, c in enumerate(msg.get("tool_calls") or ())
    )
    bare = Message(
        role=Role(shape.role),
        content=content,
        reasoning=reasoning,
        tool_calls=calls,
        tool_call_id=msg.get("tool_call_id"),
        name=msg.get("name"),
        origin=origin,
    )
    # A tool message's name (sent by Mistral, vLLM, LangChain) has no Chat home in the rebuild:
    # it is kept verbatim, and typed as the message's name for the other shapes.
    named = ("name",) if shape.role != "tool" else ()
    typed = ("role", "content", "tool_calls", "tool_call_id", *named, *fields)
    residue = diff(msg, _message_out(bare, goal, Outbox(SHAPE), 0), typed=typed)
    return msgspec.structs.replace(bare, extra=with_extra(residue, SHAPE, path))


def _field_extra(field: str) -> msgspec.Raw | msgspec.UnsetType:
    return with_extra({"f": field} if field != _FIELDS[0] else {}, SHAPE, "")


def _part(part: Any, path: str) -> ContentPart:
    kind = check(part, s.Typed, path).type
    shape = s.CHAT_PARTS.get(kind)
    if shape is None:
        return opaque(part, _OPAQUE, path)
    value = check(part, shape, path)
    built: TextPart | MediaPart
    if isinstance(value, s.Text):
        built = TextPart(text=value.text)
    elif isinstance(value, s.ChatImage):
        url = value.image_url.url
        m = _DATA_URL.fullmatch(url)
        built = (
            MediaPart(media_type=m["type"], data=m["data"])
            if m and m["type"].startswith("image/")
            else MediaPart(media_type="image/*", url=url)
        )
    else:
        assert isinstance(value, s.ChatAudio)
        audio = value.input_audio
        built = MediaPart(media_type=f"audio/{audio.format}", data=audio.data)
    if isinstance(built, TextPart):
        return with_residue(built, part, _part_out, SHAPE, path, ("text",))
    typed = ("image_url.url", "input_audio.data", "input_audio.format")
    return with_residue(built, part, _part_out, SHAPE, path, typed)


def _call(call: Any, path: str) -> ToolCall:
    shape = check(call, s.ChatToolCall, path)
    body = shape.custom if shape.type == "custom" else shape.function
    if body is msgspec.UNSET:
        raise fail(at(path, shape.type), "an object")
    assert isinstance(body, s.ChatFunction | s.ChatCustom)
    text = body.arguments if isinstance(body, s.ChatFunction) else body.input
    marker = with_extra({"v": "custom"} if shape.type == "custom" else {}, SHAPE, path)
    bare = ToolCall(id=shape.id, name=body.name, arguments=text, extra=marker)
    residue = read_extra(marker, SHAPE) | diff(call, _call_out(bare), typed=_CALL_TYPED)
    return msgspec.structs.replace(bare, extra=with_extra(residue, SHAPE, path))


# --- from the ledger -----------------------------------------------------------------------


def from_ledger(
    messages: Iterable[Message],
    *,
    provider: str = "openai",
    model: str | None = None,
    endpoint: str | None = None,
) -> dict[str, Any]:
    """The ``messages`` of a Chat Completions request; warns when something was left out."""
    conversion = export(messages, provider=provider, model=model, endpoint=endpoint)
    return warn_left_out(conversion, "openai_chat")


def export(
    messages: Iterable[Message],
    *,
    provider: str = "openai",
    model: str | None = None,
    endpoint: str | None = None,
) -> Conversion:
    """The request fragment, with everything that could not be sent to this server."""
    goal = target(provider, model, endpoint)
    box = Outbox(SHAPE)
    out = []
    for i, m in enumerate(messages):
        box.foreign_fields(i, extras_of(m))
        built = apply(_message_out(m, goal, box, i), read_extra(m.extra, SHAPE))
        if m.role is Role.ASSISTANT and not goal.accepts(m.origin):
            built = _unsigned(built, box, i, goal.why_not(m.origin))
        if built.get("content") == [] and m.content:  # every part was left out
            if not built.get("tool_calls"):
                box.leave(i, "message", "none of its content can be sent")
                continue
            built["content"] = None
        out.append(built)
    return Conversion(request={"messages": out}, left_out=tuple(box.left))


def _unsigned(built: dict[str, Any], box: Outbox, i: int, why: str) -> dict[str, Any]:
    # Fields kept verbatim (OpenRouter's ``reasoning_details``), the calls' (Gemini's
    # ``extra_content``) and opaque parts' hold payloads bound to their provider (ADR 0106).
    out = box.stripped(i, built, why)
    calls, parts = out.get("tool_calls"), out.get("content")
    if isinstance(calls, list):
        out["tool_calls"] = [box.stripped(i, c, why) if isinstance(c, dict) else c for c in calls]
    if isinstance(parts, list):
        kept = [box.unsigned(i, p, why) if isinstance(p, dict) else p for p in parts]
        out["content"] = [p for p in kept if p is not None]
    return out


def _message_out(m: Message, goal: Target, box: Outbox, i: int) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role.value}
    content = _content_out(m, box, i)
    # Content is required on every role but the assistant's, where null means "calls only".
    out["content"] = "" if content is None and m.role is not Role.ASSISTANT else content
    if m.name is not None and m.role is not Role.TOOL:
        out["name"] = m.name
    if m.role is Role.TOOL:
        out["tool_call_id"] = m.tool_call_id or ""
        if m.is_error:
            box.leave(i, "error flag", "Chat tool messages have no error flag")
    for r in m.reasoning:
        origin = r.origin or m.origin
        field = read_extra(r.extra, SHAPE).get("f", _FIELDS[0])
        if goal.accepts(origin) and r.kind is ReasoningKind.THINKING and field not in out:
            out[field] = r.text
        else:
            why = goal.why_not(origin) if not goal.accepts(origin) else "no Chat field holds it"
            box.leave(i, "reasoning", why)
    if m.tool_calls:
        out["tool_calls"] = [_call_out(c, box, i) for c in m.tool_calls]
    return out


def _content_out(m: Message, box: Outbox, i: int) -> str | list[dict[str, Any]] | None:
    if m.content is None or isinstance(m.content, str):
        return m.content
    parts = []
    for part in m.content:
        built = _part_out(part)
        if isinstance(part, TextPart) and part.signature is not None:
            box.leave(i, "signature", "Chat text parts carry no signature")
        if built is None:
            box.leave(i, "content part", "no Chat content part holds it")
        else:
            parts.append(built)
    return parts


def _part_out(part: ContentPart) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        out: dict[str, Any] = {"type": "text", "text": part.text}
    elif isinstance(part, MediaPart):
        if part.media_type.startswith("audio/") and part.data is not None:
            audio = {"data": part.data, "format": part.media_type.partition("/")[2]}
            out = {"type": "input_audio", "input_audio": audio}
        elif part.media_type.startswith("image/"):
            url = part.url if part.url is not None else f"data:{part.media_type};base64,{part.data}"
            out = {"type": "image_url", "image_url": {"url": url}}
        else:
            return None
    else:
        return opaque_value(part) if part.provider == _OPAQUE else None
    return apply(out, read_extra(part.extra, SHAPE))


def _call_out(call: ToolCall, box: Outbox | None = None, i: int = 0) -> dict[str, Any]:
    residue: Residue = read_extra(call.extra, SHAPE)
    if box is not None and call.signature is not None:
        box.leave(i, "signature", f"{call.id}: Chat tool calls carry no signature")
    if residue.get("v") == "custom":
        body = {"name": call.name, "input": call.arguments}
        return apply({"id": call.id, "type": "custom", "custom": body}, residue)
    body = {"name": call.name, "arguments": call.arguments}
    return apply({"id": call.id, "type": "function", "function": body}, residue)
