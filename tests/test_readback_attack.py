"""Attacks on the writer's incremental read-back from outside (ADR 0067).

Each test builds a file state, an interleaving or an interruption and checks the claim: every
checkpoint a stop writes equals the fold of the whole file up to it (digest and message count),
and no checkpoint is written over bytes that changed, were lost or did not come back as written.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import strategies as s
from ledger import (
    Durability,
    Message,
    ReadBackError,
    Reasoning,
    Role,
    RolloutWriter,
    StopKind,
    WriterError,
    checkpoint_digest,
)
from ledger.batching import BatchQueue
from ledger.reader import rebuild
from replay import read_replay
from rollout_files import RolloutBuilder, conversation

_CHECKPOINT = b'"type":"agent_checkpoint"'


def _user(i: int) -> Message:
    return Message(role=Role.USER, content=f"question {i}")


def _thinking(i: int) -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=f"answer {i}",
        reasoning=(Reasoning(text=f"thought {i}a"), Reasoning(text=f"thought {i}b")),
    )


def _checkpoints_hold(path: Path) -> int:
    """Check every checkpoint of the file against the fold of the file up to it; return how
    many there are."""
    data = path.read_bytes()
    count = 0
    end = 0
    while True:
        nl = data.find(b"\n", end)
        if nl < 0:
            break
        line, end = data[end : nl + 1], nl + 1
        if _CHECKPOINT in line:
            state = rebuild(io.BytesIO(data[:end]))
            assert state.checkpoint is not None, f"checkpoint line ending at byte {end} unread"
            # Version 1 is verified by its own rule, over the messages rebuilt (ADR 0063).
            want = (
                checkpoint_digest(state.at_checkpoint, format_version=1)
                if state.digest_rule == 1
                else state.at_checkpoint_digest
            )
            assert state.checkpoint.digest == want, f"at byte {end}"
            assert state.checkpoint.message_count == len(state.at_checkpoint), f"at byte {end}"
            count += 1
    return count


def _last_terminal_kind(path: Path) -> str | None:
    state = rebuild(path)
    return None if state.terminal is None else state.terminal.stop_kind


# --- interruptions -----------------------------------------------------------------------------


@pytest.mark.parametrize("after", [False, True], ids=["before-restart", "after-restart"])
def test_a_stop_interrupted_around_the_witness_restart_does_not_refuse_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: bool
) -> None:
    """A Ctrl-C landing inside a stop, just before or just after the own-record witness
    restarts (before the checkpoint is queued), leaves a writer whose next stop still
    checkpoints a correct file: the mark never moves without the witness."""
    w = RolloutWriter.create(tmp_path, session_id=f"interrupted-{after}")
    try:
        w.append(_user(0))
        real = BatchQueue.restart_own
        calls = {"n": 0}

        def interrupted(self: BatchQueue, seq: int, seed: int) -> None:
            calls["n"] += 1
            if after:
                real(self, seq, seed)
            if calls["n"] == 1:
                raise KeyboardInterrupt
            if not after:
                real(self, seq, seed)

        monkeypatch.setattr(BatchQueue, "restart_own", interrupted)
        with pytest.raises(KeyboardInterrupt):
            w.stop(StopKind.PAUSED)
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(w.path) == 1
    assert read_replay(w.path).verified


def test_a_stop_interrupted_before_its_checkpoint_is_queued_does_not_refuse_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C landing after the mark and the witness both moved but before the checkpoint
    is queued leaves nothing written, and the next stop checkpoints the file exactly."""
    w = RolloutWriter.create(tmp_path, session_id="interrupted-queue")
    try:
        w.append(_user(0))
        real = RolloutWriter._enqueue
        calls = {"n": 0}

        def interrupted(self: RolloutWriter, lines: list[bytes]) -> None:
            if any(_CHECKPOINT in line for line in lines):
                calls["n"] += 1
                if calls["n"] == 1:
                    raise KeyboardInterrupt
            real(self, lines)

        monkeypatch.setattr(RolloutWriter, "_enqueue", interrupted)
        with pytest.raises(KeyboardInterrupt):
            w.stop(StopKind.PAUSED)
        assert w.path.read_bytes().count(_CHECKPOINT) == 0
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(w.path) == 1
    assert read_replay(w.path).verified


# --- files taken up as found -------------------------------------------------------------------


def _mangled(lines: list[bytes], *, bom: bool, crlf: bool, blanks: bool) -> bytes:
    out = []
    for i, line in enumerate(lines):
        end = b"\r\n" if crlf else b"\n"
        out.append(line.rstrip(b"\r\n") + end)
        if blanks and i % 2:
            out.append(b"\r\n" if crlf else b"\n")
    data = b"".join(out)
    return (b"\xef\xbb\xbf" if bom else b"") + data


@pytest.mark.parametrize(
    ("bom", "crlf", "blanks"),
    [(True, False, False), (False, True, False), (False, False, True), (True, True, True)],
)
def test_a_file_with_a_bom_crlf_or_blank_lines_is_continued_with_exact_checkpoints(
    tmp_path: Path, bom: bool, crlf: bool, blanks: bool
) -> None:
    """A byte-order mark, CRLF line ends and blank lines in what open read change neither the
    mark's line count nor the digest: every later checkpoint equals the whole-file fold."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    path = b.path
    path.write_bytes(_mangled(b.lines, bom=bom, crlf=crlf, blanks=blanks))
    with RolloutWriter.open(path) as w:
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
        w.append(_thinking(2))
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 3
    assert read_replay(path).verified


def test_a_torn_tail_repaired_at_open_is_not_part_of_the_mark(tmp_path: Path) -> None:
    """The half line a killed writer left is cut at open before the mark is taken, so the
    checkpoints after it fold exactly what stays in the file."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).add(_user(9))
    path = b.path
    data = b"".join(b.lines)
    path.write_bytes(data[:-7])  # the last message cut mid-line
    with RolloutWriter.open(path) as w:
        assert w.repair is not None
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 3
    assert read_replay(path).verified


def test_a_tail_missing_only_its_line_end_is_completed_before_the_mark(tmp_path: Path) -> None:
    """A last record that lacks only its newline gets one at open; the mark covers it and the
    next stop's digest counts it once."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).add(_user(9))
    path = b.path
    path.write_bytes(b"".join(b.lines)[:-1])
    with RolloutWriter.open(path) as w:
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 2
    replay = read_replay(path)
    assert replay.verified
    assert [m.content for m in replay.messages][-2:] == ["question 9", "question 1"]


def test_orphan_reasoning_moved_at_open_is_not_folded_into_the_mark(tmp_path: Path) -> None:
    """Reasoning records whose message was never written are cut at open; the message appended
    after them does not inherit them, in the checkpoint as in the whole-file fold."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).add(_thinking(9))
    path = b.path
    path.write_bytes(b"".join(b.lines[:-1]))  # the message after its two reasoning blocks lost
    with RolloutWriter.open(path) as w:
        w.append(Message(role=Role.ASSISTANT, content="bare"))
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 2
    replay = read_replay(path)
    assert replay.verified
    assert replay.messages[-1].reasoning == ()


def test_compactions_and_rewinds_after_a_window_read_at_open_checkpoint_exactly(
    tmp_path: Path,
) -> None:
    """Open reads only the window after the last compaction; compactions and rewinds made after
    it, across stops and reopenings, still checkpoint what the whole file folds to."""
    b = RolloutBuilder(tmp_path).extend(conversation())
    b.compacted([_user(100)], summary="early").add(_user(101), _user(102)).stop(StopKind.PAUSED)
    path = b.path
    b.write()
    with RolloutWriter.open(path) as w:
        after = w.next_seq
        w.append(_thinking(1))
        w.append(_user(2))
        w.stop(StopKind.PAUSED)
        w.rewind(after)  # drop what this writer appended
        w.stop(StopKind.PAUSED)
        w.compacted([_user(200), _thinking(201)], summary="late")
        base = w.next_seq - 1
        w.append(_user(3))
        w.stop(StopKind.PAUSED)
    with RolloutWriter.open(path) as w:
        w.append(_user(4))
        w.rewind(base)
        w.append(_user(5))
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 5
    replay = read_replay(path)
    assert replay.verified
    assert [m.content for m in replay.messages] == ["question 200", "answer 201", "question 5"]


def test_damage_read_at_open_refuses_every_later_checkpoint(tmp_path: Path) -> None:
    """A line damaged in the middle of what open read is carried by the mark's state: no stop
    after it writes a checkpoint, however many times it is tried."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).add(_user(9))
    b.lines[2] = b.lines[2][:-5] + b"\n"  # a message record cut short, its line end kept
    path = b.write()
    with RolloutWriter.open(path) as w:
        w.append(_user(1))
        with pytest.raises(ReadBackError, match="damage"):
            w.stop(StopKind.PAUSED)
        w.append(_user(2))
        with pytest.raises(ReadBackError, match="damage"):
            w.stop(StopKind.PAUSED)
    assert path.read_bytes().count(_CHECKPOINT) == 1  # the builder's own, before the damage
    assert _last_terminal_kind(path) == StopKind.FAILED.value


def test_damage_before_the_last_compaction_does_not_change_the_checkpoint(
    tmp_path: Path,
) -> None:
    """Open's window skips the lines before the last compaction; the checkpoint it leads to is
    still the whole-file fold's (the compaction replaces everything those lines held)."""
    b = RolloutBuilder(tmp_path).extend(conversation())
    b.lines[2] = b"{not json\n"
    b.compacted([_user(100)]).stop(StopKind.PAUSED)
    path = b.write()
    with RolloutWriter.open(path) as w:
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 2


def test_a_version_1_file_is_continued_by_its_own_digest_rule(tmp_path: Path) -> None:
    """A file of format version 1 keeps its digest rule through the mark: checkpoints after
    open, a compaction and a second stop equal the whole-file fold, and replay verifies."""
    b = RolloutBuilder(tmp_path, format_version=1).extend(conversation()).stop(StopKind.PAUSED)
    path = b.write()
    with RolloutWriter.open(path) as w:
        w.append(_thinking(1))
        w.stop(StopKind.PAUSED)
        w.compacted([_user(5)], summary="v1")
        w.append(_user(6))
        w.stop(StopKind.PAUSED)
    assert _checkpoints_hold(path) == 3
    assert read_replay(path).verified


# --- stops in a row, failed stops, close ---------------------------------------------------------


@pytest.mark.parametrize("durability", list(Durability))
def test_stops_without_appends_in_between_each_checkpoint_the_same_conversation(
    tmp_path: Path, durability: Durability
) -> None:
    """Stopping again and again with nothing appended gives the same digest and count each
    time, whatever the durability, and each equals the whole-file fold."""
    with RolloutWriter.create(tmp_path, session_id="again", durability=durability) as w:
        w.append(_user(0))
        digests = set()
        for _ in range(3):
            w.stop(StopKind.PAUSED)
            state = rebuild(w.path)
            assert state.checkpoint is not None
            digests.add(state.checkpoint.digest)
    assert len(digests) == 1
    assert _checkpoints_hold(w.path) == 3


def test_a_stop_after_a_failed_one_checkpoints_once_the_bytes_are_back(tmp_path: Path) -> None:
    """An edit before the mark fails a stop without moving the mark; once the bytes are as the
    writer read them, the next stop checkpoints the file, failed terminal included."""
    w = RolloutWriter.create(tmp_path, session_id="restored")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        data = w.path.read_bytes()
        at = data.index(b"question 0")
        fd = os.open(w.path, os.O_WRONLY)
        try:
            os.pwrite(fd, b"QUESTION 0", at)
            w.append(_user(1))
            with pytest.raises(ReadBackError, match="changed"):
                w.stop(StopKind.PAUSED)
            os.pwrite(fd, b"question 0", at)
        finally:
            os.close(fd)
        w.append(_user(2))
        w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(w.path) == 2
    replay = read_replay(w.path)
    assert replay.verified
    assert [m.content for m in replay.messages] == ["question 0", "question 1", "question 2"]


def test_a_stop_that_could_not_read_back_leaves_the_mark_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read error during a stop writes nothing and changes nothing: the next stop
    checkpoints exactly."""
    import ledger.readback as readback_module

    w = RolloutWriter.create(tmp_path, session_id="eio")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        w.append(_user(1))
        real = readback_module._crc_of

        def failing(fd: int, size: int) -> int | None:
            raise OSError(5, "input/output error")

        monkeypatch.setattr(readback_module, "_crc_of", failing)
        with pytest.raises(WriterError, match="could not read back"):
            w.stop(StopKind.PAUSED)
        monkeypatch.setattr(readback_module, "_crc_of", real)
        w.append(_user(2))
        w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(w.path) == 2
    assert read_replay(w.path).verified


def test_a_writer_closed_without_stop_then_reopened_checkpoints_exactly(tmp_path: Path) -> None:
    """close() records the stop itself; a writer that opens the file after it starts its mark
    there and checkpoints exactly."""
    w = RolloutWriter.create(tmp_path, session_id="closed")
    w.append(_thinking(0))
    w.close()
    with RolloutWriter.open(w.path) as again:
        again.append(_user(1))
        again.stop(StopKind.PAUSED)
    assert _checkpoints_hold(w.path) == 2
    assert read_replay(w.path).verified


def test_astop_checkpoints_like_stop(tmp_path: Path) -> None:
    """The asyncio form runs the same read-back: two astops in a row each equal the fold."""

    async def main() -> Path:
        async with RolloutWriter.create(tmp_path, session_id="async") as w:
            w.append(_user(0))
            await w.astop(StopKind.PAUSED)
            w.append(_thinking(1))
            await w.astop(StopKind.PAUSED)
            return w.path

    path = asyncio.run(main())
    assert _checkpoints_hold(path) == 2
    assert read_replay(path).verified


def test_threads_appending_while_another_stops_never_split_a_checkpoint(tmp_path: Path) -> None:
    """Appends from four threads interleaved with stops from a fifth: every checkpoint in the
    file equals the fold of the file up to it, and every message is there once."""
    w = RolloutWriter.create(tmp_path, session_id="threads")
    go = threading.Event()

    def appender(k: int) -> None:
        go.wait()
        for i in range(25):
            w.append(Message(role=Role.USER, content=f"t{k}-{i}"))

    threads = [threading.Thread(target=appender, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    go.set()
    for _ in range(6):
        w.stop(StopKind.PAUSED)
    for t in threads:
        t.join()
    w.stop(StopKind.PAUSED)
    w.close()
    assert _checkpoints_hold(w.path) == 7
    replay = read_replay(w.path)
    assert replay.verified
    assert len(replay.messages) == 100


# --- the file moved or changed under the writer ------------------------------------------------


def test_a_file_renamed_or_hard_linked_while_held_is_checkpointed_exactly(tmp_path: Path) -> None:
    """The writer reads back through its descriptor: a rename and a second name change nothing
    in what it folds."""
    w = RolloutWriter.create(tmp_path, session_id="moved")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        moved = tmp_path / "moved.jsonl"
        os.rename(w.path, moved)
        w.append(_user(1))
        w.stop(StopKind.PAUSED)
        linked = tmp_path / "linked.jsonl"
        os.link(moved, linked)
        w.append(_user(2))
        w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(linked) == 3
    assert read_replay(moved).verified


def test_a_file_replaced_while_held_gets_no_checkpoint(tmp_path: Path) -> None:
    """A file replaced under its name (the writer's one unlinked) is refused at the drain:
    neither the old nor the new file gets a checkpoint from this stop."""
    w = RolloutWriter.create(tmp_path, session_id="replaced")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        other = tmp_path / "other.jsonl"
        other.write_bytes(w.path.read_bytes())
        os.replace(other, w.path)
        w.append(_user(1))
        with pytest.raises(WriterError):
            w.stop(StopKind.PAUSED)
    finally:
        with pytest.raises(WriterError):
            w.close()
    assert w.path.read_bytes().count(_CHECKPOINT) == 1


def test_a_file_cut_back_to_the_mark_refuses_the_checkpoint(tmp_path: Path) -> None:
    """Records appended after the mark and then cut off (the prefix intact) are caught: the
    file no longer ends at this writer's last seq."""
    w = RolloutWriter.create(tmp_path, session_id="cut-at-mark")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        size = w.path.stat().st_size
        w.append(_user(1))
        w.drain()
        os.truncate(w.path, size)
        with pytest.raises(ReadBackError, match="ends at seq"):
            w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _last_terminal_kind(w.path) == StopKind.FAILED.value


def test_a_record_another_program_appends_after_the_mark_refuses_the_checkpoint(
    tmp_path: Path,
) -> None:
    """A well-formed record written by someone else after the mark, numbered as the writer's
    next, does not slip into the checkpoint."""
    w = RolloutWriter.create(tmp_path, session_id="intruder")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        b = RolloutBuilder(tmp_path, meta=False)
        b.seq = w.next_seq
        b.add(Message(role=Role.USER, content="not mine"))
        with open(w.path, "ab") as f:
            f.write(b.lines[0])
        w.append(_user(1))
        with pytest.raises(ReadBackError):
            w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(w.path) == 1


def test_a_same_length_edit_after_the_mark_refuses_the_checkpoint(tmp_path: Path) -> None:
    """An edit to a record this writer wrote after its mark (so not under the CRC check) is
    caught by the own-record witness."""
    w = RolloutWriter.create(tmp_path, session_id="edited-after")
    try:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        w.append(_user(1))
        w.drain()
        data = w.path.read_bytes()
        at = data.rindex(b"question 1")
        fd = os.open(w.path, os.O_WRONLY)
        try:
            os.pwrite(fd, b"QUESTION 1", at)
        finally:
            os.close(fd)
        with pytest.raises(ReadBackError, match="did not come back"):
            w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert _checkpoints_hold(w.path) == 1


# --- a stateful attack against a plain model -----------------------------------------------------


class ReadBackMachine(RuleBasedStateMachine):
    """Appends (with reasoning), compactions, rewinds, stops and reopenings, some after the
    closed file was rewritten with CRLF ends and blank lines, against a plain list of messages."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.tmp = tempfile.TemporaryDirectory()
        self.w = RolloutWriter.create(Path(self.tmp.name), session_id="machine")
        self.model: list[tuple[int, Message]] = []  # (seq of the message's record, message)
        self.stops = 0

    @rule(message=s.messages(st.just(Role.USER)))
    def append(self, message: Message) -> None:
        seq = self.w.next_seq
        self.w.append(message)
        self.model.append((seq, message))

    @rule(i=st.integers(0, 99))
    def append_thinking(self, i: int) -> None:
        message = _thinking(i)
        seq = self.w.next_seq + len(message.reasoning)
        self.w.append(message)
        self.model.append((seq, message))

    @rule(kept=st.lists(st.integers(0, 99).map(_user), max_size=2))
    def compact(self, kept: list[Message]) -> None:
        seq = self.w.next_seq
        self.w.compacted(kept, summary="kept")
        self.model = [(seq, m) for m in kept]

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def rewind(self, data: st.DataObject) -> None:
        to = data.draw(st.sampled_from([seq for seq, _ in self.model]))
        try:
            self.w.rewind(to)
        except ValueError:
            return  # not a target the file allows (a compaction's own, an abandoned record)
        self.model = [(seq, m) for seq, m in self.model if seq <= to]

    @rule()
    def stop(self) -> None:
        self.w.stop(StopKind.PAUSED)
        self.stops += 1
        state = rebuild(self.w.path)
        assert state.checkpoint is not None
        assert state.checkpoint.digest == state.at_checkpoint_digest
        assert state.checkpoint.message_count == len(self.model) == len(state.at_checkpoint)

    @rule(crlf=st.booleans(), blanks=st.booleans())
    def reopen(self, crlf: bool, blanks: bool) -> None:
        self.w.close()
        path = self.w.path
        if crlf or blanks:
            lines = path.read_bytes().splitlines(keepends=True)
            path.write_bytes(_mangled(lines, bom=False, crlf=crlf, blanks=blanks))
        self.w = RolloutWriter.open(path)

    @invariant()
    def next_seq_follows_the_file(self) -> None:
        assert self.w.next_seq > 1

    def teardown(self) -> None:
        try:
            self.w.close()
            assert _checkpoints_hold(self.w.path) >= self.stops
            assert read_replay(self.w.path).verified
        finally:
            self.tmp.cleanup()


TestReadBackMachine = ReadBackMachine.TestCase
TestReadBackMachine.settings = settings(
    TestReadBackMachine.settings, max_examples=20, stateful_step_count=12, deadline=None
)
