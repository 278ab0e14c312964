"""The batched rollout writer: contract, batching, durability, locking, repair, faults, asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ledger.readback as readback
import ledger.writer_files as writer_files
import ledger.writer_lines as writer_lines
import ledger.writer_start as writer_start
import strategies as s
from ledger import (
    AgentCheckpoint,
    Durability,
    Message,
    Reasoning,
    RolloutExistsError,
    RolloutWriter,
    SessionMeta,
    StopKind,
    Terminal,
    WriterBusyError,
    WriterClosedError,
    WriterError,
    WriterFailedError,
    checkpoint_digest,
    encode_record,
    message_records,
)
from ledger.damage import DegradationKind
from ledger.reader import rebuild
from ledger.testing import abandon, fail_writes, hold, intercept_writes, wait_failed
from ledger.testing.contract import WriterContract, conversation, read_records

SRC = Path(__file__).resolve().parents[1] / "src"


def held(writer: RolloutWriter) -> contextlib.AbstractContextManager[RolloutWriter]:
    """Hold the worker: it writes nothing until a drain asks for it."""
    return hold(writer)


class TestRolloutWriterContract(WriterContract):
    """The writer contract, bound to :class:`RolloutWriter`."""

    busy_error = WriterBusyError
    closed_error = WriterClosedError

    def create(self, directory: Path, **kwargs: Any) -> RolloutWriter:
        return RolloutWriter.create(directory, **kwargs)

    def reopen(self, path: Path) -> RolloutWriter:
        return RolloutWriter.open(path)

    def hold_writes(self, writer: Any) -> contextlib.AbstractContextManager[None]:
        return held(writer)


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[RolloutWriter]:
    w = RolloutWriter.create(tmp_path)
    try:
        yield w
    finally:
        with contextlib.suppress(WriterError):
            w.close()


def user(i: int | str) -> Message:
    return Message(role="user", content=f"message {i}")


# --- the round trip --------------------------------------------------------------------------


@given(msgs=s.message_lists, kind=st.sampled_from(StopKind))
def test_any_messages_appended_stopped_and_rebuilt_come_back_equal(
    msgs: list[Message], kind: StopKind
) -> None:
    """Any message sequence written, stopped and rebuilt is equal and its digest verifies."""
    with tempfile.TemporaryDirectory() as d:
        w = RolloutWriter.create(d, durability=Durability.OS)
        for m in msgs:
            w.append(m)
        w.stop(kind)
        w.close()
        state = rebuild(w.path)
        assert state.messages == tuple(msgs)
        assert state.degraded == ()
        assert state.checkpoint is not None
        assert state.checkpoint.digest == checkpoint_digest(state.at_checkpoint)
        assert state.checkpoint.message_count == len(msgs)
        assert state.terminal is not None
        assert state.terminal.kind is kind


@given(
    before=s.message_lists,
    kept=st.lists(s.messages(), max_size=4),
    after=s.message_lists,
)
def test_checkpoint_after_compaction_verifies_against_the_file(
    before: list[Message], kept: list[Message], after: list[Message]
) -> None:
    """With a compaction in the middle, the checkpoint covers the compacted conversation."""
    with tempfile.TemporaryDirectory() as d:
        w = RolloutWriter.create(d, durability=Durability.OS)
        for m in before:
            w.append(m)
        w.compacted(kept)
        for m in after:
            w.append(m)
        w.stop(StopKind.PAUSED)
        w.close()
        state = rebuild(w.path)
        assert state.messages == tuple(kept + after)
        assert state.checkpoint is not None
        assert state.checkpoint.digest == checkpoint_digest(after, compacted=kept)
        assert state.checkpoint.digest == state.at_checkpoint_digest


# --- create -------------------------------------------------------------------------------------


def test_session_id_defaults_to_a_uuid(writer: RolloutWriter) -> None:
    """Without a session id, a new UUID names the session and the file."""
    import uuid

    assert str(uuid.UUID(writer.session_id)) == writer.session_id
    assert writer.session_id in writer.path.name


def test_meta_fills_fields_and_extra(tmp_path: Path) -> None:
    """model/provider/cwd/project fill their fields; every other key goes to extra as JSON."""
    meta = {"model": "m-1", "provider": "p", "cwd": "/w", "project": "x", "temperature": 0.5}
    with RolloutWriter.create(tmp_path, session_id="s1", meta=meta) as w:
        pass
    first = read_records(w.path)[0]
    assert isinstance(first, SessionMeta)
    assert (first.model, first.provider, first.cwd, first.project) == ("m-1", "p", "/w", "x")
    assert isinstance(first.extra, msgspec.Raw)
    assert msgspec.json.decode(first.extra) == {"temperature": 0.5}


@pytest.mark.parametrize(
    "meta",
    [{"model": 3}, {1: "x"}, {"other": object()}, ["model"]],
    ids=["model-not-str", "key-not-str", "value-not-json", "not-a-mapping"],
)
def test_bad_meta_is_refused_before_any_file_exists(tmp_path: Path, meta: Any) -> None:
    """Metadata that is not a str-keyed mapping of JSON values is refused; no file is made."""
    with pytest.raises(TypeError):
        RolloutWriter.create(tmp_path, meta=meta)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_never_clobbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating a rollout whose name exists fails and leaves the existing file untouched, even
    when two creates race past the check for an existing session id."""
    fixed = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    monkeypatch.setattr(writer_start, "_now", lambda: fixed)
    with RolloutWriter.create(tmp_path, session_id="same") as w:
        w.append(user(1))
    content = w.path.read_bytes()
    monkeypatch.setattr(writer_start, "session_rollout", lambda *args: None)  # the race
    with pytest.raises(RolloutExistsError, match="never overwritten") as info:
        RolloutWriter.create(tmp_path, session_id="same")
    assert isinstance(info.value, FileExistsError)
    assert w.path.read_bytes() == content


# --- batching and durability ------------------------------------------------------------------


def test_each_batch_is_one_buffer_of_at_most_32_records_and_batches_due_go_together(
    writer: RolloutWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued records go out as batches of at most 32 lines, one buffer each, and the batches
    due at once (here: all of them, at the drain) in one write."""
    calls: list[list[int]] = []

    def counting_write(fd: int, buffers: list[bytes], real: Any) -> int:
        calls.append([bytes(b).count(b"\n") for b in buffers])
        return int(real(fd, buffers))

    with intercept_writes(writer, counting_write), held(writer):
        for i in range(100):
            writer.append(user(i))
        writer.drain()
    assert calls == [[32, 32, 32, 4]]


def test_a_partial_batch_nobody_waits_for_is_not_taken_with_full_ones(
    writer: RolloutWriter,
) -> None:
    """Full batches due at once go together; the partial one behind them keeps its own wait
    (up to MAX_BATCH_DELAY) unless a drain asks for it."""
    calls: list[list[int]] = []

    def counting_write(fd: int, buffers: list[bytes], real: Any) -> int:
        calls.append([bytes(b).count(b"\n") for b in buffers])
        return int(real(fd, buffers))

    with intercept_writes(writer, counting_write):
        with held(writer):  # nothing is taken until all 70 records are queued
            for i in range(70):
                writer.append(user(i))
        deadline = time.monotonic() + 10
        while not calls and time.monotonic() < deadline:
            time.sleep(0.001)
        writer.drain()
    assert calls[0] == [32, 32]
    assert [n for call in calls for n in call] == [32, 32, 6]


def test_a_failure_while_the_worker_writes_keeps_its_claim_true(writer: RolloutWriter) -> None:
    """A drain's fsync that fails while the worker's write is in flight: the turn's bytes land
    after the failure cut the file back, and are cut back too, so that "records after seq N
    were not written" holds and nothing past N is in the file."""
    q = writer._q
    failed: list[BaseException] = []

    def write_after_a_failure(fd: int, buffers: list[bytes], real: Any) -> int:
        if not failed:
            failed.append(q.fail_now(OSError(errno.EIO, "fsync failed")))
        return int(real(fd, buffers))

    writer.append(user(0))
    writer.drain()
    with intercept_writes(writer, write_after_a_failure), held(writer):
        for i in range(1, 70):
            writer.append(user(i))
        with pytest.raises(WriterFailedError, match=r"records after seq 2 were not written"):
            writer.drain()
    q.thread.join(5)
    assert rebuild(writer.path).messages == (user(0),)


def test_nothing_is_queued_after_a_failure(writer: RolloutWriter) -> None:
    """An append that passed its check before the writer failed enqueues nothing: no record
    with a jumped seq reaches the file."""
    q = writer._q
    q.fail_now(OSError(errno.EIO, "fsync failed"))
    q.put([b'{"type":"message"}'])
    assert not q.queue


def test_partial_os_writes_are_completed(
    writer: RolloutWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the system writes only part of a batch, the rest follows; nothing is lost."""
    real_writev = os.writev
    inode = writer.path.stat().st_ino

    def short_writev(fd: int, buffers: Any) -> int:
        if os.fstat(fd).st_ino == inode:
            return real_writev(fd, [bytes(buffers[0])[:7]])
        return real_writev(fd, buffers)

    monkeypatch.setattr(os, "writev", short_writev)
    for i in range(40):
        writer.append(user(i))
    writer.drain()
    monkeypatch.undo()
    assert rebuild(writer.path).messages == tuple(user(i) for i in range(40))


@pytest.mark.parametrize(
    ("durability", "expected"),
    [(Durability.OS, 0), (Durability.BATCH, 1), (Durability.DRAIN, 1)],
)
def test_durability_decides_when_to_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durability: Durability, expected: int
) -> None:
    """OS never fsyncs, BATCH once per write (here the drain's, of all four batches at once),
    DRAIN once per drain."""
    w = RolloutWriter.create(tmp_path, durability=durability)
    calls: list[int] = []
    real_fsync = os.fsync
    inode = w.path.stat().st_ino

    def counting_fsync(fd: int) -> None:
        if os.fstat(fd).st_ino == inode:
            calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    with held(w):
        for i in range(100):
            w.append(user(i))
        w.drain()
    assert len(calls) == expected
    monkeypatch.undo()
    w.close()


def test_default_durability_is_fsync_on_drain(writer: RolloutWriter) -> None:
    """The documented default (ADR 0020) is to fsync when draining."""
    assert writer.durability is Durability.DRAIN


def test_append_does_not_wait_for_the_disk(writer: RolloutWriter) -> None:
    """append() returns while the worker is held back: it only enqueues."""
    with held(writer):
        for i in range(200):
            writer.append(user(i))
        assert writer.path.read_bytes().count(b"\n") == 1
        writer.drain()
    assert writer.path.read_bytes().count(b"\n") == 201


def test_reasoning_on_a_non_assistant_message_is_refused(writer: RolloutWriter) -> None:
    """A message whose reasoning could not be restored is refused and takes no seq."""
    with pytest.raises(ValueError, match="only assistant messages carry reasoning"):
        writer.append(Message(role="user", content="x", reasoning=(Reasoning(text="t"),)))
    assert writer.next_seq == 2


def test_append_refuses_what_is_not_a_message(writer: RolloutWriter) -> None:
    """append() takes ledger.Message values only."""
    with pytest.raises(TypeError, match=r"ledger\.Message"):
        writer.append({"role": "user", "content": "hi"})  # type: ignore[arg-type]


# --- one writer per file ----------------------------------------------------------------------


def test_a_writer_in_another_process_is_refused(writer: RolloutWriter) -> None:
    """A second writer in another process fails at once, naming the file and the reason."""
    code = textwrap.dedent(
        """
        import sys
        from ledger import RolloutWriter, WriterBusyError
        try:
            RolloutWriter.open(sys.argv[1])
        except WriterBusyError as exc:
            print(exc)
            sys.exit(3)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(writer.path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert str(writer.path) in proc.stdout
    assert "another writer holds it" in proc.stdout


# --- open and the torn tail -------------------------------------------------------------------


def make_rollout(directory: Path, n: int) -> Path:
    """A rollout of ``n`` user messages whose writer was killed after writing them all."""
    w = RolloutWriter.create(directory, durability=Durability.OS)
    for i in range(n):
        w.append(user(i))
    w.drain()
    abandon(w)
    return w.path


def test_open_a_missing_file_says_so(tmp_path: Path) -> None:
    """Opening a file that does not exist names it and points at create()."""
    with pytest.raises(WriterError, match="does not exist"):
        RolloutWriter.open(tmp_path / "nope.jsonl")


def test_open_a_file_without_session_meta_is_refused(tmp_path: Path) -> None:
    """A file that does not start a session cannot be continued."""
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"")
    with pytest.raises(WriterError, match="is not a rollout this library can continue"):
        RolloutWriter.open(path)


def test_a_torn_last_line_is_moved_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A half-written last line is cut off, kept in <name>.torn, logged, and seqs continue."""
    path = make_rollout(tmp_path, 3)
    good = path.read_bytes()
    torn = b'{"type":"message","seq":5,"ts":"2026-'
    path.write_bytes(good + torn)
    with caplog.at_level(logging.WARNING, logger="ledger.writer"):
        w = RolloutWriter.open(path)
    assert w.repair is not None
    assert w.repair.kind == "torn_line_moved"
    assert w.repair.offset == len(good)
    assert w.repair.sidecar == path.with_name(path.name + ".torn")
    assert w.repair.sidecar.read_bytes() == torn
    assert "repaired the tail" in caplog.text
    assert w.next_seq == 5
    w.append(user(3))
    w.stop(StopKind.PAUSED)
    w.close()
    state = rebuild(path)
    assert state.messages == tuple(user(i) for i in range(4))
    assert state.degraded == ()


def test_a_second_torn_line_gets_its_own_sidecar(tmp_path: Path) -> None:
    """A later repair never overwrites the bytes an earlier repair kept."""
    path = make_rollout(tmp_path, 1)
    path.write_bytes(path.read_bytes() + b"{torn one")
    RolloutWriter.open(path).close()
    path.write_bytes(path.read_bytes() + b"{torn two")
    w = RolloutWriter.open(path)
    w.close()
    assert w.repair is not None
    assert w.repair.sidecar == path.with_name(path.name + ".torn.1")
    assert path.with_name(path.name + ".torn").read_bytes() == b"{torn one"
    assert w.repair.sidecar.read_bytes() == b"{torn two"


def test_a_complete_last_record_only_gets_its_newline(tmp_path: Path) -> None:
    """A last record complete but for its line end is kept, and a line end is added."""
    path = make_rollout(tmp_path, 2)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    w = RolloutWriter.open(path)
    assert w.repair is not None
    assert w.repair.kind == "newline_added"
    assert w.repair.sidecar is None
    assert w.next_seq == 4
    w.append(user(2))
    w.close()
    assert rebuild(path).messages == tuple(user(i) for i in range(3))
    assert not path.with_name(path.name + ".torn").exists()


def test_a_mark_led_head_that_lost_its_line_end_only_gets_its_newline(tmp_path: Path) -> None:
    """A file of one ``session_meta`` after a byte-order mark, its line end lost, keeps its
    head: the repair starts the line after the mark, as the reader does, and adds the end."""
    path = make_rollout(tmp_path, 0)
    head = path.read_bytes().rstrip(b"\n")
    path.write_bytes(b"\xef\xbb\xbf" + head)
    w = RolloutWriter.open(path)
    assert w.repair is not None
    assert w.repair.kind == "newline_added"
    assert w.repair.offset == 3
    w.append(user(0))
    w.close()
    assert path.read_bytes().startswith(b"\xef\xbb\xbf" + head + b"\n")
    assert rebuild(path).messages == (user(0),)


def test_a_clean_file_needs_no_repair(tmp_path: Path) -> None:
    """Opening an undamaged rollout changes nothing and reports no repair."""
    path = make_rollout(tmp_path, 2)
    before = path.read_bytes()
    w = RolloutWriter.open(path)
    w.close()
    assert w.repair is None
    assert path.read_bytes() == before


# --- errors are not lost ----------------------------------------------------------------------


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EACCES, errno.EIO])
def test_a_write_error_surfaces_at_the_next_drain(
    writer: RolloutWriter, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    """An I/O error in the worker is raised by the next drain, naming the file and the cause."""
    writer.append(user(0))
    writer.drain()
    with fail_writes(writer, err):
        writer.append(user(1))
        with pytest.raises(WriterFailedError) as info:
            writer.drain()
    assert str(writer.path) in str(info.value)
    assert os.strerror(err) in str(info.value)
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.__cause__.errno == err


@pytest.mark.parametrize("then", ["append", "drain", "stop", "close"])
def test_a_write_error_surfaces_at_every_entry_point(
    writer: RolloutWriter, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """After a failed write, append, drain, stop and close each raise WriterFailedError."""
    with fail_writes(writer):
        writer.append(user(0))
        # Wait for the worker to fail without draining (drain would be the entry point itself).
        wait_failed(writer)
    actions = {
        "append": lambda: writer.append(user(1)),
        "drain": writer.drain,
        "stop": lambda: writer.stop(StopKind.PAUSED),
        "close": writer.close,
    }
    with pytest.raises(WriterFailedError, match="No space left"):
        actions[then]()


def test_a_partial_write_before_an_error_is_cut_back(
    writer: RolloutWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch half-written when the disk fills is cut back: the file ends on a full record."""
    for i in range(3):
        writer.append(user(i))
    writer.drain()
    good = writer.path.read_bytes()
    with fail_writes(writer, partial=10):
        for i in range(3, 6):
            writer.append(user(i))
        with pytest.raises(WriterFailedError, match="not written"):
            writer.drain()
    assert writer.path.read_bytes() == good
    state = rebuild(writer.path)
    assert state.messages == tuple(user(i) for i in range(3))
    assert state.degraded == ()
    with pytest.raises(WriterFailedError):
        writer.close()
    writer.close()  # reported once; the lock is released
    again = RolloutWriter.open(writer.path)
    assert again.next_seq == 5
    again.close()


def test_a_removed_file_surfaces_at_drain(writer: RolloutWriter) -> None:
    """Writing into a file that was deleted is reported instead of silently going nowhere."""
    writer.append(user(0))
    writer.path.unlink()
    with pytest.raises(WriterFailedError, match="removed"):
        writer.drain()


# --- kill -9 after drain ----------------------------------------------------------------------


def test_kill_9_after_drain_loses_nothing_drained(tmp_path: Path) -> None:
    """Records drained before the process is killed with SIGKILL are all in the file."""
    code = textwrap.dedent(
        """
        import sys, time
        from ledger import Message, RolloutWriter
        w = RolloutWriter.create(sys.argv[1])
        for i in range(500):
            w.append(Message(role="user", content=f"message {i}"))
        w.drain()
        print(w.path, flush=True)
        for i in range(500, 100000):
            w.append(Message(role="user", content=f"message {i}"))
        time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert proc.stdout is not None
        path = Path(proc.stdout.readline().strip())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    state = rebuild(path)
    assert state.messages[:500] == tuple(user(i) for i in range(500))
    # Whatever the worker wrote after the drain is a prefix of what was appended.
    assert state.messages == tuple(user(i) for i in range(len(state.messages)))
    assert {d.kind for d in state.degraded} <= {DegradationKind.TORN_TAIL}
    # And the killed file can be continued.
    with RolloutWriter.open(path) as w:
        w.stop(StopKind.INTERRUPTED, "killed")
    assert rebuild(path).terminal is not None


# --- the context manager ----------------------------------------------------------------------


def leave_by(w: RolloutWriter, body: Callable[[], object]) -> None:
    """Run ``body`` inside ``with w:`` after appending one message."""
    with w:
        w.append(user(0))
        body()


def raiser(exc: BaseException) -> Callable[[], object]:
    def body() -> object:
        raise exc

    return body


def test_leaving_the_block_by_an_exception_records_an_error_stop(tmp_path: Path) -> None:
    """An exception leaving the block writes a checkpoint and an 'error' terminal, then closes."""
    w = RolloutWriter.create(tmp_path)
    with pytest.raises(ZeroDivisionError):
        leave_by(w, lambda: 1 / 0)
    assert w.closed
    state = rebuild(w.path)
    assert state.messages == (user(0),)
    assert state.checkpoint is not None
    assert state.terminal is not None
    assert state.terminal.kind is StopKind.ERROR
    assert state.terminal.error is not None
    assert state.terminal.error.type == "ZeroDivisionError"
    assert "ZeroDivisionError" in state.terminal.reason


def test_keyboard_interrupt_is_recorded_as_interrupted(tmp_path: Path) -> None:
    """Ctrl-C leaving the block records the 'interrupted' stop kind."""
    w = RolloutWriter.create(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        leave_by(w, raiser(KeyboardInterrupt()))
    terminal = rebuild(w.path).terminal
    assert terminal is not None
    assert terminal.kind is StopKind.INTERRUPTED


def test_normal_exit_without_stop_records_closed(tmp_path: Path) -> None:
    """Leaving the block normally without stop() records a stop point of kind CLOSED (ADR 0053):
    told apart from a kill, and never a kind the caller did not choose (paused, completed)."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(user(0))
    assert w.closed
    state = rebuild(w.path)
    assert state.messages == (user(0),)
    assert state.checkpoint is not None
    assert state.checkpoint.message_count == 1
    assert state.terminal is not None
    assert state.terminal.kind == StopKind.CLOSED


def test_close_after_stop_adds_nothing(tmp_path: Path) -> None:
    """A writer stopped and then closed writes exactly one stop point."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(user(0))
        w.stop(StopKind.PAUSED)
    kinds = [type(r) for r in read_records(w.path)]
    assert kinds.count(Terminal) == 1


def test_sys_exit_zero_in_the_block_is_not_an_error(tmp_path: Path) -> None:
    """sys.exit(0) inside the block is a clean end: recorded as CLOSED, never as an error."""
    w = RolloutWriter.create(tmp_path)
    with pytest.raises(SystemExit):
        leave_by(w, lambda: sys.exit(0))
    state = rebuild(w.path)
    assert state.terminal is not None
    assert state.terminal.kind == StopKind.CLOSED


def test_sys_exit_with_a_status_is_an_error(tmp_path: Path) -> None:
    """sys.exit(3) inside the block is recorded as an error naming the status."""
    w = RolloutWriter.create(tmp_path)
    with pytest.raises(SystemExit):
        leave_by(w, lambda: sys.exit(3))
    state = rebuild(w.path)
    assert state.terminal is not None
    assert state.terminal.kind == StopKind.ERROR
    assert "sys.exit(3)" in state.terminal.reason


def test_an_exception_after_stop_adds_no_second_stop(tmp_path: Path) -> None:
    """When the block already stopped, an exception afterwards records nothing more."""
    w = RolloutWriter.create(tmp_path)

    def stop_then_fail() -> None:
        w.stop(StopKind.COMPLETED)
        raise RuntimeError("after the fact")

    with pytest.raises(RuntimeError):
        leave_by(w, stop_then_fail)
    kinds = [type(r) for r in read_records(w.path)]
    assert kinds.count(Terminal) == 1
    assert kinds.count(AgentCheckpoint) == 1


def test_the_block_exception_wins_over_a_failed_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the stop point cannot be written, the block's exception propagates with a note."""
    w = RolloutWriter.create(tmp_path)
    with fail_writes(w), pytest.raises(ValueError, match="boom") as info:
        leave_by(w, raiser(ValueError("boom")))
    assert any("stop point was not written" in n for n in info.value.__notes__)
    assert w.closed


# --- asyncio ----------------------------------------------------------------------------------


def test_async_forms_drain_stop_and_close(tmp_path: Path) -> None:
    """adrain, astop and aclose do the work of their blocking twins from a coroutine."""

    async def main() -> RolloutWriter:
        w = RolloutWriter.create(tmp_path)
        for m in conversation():
            w.append(m)
        await w.adrain()
        assert rebuild(w.path).messages == tuple(conversation())
        terminal = await w.astop(StopKind.PAUSED, "async")
        assert terminal.reason == "async"
        await w.aclose()
        return w

    w = asyncio.run(main())
    assert w.closed
    state = rebuild(w.path)
    assert state.checkpoint is not None
    assert state.checkpoint.digest == checkpoint_digest(conversation())


def test_async_with_records_cancellation_as_cancelled(tmp_path: Path) -> None:
    """A task cancelled inside ``async with`` records the 'cancelled' stop kind."""
    box: list[RolloutWriter] = []

    async def body() -> None:
        async with RolloutWriter.create(tmp_path) as w:
            box.append(w)
            w.append(user(0))
            await asyncio.Event().wait()

    async def main() -> None:
        task = asyncio.create_task(body())
        while not box:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    state = rebuild(box[0].path)
    assert box[0].closed
    assert state.terminal is not None
    assert state.terminal.kind is StopKind.CANCELLED
    assert state.messages == (user(0),)


def test_async_with_normal_exit_closes(tmp_path: Path) -> None:
    """Leaving ``async with`` normally drains and closes."""

    async def main() -> RolloutWriter:
        async with RolloutWriter.create(tmp_path) as w:
            w.append(user(0))
        return w

    w = asyncio.run(main())
    assert w.closed
    assert rebuild(w.path).messages == (user(0),)


def test_stop_that_cannot_read_the_file_back_writes_nothing(
    writer: RolloutWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the file cannot be read back, stop raises, writes no half stop point, and may retry."""
    writer.append(user(0))

    def unreadable(self: Any, buffer: Any) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(readback._TallyFile, "readinto", unreadable)
    with pytest.raises(WriterError, match="could not read back"):
        writer.stop(StopKind.PAUSED)
    monkeypatch.undo()
    writer.drain()
    kinds = [type(r) for r in read_records(writer.path)]
    assert AgentCheckpoint not in kinds
    assert Terminal not in kinds
    writer.stop(StopKind.PAUSED)
    state = rebuild(writer.path)
    assert state.checkpoint is not None
    assert state.checkpoint.message_count == 1


def test_a_real_file_size_limit_surfaces_and_leaves_the_file_readable(tmp_path: Path) -> None:
    """A write refused by the OS (RLIMIT_FSIZE, like a full disk) surfaces; the file stays whole."""
    code = textwrap.dedent(
        """
        import resource, signal, sys
        from ledger import Message, RolloutWriter, WriterFailedError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        w = RolloutWriter.create(sys.argv[1])
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, resource.RLIM_INFINITY))
        try:
            for i in range(2000):
                w.append(Message(role="user", content=f"message {i} " + "x" * 50))
                if i % 100 == 99:
                    w.drain()
        except WriterFailedError as exc:
            print("failed:", exc)
        try:
            w.close()
        except WriterFailedError:
            pass
        print(w.path)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    first, path_line = proc.stdout.strip().splitlines()
    assert first.startswith("failed: writing the rollout ")
    assert "File too large" in first
    path = Path(path_line)
    assert path.stat().st_size <= 20000
    assert path.read_bytes().endswith(b"\n")
    state = rebuild(path)
    assert state.degraded == ()
    n = len(state.messages)
    assert 0 < n < 2000
    assert state.messages == tuple(
        Message(role="user", content=f"message {i} " + "x" * 50) for i in range(n)
    )


def thinker(i: int, blocks: int = 2) -> Message:
    return Message(
        role="assistant",
        content=f"answer {i}",
        reasoning=tuple(Reasoning(text=f"thought {i}.{b}") for b in range(blocks)),
    )


def test_reasoning_left_without_its_message_is_moved_aside(tmp_path: Path) -> None:
    """Reasoning records at the end (their message never written) are cut off and kept aside."""
    w = RolloutWriter.create(tmp_path, durability=Durability.OS)
    w.append(user(0))
    w.append(thinker(1))
    w.drain()
    abandon(w)  # killed after the whole message: the repair below makes it look killed earlier
    lines = w.path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 5  # meta, user, 2 reasoning, assistant
    w.path.write_bytes(b"".join(lines[:4]))
    again = RolloutWriter.open(w.path)
    assert again.repair is not None
    assert again.repair.kind == "orphan_reasoning_moved"
    assert again.repair.sidecar is not None
    assert again.repair.sidecar.read_bytes() == b"".join(lines[2:4])
    assert again.next_seq == 3
    mine = thinker(2, blocks=1)
    again.append(mine)
    again.stop(StopKind.PAUSED)
    again.close()
    state = rebuild(w.path)
    assert state.messages == (user(0), mine)
    assert state.degraded == ()


def test_orphan_reasoning_and_a_torn_line_go_aside_together(tmp_path: Path) -> None:
    """A torn line after orphan reasoning records is moved with them, into one sidecar."""
    w = RolloutWriter.create(tmp_path, durability=Durability.OS)
    w.append(user(0))
    w.append(thinker(1))
    w.drain()
    abandon(w)  # killed after the whole message: the repair below makes it look killed earlier
    lines = w.path.read_bytes().splitlines(keepends=True)
    torn = lines[4][:20]
    w.path.write_bytes(b"".join(lines[:4]) + torn)
    again = RolloutWriter.open(w.path)
    again.close()
    assert again.repair is not None
    assert again.repair.kind == "orphan_reasoning_moved"
    assert again.repair.sidecar is not None
    assert again.repair.sidecar.read_bytes() == b"".join(lines[2:4]) + torn
    assert w.path.read_bytes() == b"".join(lines[:2])
    assert "reasoning records left without their message" in str(again.repair)


def test_a_failed_create_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the session_meta cannot be written, create raises and removes the file it made."""

    def no_space(fd: int, buffers: list[bytes]) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer_files, "writev_all", no_space)
    with pytest.raises(OSError, match="No space left"):
        RolloutWriter.create(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_rollout_and_sidecar_files_are_private(tmp_path: Path) -> None:
    """A new rollout and a torn-line sidecar are readable and writable by their owner only."""
    with RolloutWriter.create(tmp_path) as w:
        path = w.path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with path.open("ab") as f:
        f.write(b'{"type":"message","seq":2,')
    with RolloutWriter.open(path) as w:
        assert w.repair is not None
        assert w.repair.sidecar is not None
        assert stat.S_IMODE(w.repair.sidecar.stat().st_mode) == 0o600


@given(message=s.messages(), seq=s.seqs, ts=s.utc_datetimes)
def test_the_writers_records_are_message_records(message: Message, seq: int, ts: datetime) -> None:
    """The records the writer makes from templates on its append path are, byte for byte,
    those `message_records` makes with the checked constructors (and the same refusal)."""
    try:
        expected = [encode_record(r) for r in message_records(message, first_seq=seq, ts=ts)]
    except ValueError:
        with pytest.raises(ValueError, match="only assistant messages carry reasoning"):
            writer_lines.lines_of(message, seq, ts)
        return
    assert writer_lines.lines_of(message, seq, ts) == expected
