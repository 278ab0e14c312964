"""Anthropic Messages: ``{"system"?, "messages"}`` to ledger messages and back (ADR 0100).

A ``user`` message holding ``tool_result`` blocks becomes one ``tool`` message per result and a
``user`` message for its other blocks; they are merged back into one ``user`` message. An
assistant message keeps its blocks in the order received (thinking, text and tool use in any
order). Thinking blocks go back only to Anthropic, and to the model that wrote them when both
sides name a model; tool-use ``input`` is kept as the exact JSON text of the object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from ledger.providers._anthropic_build import (
    SHAPE,
    block_of,
    blocks,
    result_block,
    thinking_block,
    use_block,
)
from ledger.providers._check import check, located
from ledger.providers._common import (
    Outbox,
    args_object,
    at,
    extras_of,
    interleave,
    json_text,
    opaque,
    order_of,
    with_residue,
)
from ledger.providers._conversion import Conversion, Target, warn_left_out
from ledger.providers.residue import Residue, apply, diff, read_extra, with_extra

__all__ = ["SHAPE", "export", "from_ledger", "response_to_ledger", "target", "to_ledger"]

_PROVIDER, _API = "anthropic", "messages"


def target(model: str | None = None, endpoint: str | None = None) -> Target:
    """Anthropic's Messages API: signatures are bound to the model, not to the platform."""
    return Target(_PROVIDER, _API, model, endpoint, binds_model=True)


# --- to the ledger -------------------------------------------------------------------------


def to_ledger(
    request: Mapping[str, Any], *, model: str | None = None, endpoint: str | None = None
) -> tuple[Message, ...]:
    """The conversation of a Messages request (``system``, ``messages``) as ledger messages."""
    check(request, s.AnthropicRequest, "")
    origin = target(model, endpoint).origin()
    out: list[Message] = []
    if "system" in request:
        system = request["system"]
        content = system if isinstance(system, str) else _parts(system, "system")
        out.append(Message(role=Role.SYSTEM, content=content))
    for i, msg in enumerate(request["messages"]):
        path = at("messages", i)
        check(msg, s.AnthropicMessage, path)
        with located(path):
            if msg["role"] == "assistant":
                out.append(_assistant(msg, path, origin))
            else:
                out.extend(_user(msg, path, after_tool=bool(out) and out[-1].role is Role.TOOL))
    return tuple(out)


def response_to_ledger(response: Mapping[str, Any], *, endpoint: str | None = None) -> Message:
    """An Anthropic ``Message`` response as the assistant message to append."""
    check(response, s.AnthropicMessage, "")
    model = response.get("model") if isinstance(response.get("model"), str) else None
    origin = target(model, endpoint).origin()
    with located("content"):
        message = _assistant({"role": "assistant", "content": response["content"]}, "", origin)
    meta = {k: v for k, v in response.items() if k not in ("role", "content")}
    residue = read_extra(message.extra, SHAPE) | ({"r": meta} if meta else {})
    item_id = response.get("id") if isinstance(response.get("id"), str) else None
    return msgspec.structs.replace(
        message, item_id=item_id, extra=with_extra(residue, SHAPE, "response")
    )


def _parts(blocks: list[Any], path: str) -> tuple[ContentPart, ...]:
    return tuple(_part(b, at(path, j)) for j, b in enumerate(blocks))


def _part(block: Any, path: str) -> ContentPart:
    kind = check(block, s.Typed, path).type
    if kind == "text":
        check(block, s.Text, path)
        return with_residue(TextPart(text=block["text"]), block, block_of, SHAPE, path, ("text",))
    source = block.get("source")
    held = isinstance(source, dict) and source.get("type") in ("base64", "url")
    if kind in ("image", "document") and held:
        media = check(block, s.Media, path).source
        part = (
            MediaPart(media_type=media.media_type, data=media.data)
            if isinstance(media, s.Base64Source)
            else MediaPart(media_type=_URL_MEDIA[kind], url=media.url)
        )
        typed = ("source.data", "source.url", "source.media_type" if part.data else "")
        return with_residue(part, block, block_of, SHAPE, path, typed)
    return opaque(block, _PROVIDER, path)


_URL_MEDIA = {"image": "image/*", "document": "application/pdf"}


def _user(msg: Mapping[str, Any], path: str, *, after_tool: bool) -> list[Message]:
    content = msg["content"]
    shell = diff(msg, {"role": "user", "content": content})
    if isinstance(content, str) or not any(_is_result(b) for b in content):
        parts = content if isinstance(content, str) else _parts(content, at(path, "content"))
        return [Message(role=Role.USER, content=parts, extra=_ext({"m": shell}, path))]
    members: list[Message] = []
    parts_: list[ContentPart] = []
    tokens = ""
    for j, block in enumerate(content):
        bp = at(at(path, "content"), j)
        if not _is_result(block):
            parts_.append(_part(block, bp))
            tokens += "p"
            continue
        check(block, s.ToolResult, bp)
        body = block.get("content")
        tool = Message(
            role=Role.TOOL,
            tool_call_id=block["tool_use_id"],
            content=body
            if body is None or isinstance(body, str)
            else _parts(body, at(bp, "content")),
            is_error=block.get("is_error") is True,
        )
        residue: Residue = {"b": diff(block, result_block(tool), typed=("tool_use_id", "content"))}
        if not members:
            residue |= {"m": shell, "s": 1 if after_tool else 0}
        members.append(msgspec.structs.replace(tool, extra=_ext(residue, bp)))
        tokens += "t"
    if parts_:
        order = order_of(tokens, "t" * len(members) + "p" * len(parts_))
        members.append(
            Message(role=Role.USER, content=tuple(parts_), extra=_ext({"c": 1, "o": order}, path))
        )
    return members


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _assistant(msg: Mapping[str, Any], path: str, origin: Origin) -> Message:
    content = msg["content"]
    shell = diff(msg, {"role": "assistant", "content": content})
    if isinstance(content, str):
        return Message(
            role=Role.ASSISTANT, content=content, origin=origin, extra=_ext({"m": shell}, path)
        )
    reasoning: list[Reasoning] = []
    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    tokens = ""
    for j, block in enumerate(content):
        bp = at(at(path, "content"), j)
        kind = check(block, s.Typed, bp).type
        if kind == "thinking":
            check(block, s.Thinking, bp)
            r = Reasoning(text=block["thinking"], signature=block["signature"], origin=origin)
            reasoning.append(
                with_residue(r, block, thinking_block, SHAPE, bp, ("thinking", "signature"))
            )
            tokens += "r"
        elif kind == "redacted_thinking":
            check(block, s.Redacted, bp)
            r = Reasoning(kind=ReasoningKind.REDACTED, encrypted=block["data"], origin=origin)
            reasoning.append(with_residue(r, block, thinking_block, SHAPE, bp, ("data",)))
            tokens += "r"
        elif kind == "tool_use":
            check(block, s.ToolUse, bp)
            args = json_text(block["input"], at(bp, "input"))
            call = ToolCall(id=block["id"], name=block["name"], arguments=args)
            calls.append(with_residue(call, block, use_block, SHAPE, bp, ("id", "name", "input")))
            tokens += "c"
        else:
            parts.append(_part(block, bp))
            tokens += "p"
    order = order_of(tokens, "r" * len(reasoning) + "p" * len(parts) + "c" * len(calls))
    return Message(
        role=Role.ASSISTANT,
        content=tuple(parts),
        reasoning=tuple(reasoning),
        tool_calls=tuple(calls),
        origin=origin,
        extra=_ext({"m": shell, "o": order}, path),
    )


def _ext(residue: Residue, path: str) -> msgspec.Raw | msgspec.UnsetType:
    return with_extra({k: v for k, v in residue.items() if v}, SHAPE, path)


# --- from the ledger -----------------------------------------------------------------------


def from_ledger(
    messages: Iterable[Message], *, model: str | None = None, endpoint: str | None = None
) -> dict[str, Any]:
    """The ``system`` and ``messages`` of a request; warns when something was left out."""
    return warn_left_out(export(messages, model=model, endpoint=endpoint), "anthropic")


def export(
    messages: Iterable[Message], *, model: str | None = None, endpoint: str | None = None
) -> Conversion:
    """The request fragment, with everything that could not be sent to Anthropic."""
    goal = target(model, endpoint)
    box = Outbox(SHAPE)
    system: list[tuple[int, Message]] = []
    out: list[dict[str, Any] | _Group] = []
    group: _Group | None = None
    for i, m in enumerate(messages):
        box.foreign_fields(i, extras_of(m))
        res = read_extra(m.extra, SHAPE)
        if m.name is not None and m.role is not Role.TOOL:
            box.leave(i, "name", "Anthropic messages carry no participant name")
        if m.role in (Role.SYSTEM, Role.DEVELOPER):
            system.append((i, m))
        elif m.role is Role.TOOL:
            if group is None or res.get("s"):
                group = _Group(res.get("m"))
                out.append(group)
            group.tools.append(apply(result_block(m, box, i), res.get("b")))
        elif m.role is Role.USER and group is not None and res.get("c"):
            group.parts.extend(blocks(m, box, i))
            group.order = res.get("o")
            group = None  # the user blocks close the message they continue
        else:
            group = None
            rendered = _assistant_out(m, res, goal, box, i) if m.role is Role.ASSISTANT else None
            if m.role is Role.USER:
                content = m.content if isinstance(m.content, str) else blocks(m, box, i)
                rendered = apply({"role": "user", "content": content}, res.get("m"))
            assert rendered is not None
            if _empty(rendered) and not res:
                box.leave(i, "message", "it has no content Anthropic accepts")
            else:
                out.append(rendered)
    request: dict[str, Any] = {}
    if system:
        request["system"] = _system_out(system, box)
    request["messages"] = [g.render() if isinstance(g, _Group) else g for g in out]
    return Conversion(request=request, left_out=tuple(box.left))


class _Group:
    """A ``user`` message rebuilt from tool messages and the user blocks that followed them."""

    def __init__(self, shell: Residue | None) -> None:
        self.shell = shell
        self.tools: list[dict[str, Any]] = []
        self.parts: list[dict[str, Any]] = []
        self.order: str | None = None

    def render(self) -> dict[str, Any]:
        content = interleave(self.order, {"t": self.tools, "p": self.parts})
        return apply({"role": "user", "content": content}, self.shell)


def _empty(message: Mapping[str, Any]) -> bool:
    return message["content"] in ("", [])


def _system_out(system: list[tuple[int, Message]], box: Outbox) -> str | list[dict[str, Any]]:
    if len(system) == 1 and isinstance(system[0][1].content, str):
        return system[0][1].content
    out: list[dict[str, Any]] = []
    for i, m in system:
        for block in blocks(m, box, i):
            if block.get("type") == "text":
                out.append(block)
            else:
                box.leave(i, "content part", "a system prompt holds text only")
    return out


def _assistant_out(m: Message, res: Residue, goal: Target, box: Outbox, i: int) -> dict[str, Any]:
    thinking: list[dict[str, Any] | None] = []
    for r in m.reasoning:
        origin = r.origin or m.origin
        block = thinking_block(r) if goal.accepts(origin) else None
        if block is None:
            why = (
                goal.why_not(origin) if not goal.accepts(origin) else "no Anthropic block holds it"
            )
            box.leave(i, "reasoning", why)
        thinking.append(block)
    uses: list[dict[str, Any]] = []
    for call in m.tool_calls:
        if args_object(call.arguments) is None:
            box.leave(i, "tool-call arguments", f"{call.id}: not a JSON object; sent as {{}}")
        if call.signature is not None:
            box.leave(i, "signature", f"{call.id}: Anthropic tool calls carry no signature")
        uses.append(use_block(call))
    if isinstance(m.content, str) and not m.reasoning and not m.tool_calls:
        return apply({"role": "assistant", "content": m.content}, res.get("m"))
    parts: list[dict[str, Any] | None] = list(blocks(m, box, i))
    if not goal.accepts(m.origin):
        # Blocks kept opaque or with verbatim fields go as thinking does (ADR 0106).
        why = goal.why_not(m.origin)
        parts = [box.unsigned(i, b, why) if b is not None else None for b in parts]
        uses = [box.stripped(i, u, why) for u in uses]
    pools: dict[str, Sequence[dict[str, Any] | None]] = {"r": thinking, "p": parts, "c": uses}
    content = [b for b in interleave(res.get("o"), pools) if b is not None]
    return apply({"role": "assistant", "content": content}, res.get("m"))
