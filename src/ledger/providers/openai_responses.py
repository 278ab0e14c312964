"""OpenAI Responses: ``{"instructions"?, "input"}`` to ledger messages and back (ADR 0100).

An assistant *turn*, the run of output items between two inputs (reasoning items, assistant
``message`` items, ``function_call`` and ``custom_tool_call`` items, hosted-tool items), is one
assistant message whose item order is kept; ``function_call_output`` items are tool messages.
Reasoning items (``rs_`` ids, summaries, ``encrypted_content``) go back only to the OpenAI
endpoint that wrote them; when they cannot, the ``fc_``/``msg_`` ids of their turn are left out
too, as the API refuses an item whose reasoning item is missing.
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
    Origin,
    Reasoning,
    ReasoningKind,
    Role,
    TextPart,
    ToolCall,
)
from ledger.providers import _shapes as s
from ledger.providers._check import check, located
from ledger.providers._common import Outbox, at, extras_of, opaque, with_residue
from ledger.providers._conversion import Conversion, Target, warn_left_out
from ledger.providers._responses_build import (
    OPAQUE,
    SHAPE,
    call_out,
    item_out,
    message_out,
    output_out,
    part_out,
    reasoning_out,
)
from ledger.providers.residue import Residue, apply, diff, read_extra, with_extra

__all__ = ["SHAPE", "export", "from_ledger", "response_to_ledger", "target", "to_ledger"]

_REASONING_TYPED = ("id", "summary", "summary.text", "encrypted_content")
_TURN = frozenset({"reasoning", "function_call", "custom_tool_call"})
_OUTPUT = frozenset({"function_call_output", "custom_tool_call_output"})
_DATA_URL = re.compile(r"data:(?P<type>image/[^;,]+);base64,(?P<data>.*)", re.DOTALL)


def target(model: str | None = None, endpoint: str | None = None) -> Target:
    """The Responses API: encrypted reasoning is bound to the endpoint (organisation or
    deployment) that produced it, not to the model."""
    return Target("openai", "responses", model, endpoint, binds_model=False, binds_endpoint=True)


# --- to the ledger -------------------------------------------------------------------------


def to_ledger(
    request: Mapping[str, Any], *, model: str | None = None, endpoint: str | None = None
) -> tuple[Message, ...]:
    """The conversation of a Responses request (``instructions``, ``input``) as ledger messages."""
    check(request, s.ResponsesRequest, "")
    origin = target(model, endpoint).origin()
    out: list[Message] = []
    if "instructions" in request:
        out.append(Message(role=Role.SYSTEM, content=request["instructions"], extra=_ext({"i": 1})))
    items = request["input"]
    if isinstance(items, str):
        return (*out, Message(role=Role.USER, content=items, extra=_ext({"s": 1})))
    turn: list[tuple[int, Any, str]] = []
    for j, item in enumerate(items):
        path = at("input", j)
        kind = _kind(item, path)
        if kind in _TURN or (kind not in _OUTPUT and kind != "message") or _assistant(item):
            turn.append((j, item, kind))
            continue
        if turn:
            out.append(_located_turn(turn, "input", origin))
            turn = []
        with located(path):
            out.append(_output(item, path) if kind in _OUTPUT else _message(item, path))
    if turn:
        out.append(_located_turn(turn, "input", origin))
    return tuple(out)


def _located_turn(items: list[tuple[int, Any, str]], root: str, origin: Origin) -> Message:
    # A turn spans items: a refusal inside one is placed at the turn's first item.
    with located(at(root, items[0][0])):
        return _turn(items, root, origin)


def response_to_ledger(response: Mapping[str, Any], *, endpoint: str | None = None) -> Message:
    """A Responses ``response`` (its ``output`` items) as the assistant message to append."""
    output = response.get("output") if isinstance(response, Mapping) else None
    if not isinstance(output, list):
        from ledger.providers._check import fail

        raise fail("output", "a list of output items")
    model = response.get("model")
    origin = target(model if isinstance(model, str) else None, endpoint).origin()
    # Each item's kind is checked once, here; the turn reads it from the list.
    kinds = [(j, item, _kind(item, at("output", j))) for j, item in enumerate(output)]
    message = _located_turn(kinds, "output", origin)
    meta = {k: v for k, v in response.items() if k != "output"}
    residue = read_extra(message.extra, SHAPE) | {"r": meta}
    return msgspec.structs.replace(message, extra=with_extra(residue, SHAPE, "response"))


def _kind(item: Any, path: str) -> str:
    if isinstance(item, dict) and "type" not in item:
        return "message"
    kind: str = check(item, s.Typed, path).type
    return kind


def _assistant(item: Any) -> bool:
    return bool(item.get("type", "message") == "message" and item.get("role") == "assistant")


def _ext(residue: Residue, path: str = "") -> msgspec.Raw | msgspec.UnsetType:
    return with_extra({k: v for k, v in residue.items() if v}, SHAPE, path)


def _parts(content: list[Any], path: str, assistant: bool) -> tuple[ContentPart, ...]:
    return tuple(_part(p, at(path, j), assistant) for j, p in enumerate(content))


def _part(part: Any, path: str, assistant: bool) -> ContentPart:
    kind = check(part, s.Typed, path).type
    shape = s.RESPONSES_PARTS.get(kind)
    if shape is None:
        return opaque(part, OPAQUE, path)
    value = check(part, shape, path)
    if isinstance(value, s.Text):
        text = TextPart(text=value.text)
        # Rebuilt as the message around it will build it: an ``output_text`` in a user message
        # (or the reverse) keeps its type in the residue.
        build = lambda p: part_out(p, assistant)  # noqa: E731
        return with_residue(text, part, build, SHAPE, path, ("text",))
    assert isinstance(value, s.InputImage)
    if not isinstance(value.image_url, str):
        return opaque(part, OPAQUE, path)
    m = _DATA_URL.fullmatch(value.image_url)
    media = (
        MediaPart(media_type=m["type"], data=m["data"])
        if m
        else MediaPart(media_type="image/*", url=value.image_url)
    )
    build = lambda p: part_out(p, False)  # noqa: E731
    return with_residue(media, part, build, SHAPE, path, ("image_url",))


def _content(item: Mapping[str, Any], path: str) -> str | tuple[ContentPart, ...]:
    content = item["content"]
    if isinstance(content, str):
        return content
    return _parts(content, at(path, "content"), item.get("role") == "assistant")


def _message(item: Any, path: str) -> Message:
    check(item, s.ResponsesMessage, path)
    bare = Message(role=Role(item["role"]), content=_content(item, path), item_id=item.get("id"))
    residue = diff(item, message_out(bare, None, 0), typed=("role", "id", "content"))
    return msgspec.structs.replace(bare, extra=_ext(residue, path))


def _output(item: Any, path: str) -> Message:
    check(item, s.FunctionCallOutput, path)
    output = item["output"]
    content = output if isinstance(output, str) else _parts(output, at(path, "output"), False)
    marker = {"v": "custom"} if item["type"] == "custom_tool_call_output" else {}
    bare = Message(
        role=Role.TOOL,
        tool_call_id=item["call_id"],
        content=content,
        item_id=item.get("id"),
        extra=_ext(marker),
    )
    residue = marker | diff(item, output_out(bare, None, 0), typed=("call_id", "id", "output"))
    return msgspec.structs.replace(bare, extra=_ext(residue, path))


def _turn(items: list[tuple[int, Any, str]], root: str, origin: Origin) -> Message:
    reasoning: list[Reasoning] = []
    calls: list[ToolCall] = []
    parts: list[ContentPart] = []
    held: list[dict[str, Any]] = []  # per message item: its part count, form and residue
    item_id: str | None = None
    tokens = ""
    for j, item, kind in items:
        path = at(root, j)
        if kind == "reasoning":
            shape = check(item, s.ResponsesReasoning, path)
            enc = shape.encrypted_content if isinstance(shape.encrypted_content, str) else None
            r = Reasoning(
                kind=ReasoningKind.ENCRYPTED if enc is not None else ReasoningKind.SUMMARY,
                summary=tuple(t.text for t in shape.summary),
                encrypted=enc,
                item_id=shape.id,
                origin=origin,
            )
            reasoning.append(with_residue(r, item, reasoning_out, SHAPE, path, _REASONING_TYPED))
            tokens += "r"
        elif kind in ("function_call", "custom_tool_call"):
            calls.append(_call(item, kind, path))
            tokens += "c"
        elif kind == "message" and _assistant(item):
            check(item, s.ResponsesMessage, path)
            content = _content(item, path)
            first = not held
            if first and isinstance(item.get("id"), str):
                item_id = item["id"]
            form = isinstance(content, str)
            mine = (TextPart(text=content),) if isinstance(content, str) else content
            built = item_out(mine, form, item_id if first else None)
            held.append(
                {
                    "n": len(mine),
                    "s": 1 if form else 0,
                    "r": diff(item, built, typed=("role", "content")),
                }
            )
            parts.extend(mine)
            tokens += "m"
        else:
            parts.append(opaque(item, OPAQUE, path))
            tokens += "o"
    body: str | tuple[ContentPart, ...] | None = tuple(parts) if tokens.strip("rc") else None
    if len(held) == 1 and held[0]["s"] and "o" not in tokens and isinstance(parts[0], TextPart):
        body = parts[0].text
    canonical = "r" * len(reasoning) + ("m" if _has_text(body) else "") + "c" * len(calls)
    residue: Residue = {"o": tokens if tokens != canonical else None}
    string_lost = bool(held) and bool(held[0]["s"]) and not isinstance(body, str)
    if len(held) > 1 or any(h["r"] for h in held) or string_lost:
        residue["mi"] = [{k: v for k, v in h.items() if v} for h in held]
    return Message(
        role=Role.ASSISTANT,
        content=body,
        reasoning=tuple(reasoning),
        tool_calls=tuple(calls),
        item_id=item_id,
        origin=origin,
        extra=_ext(residue, root),
    )


def _has_text(content: str | tuple[ContentPart, ...] | None) -> bool:
    # The canonical turn has a message item when there is content to put in one.
    return content is not None and content != ()


def _call(item: Any, kind: str, path: str) -> ToolCall:
    custom = kind == "custom_tool_call"
    shape = check(item, s.CustomCall if custom else s.FunctionCall, path)
    text = shape.input if isinstance(shape, s.CustomCall) else shape.arguments
    item_id = shape.id if isinstance(shape.id, str) else None
    marker = {"v": "custom"} if custom else {}
    bare = ToolCall(id=shape.call_id, name=shape.name, arguments=text, item_id=item_id)
    bare = msgspec.structs.replace(bare, extra=_ext(marker))
    typed = ("call_id", "name", "id", "input" if custom else "arguments")
    residue = marker | diff(item, call_out(bare), typed=typed)
    return msgspec.structs.replace(bare, extra=_ext(residue, path))


# --- builders shared by both directions ------------------------------------------------------


# --- from the ledger -----------------------------------------------------------------------


def from_ledger(
    messages: Iterable[Message], *, model: str | None = None, endpoint: str | None = None
) -> dict[str, Any]:
    """The ``instructions`` and ``input`` of a request; warns when something was left out."""
    return warn_left_out(export(messages, model=model, endpoint=endpoint), "openai_responses")


def export(
    messages: Iterable[Message], *, model: str | None = None, endpoint: str | None = None
) -> Conversion:
    """The request fragment, with everything that could not be sent to this endpoint."""
    goal = target(model, endpoint)
    box = Outbox(SHAPE)
    request: dict[str, Any] = {}
    items: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        box.foreign_fields(i, extras_of(m))
        res = read_extra(m.extra, SHAPE)
        if res.get("i") and not items and "instructions" not in request:
            request["instructions"] = m.content if isinstance(m.content, str) else m.text()
        elif res.get("s") and not items and isinstance(m.content, str):
            request["input"] = m.content
        elif m.role is Role.TOOL:
            items.append(apply(output_out(m, box, i), res))
        elif m.role is Role.ASSISTANT:
            items.extend(_turn_out(m, res, goal, box, i))
        else:
            items.append(apply(message_out(m, box, i), res))
    if "input" not in request or items:
        request["input"] = items
    return Conversion(request=request, left_out=tuple(box.left))


def _turn_out(m: Message, res: Residue, goal: Target, box: Outbox, i: int) -> list[dict[str, Any]]:
    reasoning: list[dict[str, Any] | None] = []
    for r in m.reasoning:
        origin = r.origin or m.origin
        built = reasoning_out(r) if goal.accepts(origin) else None
        if built is None:
            why = goal.why_not(origin) if not goal.accepts(origin) else "it has no item id"
            box.leave(i, "reasoning", why)
        reasoning.append(built)
    # Without its reasoning item, an item sent with its id is refused: send none of the ids.
    # Ids minted by another provider or endpoint (an Anthropic message id) are not ours either.
    ours = m.origin is None or goal.accepts(m.origin)
    keep_ids = ours and all(r is not None for r in reasoning)
    if not keep_ids and (m.item_id or any(c.item_id for c in m.tool_calls)):
        why = "their reasoning items could not be sent" if ours else goal.why_not(m.origin)
        box.leave(i, "item ids", why)
    calls = [call_out(c, keep_ids) for c in m.tool_calls]
    for c in m.tool_calls:
        if c.signature is not None:
            box.leave(i, "signature", f"{c.id}: Responses calls carry no signature")
    content = m.content
    parts = (
        []
        if content is None
        else [TextPart(text=content)]
        if isinstance(content, str)
        else list(content)
    )
    held = res.get("mi") or [{"n": len(parts), "s": isinstance(content, str)}]
    tokens = res.get("o") or "r" * len(reasoning) + ("m" if _has_text(content) else "") + "c" * len(
        calls
    )
    # Items kept opaque (a compaction item) and verbatim fields hold payloads bound to the
    # endpoint too: without the origin, they go as reasoning does (reasoning decides its own).
    refused = None if goal.accepts(m.origin) else goal.why_not(m.origin)
    out: list[dict[str, Any] | None] = []
    it_r, it_c, k = iter(reasoning), iter(calls), 0
    for t in tokens:
        item: dict[str, Any] | None = None
        if t == "r":
            out.append(next(it_r, None))
            continue
        if t == "c":
            item = next(it_c, None)
        elif t == "o" and parts:
            item = part_out(parts.pop(0), True)
        elif t == "m":
            h = held[k] if k < len(held) else {}
            n = h.get("n", len(parts))
            mine, parts = tuple(parts[:n]), parts[n:]
            item = apply(
                item_out(mine, bool(h.get("s")), m.item_id if k == 0 else None), h.get("r")
            )
            if not keep_ids:
                item.pop("id", None)
            k += 1
        if refused is not None and item is not None:
            item = box.unsigned(i, item, refused)
        out.append(item)
    return [o for o in out if o is not None]
