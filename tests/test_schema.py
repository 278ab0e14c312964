"""The JSON Schema: generated from the types, equal to the committed golden file, and true."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given

import strategies as s
from ledger import Record, encode_record, json_schema
from ledger.records import FORMAT_VERSION, RECORD_TAGS
from ledger.schema import golden_schema_path, schema_bytes

ROOT = Path(__file__).resolve().parents[1]
TAGS = set(RECORD_TAGS)


def test_golden_schema_is_up_to_date() -> None:
    """The committed golden schema equals the schema generated from the types, byte for byte."""
    golden = golden_schema_path(ROOT)
    assert golden == ROOT / "schema" / f"rollout-v{FORMAT_VERSION}.schema.json"
    assert golden.exists(), f"{golden} is missing: run `make schema` and commit the file"
    assert golden.read_bytes() == schema_bytes(), (
        f"{golden.relative_to(ROOT)} differs from the record types: "
        "run `make schema` and commit the regenerated file"
    )


def test_schema_bytes_are_json_schema() -> None:
    """The golden bytes decode to exactly `json_schema()`, and end with one newline."""
    data = schema_bytes()
    assert data.endswith(b"}\n")
    # Tuples in the generated dict (defaults such as `()`) are arrays in JSON.
    assert msgspec.json.decode(data) == msgspec.json.decode(msgspec.json.encode(json_schema()))


def test_schema_names_its_version_and_dialect() -> None:
    """The schema declares the 2020-12 dialect, an id and the format version it describes."""
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["x-format-version"] == FORMAT_VERSION
    assert f"rollout-v{FORMAT_VERSION}" in schema["$id"]


def test_all_tags_are_in_the_discriminator() -> None:
    """The `type` discriminator maps exactly the registered record tags, each to a definition."""
    schema = json_schema()
    disc = schema["discriminator"]
    assert disc["propertyName"] == "type"
    assert set(disc["mapping"]) == TAGS
    for tag, ref in disc["mapping"].items():
        definition = _resolve(schema, ref)
        assert definition["properties"]["type"] == {"enum": [tag]}
        assert {"type", "seq", "ts"} <= set(definition["required"])
    assert len(schema["anyOf"]) == len(TAGS)


def _resolve(schema: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/$defs/")
    definition: dict[str, Any] = schema["$defs"][ref.removeprefix("#/$defs/")]
    return definition


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _errors(schema: dict[str, Any], node: dict[str, Any], value: Any, at: str) -> list[str]:
    """The subset of JSON Schema the generated schema uses, checked strictly (no extra keys)."""
    if "$ref" in node:
        return _errors(schema, _resolve(schema, node["$ref"]), value, at)
    if "anyOf" in node:
        if any(not _errors(schema, alt, value, at) for alt in node["anyOf"]):
            return []
        return [f"{at}: matches none of anyOf"]
    out: list[str] = []
    if "enum" in node and value not in node["enum"]:
        out.append(f"{at}: {value!r} not in {node['enum']}")
    if "type" in node:
        kinds = _JSON_TYPES[node["type"]]
        if not isinstance(value, kinds) or (node["type"] != "boolean" and type(value) is bool):
            return [f"{at}: expected {node['type']}, got {type(value).__name__}"]
    if isinstance(value, dict) and "properties" in node:
        props = node["properties"]
        out += [f"{at}: missing {k}" for k in node.get("required", ()) if k not in value]
        out += [f"{at}: undeclared {k}" for k in value if k not in props]
        for k, v in value.items():
            if k in props:
                out += _errors(schema, props[k], v, f"{at}.{k}")
    if isinstance(value, list) and "items" in node:
        for i, v in enumerate(value):
            out += _errors(schema, node["items"], v, f"{at}[{i}]")
    return out


@given(r=s.records)
def test_every_record_validates_against_the_schema(r: Record) -> None:
    """Every line the encoder writes satisfies the schema: its tag, required and declared fields."""
    schema = json_schema()
    obj = msgspec.json.decode(encode_record(r))
    assert obj["type"] in schema["discriminator"]["mapping"]
    assert _errors(schema, schema, obj, "$") == []


def test_the_checker_is_not_vacuous() -> None:
    """The schema check used above rejects a wrong tag, a missing field and an undeclared one."""
    schema = json_schema()
    good = {"type": "terminal", "seq": 1, "ts": "2026-01-01T00:00:00Z"}
    assert _errors(schema, schema, good, "$") == []
    assert _errors(schema, schema, {**good, "type": "nope"}, "$")
    assert _errors(schema, schema, {"type": "terminal", "seq": 1}, "$")
    assert _errors(schema, schema, {**good, "surprise": 1}, "$")
    assert _errors(schema, schema, {**good, "seq": "1"}, "$")
