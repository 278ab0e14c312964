"""Records with fields this reader does not know: kept where they can be, reported either way.

The record types forbid unknown fields, so the fast decode of a line that has one fails and
the line is decoded again here (ADR 0018): the line is parsed as plain JSON, each field no type
of this library knows is moved into the ``extra`` of the struct that holds it (when that type
has one, byte for byte as JSON allows) or dropped, and the cleaned line is decoded strictly.
The caller gets the record and the paths of the fields it met (``$.message.foo``), so that the
reader reports them; nothing is dropped silently.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import inspect as mi

from ledger.records import RECORD_TYPES

__all__ = ["UnknownFields", "strip_unknown_fields"]

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


def _struct_info(t: type) -> mi.StructType:
    info = mi.type_info(t)
    assert isinstance(info, mi.StructType)
    return info


_BY_TAG: Final = {info.tag: info for info in map(_struct_info, RECORD_TYPES)}


class UnknownFields(msgspec.Struct, frozen=True):
    """Fields a line held that this reader does not know: where they were kept, where lost."""

    kept: tuple[str, ...]
    dropped: tuple[str, ...]

    def describe(self) -> str:
        """A sentence for the degradation that reports them."""
        parts = []
        if self.kept:
            parts.append(f"kept verbatim in extra: {', '.join(self.kept)}")
        if self.dropped:
            parts.append(f"dropped (no place for them): {', '.join(self.dropped)}")
        return (
            "fields unknown to this reader (written by a newer version?); "
            + "; ".join(parts)
            + "; the record is restored without them"
        )


def strip_unknown_fields(data: bytes | str) -> tuple[bytes, UnknownFields] | None:
    """The line re-encoded with only the fields the record types know, and what was moved or
    dropped; ``None`` when it is not an object of a known record type or has no unknown field."""
    try:
        obj = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    info = _BY_TAG.get(obj.get("type"))
    if info is None:
        return None
    kept: list[str] = []
    dropped: list[str] = []
    cleaned = _clean_struct(obj, info, "$", kept, dropped)
    if not kept and not dropped:
        return None
    return _encoder.encode(cleaned), UnknownFields(kept=tuple(kept), dropped=tuple(dropped))


def _clean_struct(
    obj: dict[str, Any], info: mi.StructType, path: str, kept: list[str], dropped: list[str]
) -> dict[str, Any]:
    known = {f.encode_name: f for f in info.fields}
    out: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for key, value in obj.items():
        if key == info.tag_field:
            out[key] = value
            continue
        field = known.get(key)
        if field is None:
            unknown[key] = value
            continue
        out[key] = _clean_value(value, field.type, f"{path}.{key}", kept, dropped)
    if unknown:
        home = out.get("extra") if "extra" in known else None
        if "extra" in known and (home is None or isinstance(home, dict)):
            merged = dict(home or {})
            for key, value in unknown.items():
                if key in merged:
                    dropped.append(f"{path}.{key}")
                else:
                    merged[key] = value
                    kept.append(f"{path}.{key}")
            out["extra"] = merged
        else:
            dropped.extend(f"{path}.{key}" for key in unknown)
    return out


def _clean_value(value: Any, tp: mi.Type, path: str, kept: list[str], dropped: list[str]) -> Any:
    if isinstance(tp, mi.StructType) and isinstance(value, dict):
        return _clean_struct(value, tp, path, kept, dropped)
    if isinstance(tp, mi.UnionType):
        structs = [t for t in tp.types if isinstance(t, mi.StructType)]
        if structs and isinstance(value, dict):
            chosen = next(
                (t for t in structs if t.tag_field is not None and value.get(t.tag_field) == t.tag),
                structs[0] if len(structs) == 1 else None,
            )
            if chosen is not None:
                return _clean_struct(value, chosen, path, kept, dropped)
        items = [t for t in tp.types if isinstance(t, mi.VarTupleType | mi.ListType)]
        if items and isinstance(value, list):
            return _clean_value(value, items[0], path, kept, dropped)
        return value
    if isinstance(tp, mi.VarTupleType | mi.ListType) and isinstance(value, list):
        return [
            _clean_value(v, tp.item_type, f"{path}[{i}]", kept, dropped)
            for i, v in enumerate(value)
        ]
    return value
