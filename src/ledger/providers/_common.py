"""Pieces every adapter uses: JSON paths, left-out bookkeeping, block order, opaque parts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from ledger.messages import MediaPart, Message, OpaquePart, Reasoning, TextPart, ToolCall
from ledger.providers._check import fail
from ledger.providers._conversion import LeftOut
from ledger.providers._signed import stripped, unsigned
from ledger.providers.residue import diff, dumps, read_extra, with_extra

__all__ = [
    "Outbox",
    "SHAPES",
    "args_object",
    "at",
    "extras_of",
    "interleave",
    "json_text",
    "opaque",
    "opaque_value",
    "order_of",
    "with_residue",
]

T = TypeVar("T")
V = TypeVar("V", TextPart, MediaPart, Reasoning, ToolCall, Message)

SHAPES = ("openai_chat", "openai_responses", "anthropic", "gemini")
"""The keys adapters file their residues under in ``extra`` (ADR 0100)."""


def at(path: str, key: str | int) -> str:
    """The JSON path of ``key`` inside the object or array at ``path``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def json_text(value: Any, path: str) -> str:
    """``value`` as compact JSON text in the order given (tool arguments held as objects)."""
    try:
        return dumps(value)
    except (TypeError, ValueError) as exc:
        raise fail(path, f"a JSON value ({exc})") from None


def args_object(arguments: str) -> dict[str, Any] | None:
    """Tool-call arguments as an object, or ``None`` when the text is not a JSON object."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def opaque(value: Mapping[str, Any], provider: str, path: str) -> OpaquePart:
    """A provider object with no typed home, kept as JSON text in the order received."""
    try:
        return OpaquePart(data=msgspec.Raw(dumps(value).encode("utf-8")), provider=provider)
    except (TypeError, ValueError) as exc:
        raise fail(path, f"a JSON value ({exc})") from None


def opaque_value(part: OpaquePart) -> Any:
    """The provider object an :class:`OpaquePart` holds, keys in their order."""
    return json.loads(bytes(part.data))


def order_of(tokens: str, canonical: str) -> str | None:
    """``tokens`` when they differ from the canonical order, else ``None`` (nothing to keep)."""
    return None if tokens == canonical else tokens


def interleave(order: str | None, pools: Mapping[str, Sequence[T]]) -> list[T]:
    """The pools' items in ``order`` (one letter per item), or pool after pool when ``order``
    is missing or no longer fits the pools (the message was changed since it was read)."""
    if (
        order is None
        or any(order.count(k) != len(v) for k, v in pools.items())
        or len(order) != sum(len(v) for v in pools.values())
    ):
        return [item for pool in pools.values() for item in pool]
    iters = {k: iter(v) for k, v in pools.items()}
    return [next(iters[t]) for t in order]


class Outbox:
    """What a conversion leaves out, as it goes."""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.left: list[LeftOut] = []

    def leave(self, index: int, what: str, reason: str) -> None:
        """Record one piece left out of message ``index``."""
        self.left.append(LeftOut(index=index, what=what, reason=reason))

    def unsigned(self, index: int, value: dict[str, Any], reason: str) -> dict[str, Any] | None:
        """``value`` (a provider object kept opaque or with verbatim fields) without its signed
        or encrypted payloads, each counted; ``None`` when nothing else is left to send."""
        out, taken = unsigned(value)
        for what in taken:
            self.leave(index, what, reason)
        return out

    def stripped(self, index: int, value: dict[str, Any], reason: str) -> dict[str, Any]:
        """``value`` without its signed or encrypted keys, each counted; never dropped whole."""
        out, taken = stripped(value)
        for what in taken:
            self.leave(index, what, reason)
        return out

    def foreign_fields(self, index: int, extras: Iterable[msgspec.Raw | msgspec.UnsetType]) -> None:
        """Count the verbatim fields other shapes kept on a message, which cannot go here."""
        for extra in extras:
            for shape in SHAPES:
                held = read_extra(extra, shape)
                if shape != self.shape and (held.get("x") or held.get("n")):
                    self.leave(index, f"fields kept verbatim from {shape}", "no home in this shape")


def with_residue(
    value: V,
    original: Mapping[str, Any],
    build: Callable[[V], Mapping[str, Any] | None],
    shape: str,
    path: str,
    typed: tuple[str, ...] = (),
) -> V:
    """``value`` with the residue that turns its rebuild into ``original`` in its ``extra``."""
    residue = diff(original, build(value) or {}, typed=typed)
    if not residue:
        return value
    return msgspec.structs.replace(value, extra=with_extra(residue, shape, path))


def extras_of(m: Message) -> list[msgspec.Raw | msgspec.UnsetType]:
    """Every ``extra`` a message holds: its own, its parts', its reasoning's and its calls'."""
    found = [m.extra]
    if isinstance(m.content, tuple):
        found += [p.extra for p in m.content if not isinstance(p, OpaquePart)]
    found += [r.extra for r in m.reasoning]
    found += [c.extra for c in m.tool_calls]
    return found
