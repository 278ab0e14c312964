"""Rewind (ADR 0131): a record that truncates the conversation to its state at an earlier
record, applied by replay without losing the later records from the file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings

import strategies as s
from ledger import (
    DegradationKind,
    Message,
    MessageRecord,
    ReadBackError,
    Reasoning,
    Rewind,
    RolloutWriter,
    StopKind,
    checkpoint_digest,
    decode_record,
    encode_line,
)
from ledger.history import RewindTargets, rewind_problem
from ledger.reader import rebuild
from replay import fold, read_replay, transcript
from rollout_files import RolloutBuilder

TS = datetime(2026, 12, 3, 9, 0, 0, tzinfo=UTC)


def _said(n: int, tag: str = "") -> list[Message]:
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"{tag}{i}") for i in range(n)
    ]


def _contents(messages: tuple[Message, ...] | list[Message]) -> list[object]:
    return [m.content for m in messages]


def test_a_rewind_continues_from_the_state_at_its_record(tmp_path: Path) -> None:
    """After rewind(to=5) the conversation is the messages of records 2..5, then what follows;
    the abandoned messages stay in the file and in `Replay.abandoned`."""
    with RolloutWriter.create(tmp_path, session_id="r") as w:
        for m in _said(6):  # seqs 2..7
            w.append(m)
        w.rewind(to=5, reason="try again")  # seq 8
        w.append(Message(role="assistant", content="second try"))
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert _contents(rep.messages) == ["0", "1", "2", "3", "second try"]
    assert rep.verified
    assert rep.degraded == ()
    assert [(a.message.content, a.seq, a.rewind_seq, a.position) for a in rep.abandoned] == [
        ("4", 6, 8, 4),
        ("5", 7, 8, 4),
    ]
    assert rep.checkpoint is not None
    assert rep.checkpoint.digest == checkpoint_digest(rep.messages)
    assert b'"type":"rewind"' in w.path.read_bytes()


def test_abandoned_turns_are_shown_in_file_order_after_nested_rewinds(tmp_path: Path) -> None:
    """A second rewind reaching further back than the first: every abandoned message is shown
    once, in the order of the file, after the messages kept before it."""
    with RolloutWriter.create(tmp_path) as w:
        for c in "abc":  # seqs 2, 3, 4
            w.append(Message(role="user", content=c))
        w.rewind(to=3)  # seq 5: abandons c
        for c in "de":  # seqs 6, 7
            w.append(Message(role="user", content=c))
        w.rewind(to=2)  # seq 8: abandons b, d, e
        w.append(Message(role="user", content="f"))
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert _contents(rep.messages) == ["a", "f"]
    assert [(e.message.content, e.abandoned_by) for e in transcript(rep)] == [
        ("a", None),
        ("b", 8),
        ("c", 5),
        ("d", 8),
        ("e", 8),
        ("f", None),
    ]


def test_rewinding_to_a_compaction_keeps_all_of_its_messages(tmp_path: Path) -> None:
    """A compaction's messages all carry its seq: the state at it is every one of them."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="before"))  # seq 2
        w.compacted(_said(3, "c"))  # seq 3
        w.append(Message(role="user", content="after"))  # seq 4
        w.rewind(to=3)
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert _contents(rep.messages) == ["c0", "c1", "c2"]
    assert [(a.message.content, a.seq) for a in rep.abandoned] == [("after", 4)]
    assert rep.verified


def test_rewinding_to_the_session_meta_empties_the_conversation(tmp_path: Path) -> None:
    """Seq 1 is the start: the conversation continues from nothing."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="a"))
        w.rewind(to=1)
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.messages == ()
    assert rep.verified


def test_reasoning_blocks_rewind_with_their_message(tmp_path: Path) -> None:
    """The conversation at a reasoning record has only the messages complete there: rewinding to
    a reasoning block drops its message; rewinding to the message keeps both."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="q"))  # seq 2
        w.append(Message(role="assistant", content="x", reasoning=(Reasoning(text="t"),)))  # 3, 4
        w.rewind(to=4)
        w.stop(StopKind.PAUSED)
    kept = read_replay(w.path)
    assert _contents(kept.messages) == ["q", "x"]
    assert kept.messages[1].reasoning
    with RolloutWriter.open(w.path) as w2:
        w2.rewind(to=3)
        w2.stop(StopKind.PAUSED)
    assert _contents(read_replay(w.path).messages) == ["q"]


@pytest.mark.parametrize(
    ("to", "why"),
    [
        (0, "before the start"),
        (-3, "before the start"),
        (9, "not before the rewind"),
        (50, "not before the rewind"),
        (3, "before the last compaction"),
        (7, "abandoned by the rewind at seq 8"),
    ],
)
def test_a_rewind_outside_the_conversation_is_refused_and_writes_nothing(
    tmp_path: Path, to: int, why: str
) -> None:
    """Past the start, into the future, into a compacted range or an abandoned one: ValueError
    saying why, and the file is unchanged."""
    w = RolloutWriter.create(tmp_path)
    w.append(Message(role="user", content="a"))  # 2
    w.append(Message(role="user", content="b"))  # 3
    w.compacted([Message(role="user", content="summary")])  # 4
    for m in _said(3):  # 5, 6, 7
        w.append(m)
    w.rewind(to=5)  # 8: abandons 6 and 7
    w.drain()
    before = w.path.read_bytes()
    with pytest.raises(ValueError, match=why):
        w.rewind(to=to)
    w.drain()
    assert w.path.read_bytes() == before
    w.stop(StopKind.PAUSED)
    w.close()


def test_rewind_refuses_what_is_not_a_seq(tmp_path: Path) -> None:
    """A seq is an int (not a bool, str or float) and a reason a str."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="a"))
        for bad in ("2", 2.0, True, None):
            with pytest.raises(TypeError, match="rewind"):
                w.rewind(to=bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="reason"):
            w.rewind(to=1, reason=3)  # type: ignore[arg-type]


def test_a_reopened_writer_knows_what_was_abandoned(tmp_path: Path) -> None:
    """The rules come from the file: after open(), a rewind into a range an earlier rewind
    abandoned, or before the last compaction, is still refused."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="a"))  # 2
        w.compacted([Message(role="user", content="s")])  # 3
        for m in _said(3):  # 4, 5, 6
            w.append(m)
        w.rewind(to=4)  # 7
        w.stop(StopKind.PAUSED)
    with RolloutWriter.open(w.path) as again:
        with pytest.raises(ValueError, match="abandoned"):
            again.rewind(to=5)
        with pytest.raises(ValueError, match="compaction"):
            again.rewind(to=2)
        again.rewind(to=3)
        again.stop(StopKind.PAUSED)
    assert _contents(read_replay(w.path).messages) == ["s"]


def test_the_reducer_ignores_a_rewind_it_cannot_apply_and_says_so() -> None:
    """A rewind to a record outside the conversation (a forged file) is damage, never applied."""
    b = RolloutBuilder(Path("."), session_id="x").add(*_said(3))
    recs = [
        Rewind(seq=5, ts=TS, to=9),
        MessageRecord(seq=6, ts=TS, message=Message(role="user", content="after")),
    ]
    lines = [*b.lines, *(encode_line(r) for r in recs)]
    state = fold([decode_record(line) for line in lines])
    assert _contents(state.messages) == ["0", "1", "2", "after"]
    (bad,) = state.degraded
    assert bad.kind is DegradationKind.REWIND_UNRESOLVED
    assert bad.is_damage
    assert "seq 9 is not before the rewind" in bad.detail


def test_the_writer_never_checkpoints_a_rewind_the_reader_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the writer's check and the reducer's ever to disagree, the read-back catches it: no
    checkpoint, a failed terminal, ReadBackError (ADR 0052)."""
    w = RolloutWriter.create(tmp_path)
    w.append(Message(role="user", content="a"))
    monkeypatch.setattr(RewindTargets, "problem", lambda self, to, at: None)
    w.rewind(to=0)
    with pytest.raises(ReadBackError, match="rewind"):
        w.stop(StopKind.PAUSED)
    w.close()
    rep = read_replay(w.path)
    assert rep.checkpoint is None
    assert not rep.verified


def test_the_window_after_a_compaction_rewinds_as_the_whole_file_does(tmp_path: Path) -> None:
    """Replay reads only the window after the last compaction; rewinds in it give the same
    conversation and the same abandoned messages as a whole-file read."""
    with RolloutWriter.create(tmp_path) as w:
        for m in _said(4):
            w.append(m)
        w.rewind(to=3)
        w.compacted(_said(2, "c"))
        for m in _said(3, "n"):
            w.append(m)
        w.rewind(to=w.next_seq - 2)
        w.append(Message(role="user", content="z"))
        w.stop(StopKind.PAUSED)
    window, whole = read_replay(w.path), read_replay(w.path, whole_file=True)
    assert window.messages == whole.messages
    assert window.abandoned == whole.abandoned
    assert _contents(window.messages) == ["c0", "c1", "n0", "n1", "z"]
    assert window.verified
    assert whole.verified


def test_rewind_problem_is_the_one_rule() -> None:
    """The writer and the reducer ask the same function: its answers, case by case."""
    assert rewind_problem(1, 2, 1) is None
    assert rewind_problem(4, 9, 4, [(5, 8)]) is None
    assert rewind_problem(5, 9, 4, [(5, 8)]) is None  # the target of a rewind is kept
    assert rewind_problem(8, 9, 4, [(5, 8)]) is None  # so is the rewind record itself
    assert rewind_problem(6, 9, 4, [(5, 8)]) is not None
    assert rewind_problem(3, 9, 4) is not None
    assert rewind_problem(9, 9, 4) is not None
    assert rewind_problem(0, 9, 1) is not None


def _model(ops: list[s.HistoryOp]) -> tuple[list[Message], list[Message]]:
    """The plain model: a list of (seq, message) truncated by each rewind; what it drops since
    the last compaction, in file order."""
    items: list[tuple[int, Message]] = []
    dropped: list[tuple[int, Message]] = []
    seq = 2
    for kind, arg in ops:
        if kind == "append":
            seq += len(arg.reasoning)
            items.append((seq, arg))
            seq += 1
        elif kind == "compact":
            items = [(seq, m) for m in arg]
            dropped = []
            seq += 1
        elif kind == "rewind":
            dropped += [(q, m) for q, m in items if q > arg]
            items = [(q, m) for q, m in items if q <= arg]
            seq += 1
        else:
            seq += 2
    return [m for _, m in items], [m for _, m in sorted(dropped, key=lambda x: x[0])]


@settings(max_examples=30)
@given(ops=s.history_programs())
def test_any_history_replays_as_a_list_that_is_truncated(
    tmp_path_factory: pytest.TempPathFactory, ops: list[s.HistoryOp]
) -> None:
    """For any sequence of appends, rewinds, compactions and stops, replay equals a plain list
    model that truncates on rewind; the checkpoint verifies it, and the whole-file read and the
    window agree."""
    root = tmp_path_factory.mktemp("rewind")
    with RolloutWriter.create(root) as w:
        for kind, arg in ops:
            if kind == "append":
                w.append(arg)
            elif kind == "compact":
                w.compacted(arg)
            elif kind == "rewind":
                w.rewind(to=arg)
            else:
                w.stop(StopKind.PAUSED)
        w.stop(StopKind.PAUSED)
    expected, dropped = _model(ops)
    rep = read_replay(w.path)
    assert list(rep.messages) == expected
    assert [a.message for a in rep.abandoned] == dropped
    assert rep.verified, rep.degraded
    assert rebuild(w.path).messages == rep.messages
