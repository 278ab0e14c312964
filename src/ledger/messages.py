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

from ledger.validation import Checked, InvalidFieldError, check_json_value

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


def raw_json(value: Any) -> msgspec.Raw:
    """Wrap a JSON-compatible value as verbatim raw JSON (deterministic key order).

    Use it to fill ``extra`` and ``OpaquePart.data`` from a provider's dict. NaN and infinities
    are refused (JSON has none: they would come back as ``null``), and so is text with a lone
    surrogate.
    """
    check_json_value(value, "raw_json(value)")
    try:
        return msgspec.Raw(_canonical.encode(value))
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(
            "raw_json(value)", value, "text that UTF-8 can carry", f"{exc.reason} at {exc.start}"
        ) from None


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


class Value(
    msgspec.Struct,
    metaclass=Checked,
    forbid_unknown_fields=True,
    frozen=True,
    gc=False,
    kw_only=True,
    omit_defaults=True,
):
    """The base of the immutable value types: checked when constructed (ADR 0017), unknown
    fields reported when decoded (ADR 0018), without the cycle collector (they hold only
    strings, numbers, verbatim JSON and tuples of other values). Hashable, except a value that
    holds verbatim JSON (an ``extra``, an opaque part's ``data``): ``msgspec.Raw`` has no
    hash."""


class Origin(Value, frozen=True, kw_only=True):
    """Where a provider item came from, so it is only ever sent back there."""

    provider: str | None = None
    api: str | None = None
    model: str | None = None
    endpoint: str | None = None


class TextPart(Value, frozen=True, kw_only=True, tag="text"):
    """A text part of a message's content (``signature``: Gemini's thought signature).

    ``extra`` keeps the part's provider fields with no home here, verbatim (citations,
    annotations, cache control).
    """

    text: str
    signature: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class MediaPart(Value, frozen=True, kw_only=True, tag="media"):
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
        # Also on decode: a part with both or neither is not a part this library wrote.
        if (self.url is None) == (self.data is None):
            raise ValueError("MediaPart needs exactly one of url= or data= (base64 text)")


class OpaquePart(Value, frozen=True, kw_only=True, tag="opaque"):
    """A provider content item with no home here, kept verbatim as raw JSON."""

    data: msgspec.Raw
    provider: str | None = None


ContentPart = TextPart | MediaPart | OpaquePart


class Reasoning(Value, frozen=True, kw_only=True):
    """One reasoning ("thinking") block of an assistant message.

    ``text=""`` and ``text=None`` are different values and stay different. ``signature``
    (Anthropic, Gemini) and ``encrypted`` (OpenAI ``encrypted_content``, Anthropic
    ``redacted_thinking.data``) are opaque provider strings kept exactly as received.

    ``placeholder`` (format 2) holds, verbatim, a value that stood where a signature or an
    encrypted payload belongs but is known not to be one (a publisher's
    ``[REDACTED_SIGNATURE]``): it is kept out of ``signature`` and ``encrypted`` so that no
    adapter ever sends it back as if it were real (ADR 0126).
    """

    text: str | None = None
    kind: ReasoningKind = ReasoningKind.THINKING
    summary: tuple[str, ...] = ()
    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None
    origin: Origin | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    placeholder: str | None = None


class ToolCall(Value, frozen=True, kw_only=True):
    """A tool call requested by the assistant.

    ``arguments`` is the exact text the provider sent, which may not be valid JSON.
    """

    id: str
    name: str
    arguments: str = ""
    item_id: str | None = None
    signature: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class Message(Value, frozen=True, kw_only=True):
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

    def text(self) -> str:
        """The concatenated text of the content (media and opaque parts left out)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))
