"""Retention's guards (ADR 0133, ADR 0157): a live session is never moved or deleted, the audit
log is never trusted beyond the trash, the trash's bytes are checked against the log, and odd
files (FIFOs, links, names that are not UTF-8) are left alone with a reason."""

from __future__ import annotations

import errno
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import replay.retention as retention
from ledger import Message, RolloutWriter, StopKind
from ledger.digest import file_sha256
from replay import list_sessions
from replay.retention import empty_trash, prune, restore, trash_problems
from replay.trash import (
    AuditEntry,
    TrashError,
    append_audit,
    read_audit,
    trash_dir,
    trash_files,
)


def _session(root: Path, sid: str, *, kind: StopKind = StopKind.PAUSED) -> Path:
    with RolloutWriter.create(root, session_id=sid, durability="os") as w:
        w.append(Message(role="user", content=f"hello from {sid}"))
        w.stop(kind)
    return w.path


def _sha(path: Path) -> str:
    with open(path, "rb") as f:
        return file_sha256(f)[0]


def _log_prune(root: Path, path: Path) -> None:
    """The audit line a prune killed before its move leaves."""
    append_audit(
        root,
        AuditEntry(
            action="prune",
            at=datetime.now(UTC),
            path=path.name,
            trash_path=f".trash/files/{path.name}",
            session_id="x",
            digest=_sha(path),
            size=path.stat().st_size,
        ),
    )


def test_a_session_resumed_after_the_plan_is_not_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that takes a session up between the prune's plan and its move keeps it in place:
    the prune holds it back with the reason and logs nothing for it."""
    path = _session(tmp_path, "busy")
    writers: list[RolloutWriter] = []
    real_plan = retention.plan_prune

    def plan_then_resume(*args: object, **kw: object) -> retention.PrunePlan:
        plan = real_plan(*args, **kw)  # type: ignore[arg-type]
        writers.append(RolloutWriter.open(path))
        return plan

    monkeypatch.setattr(retention, "plan_prune", plan_then_resume)
    plan = prune(tmp_path, named=[path])
    writers[0].close()
    assert plan.pruned == ()
    assert "a writer has it open" in (plan.held[0].held or "")
    assert path.is_file()
    assert read_audit(tmp_path)[0] == []


def test_recover_never_moves_a_session_a_writer_took_up(tmp_path: Path) -> None:
    """A prune killed after its line leaves the move to the next run; if a writer holds the
    session by then, the move is cancelled in the log and the file stays where the writer is."""
    victim = _session(tmp_path, "victim")
    other = _session(tmp_path, "other", kind=StopKind.COMPLETED)
    _log_prune(tmp_path, victim)
    with RolloutWriter.open(victim):
        prune(tmp_path, named=[other])
        assert victim.is_file()
    assert [e.action for e in read_audit(tmp_path)[0]][:2] == ["prune", "cancel"]
    assert "a writer has it open" in read_audit(tmp_path)[0][1].why
    assert trash_problems(tmp_path) == []


def test_emptying_leaves_a_file_a_writer_holds(tmp_path: Path) -> None:
    """A writer holding a file in the trash keeps it: emptying says so and deletes nothing."""
    path = _session(tmp_path, "held")
    prune(tmp_path, named=[path])
    inside = trash_files(tmp_path) / path.name
    kept: list[tuple[Path, str]] = []
    with RolloutWriter.open(inside):
        gone = empty_trash(
            tmp_path, older_than=timedelta(0), on_kept=lambda p, w: kept.append((p, w))
        )
    assert gone == []
    assert inside.is_file()
    assert kept
    assert "a writer has it open" in kept[0][1]


def test_a_hand_edited_audit_line_deletes_nothing(tmp_path: Path) -> None:
    """A ``delete`` line naming a live session, or a file outside the root through ``..``, is
    never acted upon; trash_problems names it."""
    live = _session(tmp_path / "root", "live")
    root = live.parent
    outside = tmp_path / "precious.txt"
    outside.write_text("not a rollout")
    trash_dir(root).mkdir()
    with open(trash_dir(root) / "audit.jsonl", "a") as f:
        for trash_path in (live.name, "../precious.txt", ".trash/files/../../precious.txt"):
            line = {"action": "delete", "at": "2026-01-01T00:00:00Z", "path": "x"}
            f.write(json.dumps({**line, "trash_path": trash_path}) + "\n")
    prune(root, stop_kinds={"failed"})
    assert live.is_file()
    assert outside.is_file()
    assert len(trash_problems(root)) == 3


def test_a_delete_line_removes_only_the_bytes_it_logged(tmp_path: Path) -> None:
    """A logged deletion finished by the next run removes the file only if it still holds the
    bytes the line names; otherwise it is cancelled and the file kept."""
    path = _session(tmp_path, "s")
    prune(tmp_path, named=[path])
    inside = trash_files(tmp_path) / path.name
    entry = read_audit(tmp_path)[0][0]
    append_audit(tmp_path, AuditEntry(**{**_fields(entry), "action": "delete"}))
    inside.write_bytes(inside.read_bytes() + b"\n")  # changed since
    prune(tmp_path, stop_kinds={"failed"})
    assert inside.is_file()
    assert read_audit(tmp_path)[0][-1].action == "cancel"


def _fields(e: AuditEntry) -> dict[str, object]:
    return {f: getattr(e, f) for f in e.__struct_fields__}


def test_restore_refuses_bytes_that_changed_in_the_trash(tmp_path: Path) -> None:
    """A file changed while in the trash is not restored (it is not what was pruned), and
    trash_problems says so."""
    path = _session(tmp_path, "s")
    prune(tmp_path, named=[path])
    inside = trash_files(tmp_path) / path.name
    inside.write_bytes(inside.read_bytes().replace(b"hello", b"HELLO"))
    assert any("not those pruned" in p for p in trash_problems(tmp_path))
    with pytest.raises(TrashError, match="not what was pruned"):
        restore(tmp_path, "s")
    assert inside.is_file()
    assert not path.exists()


def test_emptying_keeps_bytes_that_changed_in_the_trash(tmp_path: Path) -> None:
    """Emptying never deletes a file whose bytes are not those its prune logged: it is kept,
    and the reason heard names both digests and what the operator may do."""
    path = _session(tmp_path, "s")
    prune(tmp_path, named=[path])
    inside = trash_files(tmp_path) / path.name
    inside.write_bytes(inside.read_bytes().replace(b"hello", b"HELLO"))
    kept: list[tuple[Path, str]] = []
    later = datetime.now(UTC) + timedelta(days=2)
    gone = empty_trash(
        tmp_path, older_than=timedelta(days=1), at=later, on_kept=lambda p, w: kept.append((p, w))
    )
    assert gone == []
    assert inside.is_file()
    assert len(kept) == 1
    assert kept[0][0] == inside
    assert "is not what was pruned" in kept[0][1]
    assert "remove it by hand" in kept[0][1]
    assert file_sha256(inside.read_bytes())[0] in kept[0][1]


def test_emptying_without_a_prune_on_record_counts_from_the_move(tmp_path: Path) -> None:
    """A file in the trash whose prune line is gone (a rotated log) is as old as its last
    status change, never deleted at once whatever --older-than says."""
    path = _session(tmp_path, "s")
    prune(tmp_path, named=[path])
    (trash_dir(tmp_path) / "audit.jsonl").rename(trash_dir(tmp_path) / "audit.jsonl.1")
    assert empty_trash(tmp_path, older_than=timedelta(days=3650)) == []
    assert (trash_files(tmp_path) / path.name).is_file()
    later = datetime.now(UTC) + timedelta(days=2)
    assert len(empty_trash(tmp_path, older_than=timedelta(days=1), at=later)) == 1


def test_a_move_that_fails_is_reported_and_blocks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A move the trash cannot take (no space) leaves the session in place, reported failed
    with the reason and cancelled in the log; the next prune, restore or emptying runs."""
    big = _session(tmp_path, "big")
    small = _session(tmp_path, "small")

    def no_space(src: Path, dst: Path, digest: str) -> None:
        if src.name == big.name:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_move(src, dst, digest)

    real_move = retention.move_file
    monkeypatch.setattr(retention, "move_file", no_space)
    plan = prune(tmp_path, stop_kinds={"paused"})
    monkeypatch.undo()
    assert [s.entry.session_id for s in plan.pruned] == ["small"]
    assert "No space left on device" in (plan.failed[0].held or "")
    assert big.is_file()
    assert empty_trash(tmp_path, older_than=timedelta(0))
    assert not small.exists()
    assert trash_problems(tmp_path) == []


def test_a_path_that_is_not_utf8_is_kept_with_the_reason(tmp_path: Path) -> None:
    """A session under a folder whose name is not UTF-8 is kept (the log cannot record its
    path), and the others are pruned; the command line is logged with the byte escaped."""
    ok = _session(tmp_path, "ok")
    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    odd = _session(Path(os.fsdecode(folder)), "odd")
    plan = prune(tmp_path, stop_kinds={"paused"}, command=["rollout", os.fsdecode(folder)])
    assert [s.entry.session_id for s in plan.pruned] == ["ok"]
    assert "not valid UTF-8" in (plan.held[0].held or "")
    assert odd.is_file()
    assert not ok.exists()
    assert read_audit(tmp_path)[0][0].command[1].endswith("caf\\xe9")


def test_a_fifo_where_the_log_names_a_file_never_blocks(tmp_path: Path) -> None:
    """A FIFO standing where a logged prune's file was is not opened for reading: the line is
    cancelled and the run goes on."""
    path = _session(tmp_path, "s")
    _log_prune(tmp_path, path)
    path.unlink()
    os.mkfifo(path)
    prune(tmp_path, stop_kinds={"failed"})
    assert read_audit(tmp_path)[0][-1].action == "cancel"


def test_a_symbolic_link_to_a_session_is_left_alone(tmp_path: Path) -> None:
    """A link to a session is not moved (the file it names is); it is kept with the reason."""
    path = _session(tmp_path / "real", "s")
    (tmp_path / "alias").mkdir()
    link = tmp_path / "alias" / path.name
    link.symlink_to(path)
    plan = prune(tmp_path, stop_kinds={"paused"})
    assert [s.entry.path for s in plan.pruned] == [path]
    assert "symbolic link" in (plan.held[0].held or "")


def test_an_audit_time_without_a_zone_is_utc(tmp_path: Path) -> None:
    """A line whose time has no zone is read as UTC, not a crash of the next emptying."""
    path = _session(tmp_path, "s")
    prune(tmp_path, named=[path])
    log = trash_dir(tmp_path) / "audit.jsonl"
    line = json.loads(log.read_text())
    line["at"] = "2000-01-01T00:00:00"
    log.write_text(json.dumps(line) + "\n")
    assert read_audit(tmp_path)[0][0].at == datetime(2000, 1, 1, tzinfo=UTC)
    assert len(empty_trash(tmp_path, older_than=timedelta(days=1))) == 1


def test_a_path_pruned_twice_is_kept_the_second_time(tmp_path: Path) -> None:
    """A session at a path the trash already holds (re-imported since) is kept with the reason,
    before any line is logged."""
    path = _session(tmp_path, "s")
    prune(tmp_path, named=[path])
    copy = (trash_files(tmp_path) / path.name).read_bytes()
    path.write_bytes(copy.replace(b"hello", b"HELLO"))  # imported again, not the same bytes
    plan = prune(tmp_path, named=[path])
    assert "already holds a session pruned from" in (plan.held[0].held or "")
    assert [e.action for e in read_audit(tmp_path)[0]] == ["prune"]


def test_naming_a_file_that_is_no_session_is_an_error(tmp_path: Path) -> None:
    """A named path that the listing does not show (outside the root, not a rollout) is an
    error, never a silent prune of nothing."""
    _session(tmp_path, "s")
    stray = tmp_path.parent / f"{tmp_path.name}-passwd"
    stray.write_text("root:x:0:0")
    with pytest.raises(TrashError, match="is not a session under"):
        prune(tmp_path, named=[stray])
    assert list_sessions(tmp_path)
