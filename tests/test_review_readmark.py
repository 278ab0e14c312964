"""Open's read mark under another program that ignores the lock (ADR 0067).

Another program writes to the file at every read open makes of it (before the lock, during the
fold, after it, after the mark): the stop that follows either refuses (``ReadBackError``, a
failed terminal) or writes a checkpoint equal to the fold of the whole file, never one that the
whole file contradicts.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ledger import (
    Message,
    ReadBackError,
    Role,
    RolloutWriter,
    StopKind,
    WriterBusyError,
    WriterError,
)
from ledger.reader import rebuild
from read_back_spy import spy_read_back_starts


def _user(i: int) -> Message:
    return Message(role=Role.USER, content=f"question {i}")


def _rogue(seq: int) -> bytes:
    return (
        b'{"type":"message","seq":%d,"ts":"2026-12-03T00:00:00Z","message":'
        b'{"role":"user","content":"from elsewhere"}}\n' % seq
    )


def _session(directory: Path, *, compacted: bool) -> Path:
    w = RolloutWriter.create(directory, session_id="raced")
    w.append(_user(0))
    w.append(_user(1))
    if compacted:
        w.compacted([_user(7)], summary="kept")
        w.append(_user(2))
    w.stop(StopKind.PAUSED)
    w.close()
    return w.path


def _edit(fd: int, data: bytes) -> None:
    """Another program rewrites the last question in place, same length."""
    os.pwrite(fd, b"QUESTION", data.rindex(b"question"))


def _edit_first(fd: int, data: bytes) -> None:
    """Another program rewrites the first question in place, same length."""
    os.pwrite(fd, b"QUESTION", data.index(b"question"))


def _append(fd: int, data: bytes) -> None:
    """Another program appends a record numbered as the writer's next."""
    last = rebuild(io.BytesIO(data)).last_seq or 0
    os.pwrite(fd, _rogue(last + 1), len(data))


def _append_torn(fd: int, data: bytes) -> None:
    """Another program appends half a record."""
    os.pwrite(fd, b'{"type":"message","seq":', len(data))


def _cut_line(fd: int, data: bytes) -> None:
    """Another program cuts the last line off."""
    os.ftruncate(fd, data.rstrip(b"\n").rindex(b"\n") + 1)


def _cut_to_head(fd: int, data: bytes) -> None:
    """Another program cuts everything after the session_meta."""
    os.ftruncate(fd, data.index(b"\n") + 1)


def _cut_and_refill(fd: int, data: bytes) -> None:
    """Another program cuts the last line and writes one of the same length in its place."""
    start = data.rstrip(b"\n").rindex(b"\n") + 1
    old = data[start:]
    os.ftruncate(fd, start)
    os.pwrite(fd, b" " * (len(old) - 1) + b"\n", start)


_ACTIONS: dict[str, Callable[[int, bytes], None]] = {
    "edit": _edit,
    "edit-first": _edit_first,
    "append": _append,
    "append-torn": _append_torn,
    "cut-line": _cut_line,
    "cut-to-head": _cut_to_head,
    "cut-and-refill": _cut_and_refill,
}


class _Race:
    """Counts the positional reads of one file (by inode) and runs ``action`` on it once,
    right after read number ``at`` returned."""

    def __init__(self, path: Path, at: int, action: Callable[[int, bytes], None]) -> None:
        self.ino = path.stat().st_ino
        self.path = path
        self.at = at
        self.action = action
        self.reads = 0
        self.fired = False
        self.real = os.pread

    def pread(self, fd: int, n: int, offset: int) -> bytes:
        data = self.real(fd, n, offset)
        if os.fstat(fd).st_ino == self.ino:
            self.reads += 1
            if self.reads == self.at:
                self.fire()
        return data

    def fire(self) -> None:
        if self.fired:
            return
        self.fired = True
        fd = os.open(self.path, os.O_RDWR)
        try:
            self.action(fd, self.path.read_bytes())
        finally:
            os.close(fd)


def _holds(path: Path, outcome: BaseException | None, when: str = "") -> None:
    """The stop refused with a failed terminal, or its checkpoint is the whole file's fold."""
    whole = rebuild(path)
    if outcome is not None:
        assert isinstance(outcome, ReadBackError), repr(outcome)
        assert whole.terminal is not None
        assert whole.terminal.stop_kind == StopKind.FAILED.value
        return
    assert whole.checkpoint is not None
    assert whole.checkpoint.digest == whole.at_checkpoint_digest, when
    assert whole.checkpoint.message_count == len(whole.at_checkpoint), when


def _open_under(path: Path, race: _Race, monkeypatch: pytest.MonkeyPatch) -> RolloutWriter | None:
    monkeypatch.setattr(os, "pread", race.pread)
    try:
        return RolloutWriter.open(path)
    except WriterError:
        return None  # open refused what it found: nothing to check
    finally:
        monkeypatch.setattr(os, "pread", race.real)


def _reads_of_open(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    race = _Race(path, 0, _edit)
    w = _open_under(path, race, monkeypatch)
    assert w is not None
    w.close()
    return race.reads


@pytest.mark.parametrize("compacted", [False, True], ids=["plain", "compacted"])
@pytest.mark.parametrize("action", sorted(_ACTIONS))
def test_a_foreign_write_at_any_read_of_open_never_gets_a_contradicted_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str, compacted: bool
) -> None:
    """Whatever read of open another program writes after (edits, appends, cuts), and also
    once open returned, the next stop refuses or checkpoints exactly the whole file."""
    reads = _reads_of_open(_session(tmp_path / "count", compacted=compacted), monkeypatch)
    assert reads >= 2
    for at in range(1, reads + 2):  # reads + 1: after open returned
        path = _session(tmp_path / f"at-{at}", compacted=compacted)
        race = _Race(path, at, _ACTIONS[action])
        w = _open_under(path, race, monkeypatch)
        if w is None:
            continue
        race.fire()  # when open made fewer reads this time: right after it
        outcome: BaseException | None = None
        w.append(_user(5))
        try:
            w.stop(StopKind.PAUSED)
        except ReadBackError as exc:
            outcome = exc
        finally:
            w.close()
        _holds(path, outcome, f"{action} after read {at} of {reads}")


def test_an_edit_just_after_opens_fold_refuses_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes open already folded, rewritten in place before open keeps its mark: the mark
    stands for the bytes folded, so the stop sees the change and writes no checkpoint."""
    import ledger.writer_files as writer_files

    path = _session(tmp_path, compacted=False)
    real = writer_files.rebuild_stream

    def fold_then_edit(*args: Any, **kwargs: Any) -> Any:
        state = real(*args, **kwargs)
        fd = os.open(path, os.O_RDWR)
        try:
            _edit(fd, path.read_bytes())
        finally:
            os.close(fd)
        return state

    monkeypatch.setattr(writer_files, "rebuild_stream", fold_then_edit)
    w = RolloutWriter.open(path)
    monkeypatch.undo()
    w.append(_user(5))
    with pytest.raises(ReadBackError, match="changed after this writer read them"):
        w.stop(StopKind.PAUSED)
    w.close()
    _holds(path, ReadBackError("refused"))


@pytest.mark.parametrize("shape", ["plain", "compacted", "bom", "crlf", "damaged-compaction"])
def test_opens_mark_covers_what_its_fold_read_on_every_rebuild_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """Whichever way open folds the file (whole, the window after the last compaction, or the
    whole file again when the compaction line is damaged), its mark covers every line read:
    the next stop decodes only what follows, and refuses only over damage."""
    path = _session(tmp_path, compacted=shape != "plain")
    data = path.read_bytes()
    if shape == "bom":
        data = b"\xef\xbb\xbf" + data
    elif shape == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif shape == "damaged-compaction":
        at = data.index(b'{"type":"compacted"') + 30
        data = data[:at] + b"\x00" + data[at + 1 :]
    path.write_bytes(data)
    lines = data.count(b"\n")
    starts = spy_read_back_starts(monkeypatch)
    with RolloutWriter.open(path) as w:
        w.append(_user(5))
        if shape == "damaged-compaction":
            with pytest.raises(ReadBackError, match="damage"):
                w.stop(StopKind.PAUSED)
        else:
            w.stop(StopKind.PAUSED)
            _holds(path, None)
    assert starts[0] == lines + 1


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (a fork in the test process would copy its threads)
    that imports this checkout's ``src``."""
    src = str(Path(__file__).resolve().parent.parent / "src")
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": src},
        check=False,
    )


_FORKED_OPENS = """
import os, sys
from ledger import Message, RolloutWriter, StopKind, WriterBusyError
path = sys.argv[1]
parent = RolloutWriter.open(path)
pid = os.fork()
if pid == 0:
    try:
        RolloutWriter.open(path)
    except WriterBusyError:
        os._exit(0)
    os._exit(3)
print("busy" if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else "OPENED")
parent.close()
pid = os.fork()
if pid == 0:
    code = 1
    try:
        w = RolloutWriter.open(path)
        w.append(Message(role="user", content="from the child"))
        w.stop(StopKind.PAUSED)
        w.close()
        code = 0
    finally:
        os._exit(code)
print("resumed" if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else "FAILED")
"""


def test_open_in_a_forked_child_is_refused_while_the_parent_holds_the_file(
    tmp_path: Path,
) -> None:
    """A child forked while the parent holds the writer cannot open the file; once the parent
    closed it, the child's open and stop checkpoint exactly."""
    path = _session(tmp_path, compacted=False)
    result = run_python(_FORKED_OPENS, str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["busy", "resumed"]
    _holds(path, None)
    assert rebuild(path).checkpoint.message_count == 3  # type: ignore[union-attr]


def test_concurrent_opens_leave_one_writer_and_exact_checkpoints(tmp_path: Path) -> None:
    """Threads opening one file at once: exactly one writer, the others busy, and the stop of
    the one checkpoints exactly."""
    path = _session(tmp_path, compacted=True)
    start = threading.Barrier(6)
    got: list[RolloutWriter | str] = []
    lock = threading.Lock()

    def go() -> None:
        start.wait()
        try:
            w: RolloutWriter | str = RolloutWriter.open(path)
        except WriterBusyError:
            w = "busy"
        with lock:
            got.append(w)

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writers = [w for w in got if isinstance(w, RolloutWriter)]
    assert len(writers) == 1
    assert got.count("busy") == 5
    writers[0].append(_user(5))
    writers[0].stop(StopKind.PAUSED)
    writers[0].close()
    _holds(path, None)
