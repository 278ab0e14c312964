"""Retention (ADR 0133): prune to a trash inside the root with an audit log, restore, and an
emptying of the trash that is the only deletion."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from ledger import Message, RolloutWriter, StopKind
from ledger.digest import file_sha256
from ledger.testing import abandon
from replay import SessionNotFoundError, find_session, list_sessions, read_replay
from replay.retention import empty_trash, plan_prune, prune, restore, trash_problems
from replay.trash import TrashError, read_audit, trash_files, trash_lock

DAY = 86400


def _session(
    root: Path,
    sid: str,
    *,
    kind: StopKind | None = StopKind.COMPLETED,
    age_days: float = 0,
    sub: str = "",
    parent: str | None = None,
) -> Path:
    directory = root / sub if sub else root
    w = RolloutWriter.create(directory, session_id=sid, durability="os")
    w.append(Message(role="user", content=f"hello from {sid}"))
    if parent is not None:
        w.close()
        lines = w.path.read_bytes().replace(
            b'"session_id":"' + sid.encode() + b'"',
            b'"session_id":"'
            + sid.encode()
            + b'","parent_session_id":"'
            + parent.encode()
            + b'","delegation_id":"call-1"',
            1,
        )
        # Rewritten by hand: the coordinates come from context in a real child.
        w.path.write_bytes(lines)
        if kind is not None:
            with RolloutWriter.open(w.path) as again:
                again.append(Message(role="user", content="more"))
                again.stop(kind)
    elif kind is None:
        abandon(w)  # killed: no stop point
    else:
        w.stop(kind)
        w.close()
    if age_days:
        old = time.time() - age_days * DAY
        os.utime(w.path, (old, old))
    return w.path


def _sha(path: Path) -> str:
    with open(path, "rb") as f:
        return file_sha256(f)[0]


def _ids(root: Path, *, trash: bool = False) -> list[str | None]:
    return sorted(e.session_id for e in list_sessions(root, trash=trash))  # type: ignore[type-var]


def test_prune_moves_to_the_trash_and_logs_each_session(tmp_path: Path) -> None:
    """Matching sessions move into <root>/.trash/files, keeping their relative path; one audit
    line each says what, when, why, the sha256 of the bytes and the command line."""
    old = _session(tmp_path, "old", age_days=40, sub="team/a")
    _session(tmp_path, "new", age_days=1)
    sha = _sha(old)
    plan = prune(tmp_path, older_than=timedelta(days=30), command=["rollout", "prune", "x"])
    assert [s.entry.session_id for s in plan.pruned] == ["old"]
    inside = trash_files(tmp_path) / "team" / "a" / old.name
    assert inside.is_file()
    assert not old.exists()
    (line,) = read_audit(tmp_path)[0]
    assert line.action == "prune"
    assert line.path == f"team/a/{old.name}"
    assert line.trash_path == f".trash/files/team/a/{old.name}"
    assert line.session_id == "old"
    assert line.digest == sha == _sha(inside)
    assert f'"sha256":"{sha}"'.encode() in (tmp_path / ".trash" / "audit.jsonl").read_bytes()
    assert line.size == inside.stat().st_size
    assert "last written 40 day(s) ago" in line.why
    assert line.command == ("rollout", "prune", "x")
    assert trash_problems(tmp_path) == []


def test_trashed_sessions_are_seen_only_when_asked(tmp_path: Path) -> None:
    """Listing and find_session skip the trash; with trash=True they see only it."""
    _session(tmp_path, "gone", age_days=40)
    _session(tmp_path, "kept")
    prune(tmp_path, older_than=timedelta(days=30))
    assert _ids(tmp_path) == ["kept"]
    assert _ids(tmp_path, trash=True) == ["gone"]
    with pytest.raises(SessionNotFoundError):
        find_session(tmp_path, "gone")
    assert find_session(tmp_path, "gone", trash=True).parent == trash_files(tmp_path)
    with pytest.raises(SessionNotFoundError):
        find_session(tmp_path, "kept", trash=True)


def test_nothing_is_chosen_by_default(tmp_path: Path) -> None:
    """A prune without a rule or a name refuses, and touches nothing."""
    _session(tmp_path, "a", age_days=400)
    with pytest.raises(ValueError, match="never chooses sessions by default"):
        prune(tmp_path)
    assert _ids(tmp_path) == ["a"]
    assert not (tmp_path / ".trash").exists()


def test_stop_kinds_and_age_both_must_match(tmp_path: Path) -> None:
    """--stop-kind narrows --older-than; `unknown` names a session without a stop point."""
    _session(tmp_path, "done-old", age_days=40)
    _session(tmp_path, "done-new", age_days=2)
    _session(tmp_path, "paused-old", kind=StopKind.PAUSED, age_days=40)
    _session(tmp_path, "never-stopped", kind=None, age_days=40)
    plan = plan_prune(tmp_path, older_than=timedelta(days=30), stop_kinds={"completed"})
    assert [s.entry.session_id for s in plan.pruned] == ["done-old"]
    plan = plan_prune(tmp_path, stop_kinds={"unknown"})
    assert [s.entry.session_id for s in plan.pruned] == ["never-stopped"]
    assert "stopped unknown" in plan.pruned[0].why


def test_a_dry_run_touches_nothing(tmp_path: Path) -> None:
    """--dry-run plans, and writes neither the trash nor the log."""
    path = _session(tmp_path, "a", age_days=40)
    before = path.read_bytes()
    plan = prune(tmp_path, older_than=timedelta(days=30), dry_run=True)
    assert [s.entry.session_id for s in plan.pruned] == ["a"]
    assert path.read_bytes() == before
    assert not (tmp_path / ".trash").exists()


def test_a_source_with_live_forks_is_kept_unless_named(tmp_path: Path) -> None:
    """A fork reads its source: the source is kept while the fork stays, pruned when named
    (or when the fork goes too); a copied fork does not hold it."""
    src = _session(tmp_path, "src", age_days=40)
    with RolloutWriter.fork(src, session_id="fork") as f:
        f.stop(StopKind.PAUSED)
    plan = plan_prune(tmp_path, older_than=timedelta(days=30))
    assert plan.pruned == ()
    (held,) = plan.held
    assert held.entry.session_id == "src"
    assert held.held is not None
    assert "fork fork" in held.held
    old = time.time() - 40 * DAY
    os.utime(f.path, (old, old))
    both = plan_prune(tmp_path, older_than=timedelta(days=30))
    assert sorted(s.entry.session_id for s in both.pruned) == ["fork", "src"]  # type: ignore[type-var]
    named = plan_prune(tmp_path, named=[src])
    assert [s.entry.session_id for s in named.pruned] == ["src"]


def test_a_copied_fork_does_not_hold_its_source(tmp_path: Path) -> None:
    """A fork made with copy=True never reads its source: the source may go."""
    src = _session(tmp_path, "src", age_days=40)
    with RolloutWriter.fork(src, copy=True, session_id="copy") as f:
        f.stop(StopKind.PAUSED)
    plan = plan_prune(tmp_path, older_than=timedelta(days=30))
    assert [s.entry.session_id for s in plan.pruned] == ["src"]


def test_unfinished_children_keep_their_parent(tmp_path: Path) -> None:
    """A parent whose delegated child is unfinished (killed, paused) is kept unless named; a
    child that finished does not hold it."""
    _session(tmp_path, "parent", age_days=40)
    _session(tmp_path, "child", kind=StopKind.PAUSED, parent="parent")
    plan = plan_prune(tmp_path, older_than=timedelta(days=30))
    assert plan.pruned == ()
    assert plan.held[0].held is not None
    assert "unfinished child (paused) child" in plan.held[0].held
    _session(tmp_path, "parent2", age_days=40)
    _session(tmp_path, "child2", kind=StopKind.COMPLETED, parent="parent2")
    plan = plan_prune(tmp_path, older_than=timedelta(days=30))
    assert [s.entry.session_id for s in plan.pruned] == ["parent2"]


def test_a_live_session_is_never_pruned(tmp_path: Path) -> None:
    """A writer holds it: kept, even when named."""
    _session(tmp_path, "idle", age_days=40)
    with RolloutWriter.create(tmp_path, session_id="live") as w:
        old = time.time() - 40 * DAY
        os.utime(w.path, (old, old))
        plan = plan_prune(tmp_path, named=[w.path])
        assert plan.pruned == ()
        assert plan.held[0].held == "a writer has it open: it is a live session"
        w.stop(StopKind.PAUSED)


def test_restore_brings_a_session_back_where_it_was(tmp_path: Path) -> None:
    """restore moves it back to its path, logged; its forks replay whole again."""
    src = _session(tmp_path, "src", sub="deep/er")
    content = src.read_bytes()
    with RolloutWriter.fork(src, tmp_path, session_id="fork") as f:
        f.stop(StopKind.PAUSED)
    prune(tmp_path, named=[src])
    assert not read_replay(f.path, root=tmp_path).verified
    back = restore(tmp_path, "sr", command=["rollout", "restore", "sr"])
    assert back == src
    assert back.read_bytes() == content
    assert read_replay(f.path, root=tmp_path).verified
    actions = [(e.action, e.path) for e in read_audit(tmp_path)[0]]
    assert actions == [("prune", f"deep/er/{src.name}"), ("restore", f"deep/er/{src.name}")]
    assert trash_problems(tmp_path) == []


def test_restore_never_overwrites(tmp_path: Path) -> None:
    """A file standing where the session was: restore refuses, and the trash keeps it."""
    src = _session(tmp_path, "src")
    prune(tmp_path, named=[src])
    src.write_bytes(b"someone else's file\n")
    with pytest.raises(TrashError, match="exists again"):
        restore(tmp_path, "src")
    assert (trash_files(tmp_path) / src.name).is_file()
    with pytest.raises(SessionNotFoundError):
        restore(tmp_path, "nothing-like-it")


def test_emptying_the_trash_is_the_only_deletion_and_is_logged(tmp_path: Path) -> None:
    """Only what was pruned longer ago than asked is deleted, each after a logged line."""
    a = _session(tmp_path, "a")
    b = _session(tmp_path, "b")
    prune(tmp_path, named=[a])
    pruned_at = read_audit(tmp_path)[0][0].at
    prune(tmp_path, named=[b], command=["later"])
    # b was pruned 20 days after a (its line says so); 31 days after a, only a is due.
    log = tmp_path / ".trash" / "audit.jsonl"
    first, second = log.read_bytes().splitlines(keepends=True)
    when = (pruned_at + timedelta(days=20)).isoformat().replace("+00:00", "Z").encode()
    second = second.replace(second.split(b'"at":"')[1].split(b'"')[0], when)
    log.write_bytes(first + second)
    later = pruned_at + timedelta(days=31)
    assert len(empty_trash(tmp_path, older_than=timedelta(days=30), dry_run=True, at=later)) == 1
    assert len(list(trash_files(tmp_path).iterdir())) == 2
    gone = empty_trash(tmp_path, older_than=timedelta(days=30), at=later, command=["x"])
    assert [p.name for p, _ in gone] == [a.name]
    assert sorted(p.name for p in trash_files(tmp_path).iterdir()) == [b.name]
    delete = read_audit(tmp_path)[0][-1]
    assert delete.action == "delete"
    assert delete.session_id == "a"
    assert delete.digest is not None
    assert delete.command == ("x",)
    assert trash_problems(tmp_path) == []


def test_two_prunes_at_once_the_second_fails_clearly(tmp_path: Path) -> None:
    """While one prune holds the trash, another fails at once, naming the holder; nothing
    was done."""
    path = _session(tmp_path, "a", age_days=40)
    with trash_lock(tmp_path), pytest.raises(TrashError, match=f"process {os.getpid()}"):
        prune(tmp_path, older_than=timedelta(days=30))
    assert path.exists()
    prune(tmp_path, older_than=timedelta(days=30))
    assert not path.exists()


def test_a_torn_audit_line_is_ended_never_removed(tmp_path: Path) -> None:
    """A line cut by a kill is skipped when read, and the next line starts on its own line."""
    a = _session(tmp_path, "a")
    log = tmp_path / ".trash" / "audit.jsonl"
    log.parent.mkdir()
    log.write_bytes(b'{"action":"prune","at":"2026-')
    prune(tmp_path, named=[a])
    entries, bad = read_audit(tmp_path)
    assert bad == 1
    assert [e.session_id for e in entries] == ["a"]
    assert log.read_bytes().startswith(b'{"action":"prune","at":"2026-\n{')


def test_a_logged_prune_of_a_file_that_changed_is_cancelled(tmp_path: Path) -> None:
    """The next run finds a logged prune whose file changed since: it leaves the file, and a
    cancel line says why; the log and the trash agree."""
    a = _session(tmp_path, "a")

    def killed(*_: object) -> None:
        raise SystemExit(9)  # the process dies between the audit line and the move

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("replay.retention.move_file", killed)
        with pytest.raises(SystemExit):
            prune(tmp_path, named=[a])
    a.write_bytes(a.read_bytes() + b"\n")
    prune(tmp_path, older_than=timedelta(days=365))
    assert a.exists()
    assert [e.action for e in read_audit(tmp_path)[0]] == ["prune", "cancel"]
    assert "changed" in read_audit(tmp_path)[0][1].why
    assert trash_problems(tmp_path) == []
