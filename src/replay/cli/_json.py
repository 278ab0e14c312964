"""The shapes of the `rollout` command's ``--json`` output (ADR 0040).

Every ``--json`` output is one JSON object on one line of stdout, keys sorted, with a
``"rollout_json"`` version key, so that scripts can rely on it and fields can be added without
breaking them. Messages keep the
record format's own JSON (the ``message`` field of a ``message`` record, reasoning inline), so a
consumer can decode them with the same schema.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ledger.damage import Degradation
from ledger.messages import Message
from replay.cli._render import json_safe
from replay.display import in_utc

if TYPE_CHECKING:
    from ledger.lineage import Inherited
    from ledger.records import ForkOrigin
    from ledger.reducer import UsageTotals
    from replay.eligibility import Eligibility
    from replay.stop import StopFacts

__all__ = [
    "JSON_VERSION",
    "degradation_json",
    "dump",
    "eligibility_json",
    "fork_json",
    "inherited_json",
    "messages_json",
    "stop_json",
    "time_json",
    "usage_json",
]

JSON_VERSION: Final = 1
"""Bumped only when a field changes meaning or disappears; new fields do not bump it."""


def _enc_hook(value: Any) -> Any:
    # An object's URL (replay.ObjectURL) is a str subclass, which msgspec leaves to the hook.
    if isinstance(value, str):
        return str(value)
    raise NotImplementedError(f"cannot encode {type(value).__name__} as JSON")


_encoder = msgspec.json.Encoder(order="deterministic", enc_hook=_enc_hook)


def time_json(when: datetime | None) -> str | None:
    """A time as ISO 8601 UTC with a ``Z`` (with its own offset when UTC cannot hold it), or
    ``None``."""
    if when is None:
        return None
    return in_utc(when).isoformat().replace("+00:00", "Z")


def degradation_json(d: Degradation) -> dict[str, Any]:
    """One degradation: its kind, the sentence, and where (line, seq; ``None`` when unknown)."""
    return {"kind": str(d.kind), "detail": d.detail, "line": d.line, "seq": d.seq}


def stop_json(facts: StopFacts) -> dict[str, Any]:
    """Stop facts: found or not, the stop kind as written, the reason, and the checkpoint."""
    cp = facts.checkpoint
    return {
        "found": facts.found,
        "kind": facts.stop_kind,
        "known_kind": facts.kind is not None,
        "reason": facts.reason,
        "killed": facts.killed,
        "description": facts.describe(),
        "checkpoint": None
        if cp is None
        else {"seq": cp.seq, "digest": cp.digest, "message_count": cp.message_count},
    }


def eligibility_json(e: Eligibility) -> dict[str, Any]:
    """A resume decision: replayable or not, its tier and its reason."""
    return {"replayable": e.replayable, "tier": str(e.tier), "reason": e.reason}


def fork_json(origin: ForkOrigin | None) -> dict[str, Any] | None:
    """A fork's origin (ADR 0130), or ``None`` for a session that is not a fork."""
    if origin is None:
        return None
    return {
        "session_id": origin.session_id,
        "seq": origin.seq,
        "digest": origin.digest,
        "message_count": origin.message_count,
        "path": origin.path,
        "copied": origin.copied,
    }


def inherited_json(inherited: Inherited | None) -> dict[str, Any] | None:
    """What a fork inherits: its messages, the sources read (nearest first), verified or not."""
    if inherited is None:
        return None
    return {
        "messages": len(inherited.messages),
        "verified": inherited.verified,
        "sources": [
            {
                "session_id": link.session_id,
                "path": None if link.path is None else os.path.abspath(link.path),
                "seq": link.seq,
                "messages": link.messages,
                "verified": link.verified,
                "moved": link.moved,
            }
            for link in inherited.links
        ],
    }


def usage_json(usage: UsageTotals) -> dict[str, int]:
    """Token usage totals (ADR 0121), each response counted once."""
    return {
        "responses": usage.responses,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def messages_json(messages: tuple[Message, ...]) -> list[msgspec.Raw]:
    """Messages in the record format's JSON, byte for byte as the codec encodes them."""
    return [msgspec.Raw(_encoder.encode(m)) for m in messages]


def dump(document: dict[str, Any]) -> str:
    """The document as one line of JSON (keys sorted), with the version key added.

    Text that UTF-8 cannot carry (a file name's undecodable bytes, kept by Python as lone
    surrogates) is written with its bytes as ``\\xNN`` rather than failing the whole output.
    """
    whole = {"rollout_json": JSON_VERSION, **document}
    try:
        data = _encoder.encode(whole)
    except UnicodeEncodeError:
        data = _encoder.encode(_unicode_only(whole))
    return json_safe(data.decode())


def _unicode_only(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode(
                "utf-8", "surrogateescape" if _escaped(value) else "backslashreplace"
            ).decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, dict):
        return {_unicode_only(k): _unicode_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unicode_only(v) for v in value]
    return value


def _escaped(text: str) -> bool:
    # Undecodable bytes of a file name come back as U+DC80..U+DCFF only (surrogateescape).
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)
