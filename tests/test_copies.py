"""A copy of a value, deep or by pickling, is the value it was taken from: also a record read
from another writer's file, whose time has an offset a constructed record may not have."""

from __future__ import annotations

import copy
import pickle
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given

from ledger import Message
from ledger.codec import decode_record
from ledger.records import Record, SessionMeta
from ledger.validation import InvalidFieldError
from strategies import messages, records

# Times the reader accepts as written: with an offset, and at both ends of the calendar, where
# no UTC time exists for them.
_TIMES = (
    "2026-12-02T15:00:00+05:30",
    "0001-01-01T00:00:00+02:00",
    "9999-12-31T23:30:00-02:00",
)


def _copies(value: object) -> list[object]:
    return [copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))]  # noqa: S301 - our own bytes


@given(record=records)
def test_every_record_copies_and_pickles_as_itself(record: Record) -> None:
    for other in _copies(record):
        assert type(other) is type(record)
        assert other == record


@given(message=messages())
def test_every_message_copies_and_pickles_as_itself(message: Message) -> None:
    for other in _copies(message):
        assert other == message


@pytest.mark.parametrize("started", _TIMES)
def test_a_record_read_with_an_offset_copies_as_read(started: str) -> None:
    line = (
        '{"type":"session_meta","seq":1,"ts":"2026-12-02T09:30:00Z","format_version":2,'
        f'"session_id":"s","started_at":"{started}"}}'
    )
    meta = decode_record(line)
    assert isinstance(meta, SessionMeta)
    for other in _copies(meta):
        assert other == meta
        assert isinstance(other, SessionMeta)
        assert other.started_at.utcoffset() == meta.started_at.utcoffset()
        assert other.started_at.isoformat() == meta.started_at.isoformat()


def test_constructing_still_checks_the_time() -> None:
    """Copies skip the checks; calling the class does not."""
    with pytest.raises(InvalidFieldError, match="UTC"):
        SessionMeta(
            seq=1,
            ts=datetime.now(UTC),
            format_version=2,
            session_id="s",
            started_at=datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2))),
        )
