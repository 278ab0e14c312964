"""Faults found attacking the index's kept listing entries: each pinned where it was met."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import msgspec
import pytest

from ledger import StopKind
from replay.eligibility import Tier
from replay.fleet import build_index
from replay.fleet._listed import decode_listing
from replay.fleet._rows import COLUMNS
from replay.session_entry import SessionFlag
from review_fleet import odd_fleet
from rollout_files import RolloutBuilder, conversation
from test_fleet_index_listing import GOLDEN
from test_review_listing import _bump, _replace, _rows, _same, _varied


def test_a_text_nested_too_deeply_to_decode_leaves_the_index_in_use(tmp_path: Path) -> None:
    """A kept text whose verbatim ``extra`` nests deeper than the decoder goes is a text that
    does not decode, like any other: the listing still comes from the index."""
    url = _varied(tmp_path)
    deep = "'\"extra\":' || repeat('[', 100000) || repeat(']', 100000) || ',\"format_version\"'"
    _replace(
        url,
        listing="CASE WHEN path LIKE '%aa-small%' "
        f"THEN replace(listing, '\"format_version\"', {deep}) ELSE listing END",
    )
    listed = _same(url)
    assert (listed.from_index, listed.read) == (7, 0)
    assert all(r.listed is None for r in _rows(url).values())


def test_stop_records_written_with_an_offset_are_indexed_and_listed_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints and terminals whose times carry an offset (another writer's files) are
    indexed, not refused, and list from the kept entry and from the columns as from the file."""
    url = _varied(tmp_path)
    meta = (
        '{"type":"session_meta","seq":1,"ts":"2026-12-02T09:30:00Z","format_version":2,'
        '"session_id":"off","started_at":"2026-12-02T15:00:00+05:30"}\n'
    )
    checkpoint = (
        '{"type":"agent_checkpoint","seq":2,"ts":"2026-12-02T11:30:00+02:00","digest":"sha256:'
        + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        + '","message_count":0}\n'
    )
    terminal = (
        '{{"type":"terminal","seq":{},"ts":"2026-12-02T04:30:0{}-05:00","event":"stop",'
        '"stop_kind":"{}","reason":"r"}}\n'
    )
    data = meta + checkpoint + terminal.format(3, 1, "paused") + terminal.format(4, 2, "failed")
    (tmp_path / "fleet" / "2026-12-02_09-30-00_off.jsonl").write_text(data)
    report = build_index(url)
    assert (report.indexed, report.errors) == (1, ())
    listed = _same(url)
    assert (listed.from_index, listed.read) == (8, 0)
    [entry] = [e for e in listed.entries if e.session_id == "off"]
    assert entry.stop.terminal is not None
    assert entry.stop.terminal.ts.utcoffset() == timedelta(hours=-5)
    _bump(monkeypatch, "entry-review")
    assert _same(url).from_index == 8


# NULL is a value of these (no such record), not a sign of damage: a NULL there is believed.
_MAY_BE_NULL = ("stop_checkpoint", "stop_terminal", "stop_earlier_terminal")


def test_a_null_in_any_column_never_breaks_the_listing_or_the_next_index_run(
    tmp_path: Path,
) -> None:
    """One session per index column, that column NULL in its row (among them a row without a
    path, and rows listed from their columns because another row's text is NULL): the listing
    equals the objects', and the index runs that follow settle instead of failing."""
    columns = [c for c in COLUMNS if c not in _MAY_BE_NULL]
    for i in range(len(columns)):
        session = RolloutBuilder(tmp_path / "fleet", session_id=f"n{i:02}")
        session.extend(conversation(1)).stop(StopKind.PAUSED).write()
    url = "file://" + str(tmp_path / "fleet")
    build_index(url)
    _replace(
        url,
        **{
            c: f"CASE WHEN path LIKE '%n{i:02}.jsonl' THEN NULL ELSE {c} END"
            for i, c in enumerate(columns)
        },
    )
    _same(url)
    build_index(url)
    assert build_index(url).indexed == 0
    assert _same(url).from_index == len(columns)


def test_the_pinned_listings_reach_every_rule_a_kept_entry_holds() -> None:
    """The listings that say when to bump the coding cover every tier, every stop kind (and a
    legacy and an unknown one), a kill with and without records after it, a resume after a
    terminal, an exhausted scan, a cut and an escaped name token, a fork, and every flag an
    indexed object can carry: a rule changed anywhere changes one of them."""
    listed = [decode_listing(c["listing"]) for c in json.loads(GOLDEN.read_text())["cases"]]
    names = [n for _, _, _, n, *_ in listed if n is not None]
    metas = [m for *_, m, _, _, _, _ in listed if m is not None]
    stops = [s for *_, s, _, _, _ in listed]
    eligibility = [e for *_, e, _, _ in listed]
    flags = {f for *_, fs, _ in listed for f in fs}
    assert {e.tier for e in eligibility} == set(Tier)
    kinds = {s.terminal.stop_kind for s in stops if s.terminal is not None}
    assert kinds > {*StopKind, None}
    killed = [s.records_after for s in stops if s.found and s.terminal is None]
    assert 0 in killed
    assert any(killed)
    assert any(s.earlier_terminal is not None for s in stops)
    assert any(s.exhausted and not s.found for s in stops)
    assert any(n.session_id is None for n in names)
    assert any(n.session_token != n.session_id and n.session_id for n in names)
    assert any(m.fork is not None and m.extra is not msgspec.UNSET for m in metas)
    assert flags >= {
        SessionFlag.NAME_UNPARSEABLE,
        SessionFlag.NAME_MISMATCH,
        SessionFlag.HEAD_DAMAGED,
        SessionFlag.CHILD_WITHOUT_COORDINATES,
    }


def test_a_head_that_is_not_utf8_is_never_rebuilt_from_its_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head column holds the first line with U+FFFD for each byte that is not UTF-8, which
    the rules would read as another head: listed from the columns (another coding), such a row
    is not believed and the object is read, while its kept entry is exact."""
    odd_fleet(tmp_path / "fleet")
    url = "file://" + str(tmp_path / "fleet")
    build_index(url)
    assert _same(url).from_index == 34
    _bump(monkeypatch, "entry-review")
    listed = _same(url)
    assert (listed.from_index, listed.read) == (33, 1)
