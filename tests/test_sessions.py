"""Listing rollouts and their delegation tree: every file listed, what is wrong flagged."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

import ledger.reader
import ledger.reducer
import replay.replay
from ledger import Message, StopKind, with_delegation_id, with_rollout_session_id
from ledger.writer import RolloutWriter
from replay import SessionFlag, Tier, list_sessions, session_tree
from replay.sessions import SessionEntry
from rollout_files import START, RolloutBuilder, conversation


def by_id(entries: tuple[SessionEntry, ...]) -> dict[str | None, SessionEntry]:
    return {e.session_id: e for e in entries}


def test_one_entry_per_rollout_with_its_identity(tmp_path: Path) -> None:
    """Each rollout is listed once with its head's identity, size, stop facts and eligibility."""
    a = RolloutBuilder(tmp_path, session_id="a-1", agent_name="coder").extend(conversation())
    a.stop(StopKind.PAUSED, "later")
    pa = a.write()
    b = RolloutBuilder(tmp_path, session_id="b-2", started_at=START + timedelta(hours=1))
    b.extend(conversation()).stop(StopKind.COMPLETED)
    b.write()
    entries = list_sessions(tmp_path)
    assert [e.session_id for e in entries] == ["a-1", "b-2"]  # oldest first
    e = entries[0]
    assert e.path == pa
    assert e.agent_name == "coder"
    assert e.started_at == START
    assert e.name is not None
    assert e.name.session_id == "a-1"
    assert e.parent_session_id is None
    assert e.delegation_id is None
    assert e.size == pa.stat().st_size
    assert e.stop.kind is StopKind.PAUSED
    assert e.eligibility.replayable
    assert e.flags == ()
    assert entries[1].eligibility.tier is Tier.NOTHING_TO_RESUME


def test_listing_is_recursive_and_skips_hidden_directories(tmp_path: Path) -> None:
    """Rollouts in subdirectories are listed; hidden directories and other files are not."""
    RolloutBuilder(tmp_path / "2026" / "12", session_id="deep").write()
    RolloutBuilder(tmp_path / ".cache", session_id="hidden").write()
    (tmp_path / "notes.txt").write_text("not a rollout")
    assert [e.session_id for e in list_sessions(tmp_path)] == ["deep"]


def test_missing_root_lists_nothing(tmp_path: Path) -> None:
    """A root that does not exist lists no session, without error."""
    assert list_sessions(tmp_path / "nowhere") == ()


def test_session_without_stop_is_listed_as_unknown(tmp_path: Path) -> None:
    """A session with no stop facts is listed, stop unknown, never filtered out."""
    RolloutBuilder(tmp_path, session_id="running").extend(conversation()).write()
    (e,) = list_sessions(tmp_path)
    assert not e.stop.found
    assert e.eligibility.tier is Tier.UNKNOWN
    assert not e.eligibility.replayable


def test_unparseable_name_is_listed_and_flagged(tmp_path: Path) -> None:
    """A file whose name breaks the naming rule is listed, identity from its head, flagged."""
    b = RolloutBuilder(tmp_path, session_id="odd").extend(conversation()).stop("paused")
    b.write(tmp_path / "renamed by hand.jsonl")
    (e,) = list_sessions(tmp_path)
    assert e.name is None
    assert e.session_id == "odd"
    assert SessionFlag.NAME_UNPARSEABLE in e.flags
    assert any("not a rollout file name" in n for n in e.notes)
    assert e.eligibility.replayable


def test_damaged_head_is_listed_with_identity_from_the_name(tmp_path: Path) -> None:
    """A file whose first line is damaged is listed, flagged, with the name's identity."""
    b = RolloutBuilder(tmp_path, session_id="hurt", agent_name="x", meta=False)
    b.raw(b"\x00\x01garbage\n").extend(conversation()).stop(StopKind.CANCELLED)
    b.write()
    (e,) = list_sessions(tmp_path)
    assert SessionFlag.HEAD_DAMAGED in e.flags
    assert e.meta is None
    assert e.session_id == "hurt"
    assert e.agent_name == "x"
    assert e.started_at == START
    assert e.stop.kind is StopKind.CANCELLED


def test_empty_file_is_listed(tmp_path: Path) -> None:
    """An empty rollout file is listed with a damaged head and unknown stop."""
    b = RolloutBuilder(tmp_path, session_id="empty", meta=False)
    b.write()
    (e,) = list_sessions(tmp_path)
    assert SessionFlag.HEAD_DAMAGED in e.flags
    assert e.size == 0
    assert not e.stop.found


def test_name_and_head_disagreeing_is_flagged(tmp_path: Path) -> None:
    """A file whose name and session_meta name different sessions is flagged; the head wins."""
    b = RolloutBuilder(tmp_path, session_id="inside")
    b.write(tmp_path / "2026-12-02_09-30-00_outside.jsonl")
    (e,) = list_sessions(tmp_path)
    assert e.session_id == "inside"
    assert SessionFlag.NAME_MISMATCH in e.flags


def test_two_files_claiming_one_session_are_both_flagged(tmp_path: Path) -> None:
    """Two files with one session id are both listed and both flagged."""
    RolloutBuilder(tmp_path / "a", session_id="twin").write()
    RolloutBuilder(tmp_path / "b", session_id="twin").write()
    entries = list_sessions(tmp_path)
    assert len(entries) == 2
    assert all(SessionFlag.DUPLICATE_SESSION_ID in e.flags for e in entries)


def test_child_without_coordinates_is_flagged_not_a_root(tmp_path: Path) -> None:
    """A child with an empty delegation id is flagged, denied, and detached in the tree."""
    RolloutBuilder(tmp_path, session_id="parent").stop("paused").write()
    RolloutBuilder(tmp_path, session_id="kid", parent_session_id="parent", delegation_id="").stop(
        "paused"
    ).write()
    RolloutBuilder(tmp_path, session_id="lost", delegation_id="call_9").stop("paused").write()
    entries = by_id(list_sessions(tmp_path))
    for sid in ("kid", "lost"):
        assert SessionFlag.CHILD_WITHOUT_COORDINATES in entries[sid].flags
        assert entries[sid].eligibility.tier is Tier.NO_COORDINATES
        assert entries[sid].is_child
    tree = session_tree(entries.values())
    assert [n.entry.session_id for n in tree.roots] == ["parent"]
    assert "lost" in {n.entry.session_id for n in tree.detached}
    assert "lost" not in {n.entry.session_id for n in tree.roots}


def test_delegation_tree_nests_children(tmp_path: Path) -> None:
    """Children sit under their parent session, grandchildren under them, in listing order."""
    RolloutBuilder(tmp_path, session_id="root").write()
    for i, (sid, parent) in enumerate([("c1", "root"), ("c2", "root"), ("g1", "c1")]):
        RolloutBuilder(
            tmp_path,
            session_id=sid,
            parent_session_id=parent,
            delegation_id=f"call_{sid}",
            started_at=START + timedelta(minutes=i + 1),
        ).write()
    tree = session_tree(list_sessions(tmp_path))
    (root,) = tree.roots
    assert [c.entry.session_id for c in root.children] == ["c1", "c2"]
    assert [g.entry.session_id for g in root.children[0].children] == ["g1"]
    assert tree.detached == ()
    assert [(d, n.entry.session_id) for d, n in tree.walk()] == [
        (0, "root"),
        (1, "c1"),
        (2, "g1"),
        (1, "c2"),
    ]


def test_child_of_an_unlisted_parent_is_detached_and_flagged(tmp_path: Path) -> None:
    """A child whose parent is not under the root is flagged and detached, not a root."""
    RolloutBuilder(
        tmp_path, session_id="orphan", parent_session_id="gone", delegation_id="c"
    ).write()
    (e,) = list_sessions(tmp_path)
    assert SessionFlag.PARENT_NOT_FOUND in e.flags
    tree = session_tree([e])
    assert tree.roots == ()
    assert [n.entry.session_id for n in tree.detached] == ["orphan"]


def test_cycle_of_parents_is_detached(tmp_path: Path) -> None:
    """Sessions naming each other as parents are shown detached, without endless recursion."""
    RolloutBuilder(tmp_path, session_id="x", parent_session_id="y", delegation_id="1").write()
    RolloutBuilder(tmp_path, session_id="y", parent_session_id="x", delegation_id="2").write()
    tree = session_tree(list_sessions(tmp_path))
    assert tree.roots == ()
    assert sorted(n.entry.session_id for _, n in tree.walk()) == ["x", "y"]


def test_listing_never_rebuilds_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing reads heads and tails only: the reader and reducer are never called."""
    RolloutBuilder(tmp_path).extend(conversation(50)).stop(StopKind.PAUSED).write()

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("listing rebuilt messages")

    monkeypatch.setattr(ledger.reader, "iter_batches", forbidden)
    monkeypatch.setattr(ledger.reader, "iter_file_entries", forbidden)
    monkeypatch.setattr(ledger.reducer, "fold_lines", forbidden)
    monkeypatch.setattr(ledger.reducer, "fold_batches", forbidden)
    monkeypatch.setattr(replay.replay, "rebuild", forbidden)
    (e,) = list_sessions(tmp_path)
    assert e.stop.found


def test_writer_delegation_builds_the_tree(tmp_path: Path) -> None:
    """A child written under the parent's delegation context sits under it in the tree."""
    with RolloutWriter.create(tmp_path, agent_name="lead") as parent:
        parent.append(Message(role="user", content="delegate please"))
        with (
            with_rollout_session_id(parent.session_id),
            with_delegation_id("call_delegate"),
            RolloutWriter.create(tmp_path, agent_name="helper") as child,
        ):
            child.append(Message(role="user", content="sub task"))
            child.stop(StopKind.COMPLETED)
        parent.stop(StopKind.PAUSED)
    entries = by_id(list_sessions(tmp_path))
    kid = entries[child.session_id]
    assert kid.parent_session_id == parent.session_id
    assert kid.delegation_id == "call_delegate"
    assert kid.flags == ()
    assert entries[parent.session_id].eligibility.replayable
    (root,) = session_tree(entries.values()).roots
    assert root.entry.session_id == parent.session_id
    assert [c.entry.session_id for c in root.children] == [child.session_id]


def test_large_files_and_long_heads_are_listed(tmp_path: Path) -> None:
    """Files past the one-read size, and a first line longer than it, list like small ones."""
    big = RolloutBuilder(tmp_path / "big", session_id="big")
    big.extend(Message(role="user", content="x" * 1000) for _ in range(200)).stop("paused")
    big.write()
    long_head = RolloutBuilder(tmp_path / "head", session_id="head", agent_name="a" * 100)
    long_head.lines[0] = long_head.lines[0].replace(
        b'"format_version"', b'"cwd":"' + b"d" * 100_000 + b'","format_version"'
    )
    long_head.stop("cancelled").write()
    entries = by_id(list_sessions(tmp_path))
    assert entries["big"].size > 64 * 1024
    assert entries["big"].stop.kind is StopKind.PAUSED
    assert entries["big"].flags == ()
    assert entries["head"].meta is not None
    assert entries["head"].meta.cwd == "d" * 100_000
    assert entries["head"].stop.kind is StopKind.CANCELLED
    assert entries["head"].flags == ()


def test_unreadable_file_is_listed_as_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout that cannot be opened is listed, flagged unreadable, with its stop unknown."""
    path = RolloutBuilder(tmp_path, session_id="locked").stop("paused").write()
    real_open = os.open

    def refuse(p: object, *args: object, **kwargs: object) -> int:
        if os.fspath(p) == os.fspath(path):
            raise PermissionError(13, "Permission denied")
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    (e,) = list_sessions(tmp_path)
    assert SessionFlag.UNREADABLE in e.flags
    assert e.session_id == "locked"  # from the file name
    assert not e.stop.found
    assert not e.eligibility.replayable
    assert "Permission denied" in e.eligibility.reason
