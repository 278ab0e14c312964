"""A Pydantic AI message history to ledger messages and back (extra ``pydantic-ai``).

Each part of a ``ModelRequest`` becomes one ledger message (system prompt, user prompt, tool
return, retry prompt); each ``ModelResponse`` becomes one assistant message whose thinking,
text and tool-call parts keep their order. ``ThinkingPart`` signatures and ``provider_name``
go to ``Reasoning.signature`` and ``Reasoning.origin``; everything else the history holds
(timestamps, usage, provider details) is kept verbatim, so that ``from_ledger(to_ledger(h))``
equals ``h``. Pydantic AI sends a signature back only to the provider that made it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from ledger import RolloutWriter
from ledger.messages import (
    ContentPart,
    Message,
    OpaquePart,
    Origin,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
)
from ledger.providers.residue import Residue, apply, diff, dumps, read_extra, with_extra
from replay.replay import read_replay

__all__ = ["SHAPE", "from_ledger", "read_history", "to_ledger", "write_history"]

SHAPE = "pydantic_ai"


def to_ledger(history: Sequence[ModelMessage]) -> tuple[Message, ...]:
    """The history as ledger messages, in order."""
    out: list[Message] = []
    for k, message in enumerate(ModelMessagesTypeAdapter.dump_python(list(history), mode="json")):
        if message["kind"] == "response":
            out.append(_response(message, k))
        else:
            out.extend(_request(message, k))
    return tuple(out)


def from_ledger(messages: Iterable[Message]) -> list[ModelMessage]:
    """The Pydantic AI history of ledger messages (from any provider, or from :func:`to_ledger`)."""
    dumped: list[dict[str, Any]] = []
    request: dict[str, Any] | None = None
    for m in messages:
        res = read_extra(m.extra, SHAPE)
        if m.role is Role.ASSISTANT:
            request = None
            dumped.append(apply(_response_out(m), res.get("m")))
            continue
        if request is None or res.get("n"):
            request = {"parts": [], "kind": "request", "_shell": res.get("m")}
            dumped.append(request)
        if not res.get("e"):
            request["parts"].append(apply(_part_out(m, res), res.get("p")))
    for d in dumped:
        shell = d.pop("_shell", None)
        d.update(apply(d, shell))
    return list(ModelMessagesTypeAdapter.validate_python(dumped))


def write_history(writer: RolloutWriter, history: Sequence[ModelMessage]) -> None:
    """Append the history's messages to a rollout (e.g. ``result.new_messages()``)."""
    for m in to_ledger(history):
        writer.append(m)


def read_history(path: str | os.PathLike[str]) -> list[ModelMessage]:
    """The Pydantic AI history replayed from the rollout at ``path``."""
    return from_ledger(read_replay(path).messages)


# --- requests ------------------------------------------------------------------------------


def _ext(residue: Residue) -> msgspec.Raw | msgspec.UnsetType:
    return with_extra({k: v for k, v in residue.items() if v}, SHAPE, "history")


def _request(message: dict[str, Any], k: int) -> list[Message]:
    shell = diff(message, {"parts": message["parts"], "kind": "request"})
    out: list[Message] = []
    for j, part in enumerate(message["parts"] or [None]):
        lead = {"n": 1, "m": shell} if j == 0 else {}
        if part is None:  # a request without parts
            out.append(Message(role=Role.USER, content=(), extra=_ext({**lead, "e": 1})))
            continue
        bare, marks = _request_part(part)
        residue = diff(part, _part_out(bare, marks))
        out.append(msgspec.structs.replace(bare, extra=_ext({**lead, **marks, "p": residue})))
    return out


def _request_part(part: dict[str, Any]) -> tuple[Message, Residue]:
    kind = part.get("part_kind")
    content = part.get("content")
    text, marks = (content, {}) if isinstance(content, str) else (dumps(content), {"j": 1})
    if kind == "system-prompt" and isinstance(content, str):
        return Message(role=Role.SYSTEM, content=content), {}
    if kind == "user-prompt":
        if isinstance(content, str):
            return Message(role=Role.USER, content=content), {}
        parts = tuple(TextPart(text=c) if isinstance(c, str) else _opaque(c) for c in content or ())
        return Message(role=Role.USER, content=parts), {}
    if kind in ("tool-return", "retry-prompt"):
        tool = kind == "tool-return" or part.get("tool_name") is not None
        return Message(
            role=Role.TOOL if tool else Role.USER,
            content=text,
            tool_call_id=part.get("tool_call_id"),
            name=part.get("tool_name"),
            is_error=kind == "retry-prompt",
        ), marks
    return Message(role=Role.USER, content=(_opaque(part),)), {"o": 1}


def _opaque(value: Any) -> OpaquePart:
    return OpaquePart(data=msgspec.Raw(dumps(value).encode()), provider=SHAPE)


def _part_out(m: Message, marks: Residue) -> dict[str, Any]:
    if marks.get("o") and isinstance(m.content, tuple) and m.content:
        value: dict[str, Any] = json.loads(bytes(_first_opaque(m.content).data))
        return value
    body: Any = m.text() if not isinstance(m.content, str) else m.content
    if marks.get("j"):
        body = json.loads(body)
    if m.role is Role.SYSTEM or m.role is Role.DEVELOPER:
        return {"content": body, "part_kind": "system-prompt"}
    if m.role is Role.USER and not m.is_error:
        if isinstance(m.content, tuple):
            body = [_content_item(p) for p in m.content]
        return {"content": body, "part_kind": "user-prompt"}
    kind = "retry-prompt" if m.is_error else "tool-return"
    return {
        "tool_name": m.name or "",
        "content": body,
        "tool_call_id": m.tool_call_id or "",
        "part_kind": kind,
    }


def _first_opaque(parts: tuple[ContentPart, ...]) -> OpaquePart:
    return next(p for p in parts if isinstance(p, OpaquePart))


def _content_item(part: ContentPart) -> Any:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, OpaquePart):
        return json.loads(bytes(part.data))
    return part.url or f"data:{part.media_type};base64,{part.data}"


# --- responses -----------------------------------------------------------------------------


def _response(message: dict[str, Any], k: int) -> Message:
    origin = Origin(provider=message.get("provider_name"), model=message.get("model_name"))
    reasoning: list[Reasoning] = []
    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    tokens = ""
    for part in message["parts"]:
        kind = part.get("part_kind")
        if kind == "thinking":
            r = Reasoning(
                text=part["content"],
                signature=part.get("signature"),
                item_id=part.get("id"),
                origin=Origin(provider=part.get("provider_name")),
            )
            typed = ("content", "id", "signature", "provider_name")
            reasoning.append(_with(r, diff(part, _thinking_out(r), typed=typed)))
            tokens += "r"
        elif kind == "tool-call":
            args = part.get("args")
            text = args if isinstance(args, str) else dumps(args)
            marker = with_extra({"j": 1} if not isinstance(args, str) else {}, SHAPE, "")
            call = ToolCall(id=part["tool_call_id"], name=part["tool_name"], arguments=text)
            call = msgspec.structs.replace(call, extra=marker)
            calls.append(
                _with(
                    call,
                    read_extra(marker, SHAPE)
                    | diff(part, _call_out(call), typed=("tool_name", "args", "tool_call_id")),
                )
            )
            tokens += "c"
        elif kind == "text":
            text_part = TextPart(text=part["content"])
            parts.append(_with(text_part, diff(part, _text_out(text_part), typed=("content",))))
            tokens += "p"
        else:
            parts.append(_opaque(part))
            tokens += "p"
    bare = Message(
        role=Role.ASSISTANT,
        content=tuple(parts),
        reasoning=tuple(reasoning),
        tool_calls=tuple(calls),
        origin=origin,
    )
    canonical = "r" * len(reasoning) + "p" * len(parts) + "c" * len(calls)
    shell = diff(message, _shell_out(bare, message["parts"]))
    return msgspec.structs.replace(
        bare, extra=_ext({"m": shell, "o": tokens if tokens != canonical else None})
    )


def _with(value: Any, residue: Residue) -> Any:
    return msgspec.structs.replace(value, extra=_ext(residue)) if residue else value


def _thinking_out(r: Reasoning) -> dict[str, Any]:
    provider = r.origin.provider if r.origin else None
    out = {"content": r.text or "", "id": r.item_id, "signature": r.signature}
    out |= {"provider_name": provider, "part_kind": "thinking"}
    return apply(out, read_extra(r.extra, SHAPE))


def _call_out(call: ToolCall) -> dict[str, Any]:
    res = read_extra(call.extra, SHAPE)
    args: Any = call.arguments
    if res.get("j"):
        args = json.loads(call.arguments)
    out = {"tool_name": call.name, "args": args, "tool_call_id": call.id, "part_kind": "tool-call"}
    return apply(out, res)


def _text_out(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, OpaquePart):
        value: dict[str, Any] = json.loads(bytes(part.data))
        return value
    text = part.text if isinstance(part, TextPart) else _content_item(part)
    return apply({"content": text, "part_kind": "text"}, read_extra(part.extra, SHAPE))


def _shell_out(m: Message, parts: list[Any]) -> dict[str, Any]:
    origin = m.origin or Origin()
    out = {"parts": parts, "model_name": origin.model, "kind": "response"}
    out["provider_name"] = origin.provider
    return out


def _response_out(m: Message) -> dict[str, Any]:
    res = read_extra(m.extra, SHAPE)
    content: Sequence[ContentPart] = (
        (TextPart(text=m.content),) if isinstance(m.content, str) else m.content or ()
    )
    pools = {
        "r": [_thinking_out(r) for r in m.reasoning],
        "p": [_text_out(p) for p in content],
        "c": [_call_out(c) for c in m.tool_calls],
    }
    order = res.get("o")
    if order is None or len(order) != sum(len(v) for v in pools.values()):
        order = "r" * len(pools["r"]) + "p" * len(pools["p"]) + "c" * len(pools["c"])
    iters = {k: iter(v) for k, v in pools.items()}
    parts = [next(iters[t]) for t in order]
    return _shell_out(m, parts)
