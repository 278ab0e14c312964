"""Rollout file names: the build/parse mirror of SPEC rule 13, and names that must be refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    RolloutName,
    RolloutNameError,
    RolloutWriter,
    StopKind,
    parse_rollout_filename,
    rollout_filename,
)
from ledger.naming import (
    MAX_NAME_BYTES,
    build_rollout_name,
    session_token,
    validate_agent_name,
    validate_session_id,
)
from replay import list_sessions

T = datetime(2026, 12, 2, 16, 22, 5, 123456, tzinfo=UTC)


def _to_second_utc(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(microsecond=0)


@given(t=s.aware_datetimes, sid=s.session_ids, agent=st.none() | s.agent_names)
@example(t=datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC), sid="abc", agent=None)
@example(t=datetime(5, 6, 7, 8, 9, 10, tzinfo=UTC), sid="a", agent="code_reviewer")
@example(t=T, sid="abc", agent="a_b_c")
@example(t=T, sid="abc", agent="x.jsonl")
@example(t=T, sid="abc", agent="2026-12-02_16-22-05_abc")
@example(t=T, sid="user_123", agent=None)
@example(t=T, sid="org/42", agent="a_b")
@example(t=T, sid="\u00e9" * 128, agent="a" * 128)
@example(t=T, sid="s" * 128, agent="a" * 128)
@example(t=T, sid="%41", agent=None)
def test_build_parse_mirror(t: datetime, sid: str, agent: str | None) -> None:
    """Parsing a built name gives (t to the second in UTC, sid, agent); rebuilding, the name."""
    name = rollout_filename(t, sid, agent)
    parsed = parse_rollout_filename(name)
    assert len(name.encode()) <= MAX_NAME_BYTES
    assert parsed.started_at == _to_second_utc(t)
    assert parsed.started_at.tzinfo is UTC
    assert parsed.agent_name == agent
    assert parsed.session_token == session_token(sid, agent)
    # The id comes back whole unless its token had to be cut to fit the name limit.
    if "~" in parsed.session_token:
        assert parsed.session_id is None
    else:
        assert parsed.session_id == sid
    assert parsed.filename == name
    if parsed.session_id is not None:
        assert rollout_filename(parsed.started_at, parsed.session_id, parsed.agent_name) == name


@given(t=s.aware_datetimes, sid=s.session_ids, agent=st.none() | s.agent_names)
@example(t=datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC), sid="abc", agent=None)
@example(t=T, sid="s" * 128, agent="a" * 128)
def test_a_name_and_its_rollout_name_are_built_together(
    t: datetime, sid: str, agent: str | None
) -> None:
    """build_rollout_name gives rollout_filename's name and the RolloutName of its values."""
    name, built = build_rollout_name(t, sid, agent)
    assert name == rollout_filename(t, sid, agent)
    assert built == RolloutName(started_at=_to_second_utc(t), session_id=sid, agent_name=agent)
    assert built.session_token == session_token(sid, agent)
    assert built.started_at.tzinfo is UTC


@given(
    name=st.text(max_size=60)
    | st.from_regex(
        "[0-9\u0660-\u0669]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}_.{0,12}[.]jsonl",
        fullmatch=True,
    )
)
@example(name="\u0662\u0660\u0662\u0666-12-02_16-22-05_abc.jsonl")
@example(name="2026-12-02_16-22-05_abc_.jsonl")
@example(name="2026-12-02_16-22-05__abc.jsonl")
@example(name="2026-12-02_16-22-05_%41.jsonl")
@example(name="2026-12-02_16-22-05_a%2f.jsonl")
@example(name="2026-12-02_16-22-05_%C3.jsonl")
@example(name="2026-12-02_16-22-05_ab~0123456789abcdef0123.jsonl")
def test_whatever_parses_rebuilds_to_itself(name: str) -> None:
    """Any string that parses is exactly the name built from what it parsed to (no second form)."""
    try:
        parsed = parse_rollout_filename(name)
    except RolloutNameError:
        return
    assert parsed.filename == name
    if parsed.session_id is not None:
        assert rollout_filename(parsed.started_at, parsed.session_id, parsed.agent_name) == name


def test_agent_names_with_underscores_work() -> None:
    """`code_reviewer` and other underscore names survive the mirror, split at the first `_`."""
    name = rollout_filename(T, "9f1c-22", "code_reviewer")
    assert name == "2026-12-02_16-22-05_9f1c-22_code_reviewer.jsonl"
    assert parse_rollout_filename(name).agent_name == "code_reviewer"
    assert parse_rollout_filename(name).session_id == "9f1c-22"


def test_name_without_agent() -> None:
    """Without an agent name the file is `<date>_<time>_<sessionID>.jsonl`."""
    name = rollout_filename(T, "abc")
    assert name == "2026-12-02_16-22-05_abc.jsonl"
    assert parse_rollout_filename(name) == RolloutName(
        started_at=T.replace(microsecond=0), session_id="abc", agent_name=None
    )


def test_uuid_session_id_works() -> None:
    """A UUID (letters, digits, dashes) is a valid session id."""
    sid = "3f2b8a1e-6c1d-4b8e-9a57-0c6b1f3e2d10"
    assert parse_rollout_filename(rollout_filename(T, sid)).session_id == sid


@pytest.mark.parametrize(
    "offset", [timedelta(hours=5, minutes=30), timedelta(hours=-8), timedelta(minutes=-1)]
)
def test_non_utc_times_convert_to_utc(offset: timedelta) -> None:
    """An aware datetime in another zone is named by its UTC time."""
    local = T.astimezone(timezone(offset))
    assert rollout_filename(local, "abc") == rollout_filename(T, "abc")


def test_naive_datetime_is_refused() -> None:
    """A naive datetime is refused: its UTC time is unknown."""
    with pytest.raises(RolloutNameError, match="no timezone"):
        rollout_filename(datetime(2026, 1, 1), "abc")


@pytest.mark.parametrize(
    "t",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_time_outside_the_utc_calendar_is_refused(t: datetime) -> None:
    """A time whose UTC value falls outside the calendar is refused with the naming error."""
    with pytest.raises(RolloutNameError):
        rollout_filename(t, "abc")


BAD_SESSION_IDS = ["", "a\x00b", "x" * 129, "\ud800", "a\udfffb"]


@pytest.mark.parametrize("sid", BAD_SESSION_IDS)
def test_bad_session_ids_are_refused(sid: str) -> None:
    """Empty, over-long, NUL-bearing and unencodable session ids are refused, saying why."""
    with pytest.raises(RolloutNameError, match="invalid session id"):
        rollout_filename(T, sid)
    with pytest.raises(RolloutNameError):
        validate_session_id(sid)


@pytest.mark.parametrize("sid", [7, None, b"abc", 1.5])
def test_session_ids_of_another_type_are_refused(sid: object) -> None:
    """A session id that is not a str is refused, naming the type given."""
    with pytest.raises(RolloutNameError, match="expected a str"):
        validate_session_id(sid)  # type: ignore[arg-type]


@given(sid=s.framework_keys, agent=st.none() | s.agent_names)
@example(sid="../../etc/passwd", agent=None)
@example(sid="a\\b", agent=None)
@example(sid=".hidden", agent=None)
def test_framework_keys_never_reach_the_file_system_raw(sid: str, agent: str | None) -> None:
    """Any key becomes a name that is one plain component: no separator, NUL, dot-start or `_`."""
    token = session_token(sid, agent)
    name = rollout_filename(T, sid, agent)
    assert "/" not in name
    assert "\\" not in name
    assert "\x00" not in name
    assert name.isascii()
    assert name.isprintable()
    assert "_" not in token
    assert not name.startswith(".")
    assert len(name.encode()) <= MAX_NAME_BYTES


def test_framework_keys_are_escaped_readably() -> None:
    """Common framework keys keep their letters and escape only what a name cannot hold."""
    assert session_token("user_123") == "user%5F123"
    assert session_token("org/42") == "org%2F42"
    assert session_token("a.b+c@example.com") == "a.b%2Bc%40example.com"
    assert session_token("3f2b8a1e-6c1d-4b8e-9a57-0c6b1f3e2d10") == (
        "3f2b8a1e-6c1d-4b8e-9a57-0c6b1f3e2d10"
    )


BAD_AGENT_NAMES = [
    "",
    "a/b",
    "/abs",
    "a\\b",
    "..",
    "../up",
    "a..b",
    ".hidden",
    "a.",
    "a\x00b",
    "_a",
    "-a",
    "a b",
    "a\nb",
    "x" * 129,
    "é",
]


@pytest.mark.parametrize("agent", BAD_AGENT_NAMES)
def test_bad_agent_names_are_refused(agent: str) -> None:
    """Agent names that could escape a directory or parse back differently are refused."""
    with pytest.raises(RolloutNameError, match="invalid agent name"):
        rollout_filename(T, "abc", agent)
    with pytest.raises(RolloutNameError):
        validate_agent_name(agent)


def test_longest_names_are_accepted() -> None:
    """A 128-character id beside a 128-character agent name builds a name within the limit."""
    name = rollout_filename(T, "s" * 128, "a" * 128)
    assert len(name) == MAX_NAME_BYTES
    parsed = parse_rollout_filename(name)
    assert parsed.session_id is None  # cut to fit: the id itself is in session_meta
    assert parsed.session_token == session_token("s" * 128, "a" * 128)
    assert parsed.agent_name == "a" * 128
    short = rollout_filename(T, "s" * 128, "a" * 8)
    assert parse_rollout_filename(short).session_id == "s" * 128


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".jsonl",
        "notes.txt",
        "2026-12-02_16-22-05_abc.json",
        "2026-12-02_16-22-05_abc.jsonl.gz",
        "2026-12-02_16-22-05.jsonl",
        "2026-12-02_16-22-05_.jsonl",
        "2026-12-02-16-22-05_abc.jsonl",
        "2026-13-02_16-22-05_abc.jsonl",
        "2026-02-30_16-22-05_abc.jsonl",
        "2026-12-02_24-00-00_abc.jsonl",
        "2026-12-02_16-22-60_abc.jsonl",
        "0000-01-01_00-00-00_abc.jsonl",
        "26-12-02_16-22-05_abc.jsonl",
        "2026-12-02_16-22-05_%41.jsonl",
        "2026-12-02_16-22-05_a%2f.jsonl",
        "2026-12-02_16-22-05_%C3.jsonl",
        "2026-12-02_16-22-05_%00.jsonl",
        "2026-12-02_16-22-05_ab~0123456789abcdef0123.jsonl",
        "2026-12-02_16-22-05_a b.jsonl",
        "2026-12-02_16-22-05_abc_..jsonl",
        "2026-12-02_16-22-05_abc_.hidden.jsonl",
        "2026-12-02_16-22-05_abc_a/b.jsonl",
        "2026-12-02_16-22-05_abc_a\x00b.jsonl",
        "sub/2026-12-02_16-22-05_abc.jsonl",
        "\u0662\u0660\u0662\u0666-12-02_16-22-05_abc.jsonl",
        " 2026-12-02_16-22-05_abc.jsonl",
        "2026-12-02_16-22-05_abc.jsonl\n",
    ],
)
def test_garbage_names_are_refused(name: str) -> None:
    """Names that are not exactly `<date>_<time>_<sessionID>[_<agentName>].jsonl` are refused."""
    with pytest.raises(RolloutNameError):
        parse_rollout_filename(name)


def test_error_is_a_value_error() -> None:
    """`RolloutNameError` is a `ValueError`, so generic callers can catch it."""
    assert issubclass(RolloutNameError, ValueError)


def test_listing_a_cut_token_finds_no_mismatch(tmp_path: Path) -> None:
    """A session whose token was cut is listed under its id, not flagged as a name mismatch."""
    key = "org/" + "k" * 124
    with RolloutWriter.create(tmp_path, session_id=key, agent_name="a" * 128) as w:
        w.stop(StopKind.PAUSED)
    assert len(w.path.name) == MAX_NAME_BYTES
    (entry,) = list_sessions(tmp_path)
    assert entry.session_id == key
    assert entry.flags == ()
