"""Times another writer gave with an offset, up to the ends of the calendar where UTC has none,
in every record of a session: every command lists, shows, verifies, searches, exports, forks,
ships and indexes such sessions, and none stops with an internal error."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner, Result
from hypothesis import given

from ledger import Event, Message, MetaUpdate, RolloutWriter, StopKind, ToolCall, Turn, Usage
from ledger.codec import decode_record, encode_lines
from ledger.naming import RolloutNameError, parse_rollout_filename, rollout_filename
from ledger.records import SessionMeta
from replay import list_sessions, read_replay
from replay.cli import cli
from replay.cli._errors import CliError
from replay.cli._json import time_json
from replay.cli._paths import parse_since
from replay.display import short_time
from replay.fleet._ship import remote_key
from strategies import calendar_times

# Every record of each session carries its time (``ts`` and ``started_at``): at both ends of
# the calendar where UTC has none, with the widest offsets and a fraction of a second, with an
# offset of a minute west, and an ordinary one.
TIMES = {
    "y1": "0001-01-01T00:00:00+02:00",
    "y9": "9999-12-31T23:30:00-02:00",
    "e1": "0001-01-01T00:00:00.123456+23:59",
    "e9": "9999-12-31T23:59:59.999999-23:59",
    "m1": "2026-12-02T15:00:00.500000-00:01",
    "ok": "2026-12-02T15:00:00+05:30",
}


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="rollout")


def _ok(result: Result) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "internal error" not in result.output, result.output
    assert result.exit_code == 0, result.output
    return result.output


def _session(directory: Path, sid: str, when: str) -> Path:
    """A paused session whose every record has the time ``when`` (the file another writer
    would leave), named as this library names the template it is made from."""
    epoch = datetime(2000, 1, 1, tzinfo=UTC)  # the writer stamps its own seq and ts
    with RolloutWriter.create(directory / "tmp", session_id=sid, agent_name="coder") as w:
        w.note(Turn(seq=1, ts=epoch, boundary="start", turn_id="t1"))
        w.note(MetaUpdate(seq=1, ts=epoch, title="a title"))
        w.append(Message(role="user", content="hello rome"))
        w.note(Usage(seq=1, ts=epoch, response_id="r1", input_tokens=7, output_tokens=3))
        w.note(Event(seq=1, ts=epoch, kind="interrupt", reason="a pause"))
        w.append(
            Message(
                role="assistant",
                content="",
                tool_calls=(ToolCall(id="c1", name="f", arguments="{}"),),
            )
        )
        w.append(Message(role="tool", content="ok", tool_call_id="c1"))
        w.append(Message(role="assistant", content="done rome"))
        w.stop(StopKind.PAUSED, "pause")
    t = datetime.fromisoformat(when)
    records = []
    for line in w.path.read_bytes().splitlines():
        record = decode_record(line)
        changes: dict[str, object] = {"ts": t}
        if isinstance(record, SessionMeta):
            changes["started_at"] = t
        records.append(msgspec.structs.replace(record, **changes))
    path = directory / f"2026-12-02_09-30-00_{sid}_coder.jsonl"
    path.write_bytes(encode_lines(records))
    w.path.unlink()
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    base.mkdir()
    for sid, when in TIMES.items():
        _session(base, sid, when)
    (base / "tmp").rmdir()
    return base


def test_show_raw_prints_the_records_as_read(root: Path) -> None:
    """`show --raw` prints every record of such a session as the codec encodes it, its times
    with their offsets, where it used to stop with an internal error."""
    for sid in TIMES:
        path = next(root.glob(f"*_{sid}_coder.jsonl"))
        out = _ok(_run("--root", str(root), "show", "--raw", sid))
        assert out.encode() == path.read_bytes()


def test_every_reading_command_takes_every_session(root: Path) -> None:
    """ls, tree, show, verify, replay, grep and export run on every such session."""
    r = str(root)
    listed = json.loads(_ok(_run("--root", r, "ls", "--json")))["sessions"]
    assert {s["session_id"] for s in listed} == set(TIMES)
    by_id = {s["session_id"]: s["started_at"] for s in listed}
    for sid, when in TIMES.items():  # the same instant, in UTC where UTC holds it
        assert datetime.fromisoformat(by_id[sid]) == datetime.fromisoformat(when)
    # Newest first, by instant: the year 9999 ones, the two of 2026, then year 1.
    assert [s["session_id"] for s in listed] == ["e9", "y9", "m1", "ok", "y1", "e1"]
    table = _ok(_run("--root", r, "ls"))
    assert "0001-01-01 00:00:00+23:59" in table
    assert "2026-12-02 15:01:00" in table  # -00:01 is a minute later in UTC
    tree = json.loads(_ok(_run("--root", r, "tree", "--json")))
    assert {n["session_id"] for n in tree["roots"]} == set(TIMES)
    usage = _ok(_run("--root", r, "tree", "--usage"))
    assert usage.count("7 in / 3 out tokens") == len(TIMES)
    verified = json.loads(_ok(_run("--root", r, "verify", "--all", "--json")))
    assert {s["session_id"]: s["status"] for s in verified["sessions"]} == dict.fromkeys(
        TIMES, "ok"
    )
    hits = [json.loads(x) for x in _ok(_run("--root", r, "grep", "rome", "--json")).splitlines()]
    assert {h["session_id"] for h in hits} == set(TIMES)
    for sid in TIMES:
        _ok(_run("--root", r, "show", sid))
        doc = json.loads(_ok(_run("--root", r, "replay", sid, "--json")))
        assert doc["verified"] is True
        over = _run("--root", r, "replay", sid, "--budget", "1")
        assert over.exit_code == 3, over.output  # over the budget: the hand-off report
        assert "# Hand-off" in over.output
        assert "- started (UTC): " in _ok(
            _run("--root", r, "export", sid, "--format", "md", "-o", "-")
        )
        assert "<!DOCTYPE html>" in _ok(_run("--root", r, "export", sid, "-o", "-"))


def test_since_filters_by_the_instant(root: Path) -> None:
    """`ls --since` and `grep --since` keep the sessions started at or after the instant, the
    offset of either side counted."""
    r = str(root)
    since = [
        s["session_id"]
        for s in json.loads(
            _ok(_run("--root", r, "ls", "--since", "2026-12-02T15:00:30Z", "--json"))
        )["sessions"]
    ]
    assert since == ["e9", "y9", "m1"]
    hits = _ok(_run("--root", r, "grep", "rome", "--since", "0001-01-02"))
    assert {line.split(":")[0] for line in hits.splitlines()} == {"e9", "y9", "m1", "ok"}


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+02:00", "9999-12-31T23:30:00-02:00"])
def test_since_at_a_time_utc_cannot_hold_says_why(root: Path, since: str) -> None:
    """`--since` at a time UTC has none (year 1 east of Greenwich, year 9999 west of it) is a
    usage error (ADR 0044) that says so, not one that says to go back at most to the year 1."""
    for command in ("ls", "grep"):
        args = ("--root", str(root), command, *(["rome"] if command == "grep" else []))
        result = _run(*args, "--since", since)
        assert result.exit_code == 2, result.output
        assert "UTC has no time for it" in result.output
        assert "go back" not in result.output


def test_since_still_refuses_what_is_out_of_range(tmp_path: Path) -> None:
    """A duration that goes back past the year 1 is still a usage error that says so."""
    result = _run("--root", str(tmp_path), "ls", "--since", "1000000d")
    assert result.exit_code == 2
    assert "go back at most to the year 1" in result.output


@given(when=calendar_times)
def test_since_gives_the_instant_it_was_given(when: datetime) -> None:
    """Any aware time of the calendar, in ISO 8601, is the instant `--since` filters by, or a
    usage error where UTC has no time for it."""
    try:
        utc = when.astimezone(UTC)
    except OverflowError:
        with pytest.raises(CliError, match="UTC has no time for it") as info:
            parse_since(when.isoformat())
        assert info.value.exit_code == 2
    else:
        assert parse_since(when.isoformat()) == utc


def test_history_commands_take_every_session(root: Path) -> None:
    """fork (plain and --copy), rewind, prune by name and restore work on such sessions."""
    r = str(root)
    for sid in TIMES:
        forked = json.loads(_ok(_run("--root", r, "fork", sid, "--json")))
        assert forked["fork"]["session_id"] == sid
        _ok(_run("--root", r, "fork", sid, "--copy", "--at", "3"))
        _ok(_run("--root", r, "rewind", sid, "--to", "3"))
        path = next(root.glob(f"*_{sid}_coder.jsonl"))
        _ok(_run("--root", r, "prune", sid))
        assert not path.exists()
        _ok(_run("--root", r, "restore", sid))
        assert path.exists()
    verified = json.loads(_ok(_run("--root", r, "verify", "--all", "--json")))
    assert verified["ok"] is True
    assert len(verified["sessions"]) == 3 * len(TIMES)


def test_a_writer_resumes_a_file_another_writer_started_with_such_times(root: Path) -> None:
    """`RolloutWriter.open` appends to such a file and stops it; the file replays verified,
    its first line untouched."""
    for sid in TIMES:
        path = next(root.glob(f"*_{sid}_coder.jsonl"))
        head = path.read_bytes().splitlines()[0]
        with RolloutWriter.open(path) as w:
            w.append(Message(role="user", content="more"))
            w.stop(StopKind.PAUSED, "again")
        rep = read_replay(path)
        assert rep.verified
        assert len(rep.messages) == 5
        assert path.read_bytes().splitlines()[0] == head
        assert rep.meta is not None
        assert rep.meta.started_at == datetime.fromisoformat(TIMES[sid])
    assert {e.session_id for e in list_sessions(root)} == set(TIMES)


def test_ship_index_and_sql_take_every_session(root: Path, tmp_path: Path) -> None:
    """`ship` uploads such sessions, `index` indexes them (also on a Dask-free run), the fleet
    lists them from the index, `verify --all` checks them there, and `sql` reads their rows."""
    pytest.importorskip("duckdb")
    fleet = (tmp_path / "fleet").as_uri()
    shipped = json.loads(_ok(_run("--root", str(root), "ship", "--to", fleet, "--json")))
    assert len(shipped["items"]) == len(TIMES)
    indexed = json.loads(_ok(_run("index", fleet, "--scheduler", "none", "--json")))
    assert indexed["indexed"] == len(TIMES)
    listed = json.loads(_ok(_run("--root", fleet, "ls", "--json")))
    assert listed["index"]["from_index"] == len(TIMES)
    assert [s["session_id"] for s in listed["sessions"]] == ["e9", "y9", "m1", "ok", "y1", "e1"]
    verified = json.loads(
        _ok(_run("--root", fleet, "verify", "--all", "--scheduler", "none", "--json"))
    )
    assert verified["ok"] is True
    days = json.loads(
        _ok(
            _run(
                "--root",
                fleet,
                "sql",
                "--json",
                "SELECT session_id, CAST(day AS VARCHAR) FROM sessions",
            )
        )
    )["rows"]
    assert dict(days) == {
        "y1": "0001-01-01",
        "y9": "9999-12-31",
        "e1": "0001-01-01",
        "e9": "9999-12-31",
        "m1": "2026-12-02",
        "ok": "2026-12-02",
    }


@pytest.mark.parametrize(
    ("started", "day"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01"),
        (datetime(500, 7, 4, 12, tzinfo=UTC), "0500-07-04"),
        (datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC), "0999-12-31"),
        (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), "9999-12-31"),
    ],
)
def test_ship_keys_a_session_of_any_year_by_its_four_digit_day(started: datetime, day: str) -> None:
    """A session started before the year 1000 ships to ``URL/0500-07-04/`` like the file name
    and the index's day say, not to ``URL/500-07-04/`` (strftime's %Y does not pad the year on
    every platform, so the key depended on the machine that shipped)."""
    name = rollout_filename(started, "s")
    assert remote_key(name) == f"{day}/{name}"


def test_ship_puts_an_old_session_under_its_four_digit_day(tmp_path: Path) -> None:
    """`rollout ship` of a session of the year 500 writes ``URL/0500-01-01/<name>``."""
    base = tmp_path / "root"
    base.mkdir()
    line = (
        '{"type":"session_meta","seq":1,"ts":"0500-01-01T00:00:00Z","format_version":2,'
        '"session_id":"old","started_at":"0500-01-01T00:00:00Z"}\n'
    )
    (base / "0500-01-01_00-00-00_old.jsonl").write_text(line)
    fleet = tmp_path / "fleet"
    _ok(_run("--root", str(base), "ship", "--include-unsealed", "--to", fleet.as_uri()))
    assert (fleet / "0500-01-01" / "0500-01-01_00-00-00_old.jsonl").read_text() == line


@pytest.mark.parametrize("when", list(TIMES.values())[:4])
def test_a_name_for_a_time_utc_cannot_hold_is_refused_with_why(when: str) -> None:
    """`rollout_filename` of a start UTC has no time for says so; the listing then takes the
    session's identity from the name it has (the root fixture pins that)."""
    with pytest.raises(RolloutNameError, match="no UTC equivalent"):
        rollout_filename(datetime.fromisoformat(when), "s")


@pytest.mark.parametrize("stamp", ["0001-01-01_00-00-00", "9999-12-31_23-59-59"])
def test_names_at_the_ends_of_the_calendar_parse_back(stamp: str) -> None:
    """A name at either end of the calendar parses to its UTC start, and builds back."""
    parsed = parse_rollout_filename(f"{stamp}_s.jsonl")
    assert rollout_filename(parsed.started_at, "s") == f"{stamp}_s.jsonl"


@given(when=calendar_times)
def test_a_time_is_always_shown(when: datetime) -> None:
    """Any aware time of the calendar, with any offset: the JSON form parses back to the same
    instant, and the table's form is its UTC time or, where UTC has none, the time with its
    offset."""
    text = time_json(when)
    assert text is not None
    assert datetime.fromisoformat(text) == when
    shown = short_time(when)
    try:
        utc = when.astimezone(UTC)
    except OverflowError:
        assert shown == when.isoformat(" ", "seconds")
    else:
        assert text.endswith("Z")
        assert shown == utc.strftime("%H:%M:%S").join([f"{utc.date().isoformat()} ", ""])


@pytest.mark.parametrize("offset", ["+05:30:15", "+24:00", "+5:30"])
def test_offsets_outside_the_format_are_refused_at_reading(offset: str) -> None:
    """An offset with seconds, of a whole day or more, or of one digit is not a time the format
    takes: the line is refused when read (a degradation), never half read."""
    from ledger.codec import RecordDecodeError

    with pytest.raises(RecordDecodeError, match="ts"):
        decode_record(
            f'{{"type":"session_meta","seq":1,"ts":"2026-01-01T00:00:00{offset}",'
            '"format_version":2,"session_id":"s","started_at":"2026-01-01T00:00:00Z"}'
        )
