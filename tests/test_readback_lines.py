"""A stop reads back the writer's own lines without decoding them (ADR 0164).

The checkpoint it writes must be the one a typed fold of the whole file gives, whatever the
writer wrote; the bytes it folds must be those the writer wrote, or the typed read-back takes
over and says what is wrong.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings

import ledger.readback as readback
import ledger.readback_lines as readback_lines
import strategies as s
from ledger import (
    Message,
    ReadBackError,
    Reasoning,
    Role,
    RolloutWriter,
    StopKind,
    Turn,
)
from ledger.reader import rebuild
from read_back_spy import typed_read_backs_only
from replay import read_replay

_TS = datetime(2026, 1, 1, tzinfo=UTC)


def _user(i: int, **kw: Any) -> Message:
    return Message(role=Role.USER, content=f"question {i}", **kw)


def _thinking(i: int) -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=f"answer {i}",
        reasoning=(Reasoning(text=f"thought {i}", signature=f"sig-{i}"),),
    )


def _count_undecoded(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the read-backs that folded undecoded lines, and those that fell back."""
    seen = {"undecoded": 0, "typed": 0}
    real = readback._read_back_undecoded

    def spy(*args: Any) -> Any:
        out = real(*args)
        seen["undecoded" if out is not None else "typed"] += 1
        return out

    monkeypatch.setattr(readback, "_read_back_undecoded", spy)
    return seen


def _checkpoints_equal_the_whole_file(path: Path) -> None:
    whole = rebuild(path)
    assert whole.checkpoint is not None
    assert whole.checkpoint.digest == whole.at_checkpoint_digest
    assert whole.checkpoint.message_count == len(whole.at_checkpoint)


def _run(w: RolloutWriter, steps: list[tuple[str, Any]]) -> RolloutWriter:
    for op, value in steps:
        if op == "append":
            w.append(value)
        elif op == "note":
            w.note(value)
        elif op == "compact":
            w.compacted(value, summary="kept")
        elif op == "rewind":
            # A target this conversation does not allow is refused, and nothing is written.
            with contextlib.suppress(ValueError):
                w.rewind(max(1, w.next_seq - 1 - value))
        elif op == "reopen":
            w.close()
            w = RolloutWriter.open(w.path)
        else:
            w.stop(StopKind.PAUSED)
            _checkpoints_equal_the_whole_file(w.path)
    return w


@settings(max_examples=60, deadline=None)
@given(steps=s.writer_steps)
def test_every_checkpoint_is_the_whole_files_fold(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, Any]]
) -> None:
    """Whatever a writer wrote (any message, anchored or not, notes, compactions, rewinds,
    reopenings), each checkpoint's digest and count are those of the whole file folded from
    its first line, and the session replays verified."""
    w = RolloutWriter.create(tmp_path_factory.mktemp("steps"), session_id="steps")
    try:
        w = _run(w, steps)
        w.stop(StopKind.PAUSED)
        _checkpoints_equal_the_whole_file(w.path)
    finally:
        w.close()
    assert read_replay(w.path, whole_file=True).verified


@settings(max_examples=40, deadline=None)
@given(steps=s.writer_steps)
def test_the_undecoded_read_back_agrees_with_the_typed_one(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, Any]]
) -> None:
    """On the same file, from the same mark, both read-backs give the same digest, message
    count and mark, or the undecoded one declines."""
    w = RolloutWriter.create(tmp_path_factory.mktemp("agree"), session_id="agree")
    try:
        w = _run(w, [step for step in steps if step[0] not in ("stop", "reopen")])
        w.drain()
        own = w._q.own_records()  # type: ignore[attr-defined]
        last = w.next_seq - 1
        mark = w._mark  # type: ignore[attr-defined]
        fd = w._fd  # type: ignore[attr-defined]
        decode = w._decode  # type: ignore[attr-defined]
        typed = readback._read_back_typed(fd, own, last, mark)
        if decode is None:
            return
        undecoded = readback._read_back_undecoded(fd, own, last, mark, decode)
    finally:
        w.close()
    assert undecoded is not None, "the writer's own plain lines were not folded undecoded"
    assert typed[1] is None
    assert undecoded[0] == typed[0]
    u, t = undecoded[2], typed[2]
    assert (u.offset, u.crc, u.lines) == (t.offset, t.crc, t.lines)


def test_turns_of_messages_notes_and_compactions_are_read_back_undecoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn of messages (with reasoning, anchored or truncated), notes and a compaction is
    read back without decoding its lines (only the anchored message's and the compaction's are
    decoded); a rewind makes the stop decode."""
    seen = _count_undecoded(monkeypatch)
    decoded: list[bytes] = []
    real = readback_lines._decoded

    def spy(line: bytes, pending: list[bytes]) -> Any:
        decoded.append(line)
        return real(line, pending)

    monkeypatch.setattr(readback_lines, "_decoded", spy)
    with RolloutWriter.create(tmp_path, session_id="turns") as w:
        w.append(_user(0))
        w.append(_thinking(1))
        w.note(Turn(seq=0, ts=_TS, boundary="start"))
        w.stop(StopKind.PAUSED)
        w.append(_user(2, is_anchored=True))
        w.append(_user(3, truncation_marker="[cut]"))
        w.compacted([_user(4), _thinking(5)], summary="short")
        w.append(_thinking(6))
        w.stop(StopKind.PAUSED)
        w.append(_user(7))
        w.rewind(w.next_seq - 1)
        w.stop(StopKind.PAUSED)
        w.append(_user(8))
        w.stop(StopKind.PAUSED)
    assert seen == {"undecoded": 3, "typed": 0}, seen
    assert [msgspec.json.decode(line)["type"] for line in decoded] == [
        "message",
        "message",
        "compacted",
    ]
    replay = read_replay(w.path)
    assert replay.verified
    assert [m.content for m in replay.messages] == [
        "question 4",
        "answer 5",
        "answer 6",
        "question 7",
        "question 8",
    ]


def _overwrite(path: Path, at: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, at)
    finally:
        os.close(fd)


def test_a_byte_changed_in_the_writers_own_lines_refuses_the_checkpoint(tmp_path: Path) -> None:
    """Another program rewrites, in place and at the same length, a byte of what the writer
    wrote after its last read: the lines still look like the writer's, but the read-back sees
    they are not what it wrote, and no checkpoint is written."""
    w = RolloutWriter.create(tmp_path, session_id="edited")
    w.append(_user(0))
    w.stop(StopKind.PAUSED)
    w.append(_user(1))
    w.drain()
    _overwrite(w.path, w.path.read_bytes().rindex(b"question 1") + 9, b"2")
    with pytest.raises(ReadBackError, match="did not come back as written"):
        w.stop(StopKind.PAUSED)
    w.close()
    assert not read_replay(w.path).verified


def test_a_line_added_by_another_program_refuses_the_checkpoint(tmp_path: Path) -> None:
    """A record in the writer's form, with the next seq, appended by another program between
    the writer's lines and its stop, is not the writer's: no checkpoint."""
    w = RolloutWriter.create(tmp_path, session_id="added")
    w.append(_user(0))
    w.drain()
    rogue = w.path.read_bytes().splitlines(keepends=True)[-1].replace(b'"seq":2', b'"seq":3')
    fd = os.open(w.path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, rogue)
    finally:
        os.close(fd)
    with pytest.raises(ReadBackError):
        w.stop(StopKind.PAUSED)
    w.close()


def test_a_compaction_read_back_undecoded_replaces_the_conversation(tmp_path: Path) -> None:
    """The count and digest after a compaction read undecoded are those of its messages and
    what follows, as replay rebuilds them."""
    with RolloutWriter.create(tmp_path, session_id="compacted") as w:
        for i in range(3):
            w.append(_thinking(i))
        w.stop(StopKind.PAUSED)
        w.compacted([_user(10, is_anchored=True), _thinking(11)])
        w.append(_user(12))
        w.stop(StopKind.PAUSED)
    whole = rebuild(w.path)
    assert isinstance(whole.messages[0], Message)
    assert whole.compactions == 1
    assert whole.checkpoint is not None
    assert whole.checkpoint.message_count == 3
    assert whole.checkpoint.digest == whole.at_checkpoint_digest
    assert read_replay(w.path).verified


def test_the_typed_read_back_alone_gives_the_same_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same session written twice, once with every read-back typed: the same checkpoints."""

    def session(directory: Path) -> list[tuple[str, int]]:
        with RolloutWriter.create(directory, session_id="twice") as w:
            w.append(_user(0))
            w.append(_thinking(1))
            w.stop(StopKind.PAUSED)
            w.compacted([_user(2)])
            w.append(_user(3, is_anchored=True))
            w.stop(StopKind.PAUSED)
        out = []
        for line in w.path.read_bytes().splitlines():
            record = msgspec.json.decode(line)
            if record["type"] == "agent_checkpoint":
                out.append((record["digest"], record["message_count"]))
        return out

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    undecoded = session(tmp_path / "a")
    typed_read_backs_only(monkeypatch)
    assert session(tmp_path / "b") == undecoded


def _lines(*records: Any) -> bytes:
    from ledger import encode_line

    return b"".join(encode_line(r) for r in records)


def _fold(data: bytes, *, decode: tuple[int, ...] = ()) -> Any:
    chunks = iter([data, b""])
    tally = readback_lines.Tally(None, (), 0, 1)
    return readback_lines.fold_own_lines(
        lambda n: next(chunks), 100, tally, decode=decode, max_line_bytes=1 << 20
    )


def test_the_undecoded_fold_declines_what_is_not_a_writers_turn() -> None:
    """Lines a writer's turn never holds make the fold decline (the typed read-back then says
    what is wrong): a gap or a repeat in the sequence, a line in another form, a CRLF end,
    reasoning before a message that is not the assistant's or with nothing after it, a
    rewind, bytes after the last line end."""
    from ledger import MessageRecord, ReasoningRecord, Rewind

    def message(seq: int, role: Role = Role.USER) -> MessageRecord:
        return MessageRecord(seq=seq, ts=_TS, message=Message(role=role, content="x"))

    thought = ReasoningRecord(seq=2, ts=_TS, reasoning=Reasoning(text="t"))
    good = _lines(message(2), message(3))
    assert _fold(good) is not None
    assert _fold(good)[0].messages == 2
    assert _fold(_lines(message(2), message(4))) is None  # a gap
    assert _fold(_lines(message(2), message(2))) is None  # a repeat
    assert _fold(good.replace(b'{"type":"message","seq":3', b'{"seq":3,"type":"message"')) is None
    assert _fold(good.replace(b"}\n", b"}\r\n")) is None
    assert _fold(_lines(thought, message(3))) is None  # reasoning before a user message
    assert _fold(_lines(thought, message(3, Role.ASSISTANT))) is not None
    left_over = msgspec.structs.replace(thought, seq=3)
    assert _fold(_lines(message(2), left_over)) is None  # reasoning with nothing after it
    assert _fold(_lines(Rewind(seq=2, ts=_TS, to=1))) is None
    assert _fold(good + b'{"type":"message"') is None
    assert _fold(_lines(message(2)), decode=(2,)) is not None  # decoded, same result
    assert _fold(_lines(message(2)), decode=(2,)) == _fold(_lines(message(2)))


def test_a_file_whose_last_line_end_was_removed_gets_no_checkpoint(tmp_path: Path) -> None:
    """Another program removes the writer's last line end between its drain and its stop: the
    checkpoint would run on from that line, so none is written, whichever way the stop reads."""
    w = RolloutWriter.create(tmp_path, session_id="unended")
    w.append(_user(0))
    w.stop(StopKind.PAUSED)
    w.append(_user(1))
    w.drain()
    os.truncate(w.path, w.path.stat().st_size - 1)
    with pytest.raises(ReadBackError, match="does not end with a line end"):
        w.stop(StopKind.PAUSED)
    w.close()
    assert w.path.read_bytes().count(b'"type":"agent_checkpoint"') == 1  # the first stop's
    checkpoint = rebuild(w.path).checkpoint
    assert checkpoint is not None
    assert checkpoint.message_count == 1


def test_a_stop_that_must_decode_starts_where_the_last_decoding_read_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After stops that folded undecoded lines, a stop after a rewind decodes from the mark of
    the last read that decoded (here open's, which started at the last compaction), not from
    the file's first line: damage before that compaction, which open never read, does not
    refuse its checkpoint, as it did not before the rewind."""
    w = RolloutWriter.create(tmp_path, session_id="window")
    w.append(_user(0))
    w.compacted([_user(1)])
    w.close()
    damaged = w.path.read_bytes().replace(b'"content":"question 0"', b'"content":"question 0"}}')
    w.path.write_bytes(damaged)
    seen = _count_undecoded(monkeypatch)
    with RolloutWriter.open(w.path) as again:
        again.stop(StopKind.PAUSED)
        again.append(_user(2))
        again.stop(StopKind.PAUSED)
        again.rewind(again.next_seq - 2)
        again.stop(StopKind.PAUSED)
    assert seen == {"undecoded": 2, "typed": 0}
    assert rebuild(w.path).checkpoint is not None
    assert read_replay(w.path).verified
