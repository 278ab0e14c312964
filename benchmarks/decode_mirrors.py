"""Variant (d) of the decoding comparison: attrs mirrors of the wire types, structured by cattrs
from ``json.loads`` output (``benchmarks/decode_choices.py``, ADR 0002)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import attrs
import cattrs
from cattrs.strategies import configure_tagged_union

__all__ = [
    "ATextPart",
    "AMessageRecord",
    "AReasoningRecord",
    "ARECORD",
    "cattrs_converter",
]


class ARole(StrEnum):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class AReasoningKind(StrEnum):
    THINKING = "thinking"
    REDACTED = "redacted"
    SUMMARY = "summary"
    ENCRYPTED = "encrypted"


@attrs.frozen
class AOrigin:
    provider: str | None = None
    api: str | None = None
    model: str | None = None
    endpoint: str | None = None


@attrs.frozen
class ATextPart:
    text: str
    signature: str | None = None


@attrs.frozen
class AMediaPart:
    media_type: str
    url: str | None = None
    data: str | None = None
    name: str | None = None


@attrs.frozen
class AOpaquePart:
    data: Any
    provider: str | None = None


AContentPart = ATextPart | AMediaPart | AOpaquePart


@attrs.frozen
class AReasoning:
    text: str | None = None
    kind: AReasoningKind = AReasoningKind.THINKING
    summary: tuple[str, ...] = ()
    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None
    origin: AOrigin | None = None
    extra: Any = None


@attrs.frozen
class AToolCall:
    id: str
    name: str
    arguments: str = ""
    item_id: str | None = None
    signature: str | None = None
    extra: Any = None


@attrs.frozen
class AMessage:
    role: ARole
    content: str | tuple[AContentPart, ...] | None = None
    reasoning: tuple[AReasoning, ...] = ()
    tool_calls: tuple[AToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    name: str | None = None
    item_id: str | None = None
    origin: AOrigin | None = None
    extra: Any = None
    is_anchored: bool = False
    truncation_marker: str | None = None


@attrs.frozen
class ASessionMeta:
    seq: int
    ts: datetime
    format_version: int
    session_id: str
    started_at: datetime
    agent_name: str | None = None
    parent_session_id: str | None = None
    delegation_id: str | None = None
    model: str | None = None
    provider: str | None = None
    cwd: str | None = None
    project: str | None = None
    extra: Any = None


@attrs.frozen
class AMessageRecord:
    seq: int
    ts: datetime
    message: AMessage


@attrs.frozen
class AReasoningRecord:
    seq: int
    ts: datetime
    reasoning: AReasoning


ARecord = ASessionMeta | AMessageRecord | AReasoningRecord
# cattrs takes the union as a runtime value; typed as Any so that its callers type-check.
ARECORD: Any = ARecord

_RECORD_TAGS = {
    ASessionMeta: "session_meta",
    AMessageRecord: "message",
    AReasoningRecord: "reasoning",
}
_PART_TAGS = {ATextPart: "text", AMediaPart: "media", AOpaquePart: "opaque"}


def cattrs_converter() -> cattrs.Converter:
    """A converter that reads the same lines as ``decode_record`` into the attrs mirrors."""
    c = cattrs.Converter(forbid_extra_keys=False)
    c.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
    c.register_structure_hook(Any, lambda v, _: v)
    configure_tagged_union(AContentPart, c, tag_generator=_PART_TAGS.__getitem__, tag_name="type")
    structure_parts = c.get_structure_hook(tuple[AContentPart, ...])

    def structure_content(value: Any, _: Any) -> str | tuple[AContentPart, ...] | None:
        if value is None or isinstance(value, str):
            return value
        return structure_parts(value, tuple[AContentPart, ...])  # type: ignore[no-any-return]

    c.register_structure_hook(str | tuple[AContentPart, ...] | None, structure_content)
    configure_tagged_union(ARECORD, c, tag_generator=_RECORD_TAGS.__getitem__, tag_name="type")
    return c
