"""Duals of the fleet: the ship layout and the naming rule, option text and values, the index
and the listing it stands for, and the records view and the records it reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replay
from ledger import Message, Record, encode_line, parse_rollout_filename, rollout_filename
from replay.cli._storage import parse_storage_option
from replay.fleet import ObjectURL, build_index, fleet_sql, list_fleet
from replay.fleet._ship import remote_key
from replay.fleet._sql import root_url
from replay.sessions import SessionEntry
from rollout_files import START, RolloutBuilder, conversation
from strategies import (
    agent_names,
    aware_datetimes,
    fleet_shapes,
    ident,
    message_records,
    session_ids,
    session_metas,
    storage_option_values,
    terminals,
    with_seqs,
)

# Each example writes files and runs DuckDB: a few of them cover the shapes (the strategies
# are small), and the suite stays within CI's time. The temporary directories come from the
# session-wide factory, one per example.
_few = settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])


@given(started=aware_datetimes, sid=session_ids, agent=st.none() | agent_names)
def test_the_ship_layout_keeps_the_naming_rules_mirror(
    started: datetime, sid: str, agent: str | None
) -> None:
    """An object shipped under URL/YYYY-MM-DD/<name> parses back to the file name's identity."""
    name = rollout_filename(started, sid, agent)
    key = remote_key(name)
    url = ObjectURL(f"s3://bucket/prefix/{key}")
    assert url.name == name
    assert parse_rollout_filename(url.name) == parse_rollout_filename(name)
    assert key.split("/")[0] == name[:10]


@given(key=ident.filter(str.isidentifier), value=storage_option_values)
def test_storage_options_parse_back_to_their_values(key: str, value: Any) -> None:
    """KEY=VALUE gives the value: its JSON when it is one, else the text as it was typed."""
    text = value if isinstance(value, str) else json.dumps(value)
    assert parse_storage_option(f"{key}={text}") == (key, value)


def _build(directory: Path, shapes: list[dict[str, Any]]) -> None:
    for i, shape in enumerate(shapes):
        b = RolloutBuilder(
            directory,
            session_id=f"s{i}",
            agent_name="coder",
            started_at=START + timedelta(days=i % 2, minutes=i),
            parent_session_id="s0" if shape["child"] else None,
            delegation_id="call_0" if shape["child"] else None,
            meta=not shape["damaged_head"],
        )
        if shape["damaged_head"]:
            b.raw(b'{"type":"session_meta",\n')
        b.extend(conversation(shape["turns"], tag=str(i)))
        if shape["stop"] is not None:
            if shape["killed"]:
                b.checkpoint()
            else:
                b.stop(shape["stop"])
        if shape["resumed"]:
            b.add(Message(role="user", content="again"))
        b.write()


def _located_nowhere(e: SessionEntry) -> SessionEntry:
    return msgspec.structs.replace(e, path=Path(e.path.name))


@_few
@given(shapes=fleet_shapes)
def test_the_index_gives_back_the_listing_it_was_built_from(
    shapes: list[dict[str, Any]], tmp_path_factory: Any
) -> None:
    """Listing from the index equals listing the objects and listing the files, for any fleet."""
    root = tmp_path_factory.mktemp("fleet")
    _build(root, shapes)
    url = root_url(root)
    direct = list_fleet(url, use_index=False)
    report = build_index(url)
    assert report.indexed == len(shapes)
    indexed = list_fleet(url)
    assert (indexed.from_index, indexed.read) == (len(shapes), 0)
    assert indexed.entries == direct.entries
    local = replay.list_sessions(root)
    assert [_located_nowhere(e) for e in indexed.entries] == [_located_nowhere(e) for e in local]


_records = st.lists(st.one_of(message_records, terminals), max_size=6)


@_few
@given(meta=session_metas, body=_records)
def test_the_records_view_reads_every_record_as_written(
    meta: Record, body: list[Record], tmp_path_factory: Any
) -> None:
    """Type, sequence number, time, role and stop kind of every line come out of SQL as written."""
    records = with_seqs([meta, *body])
    root = tmp_path_factory.mktemp("records")
    (root / "a.jsonl").write_bytes(b"".join(encode_line(r) for r in records))
    with fleet_sql(root) as q:
        rows = q.query(
            "SELECT type, seq, ts, message.role, stop_kind FROM records ORDER BY seq"
        ).rows
    expected = [
        (
            type(r).__struct_config__.tag,
            r.seq,
            r.ts.astimezone(UTC),
            str(r.message.role) if hasattr(r, "message") else None,
            getattr(r, "stop_kind", None),
        )
        for r in records
    ]
    assert [(t, s, ts.astimezone(UTC), role, k) for t, s, ts, role, k in rows] == expected


@pytest.mark.parametrize("text", ["Infinity", "-Infinity", "NaN"])
def test_a_storage_option_that_python_reads_as_a_float_but_json_does_not_is_text(
    text: str,
) -> None:
    """`NaN` and `Infinity` are not JSON: the value is the text typed, not a float."""
    assert parse_storage_option(f"region={text}") == ("region", text)
