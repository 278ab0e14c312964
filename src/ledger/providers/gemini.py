"""Gemini ``generateContent``: ``{"systemInstruction"?, "contents"}`` to ledger messages and back.

A ``model`` turn becomes one assistant message: thought parts are reasoning, ``functionCall``
parts are tool calls, the rest is content, in the order received. Thought signatures stay on
the part they came with (a text part, a call, a thought) and go back only to Gemini and the
model that wrote them; history from elsewhere gets the documented placeholder signature on the
first call of each turn. ``functionResponse`` parts become tool messages and are grouped back
into one ``user`` turn (ADR 0100).
"""

from __future__ import annotations

import hashlib
import re
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
from ledger.providers._check import check, fail, located
from ledger.providers._common import (
    Outbox,
    args_object,
    at,
    extras_of,
    interleave,
    json_text,
    opaque,
    order_of,
)
from ledger.providers._conversion import Conversion, Target, warn_left_out
from ledger.providers._gemini_build import SHAPE, call_part, part_out, response_part, thought_part
from ledger.providers.residue import Residue, apply, diff, dumps, read_extra, with_extra

__all__ = [
    "SHAPE",
    "SKIP_SIGNATURE",
    "export",
    "from_ledger",
    "response_to_ledger",
    "target",
    "to_ledger",
]

_PROVIDER, _API = "google", "generateContent"
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The value Gemini documents for a function call whose history it did not produce."""


def target(model: str | None = None, endpoint: str | None = None) -> Target:
    """Gemini's ``generateContent``: thought signatures are bound to the model."""
    return Target(_PROVIDER, _API, model, endpoint, binds_model=True)


# --- to the ledger -------------------------------------------------------------------------


def to_ledger(
    request: Mapping[str, Any], *, model: str | None = None, endpoint: str | None = None
) -> tuple[Message, ...]:
    """The conversation of a ``generateContent`` request as ledger messages."""
    check(request, s.GeminiRequest, "")
    origin = target(model, endpoint).origin()
    out: list[Message] = []
    if "systemInstruction" in request:
        system = request["systemInstruction"]
        check(system, s.GeminiContent, "systemInstruction")
        parts = tuple(
            _part(p, at(at("systemInstruction", "parts"), j)) for j, p in enumerate(system["parts"])
        )
        shell = diff(system, {"parts": system["parts"]})
        out.append(
            Message(role=Role.SYSTEM, content=parts, extra=_ext({"m": shell}, "systemInstruction"))
        )
    calls: list[ToolCall] = []
    for i, content in enumerate(request["contents"]):
        path = at("contents", i)
        check(content, s.GeminiContent, path)
        with located(path):
            if content.get("role") == "model":
                message = _model(content, path, origin, f"{i}")
                calls = list(message.tool_calls)
                out.append(message)
            else:
                after = bool(out) and out[-1].role is Role.TOOL
                out.extend(_user(content, path, calls, after_tool=after))
                calls = []
    return tuple(out)


def response_to_ledger(response: Mapping[str, Any], *, endpoint: str | None = None) -> Message:
    """The first candidate of a ``GenerateContentResponse`` as the assistant message to append."""
    candidates = response.get("candidates") if isinstance(response, Mapping) else None
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        raise fail("candidates", "a list holding at least one candidate")
    content = candidates[0].get("content")
    check(content, s.GeminiContent, "candidates[0].content")
    assert isinstance(content, dict)  # the check above refuses anything else
    model = response.get("modelVersion")
    origin = target(model if isinstance(model, str) else None, endpoint).origin()
    rid = response.get("responseId")
    mint = (
        rid
        if isinstance(rid, str)
        else hashlib.blake2b(dumps(content).encode(), digest_size=8).hexdigest()
    )
    with located("candidates[0].content"):
        message = _model(content, "candidates[0].content", origin, mint)
    meta = {k: v for k, v in response.items() if k != "candidates"}
    meta["candidate"] = {k: v for k, v in candidates[0].items() if k != "content"}
    residue = read_extra(message.extra, SHAPE) | {"r": meta}
    return msgspec.structs.replace(
        message, item_id=rid if isinstance(rid, str) else None, extra=with_extra(residue, SHAPE, "")
    )


def _mint(path: str) -> str:
    # An id for a response whose call is unknown, in the characters every provider accepts.
    return "gemini-" + re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-")


def _ext(residue: Residue, path: str) -> msgspec.Raw | msgspec.UnsetType:
    return with_extra({k: v for k, v in residue.items() if v}, SHAPE, path)


def _part(part: Any, path: str) -> ContentPart:
    value = check(part, s.GeminiPart, path)
    built: ContentPart
    if value.text is not msgspec.UNSET and value.thought is not True:
        sig = value.thoughtSignature if value.thoughtSignature is not msgspec.UNSET else None
        built = TextPart(text=value.text, signature=sig)
    elif value.inlineData is not msgspec.UNSET and value.thoughtSignature is msgspec.UNSET:
        built = MediaPart(media_type=value.inlineData.mimeType, data=value.inlineData.data)
    elif value.fileData is not msgspec.UNSET and value.thoughtSignature is msgspec.UNSET:
        kind = value.fileData.mimeType
        media = kind if isinstance(kind, str) else "application/octet-stream"
        built = MediaPart(media_type=media, url=value.fileData.fileUri)
    else:
        return opaque(part, _PROVIDER, path)
    typed = (
        "text",
        "thoughtSignature",
        "inlineData.data",
        "inlineData.mimeType",
        "fileData.fileUri",
    )
    residue = diff(part, part_out(built) or {}, typed=typed)
    return msgspec.structs.replace(built, extra=_ext(residue, path)) if residue else built


def _user(
    content: Mapping[str, Any], path: str, calls: list[ToolCall], *, after_tool: bool
) -> list[Message]:
    shell = diff(content, {"role": "user", "parts": content["parts"]})
    members: list[Message] = []
    parts: list[ContentPart] = []
    tokens = ""
    for j, part in enumerate(content["parts"]):
        pp = at(at(path, "parts"), j)
        if not (isinstance(part, dict) and "functionResponse" in part):
            parts.append(_part(part, pp))
            tokens += "p"
            continue
        fr = check(part, s.GeminiPart, pp).functionResponse
        assert isinstance(fr, s.GeminiResponse)
        k = tokens.count("t")
        minted = fr.id is msgspec.UNSET
        call_id = (
            fr.id if isinstance(fr.id, str) else (calls[k].id if k < len(calls) else _mint(pp))
        )
        text = json_text(fr.response, at(at(pp, "functionResponse"), "response"))
        tool = Message(role=Role.TOOL, tool_call_id=call_id, name=fr.name, content=text)
        residue: Residue = {"i": 1 if minted else 0}
        typed = ("functionResponse.name", "functionResponse.response", "functionResponse.id")
        residue["b"] = diff(part, response_part(tool, minted), typed=typed)
        if not members:
            residue |= {"m": shell, "s": 1 if after_tool else 0}
        members.append(msgspec.structs.replace(tool, extra=_ext(residue, pp)))
        tokens += "t"
    if not members or parts:
        order = order_of(tokens, "t" * len(members) + "p" * len(parts))
        first = not members
        residue = {"m": shell if first else None, "c": 0 if first else 1, "o": order}
        members.append(Message(role=Role.USER, content=tuple(parts), extra=_ext(residue, path)))
    return members


def _model(content: Mapping[str, Any], path: str, origin: Origin, mint: str) -> Message:
    shell = diff(content, {"role": "model", "parts": content["parts"]})
    reasoning: list[Reasoning] = []
    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    tokens = ""
    for j, part in enumerate(content["parts"]):
        pp = at(at(path, "parts"), j)
        value = check(part, s.GeminiPart, pp)
        sig = value.thoughtSignature if isinstance(value.thoughtSignature, str) else None
        if value.thought is True and isinstance(value.text, str):
            r = Reasoning(kind=ReasoningKind.SUMMARY, text=value.text, signature=sig, origin=origin)
            residue = diff(
                part, thought_part(r) or {}, typed=("text", "thought", "thoughtSignature")
            )
            reasoning.append(msgspec.structs.replace(r, extra=_ext(residue, pp)) if residue else r)
            tokens += "r"
        elif isinstance(value.functionCall, s.GeminiCall):
            fc = value.functionCall
            args = (
                "" if fc.args is msgspec.UNSET else json_text(fc.args, at(pp, "functionCall.args"))
            )
            minted = not isinstance(fc.id, str)
            call_id = fc.id if isinstance(fc.id, str) else f"gemini-{mint}-{j}"
            call = ToolCall(id=call_id, name=fc.name, arguments=args, signature=sig)
            marker = with_extra({"i": 1} if minted else {}, SHAPE, pp)
            call = msgspec.structs.replace(call, extra=marker)
            typed = (
                "thoughtSignature",
                "functionCall.name",
                "functionCall.args",
                "functionCall.id",
            )
            residue = read_extra(marker, SHAPE) | diff(part, call_part(call), typed=typed)
            calls.append(msgspec.structs.replace(call, extra=_ext(residue, pp)))
            tokens += "c"
        else:
            parts.append(_part(part, pp))
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


# --- from the ledger -----------------------------------------------------------------------


def from_ledger(
    messages: Iterable[Message], *, model: str | None = None, endpoint: str | None = None
) -> dict[str, Any]:
    """The ``systemInstruction`` and ``contents``; warns when something was left out."""
    return warn_left_out(export(messages, model=model, endpoint=endpoint), "gemini")


def export(
    messages: Iterable[Message], *, model: str | None = None, endpoint: str | None = None
) -> Conversion:
    """The request fragment, with everything that could not be sent to Gemini."""
    goal = target(model, endpoint)
    box = Outbox(SHAPE)
    system: list[dict[str, Any]] = []
    system_shell: Residue | None = None
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    group: dict[str, Any] | None = None
    for i, m in enumerate(messages):
        box.foreign_fields(i, extras_of(m))
        res = read_extra(m.extra, SHAPE)
        if m.role in (Role.SYSTEM, Role.DEVELOPER):
            system.extend(_parts_out(m, box, i))
            system_shell = system_shell or res.get("m")
        elif m.role is Role.TOOL:
            part = apply(response_part(m, bool(res.get("i")), names, box, i), res.get("b"))
            if group is None or res.get("s"):
                group = {"shell": res.get("m"), "t": [], "p": [], "o": None}
                out.append(group)
            group["t"].append(part)
        elif m.role is Role.USER and group is not None and res.get("c"):
            group["p"].extend(_parts_out(m, box, i))
            group["o"] = res.get("o")
            group = None
        else:
            group = None
            if m.role is Role.ASSISTANT:
                names |= {c.id: c.name for c in m.tool_calls}
                rendered = _model_out(m, res, goal, box, i)
            else:
                rendered = {"role": "user", "parts": _parts_out(m, box, i)}
                rendered = apply(rendered, res.get("m"))
            if not rendered["parts"] and not res:
                box.leave(i, "message", "it has no part Gemini accepts")
            else:
                out.append(rendered)
    request: dict[str, Any] = {}
    if system:
        request["systemInstruction"] = apply({"parts": system}, system_shell)
    request["contents"] = [_render(g) if "shell" in g else g for g in out]
    return Conversion(request=request, left_out=tuple(box.left))


def _render(group: dict[str, Any]) -> dict[str, Any]:
    parts = interleave(group["o"], {"t": group["t"], "p": group["p"]})
    return apply({"role": "user", "parts": parts}, group["shell"])


def _parts_out(m: Message, box: Outbox, i: int, refused: str | None = None) -> list[dict[str, Any]]:
    # ``refused``: why the target does not accept the message's origin, when it does not.
    if m.content is None or isinstance(m.content, str):
        return [{"text": m.content}] if m.content else []
    out = []
    for part in m.content:
        built = part_out(part, signed=refused is None)
        if isinstance(part, TextPart) and part.signature is not None and refused is not None:
            box.leave(i, "signature", refused)
        if built is None:
            box.leave(i, "content part", "no Gemini part holds it")
            continue
        # What is kept opaque or verbatim (``executableCode``, a signature-only part) too.
        kept = built if refused is None else box.unsigned(i, built, refused)
        if kept is not None:
            out.append(kept)
    return out


def _model_out(m: Message, res: Residue, goal: Target, box: Outbox, i: int) -> dict[str, Any]:
    signed = goal.accepts(m.origin)
    refused = None if signed else goal.why_not(m.origin)
    thoughts: list[dict[str, Any] | None] = []
    for r in m.reasoning:
        origin = r.origin or m.origin
        built = thought_part(r) if goal.accepts(origin) else None
        if built is None:
            why = goal.why_not(origin) if not goal.accepts(origin) else "it has no text"
            box.leave(i, "reasoning", why)
        thoughts.append(built)
    calls = []
    for k, call in enumerate(m.tool_calls):
        built = call_part(call, signed=signed)
        if refused is not None:
            if call.signature is not None:
                box.leave(i, "signature", refused)
            built = box.stripped(i, built, refused)
        if k == 0 and refused is not None:
            built["thoughtSignature"] = SKIP_SIGNATURE
        if call.arguments and args_object(call.arguments) is None:
            box.leave(i, "tool-call arguments", f"{call.id}: not a JSON object; sent as {{}}")
        calls.append(built)
    pools: dict[str, Sequence[dict[str, Any] | None]] = {
        "r": thoughts,
        "p": _parts_out(m, box, i, refused),
        "c": calls,
    }
    content = [p for p in interleave(res.get("o"), pools) if p is not None]
    return apply({"role": "model", "parts": content}, res.get("m"))
