"""The listing from the index builds, row for row, the entries the listing's one set of rules
builds from a head and stop facts; the shortcut for the usual file decides as the full rules do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import example, given

from ledger.codec import RecordDecodeError, decode_record
from ledger.records import AgentCheckpoint, Terminal
from replay._location import ObjectURL
from replay.fleet._index import IndexRow, index_entries
from replay.session_entry import _entry, _parse_head, entry_from_parts
from replay.stop import StopFacts
from strategies import index_rows, listing_files

_META = (
    '{"type":"session_meta","seq":1,"ts":"2026-12-02T16:22:05Z","format_version":2,'
    '"session_id":"s1","started_at":"2026-12-02T16:22:05.250Z","parent_session_id":"p"}'
)


def _record(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return decode_record(text.encode())
    except RecordDecodeError:
        return None


def _stop_as_stored(row: IndexRow) -> StopFacts:
    """The stop facts a row's columns say, field by field (the index's reading before it was
    made fast, kept here as the reference)."""
    terminal = _record(row.stop_terminal)
    checkpoint = _record(row.stop_checkpoint)
    return StopFacts(
        found=bool(row.stop_found),
        kind=terminal.kind if isinstance(terminal, Terminal) else None,
        stop_kind=terminal.stop_kind if isinstance(terminal, Terminal) else None,
        reason=terminal.reason if isinstance(terminal, Terminal) else "",
        checkpoint=checkpoint if isinstance(checkpoint, AgentCheckpoint) else None,
        terminal=terminal if isinstance(terminal, Terminal) else None,
        killed=bool(row.killed),
        earlier_terminal=earlier
        if isinstance(earlier := _record(row.stop_earlier_terminal), Terminal)
        else None,
        records_after=row.stop_records_after,
        damaged_lines=row.stop_damaged_lines,
        bytes_scanned=row.stop_bytes_scanned,
        exhausted=bool(row.stop_exhausted),
    )


@given(named=index_rows())
def test_an_index_row_gives_the_entry_its_head_and_stop_records_give(
    named: tuple[str, tuple[Any, ...]],
) -> None:
    """Each entry from index rows equals entry_from_parts of the row's head and stop facts."""
    name, values = named
    row = IndexRow(*values)
    url = ObjectURL(f"s3://{row.path}")
    assert url.name == name
    expected = entry_from_parts(
        url, size=row.size, head=row.head.encode(), stop=_stop_as_stored(row)
    )
    assert index_entries([(url, row)]) == [expected]
    assert row.stop == expected.stop
    assert row.entry(url) == expected


@given(file=listing_files(), stop=index_rows())
@example(file=("2026-12-02_16-22-05_s1.jsonl", _META + "\n"), stop=("", (None,) * 13))
@example(file=("2026-12-02_16-22-05_s1.jsonl", _META), stop=("", (None,) * 13))
def test_the_usual_file_is_decided_as_the_full_rules_decide_it(
    file: tuple[str, str], stop: tuple[str, tuple[Any, ...]]
) -> None:
    """entry_from_parts, shortcut and all, equals the full rules applied to the parsed head."""
    name, head = file
    facts = _stop_as_stored(IndexRow(*stop[1])) if stop[1][0] is not None else StopFacts(True)
    data = head.encode()
    meta, why = _parse_head(data)
    for path in (Path("root", name), ObjectURL(f"s3://bucket/{name}")):
        got = entry_from_parts(path, size=len(data), head=data, stop=facts)
        assert got == _entry(path, len(data), facts, meta, why, None)
