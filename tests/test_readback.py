"""The writer's read-back before a checkpoint reads each byte's records once (ADR 0067).

A stop decodes only what was written after the writer's last read of its file (its open, or its
last stop), folded into the state that read established, after checking by CRC-32 that the bytes
read then are still there. The checkpoint must be what a fold of the whole file gives.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ledger.writer_files as writer_files
import strategies as s
from ledger import Message, ReadBackError, Role, RolloutWriter, StopKind
from ledger.reader import rebuild
from read_back_spy import spy_read_back_starts
from replay import read_replay


def _user(i: int) -> Message:
    return Message(role=Role.USER, content=f"question {i}")


def test_a_second_stop_decodes_only_what_follows_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping at every turn reads the file's history once, and each checkpoint still equals a
    fold of the whole file."""
    starts = spy_read_back_starts(monkeypatch)
    with RolloutWriter.create(tmp_path, session_id="turns") as w:
        for turn in range(3):
            w.append(_user(turn))
            w.stop(StopKind.PAUSED)
            whole = rebuild(w.path)
            assert whole.checkpoint is not None
            assert whole.checkpoint.digest == whole.at_checkpoint_digest
            assert whole.checkpoint.message_count == turn + 1
    # Line 1 is the session_meta, read back when the file was made; each turn adds a message,
    # a checkpoint and a terminal.
    assert starts == [2, 3, 6]
    assert read_replay(w.path).verified


def test_a_reopened_writer_decodes_only_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After open, the stop starts where open's read of the file ended."""
    with RolloutWriter.create(tmp_path, session_id="again") as w:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
    lines = w.path.read_bytes().count(b"\n")
    starts = spy_read_back_starts(monkeypatch)
    with RolloutWriter.open(w.path) as again:
        again.append(_user(1))
        again.stop(StopKind.PAUSED)
    assert starts == [lines + 1]
    replay = read_replay(w.path)
    assert replay.verified
    assert [m.content for m in replay.messages] == ["question 0", "question 1"]


def test_bytes_changed_before_the_mark_refuse_the_checkpoint(tmp_path: Path) -> None:
    """Another program editing what the writer already read (same length) is caught by the
    CRC-32 of those bytes: a failed terminal, no checkpoint over bytes the state never saw."""
    w = RolloutWriter.create(tmp_path, session_id="edited")
    w.append(_user(0))
    w.stop(StopKind.PAUSED)
    data = w.path.read_bytes()
    at = data.index(b"question 0")
    fd = os.open(w.path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"QUESTION 0", at)
    finally:
        os.close(fd)
    w.append(_user(1))
    with pytest.raises(ReadBackError, match="changed after this writer read them"):
        w.stop(StopKind.PAUSED)
    w.close()
    assert rebuild(w.path).terminal is not None
    assert rebuild(w.path).terminal.stop_kind == StopKind.FAILED.value  # type: ignore[union-attr]


def test_a_file_cut_short_before_the_mark_refuses_the_checkpoint(tmp_path: Path) -> None:
    """A file truncated below what the writer read is caught the same way."""
    w = RolloutWriter.create(tmp_path, session_id="cut")
    w.append(_user(0))
    w.stop(StopKind.PAUSED)
    first_line = w.path.read_bytes().index(b"\n") + 1
    os.truncate(w.path, first_line)
    with pytest.raises(ReadBackError):
        w.stop(StopKind.PAUSED)
    w.close()


def test_bytes_appended_while_open_reads_are_not_counted_as_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that ignores the lock and appends a record between open's fold and the mark
    it keeps: those bytes were never folded, so the next stop reads them (and refuses the
    checkpoint: their seq clashes with the writer's) instead of taking them as read."""
    w = RolloutWriter.create(tmp_path, session_id="raced")
    w.append(_user(0))
    w.stop(StopKind.PAUSED)
    w.close()
    rogue = b'{"type":"message","seq":4,"ts":"2026-12-03T00:00:00Z","message":'
    rogue += b'{"role":"user","content":"from elsewhere"}}\n'
    real = writer_files.rebuild_stream

    def fold_then_race(*args: Any, **kwargs: Any) -> Any:
        state = real(*args, **kwargs)
        fd = os.open(w.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, rogue)
        finally:
            os.close(fd)
        return state

    monkeypatch.setattr(writer_files, "rebuild_stream", fold_then_race)
    again = RolloutWriter.open(w.path)
    monkeypatch.undo()
    again.append(_user(1))
    with pytest.raises(ReadBackError, match="sequence number 4 repeats"):
        again.stop(StopKind.PAUSED)
    again.close()
    assert rogue in w.path.read_bytes()
    assert rebuild(w.path).checkpoint is not None
    assert rebuild(w.path).checkpoint.seq < 4  # type: ignore[union-attr]


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), s.messages(st.just(Role.USER))),
        st.tuples(st.just("stop"), st.none()),
        st.tuples(st.just("compact"), st.lists(s.messages(st.just(Role.USER)), max_size=2)),
        st.tuples(st.just("reopen"), st.none()),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=25, deadline=None)
@given(steps=_steps)
def test_every_checkpoint_equals_the_fold_of_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, Any]]
) -> None:
    """Whatever the mix of appends, stops, compactions and reopenings, each checkpoint's digest
    and count are those of the whole file folded from its first line."""
    directory = tmp_path_factory.mktemp("mix")
    w = RolloutWriter.create(directory, session_id="mix")
    try:
        for op, value in steps:
            if op == "append":
                w.append(value)
            elif op == "compact":
                w.compacted(value, summary="kept")
            elif op == "reopen":
                w.close()
                w = RolloutWriter.open(w.path)
            else:
                w.stop(StopKind.PAUSED)
                whole = rebuild(w.path)
                assert whole.checkpoint is not None
                assert whole.checkpoint.digest == whole.at_checkpoint_digest
                assert whole.checkpoint.message_count == len(whole.at_checkpoint)
        w.stop(StopKind.PAUSED)
    finally:
        w.close()
    assert read_replay(w.path).verified
