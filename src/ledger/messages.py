"""What frameworks hand over: messages, tool calls, reasoning blocks and content parts.

These are wire values as well as in-memory values: frozen ``msgspec.Struct`` types whose
encoding is the record format itself, so that no conversion layer sits on the hot path.
Fields a provider sends that have no home here travel verbatim in ``extra`` (raw JSON text),
which keeps them byte-exact and keeps the values immutable.

The structs are declared ``gc=False``: they are immutable and hold only strings, numbers and
tuples of other such structs, so they cannot form reference cycles, and keeping hundreds of
thousands of them out of the cycle collector's reach roughly halves the cost of holding a
replayed conversation in memory.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

__all__ = [
    "ContentPart",
    "MediaPart",
    "Message",
    "OpaquePart",
    "Origin",
    "Reasoning",
    "ReasoningKind",
    "Role",
    "TextPart",
    "ToolCall",
    "raw_json",
]

_canonical = msgspec.json.Encoder(order="deterministic")
_force = msgspec.structs.force_setattr


def raw_json(value: Any) -> msgspec.Raw:
    """Wrap a JSON-compatible value as verbatim raw JSON (deterministic key order).

    Use it to fill ``extra`` and ``OpaquePart.data`` from a provider's dict.
    """
    return msgspec.Raw(_canonical.encode(value))


def _check_raw(raw: msgspec.Raw | msgspec.UnsetType, owner: str, field: str) -> None:
    # A Raw value is written verbatim into the line: invalid JSON here would corrupt the
    # rollout for every later reader, so it is refused where it is made.
    if raw is msgspec.UNSET:
        return
    try:
        msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ValueError(
            f"{owner}.{field} must hold valid JSON text ({exc}); "
            "build it with ledger.raw_json(value)"
        ) from None
    # A line break would split the rollout line in two, and whitespace around the value would
    # not survive decoding (the decoder hands back the value alone), breaking the round trip.
    text = bytes(raw)
    if b"\n" in text or b"\r" in text or text != text.strip():
        raise ValueError(
            f"{owner}.{field} must be single-line JSON text without surrounding whitespace; "
            "build it with ledger.raw_json(value)"
        )


class Role(StrEnum):
    """Who speaks a message."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ReasoningKind(StrEnum):
    """What a reasoning block is, as the provider sent it."""

    THINKING = "thinking"
    REDACTED = "redacted"
    SUMMARY = "summary"
    ENCRYPTED = "encrypted"


class Origin(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """Where a provider item came from, so it is only ever sent back there."""

    provider: str | None = None
    api: str | None = None
    model: str | None = None
    endpoint: str | None = None


class TextPart(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True, tag="text"):
    """A text part of a message's content (``signature``: Gemini's thought signature).

    ``extra`` keeps the part's provider fields with no home here, verbatim (citations,
    annotations, cache control).
    """

    text: str
    signature: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if self.extra is not msgspec.UNSET:
            _check_raw(self.extra, "TextPart", "extra")


class MediaPart(
    msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True, tag="media"
):
    """Media by URL or inline base64 data, with its media type.

    ``extra`` keeps the part's provider fields with no home here, verbatim (an image's
    ``detail``, a file id, cache control).
    """

    media_type: str
    url: str | None = None
    data: str | None = None
    name: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ValueError("MediaPart needs exactly one of url= or data= (base64 text)")
        _check_raw(self.extra, "MediaPart", "extra")


class OpaquePart(
    msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True, tag="opaque"
):
    """A provider content item with no home here, kept verbatim as raw JSON."""

    data: msgspec.Raw
    provider: str | None = None

    def __post_init__(self) -> None:
        _check_raw(self.data, "OpaquePart", "data")


ContentPart = TextPart | MediaPart | OpaquePart


class Reasoning(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """One reasoning ("thinking") block of an assistant message.

    ``text=""`` and ``text=None`` are different values and stay different. ``signature``
    (Anthropic, Gemini) and ``encrypted`` (OpenAI ``encrypted_content``, Anthropic
    ``redacted_thinking.data``) are opaque provider strings kept exactly as received.
    """

    text: str | None = None
    kind: ReasoningKind = ReasoningKind.THINKING
    summary: tuple[str, ...] = ()
    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None
    origin: Origin | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if type(self.kind) is not ReasoningKind:
            _force(self, "kind", ReasoningKind(self.kind))
        if type(self.summary) is not tuple:
            _force(self, "summary", tuple(self.summary))
        _check_raw(self.extra, "Reasoning", "extra")


class ToolCall(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """A tool call requested by the assistant.

    ``arguments`` is the exact text the provider sent, which may not be valid JSON.
    """

    id: str
    name: str
    arguments: str = ""
    item_id: str | None = None
    signature: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        _check_raw(self.extra, "ToolCall", "extra")


class Message(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """One conversation message, exactly as the provider and the framework gave it.

    ``content`` keeps its form: ``None``, a string, or an ordered tuple of parts.
    ``reasoning`` holds the reasoning blocks of an assistant message in provider order.
    ``is_anchored`` and ``truncation_marker`` are bookkeeping of the framework's memory
    and are not part of the checkpoint digest.
    """

    role: Role
    content: str | tuple[ContentPart, ...] | None = None
    reasoning: tuple[Reasoning, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    name: str | None = None
    item_id: str | None = None
    origin: Origin | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    is_anchored: bool = False
    truncation_marker: str | None = None

    def __post_init__(self) -> None:
        # Runs on every decoded message too, so the common, already-typed case is one test.
        if (
            type(self.role) is Role
            and type(self.reasoning) is tuple
            and type(self.tool_calls) is tuple
            and type(self.content) is not list  # type: ignore[comparison-overlap]
            and self.extra is msgspec.UNSET
        ):
            return
        self._normalize()

    def _normalize(self) -> None:
        # Constructors do not convert types; keep what a caller hands over immutable and
        # typed, so that equality and encoding do not depend on list-or-tuple accidents.
        if type(self.role) is not Role:
            _force(self, "role", Role(self.role))
        content: object = self.content
        if isinstance(content, list):
            _force(self, "content", tuple(content))
        if type(self.reasoning) is not tuple:
            _force(self, "reasoning", tuple(self.reasoning))
        if type(self.tool_calls) is not tuple:
            _force(self, "tool_calls", tuple(self.tool_calls))
        _check_raw(self.extra, "Message", "extra")

    def text(self) -> str:
        """The concatenated text of the content (media and opaque parts left out)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))
