"""The JSON Schema of the rollout format, generated from the record types.

The committed golden copy lives at ``schema/rollout-v<N>.schema.json``; regenerate it with
``make schema`` after changing a record type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ledger.records import FORMAT_VERSION, Record

__all__ = ["golden_schema_path", "json_schema", "schema_bytes", "write_golden_schema"]

_SCHEMA_ID = f"https://rollout-ledger.invalid/schema/rollout-v{FORMAT_VERSION}.schema.json"


def json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of one rollout line, for the current format version."""
    body = _tolerant(msgspec.json.schema(Record))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": _SCHEMA_ID,
        "title": f"rollout line, format version {FORMAT_VERSION}",
        "description": (
            "One line of a rollout: the append-only JSONL ledger of one LLM agent session. "
            "Readers must tolerate unknown record types and unknown fields."
        ),
        "x-format-version": FORMAT_VERSION,
        **body,
    }


def _tolerant(node: Any) -> Any:
    # The types forbid unknown fields so that a reader notices and reports them (ADR 0018);
    # the format itself allows them, so the schema does not say additionalProperties: false.
    if isinstance(node, dict):
        return {
            k: _tolerant(v)
            for k, v in node.items()
            if not (k == "additionalProperties" and v is False)
        }
    if isinstance(node, list):
        return [_tolerant(v) for v in node]
    return node


def schema_bytes() -> bytes:
    """The schema as the bytes of the golden file: sorted keys, two-space indent, final newline."""
    return msgspec.json.format(msgspec.json.encode(json_schema(), order="sorted"), indent=2) + b"\n"


def golden_schema_path(root: Path) -> Path:
    """Where the golden schema of the current format version lives under a source checkout."""
    return root / "schema" / f"rollout-v{FORMAT_VERSION}.schema.json"


def write_golden_schema(root: Path) -> Path:
    """Write the golden schema file under ``root`` (a source checkout) and return its path."""
    path = golden_schema_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(schema_bytes())
    return path
