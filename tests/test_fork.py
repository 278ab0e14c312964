"""Fork (ADR 0130): a new session that continues another's conversation from a record, by
reference: replay reads the source up to the fork point and checks it against the digest the
fork recorded."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ledger import (
    DegradationKind,
    ForkError,
    Message,
    RolloutWriter,
    StopKind,
    checkpoint_digest,
)
from replay import read_replay


def _said(n: int, tag: str = "") -> list[Message]:
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"{tag}{i}") for i in range(n)
    ]


def _contents(messages: tuple[Message, ...]) -> list[object]:
    return [m.content for m in messages]


def _source(root: Path, n: int = 4, *, session_id: str = "src", tag: str = "s") -> Path:
    with RolloutWriter.create(root, session_id=session_id, agent_name="coder") as w:
        for m in _said(n, tag):
            w.append(m)
        w.stop(StopKind.PAUSED)
    return w.path


def _kinds(rep: object) -> list[DegradationKind]:
    return [d.kind for d in rep.degraded]  # type: ignore[attr-defined]


def test_a_fork_continues_the_source_without_copying_it(tmp_path: Path) -> None:
    """The fork's file holds its own records only; replay gives the source's conversation at the
    fork point, then the fork's, verified."""
    src = _source(tmp_path, 4)  # messages at seqs 2..5
    with RolloutWriter.fork(src, at=3) as f:
        f.append(Message(role="assistant", content="other answer"))
        f.stop(StopKind.PAUSED)
    data = f.path.read_bytes()
    assert b"s0" not in data
    assert b"s1" not in data
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["s0", "s1", "other answer"]
    assert rep.verified
    assert rep.degraded == ()
    assert rep.meta is not None
    origin = rep.meta.fork
    assert origin is not None
    assert (origin.session_id, origin.seq, origin.message_count) == ("src", 3, 2)
    assert origin.digest == checkpoint_digest(_said(2, "s"))
    assert origin.path == src.name
    assert rep.meta.agent_name == "coder"
    assert rep.inherited is not None
    assert [(x.session_id, x.seq, x.messages, x.verified) for x in rep.inherited.links] == [
        ("src", 3, 2, True)
    ]


def test_a_fork_without_at_takes_the_whole_conversation(tmp_path: Path) -> None:
    """By default the fork point is the source's last record (after its stop point)."""
    src = _source(tmp_path, 3)
    with RolloutWriter.fork(src, tmp_path / "elsewhere", session_id="f") as f:
        f.stop(StopKind.PAUSED)
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["s0", "s1", "s2"]
    assert rep.verified
    assert rep.meta is not None
    assert rep.meta.fork is not None
    assert rep.meta.fork.path == f"../{src.name}"


def test_the_source_goes_on_unchanged_and_the_fork_does_not_see_it(tmp_path: Path) -> None:
    """Records the source appends after the fork point change nothing in the fork."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    with RolloutWriter.open(src) as w:
        w.append(Message(role="user", content="later"))
        w.stop(StopKind.PAUSED)
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["s0", "s1"]
    assert rep.verified


def test_a_missing_source_is_a_degradation_naming_it(tmp_path: Path) -> None:
    """No source anywhere: the fork's own part is replayed, the inherited part is reported
    missing (damage), and nothing is verified."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f") as f:
        f.append(Message(role="user", content="own"))
        f.stop(StopKind.PAUSED)
    src.unlink()
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["own"]
    assert not rep.verified
    (missing,) = rep.degraded
    assert missing.kind is DegradationKind.FORK_SOURCE_MISSING
    assert missing.is_damage
    assert "session src" in missing.detail


def test_a_source_moved_within_the_root_is_found_by_its_id(tmp_path: Path) -> None:
    """The recorded path no longer holds it: found by id under the root, reported as moved
    (not damage), and still verified by its digest."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    (tmp_path / "archive" / "2026").mkdir(parents=True)
    moved = tmp_path / "archive" / "2026" / src.name
    shutil.move(src, moved)
    rep = read_replay(f.path, root=tmp_path)
    assert _contents(rep.messages) == ["s0", "s1"]
    assert rep.verified
    assert _kinds(rep) == [DegradationKind.FORK_SOURCE_MOVED]
    assert rep.inherited is not None
    assert rep.inherited.links[0].path == moved
    assert rep.inherited.links[0].moved


def test_a_source_changed_before_the_fork_point_is_caught(tmp_path: Path) -> None:
    """An edit before the fork point: the digest the fork recorded no longer matches."""
    src = _source(tmp_path, 4)
    with RolloutWriter.fork(src, at=4, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    src.write_bytes(src.read_bytes().replace(b'"content":"s1"', b'"content":"S1"'))
    rep = read_replay(f.path)
    assert not rep.verified
    assert _kinds(rep) == [DegradationKind.FORK_SOURCE_CHANGED]
    assert "digest" in rep.degraded[0].detail


def test_a_source_changed_after_the_fork_point_changes_nothing(tmp_path: Path) -> None:
    """Only the records up to the fork point are read: an edit after it is not the fork's."""
    src = _source(tmp_path, 4)
    with RolloutWriter.fork(src, at=3, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    src.write_bytes(src.read_bytes().replace(b'"content":"s3"', b'"content":"S3"'))
    assert read_replay(f.path).verified


def test_a_source_cut_before_the_fork_point_is_caught(tmp_path: Path) -> None:
    """A source that now ends before the fork point is changed, and says where it ends."""
    src = _source(tmp_path, 4)
    with RolloutWriter.fork(src, at=5, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    lines = src.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:3]))
    rep = read_replay(f.path)
    assert _kinds(rep) == [DegradationKind.FORK_SOURCE_CHANGED]
    assert "ends at seq 3" in rep.degraded[0].detail


def test_a_recorded_path_outside_the_root_is_not_followed(tmp_path: Path) -> None:
    """With a root, the fork's recorded path may not lead out of it; the id search stays in it."""
    outside = tmp_path / "outside"
    root = tmp_path / "root"
    src = _source(outside, 2)
    with RolloutWriter.fork(src, root, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    assert read_replay(f.path).verified  # no root: the recorded path is followed
    rep = read_replay(f.path, root=root)
    assert _kinds(rep) == [DegradationKind.FORK_SOURCE_MISSING]


def test_a_fork_that_compacted_never_reads_its_source(tmp_path: Path) -> None:
    """After a compaction the fork's file holds its whole conversation: the source may go."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f") as f:
        f.compacted([Message(role="user", content="summary")])
        f.stop(StopKind.PAUSED)
    src.unlink()
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["summary"]
    assert rep.inherited is None
    assert DegradationKind.FORK_SOURCE_MISSING not in _kinds(rep)


def test_a_copied_fork_is_self_contained(tmp_path: Path) -> None:
    """copy=True writes the inherited conversation into the fork (as a compaction): it replays,
    verified, with its source gone, and still names its origin."""
    src = _source(tmp_path, 4)
    with RolloutWriter.fork(src, at=4, copy=True, session_id="f") as f:
        f.append(Message(role="user", content="own"))
        f.stop(StopKind.PAUSED)
    src.unlink()
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["s0", "s1", "s2", "own"]
    assert rep.verified
    assert rep.meta is not None
    assert rep.meta.fork is not None
    assert rep.meta.fork.copied
    assert rep.compactions == 1


def test_a_rewind_in_a_fork_keeps_what_it_inherited(tmp_path: Path) -> None:
    """Seq 1 of a fork is the inherited conversation: rewinding there drops only its own."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f") as f:
        f.append(Message(role="user", content="own"))
        f.rewind(to=1)
        f.append(Message(role="user", content="again"))
        f.stop(StopKind.PAUSED)
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["s0", "s1", "again"]
    assert rep.verified


def test_a_fork_resumes_like_any_session(tmp_path: Path) -> None:
    """open() on a fork continues it; its checkpoints cover its own part, replay the whole."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f") as f:
        f.append(Message(role="user", content="a"))
        f.stop(StopKind.PAUSED)
    with RolloutWriter.open(f.path) as again:
        again.append(Message(role="user", content="b"))
        again.stop(StopKind.PAUSED)
    rep = read_replay(f.path)
    assert _contents(rep.messages) == ["s0", "s1", "a", "b"]
    assert rep.verified
    assert rep.checkpoint is not None
    assert rep.checkpoint.message_count == 2


@pytest.mark.parametrize(
    ("at", "why"), [(0, "an int from 1"), (99, "end at seq 7"), (-1, "an int from 1")]
)
def test_a_fork_point_outside_the_source_is_refused(tmp_path: Path, at: int, why: str) -> None:
    """Before the start or after the end: ForkError, and no fork file is made."""
    src = _source(tmp_path, 4)
    with pytest.raises(ForkError, match=why):
        RolloutWriter.fork(src, at=at, session_id="f")
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_forking_what_is_not_a_rollout_is_refused(tmp_path: Path) -> None:
    """A missing file, a file without session_meta, a FIFO: each a ForkError saying so."""
    with pytest.raises(ForkError, match="no such file"):
        RolloutWriter.fork(tmp_path / "none.jsonl")
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    with pytest.raises(ForkError, match="no session_meta"):
        RolloutWriter.fork(notes)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ForkError, match="regular file"):
        RolloutWriter.fork(fifo)


def test_forking_a_damaged_source_is_refused(tmp_path: Path) -> None:
    """Damage before the fork point: ForkError naming it; a fork before the damage works."""
    src = _source(tmp_path, 4)
    lines = src.read_bytes().splitlines(keepends=True)
    lines[3] = b"{garbage\n"
    src.write_bytes(b"".join(lines))
    with pytest.raises(ForkError, match="damaged up to seq 5"):
        RolloutWriter.fork(src, at=5, session_id="f")
    with RolloutWriter.fork(src, at=3, session_id="g") as g:
        g.stop(StopKind.PAUSED)
    assert read_replay(g.path).verified


def test_a_copy_needs_every_source(tmp_path: Path) -> None:
    """A copy of a fork whose own source is gone is refused: it would copy a hole."""
    src = _source(tmp_path, 2)
    with RolloutWriter.fork(src, session_id="f1") as f1:
        f1.stop(StopKind.PAUSED)
    src.unlink()
    with pytest.raises(ForkError, match="cannot copy"):
        RolloutWriter.fork(f1.path, copy=True, session_id="f2")


def test_a_torn_last_line_is_not_forked(tmp_path: Path) -> None:
    """By default the fork point is the last complete record: a line a live writer is still
    writing (or a killed one tore) is left out, not taken for damage."""
    src = _source(tmp_path, 2)
    with open(src, "ab") as f:
        f.write(b'{"type":"message","seq":6,"ts":"2026-')
    with RolloutWriter.fork(src, session_id="f") as f2:
        f2.stop(StopKind.PAUSED)
    rep = read_replay(f2.path)
    assert _contents(rep.messages) == ["s0", "s1"]
    assert rep.meta is not None
    assert rep.meta.fork is not None
    assert rep.meta.fork.seq == 5
    with pytest.raises(ForkError, match="damaged"):
        RolloutWriter.fork(src, at=6, session_id="g")
