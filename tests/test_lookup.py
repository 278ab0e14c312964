"""replay.find_session: a session's file from its id or a prefix, by file names only."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger import RolloutName, rollout_filename
from replay import (
    AmbiguousSessionError,
    DuplicateSessionError,
    SessionLookupError,
    SessionNotFoundError,
    find_session,
)

START = datetime(2026, 12, 1, tzinfo=UTC)


def named(directory: Path, session_id: str, agent: str | None = None) -> Path:
    """An empty file with a rollout's name: find_session reads names only."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / rollout_filename(START, session_id, agent)
    path.write_bytes(b"")
    return path


def test_an_id_or_a_unique_prefix_finds_its_file(tmp_path: Path) -> None:
    """The full id, or a prefix only one session has, gives that file, at any depth."""
    a = named(tmp_path, "aaaa1111-x", "coder")
    b = named(tmp_path / "2026" / "12", "bbbb2222")
    assert find_session(tmp_path, "aaaa1111-x") == a
    assert find_session(tmp_path, "aaaa") == a
    assert find_session(str(tmp_path), "b") == b


def test_an_exact_id_wins_over_longer_ids(tmp_path: Path) -> None:
    """`abc` names session abc even though abcd exists."""
    exact = named(tmp_path, "abc")
    named(tmp_path, "abcd")
    assert find_session(tmp_path, "abc") == exact


def test_not_found_and_ambiguous_say_so(tmp_path: Path) -> None:
    """No match and several sessions matching are distinct errors with what to do."""
    named(tmp_path, "abc1")
    named(tmp_path, "abc2")
    with pytest.raises(SessionNotFoundError, match=r"no session .* 'zzz'"):
        find_session(tmp_path, "zzz")
    with pytest.raises(AmbiguousSessionError, match="ambiguous") as info:
        find_session(tmp_path, "abc")
    assert sorted(sid for sid, _ in info.value.candidates) == ["abc1", "abc2"]
    assert "abc1" in str(info.value)
    assert "give more characters" in str(info.value)


def test_two_files_claiming_one_id_are_a_duplicate_not_an_ambiguity(tmp_path: Path) -> None:
    """Two files with one full id: DuplicateSessionError names both, for the id or a prefix."""
    first = named(tmp_path, "dup1", "a")
    second = named(tmp_path / "elsewhere", "dup1", "b")
    for query in ("dup1", "dup"):
        with pytest.raises(DuplicateSessionError, match="claim session id 'dup1'") as info:
            find_session(tmp_path, query)
        assert set(info.value.paths) == {first, second}
        assert info.value.session_id == "dup1"
        assert isinstance(info.value, SessionLookupError)


def test_only_names_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are never opened: with every open failing, the session is still found."""
    path = named(tmp_path, "locked1")

    def no_open(*_: object, **__: object) -> None:
        raise AssertionError("find_session opened a file")

    monkeypatch.setattr("builtins.open", no_open)
    monkeypatch.setattr("os.open", no_open)
    assert find_session(tmp_path, "locked") == path


def test_ids_go_through_the_naming_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids come from ledger.parse_rollout_filename, so a framework key the naming maps is found."""
    path = tmp_path / "2026-12-01_00-00-00_org%2F42.jsonl"
    path.write_bytes(b"")

    def parse(name: str) -> RolloutName:
        return RolloutName(started_at=START, session_id=name[20:-6].replace("%2F", "/"))

    monkeypatch.setattr("replay.lookup.parse_rollout_filename", parse)
    assert find_session(tmp_path, "org/42") == path
    assert find_session(tmp_path, "org/") == path


@pytest.mark.parametrize(
    ("query", "error"), [("", ValueError), ("a\x00b", ValueError), (42, TypeError)]
)
def test_bad_queries_are_refused(tmp_path: Path, query: object, error: type[Exception]) -> None:
    """An empty query, a NUL or a non-string is a caller error, not a lookup."""
    named(tmp_path, "abc")
    with pytest.raises(error):
        find_session(tmp_path, query)  # type: ignore[arg-type]


def test_a_root_that_is_not_a_directory_is_an_oserror(tmp_path: Path) -> None:
    """A missing root or a file as root raises the OSError that says which."""
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_session(tmp_path / "missing", "abc")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        find_session(tmp_path / "file", "abc")


def test_a_link_leading_outside_the_root_is_never_returned(tmp_path: Path) -> None:
    """A planted link that points outside the root is not a session of the root."""
    root = tmp_path / "root"
    root.mkdir()
    outside = named(tmp_path / "outside", "secret1")
    (root / outside.name).symlink_to(outside)
    with pytest.raises(SessionNotFoundError):
        find_session(root, "secret")
