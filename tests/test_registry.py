"""The registry of record types: every list of record types derives from it (ADR 0019).

Each test names what to update when a record type is registered in
``ledger.records.RECORD_TYPES`` and one of the places that must know it was left out.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ledger
import strategies as s
from ledger import DegradationKind, decode_record, json_schema
from ledger.codec import RecordDecodeError
from ledger.records import RECORD_TAGS, RECORD_TYPES, Record, UnknownRecord, record_tag
from ledger.reducer import fold

ROOT = Path(__file__).resolve().parents[1]
NAMES = [t.__name__ for t in RECORD_TYPES]


def test_the_union_is_the_registry() -> None:
    """`Record` (what the decoder and mypy see) lists exactly the registered types, in order."""
    assert typing.get_args(Record) == RECORD_TYPES, (
        "ledger.records: list the new type in both RECORD_TYPES and the Record union"
    )


def test_tags_are_unique_strings() -> None:
    """Every registered type has its own wire tag, and RECORD_TAGS follows the registry."""
    assert tuple(record_tag(t) for t in RECORD_TYPES) == RECORD_TAGS
    assert len(set(RECORD_TAGS)) == len(RECORD_TAGS)
    assert all(re.fullmatch(r"[a-z][a-z_]*", tag) for tag in RECORD_TAGS)


@pytest.mark.parametrize("tag", RECORD_TAGS)
def test_the_codec_knows_every_tag(tag: str) -> None:
    """A registered tag is never taken for a record of unknown type (the codec's tag set)."""
    line = f'{{"type":"{tag}","seq":1,"ts":"2026-01-01T00:00:00Z"}}'
    try:
        decoded: object = decode_record(line)
    except RecordDecodeError as exc:
        decoded = str(exc)
    if isinstance(decoded, str):
        assert "wrong shape" in decoded, f"ledger.codec does not know the tag {tag!r}: {decoded}"
    assert not isinstance(decoded, UnknownRecord), f"ledger.codec does not know {tag!r}"


def test_every_type_has_a_strategy() -> None:
    """tests/strategies.py draws every registered type (RECORD_STRATEGIES)."""
    missing = [t.__name__ for t in RECORD_TYPES if t not in s.RECORD_STRATEGIES]
    assert missing == [], f"add strategies for {missing} to RECORD_STRATEGIES (tests/strategies.py)"


def test_every_type_is_checked_at_the_door() -> None:
    """The boundary property (ADR 0017) covers every registered type (VALID_FIELDS)."""
    missing = [t.__name__ for t in RECORD_TYPES if t not in s.VALID_FIELDS]
    assert missing == [], f"add {missing} to VALID_FIELDS in tests/strategies.py"


def test_every_type_is_exported() -> None:
    """`ledger` exports every registered type by its class name."""
    missing = [n for n in NAMES if n not in ledger.__all__ or not hasattr(ledger, n)]
    assert missing == [], f"import {missing} in src/ledger/__init__.py and list them in __all__"


def test_the_schema_has_every_tag() -> None:
    """The JSON Schema's discriminator maps exactly the registered tags."""
    mapping = json_schema()["discriminator"]["mapping"]
    assert set(mapping) == set(RECORD_TAGS), "run `make schema` and commit the golden file"


def test_the_format_page_lists_every_type() -> None:
    """docs/format.md's table of records has one row per registered type, in registry order."""
    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_]+)` \| `([A-Za-z]+)` \|", text, flags=re.MULTILINE)
    expected = list(zip(RECORD_TAGS, NAMES, strict=True))
    assert rows == expected, (
        "docs/format.md: the records table must have one row `| `tag` | `Class` | ... |` per "
        f"type of ledger.records.RECORD_TYPES, in order; expected {expected}"
    )


@given(data=st.data())
def test_the_reducer_handles_every_type(data: st.DataObject) -> None:
    """Folding a record of any registered type never reports it as of unknown type."""
    for cls in RECORD_TYPES:
        record = data.draw(s.RECORD_STRATEGIES[cls], label=cls.__name__)
        state = fold([record])
        unknown = [d for d in state.degraded if d.kind is DegradationKind.UNKNOWN_RECORD]
        assert unknown == [], f"ledger.reducer does not handle {cls.__name__}"


@given(r=s.records)
def test_records_draws_from_the_registry(r: Record) -> None:
    """The `records` strategy draws only registered types."""
    assert type(r) in RECORD_TYPES
