"""Which degradations are damage (issue 11, item 13): each kind pinned, default-deny."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger import Degradation, DegradationKind, Message, StopKind, is_damage
from ledger.damage import NOT_DAMAGE
from replay import Verdict, read_replay, verify_replay
from replay.cli import cli
from rollout_files import RolloutBuilder, conversation

# Written out kind by kind, so that moving one kind across the line turns a case red.
DAMAGE = {
    DegradationKind.UNPARSEABLE_LINE: True,
    DegradationKind.INVALID_UTF8: True,
    DegradationKind.TORN_TAIL: True,
    DegradationKind.LINE_TOO_LONG: True,
    DegradationKind.UNKNOWN_RECORD: False,
    DegradationKind.UNKNOWN_FIELD: False,
    DegradationKind.NEWER_FORMAT: False,
    DegradationKind.SEQUENCE_GAP: True,
    DegradationKind.SEQUENCE_DUPLICATE: True,
    DegradationKind.META_NOT_FIRST: True,
    DegradationKind.META_REPEATED: True,
    DegradationKind.MISSING_META: True,
    DegradationKind.ORPHAN_REASONING: True,
    DegradationKind.REBUILT_FROM_COMPACTED: False,
    DegradationKind.MESSAGE_CAP: False,
    DegradationKind.NO_CHECKPOINT: False,
    DegradationKind.DIGEST_MISMATCH: True,
    DegradationKind.AFTER_CHECKPOINT: False,
    DegradationKind.REWIND_UNRESOLVED: True,
    DegradationKind.FORK_SOURCE_MISSING: True,
    DegradationKind.FORK_SOURCE_MOVED: False,
    DegradationKind.FORK_SOURCE_CHANGED: True,
    DegradationKind.FORK_LINEAGE_LOOP: True,
}


def test_the_table_names_every_kind() -> None:
    """A kind added to DegradationKind must be placed in the table above (and decided)."""
    assert set(DAMAGE) == set(DegradationKind)


@pytest.mark.parametrize("kind", list(DegradationKind))
def test_each_kind_is_damage_or_not_as_decided(kind: DegradationKind) -> None:
    """is_damage answers for the kind, its string, and a degradation of that kind alike."""
    expected = DAMAGE[kind]
    assert is_damage(kind) is expected
    assert is_damage(str(kind)) is expected
    assert is_damage(Degradation(kind=kind, detail="x")) is expected
    assert (kind not in NOT_DAMAGE) is expected


def test_an_unknown_kind_is_damage() -> None:
    """Default-deny: a kind this library does not know (a newer writer's) fails verification."""
    assert is_damage("kind_from_the_future")


def test_a_garbage_line_is_damage_even_when_the_digest_verifies(tmp_path: Path) -> None:
    """A garbage line between intact records leaves the digest intact, yet the verdict fails."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    b.lines.insert(3, b"not a record at all\n")
    path = b.write()
    rep = read_replay(path, whole_file=True)
    assert rep.verified
    assert [d.kind for d in rep.degraded] == [DegradationKind.UNPARSEABLE_LINE]
    assert verify_replay(rep).verdict is Verdict.FAILED
    assert rep.damage == rep.degraded
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "verify", str(path)])
    assert result.exit_code == 1
    assert result.stdout.startswith("FAILED")


def test_inexact_but_undamaged_is_unverified_and_exact_is_ok(tmp_path: Path) -> None:
    """No checkpoint yet: unverified, nothing damaged; a clean pause: ok."""
    running = RolloutBuilder(tmp_path, session_id="run").extend(conversation()).write()
    rep = read_replay(running)
    assert verify_replay(rep).verdict is Verdict.UNVERIFIED
    assert rep.damage == ()
    paused = RolloutBuilder(tmp_path, session_id="ok").extend(conversation())
    clean = read_replay(paused.stop(StopKind.PAUSED).write())
    assert verify_replay(clean).verdict is Verdict.OK
    assert verify_replay(clean).reasons == ()


def test_a_session_being_written_is_unverified_not_failed(tmp_path: Path) -> None:
    """verify on a file a live writer holds, caught mid-write, says unverified, never failed."""
    from ledger import RolloutWriter
    from ledger.locking import writer_active
    from ledger.testing import abandon, hold

    w = RolloutWriter.create(tmp_path)
    with hold(w):
        w.append(Message(role="user", content="hello"))
        w.drain()
        with w.path.open("ab") as f:  # as a batch half written when the reader looks
            f.write(b'{"type":"message","seq":3,')
        assert writer_active(w.path)
        rep = read_replay(w.path, whole_file=True)
        assert verify_replay(rep, live=True).verdict is Verdict.UNVERIFIED
        assert verify_replay(rep).verdict is Verdict.FAILED
    abandon(w)


def test_writer_active_sees_only_a_live_writer(tmp_path: Path) -> None:
    """The lock probe says yes while a writer holds the file and no after it closed."""
    from ledger import RolloutWriter
    from ledger.locking import writer_active

    w = RolloutWriter.create(tmp_path)
    assert writer_active(w.path)
    assert not writer_active(tmp_path / "missing.jsonl")
    w.close()
    assert not writer_active(w.path)
    # The probe never makes a writer fail: it holds a shared lock only for an instant.
    for _ in range(10):
        assert writer_active(w.path) is False
        RolloutWriter.open(w.path, durability="os").close()
