"""Times at the ends of the calendar, which another writer may give and the reader accepts:
a session started in year 1 east of Greenwich, or late in year 9999 west of it, has no UTC
time. Listing, showing, indexing and querying such a session work, and say its time as given;
one such file never stops the command or the index for the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from replay.cli import cli

_STARTS = {
    "y1": "0001-01-01T00:00:00+02:00",
    "y9": "9999-12-31T23:30:00-02:00",
    "ok": "2026-12-02T15:00:00+05:30",
}


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="rollout")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for sid, started in _STARTS.items():
        (tmp_path / f"2026-12-02_09-30-00_{sid}.jsonl").write_text(
            '{"type":"session_meta","seq":1,"ts":"2026-12-02T09:30:00Z","format_version":2,'
            f'"session_id":"{sid}","started_at":"{started}"}}\n'
        )
    return tmp_path


def test_ls_shows_each_time_as_given_where_utc_has_none(root: Path) -> None:
    table = _run("--root", str(root), "ls")
    assert table.exit_code == 0, table.output
    assert "0001-01-01 00:00:00+02:00" in table.output
    assert "9999-12-31 23:30:00-02:00" in table.output
    assert "2026-12-02 09:30:00 " in table.output  # the usual time, in UTC
    doc = _run("--root", str(root), "ls", "--json")
    assert doc.exit_code == 0, doc.output
    started = {s["session_id"]: s["started_at"] for s in json.loads(doc.output)["sessions"]}
    assert started == {
        "y1": "0001-01-01T00:00:00+02:00",
        "y9": "9999-12-31T23:30:00-02:00",
        "ok": "2026-12-02T09:30:00Z",
    }


def test_the_index_takes_them_and_lists_them_exactly(root: Path) -> None:
    pytest.importorskip("duckdb")
    from replay.fleet import list_fleet

    url = root.as_uri()
    before = list_fleet(url)
    assert before.from_index == 0
    indexed = _run("index", url, "--scheduler", "none", "--json")
    assert indexed.exit_code == 0, indexed.output
    assert json.loads(indexed.output)["indexed"] == 3
    after = list_fleet(url)
    assert after.from_index == 3
    assert sorted(map(repr, after.entries)) == sorted(map(repr, before.entries))
    listed = _run("--root", url, "ls")
    assert listed.exit_code == 0, listed.output
    assert "3 session(s) from it" in listed.output
    assert "0001-01-01 00:00:00+02:00" in listed.output
    days = _run(
        "--root", url, "sql", "--json",
        "SELECT session_id, CAST(day AS VARCHAR) FROM sessions ORDER BY 1",
    )  # fmt: skip
    assert days.exit_code == 0, days.output
    assert json.loads(days.output)["rows"] == [
        ["ok", "2026-12-02"],
        ["y1", "0001-01-01"],
        ["y9", "9999-12-31"],
    ]


def test_the_listing_orders_times_a_microsecond_apart_far_ahead(tmp_path: Path) -> None:
    """Two sessions of the year 9000 a microsecond apart list in time order, not by name
    (a float timestamp can no longer tell them apart)."""
    from replay import list_sessions

    for sid, started in (
        ("a-later", "9000-01-01T00:00:00.000001Z"),
        ("b-earlier", "9000-01-01T00:00:00Z"),
    ):
        (tmp_path / f"9000-01-01_00-00-00_{sid}.jsonl").write_text(
            '{"type":"session_meta","seq":1,"ts":"2026-12-02T09:30:00Z","format_version":2,'
            f'"session_id":"{sid}","started_at":"{started}"}}\n'
        )
    assert [e.session_id for e in list_sessions(tmp_path)] == ["b-earlier", "a-later"]
