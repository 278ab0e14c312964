"""Regression tests for the defects an outside probe found in the writer (D1-D9, D12, D13, D15).

Each test reproduces one recipe of the probe through the public surface only and pins the fix:
a closed writer never touches a descriptor, a forked child never owns its parent's lock, a file
that is not a rollout is never touched, the read-back goes through the descriptor the writer
holds, a failed thread start leaks nothing, durability and coordinates are checked, a cancelled
asynchronous stop is not doubled, long names keep their sidecars, and non-regular files are
refused at once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

import ledger.reader as reader_module
import ledger.writer as writer_module
import ledger.writer_lines as writer_lines
from ledger import (
    FORMAT_VERSION,
    Compacted,
    DegradationKind,
    Durability,
    Message,
    Role,
    RolloutWriter,
    StopKind,
    Terminal,
    WriterClosedError,
    WriterError,
    decode_record,
    with_delegation_id,
    with_rollout_session_id,
)
from ledger.naming import MAX_NAME_BYTES
from ledger.testing import abandon
from replay import list_sessions, read_replay, read_stop_facts, resume_eligibility

SRC = Path(__file__).resolve().parents[1] / "src"


def user(i: int) -> Message:
    """A small user message."""
    return Message(role=Role.USER, content=f"message {i}")


def terminals(path: Path) -> list[Terminal]:
    """The terminal records of the file, in order."""
    out = []
    for line in path.read_bytes().splitlines():
        record = decode_record(line)
        if isinstance(record, Terminal):
            out.append(record)
    return out


def run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this checkout's ``src``."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


# --- D1: drain racing close --------------------------------------------------------------------


def test_drain_racing_close_never_touches_another_file(tmp_path: Path) -> None:
    """A drain racing close() never acts on a descriptor the close freed (D1).

    The freed number is taken at once by an unlinked temporary file (``st_nlink == 0``, what the
    writer reads as "the rollout was removed"): the drain must neither truncate it nor report a
    false write failure; it succeeds or says the writer is closed.
    """
    problems: list[str] = []
    for trial in range(150):
        w = RolloutWriter.create(tmp_path, session_id=f"race-{trial}", durability=Durability.OS)
        w.append(user(0))
        w.stop(StopKind.PAUSED)
        start = threading.Barrier(2)

        def drain(writer: RolloutWriter = w, barrier: threading.Barrier = start) -> None:
            barrier.wait()
            for _ in range(20):
                try:
                    writer.drain()
                except WriterClosedError:
                    return
                except Exception as exc:
                    problems.append(f"drain raised {exc!r}")
                    return

        t = threading.Thread(target=drain)
        t.start()
        start.wait()
        w.close()
        with tempfile.TemporaryFile() as victim:
            victim.write(b"x" * 100)
            victim.flush()
            t.join()
            if os.fstat(victim.fileno()).st_size != 100:
                problems.append(f"trial {trial}: an unrelated file was truncated")
    assert problems == []


def test_a_closed_writer_refuses_to_drain(tmp_path: Path) -> None:
    """After close, drain raises WriterClosedError and touches nothing (D1)."""
    w = RolloutWriter.create(tmp_path)
    w.close()
    with pytest.raises(WriterClosedError):
        w.drain()


def test_cancelled_adrain_then_aclose_is_safe(tmp_path: Path) -> None:
    """A cancelled adrain() followed by aclose() neither fails nor writes elsewhere (D1)."""

    async def main() -> None:
        w = RolloutWriter.create(tmp_path)
        for i in range(200):
            w.append(Message(role=Role.USER, content="x" * 10_000 + str(i)))
        task = asyncio.ensure_future(w.adrain())
        await asyncio.sleep(0)
        task.cancel()
        await w.aclose()
        with pytest.raises((asyncio.CancelledError, WriterClosedError)):
            await task

    asyncio.run(main())
    (path,) = tmp_path.glob("*.jsonl")
    assert read_replay(path).total_messages == 200


# --- D3: the lock and forked children -----------------------------------------------------------

_FORK_CHILD_CLOSES = """
import os, sys
from ledger import Message, RolloutWriter, StopKind, WriterBusyError
root = sys.argv[1]
with RolloutWriter.create(root, session_id="parent") as w:
    w.append(Message(role="user", content="hi"))
    pid = os.fork()
    if pid == 0:
        # The child leaves the block (and closes) the way sys.exit(0) would.
        try:
            w.close()
            w.__exit__(None, None, None)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    try:
        RolloutWriter.open(w.path)
    except WriterBusyError:
        print("STILL LOCKED")
    else:
        print("LOCK LOST")
    w.append(Message(role="user", content="after the child"))
    w.stop(StopKind.PAUSED)
print("OK")
"""


def test_a_forked_child_cannot_release_the_parents_lock(tmp_path: Path) -> None:
    """A child forked while a writer is open closes it without releasing the lock (D3)."""
    result = run_python(_FORK_CHILD_CLOSES, str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["STILL", "LOCKED", "OK"]
    (path,) = tmp_path.glob("*.jsonl")
    assert read_replay(path).verified


_FORK_CHILD_OUTLIVES = """
import os, sys, time
from ledger import Message, RolloutWriter
w = RolloutWriter.create(sys.argv[1], session_id="dies")
w.append(Message(role="user", content="hi"))
w.drain()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # let the parent's reader see the end of its output
    os.dup2(null, 2)
    time.sleep(60)
    os._exit(0)
print(w.path, pid, flush=True)
os._exit(9)  # as kill -9: no close, no stop
"""


def test_a_forked_child_does_not_keep_a_dead_parents_lock(tmp_path: Path) -> None:
    """When the writer's process dies, a child it forked does not keep the file locked (D3)."""
    result = run_python(_FORK_CHILD_OUTLIVES, str(tmp_path))
    path_text, pid_text = result.stdout.split()
    try:
        w = RolloutWriter.open(path_text)  # no waiting: the lock died with the parent
        w.append(user(1))
        w.stop(StopKind.PAUSED)
        w.close()
    finally:
        os.kill(int(pid_text), 9)
    assert read_replay(path_text).total_messages == 2


_FORK_CHILD_USES = """
import os, sys
from ledger import Message, RolloutWriter, WriterError
w = RolloutWriter.create(sys.argv[1])
pid = os.fork()
if pid == 0:
    try:
        w.append(Message(role="user", content="from the child"))
    except WriterError as exc:
        print("REFUSED", "belongs to process" in str(exc), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
w.close()
"""


def test_a_forked_child_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """Using the parent's writer in a forked child raises an error naming the owner (D3)."""
    result = run_python(_FORK_CHILD_USES, str(tmp_path))
    assert result.stdout.split() == ["REFUSED", "True"], result.stderr


# --- D4: a file that is not a rollout -----------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"my notes about the project, no line end here",
        b"line one\nline two without end",
        b'{"type":"message","seq":1,"ts":"2026-12-03T00:00:00Z","message":{"role":"user"}}\n{"tor',
        b"",
    ],
)
def test_open_touches_nothing_that_is_not_a_rollout(tmp_path: Path, content: bytes) -> None:
    """open() refuses a file without a session_meta head before any repair (D4)."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(WriterError, match="is not a rollout"):
        RolloutWriter.open(path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_open_refuses_a_newer_format(tmp_path: Path) -> None:
    """A rollout of a newer format is not continued by an older library (nothing touched)."""
    w = RolloutWriter.create(tmp_path)
    w.close()
    version = f'"format_version":{FORMAT_VERSION}'.encode()
    data = w.path.read_bytes().replace(version, b'"format_version":99', 1)
    w.path.write_bytes(data + b'{"tor')
    with pytest.raises(WriterError, match="newer than this library"):
        RolloutWriter.open(w.path)
    assert w.path.read_bytes() == data + b'{"tor'


# --- D5: read back through the descriptor, not the path -----------------------------------------


def test_stop_after_chdir_with_a_relative_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer created in a relative directory still stops after the process changes directory
    (D5)."""
    monkeypatch.chdir(tmp_path)
    w = RolloutWriter.create("sessions")
    w.append(user(0))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    w.stop(StopKind.PAUSED)
    w.close()
    (path,) = (tmp_path / "sessions").glob("*.jsonl")
    rep = read_replay(path)
    assert rep.verified
    assert rep.messages == (user(0),)


def test_stop_reads_its_own_file_when_a_symlink_is_retargeted(tmp_path: Path) -> None:
    """A writer opened through a symlink that is then pointed at another session checkpoints
    its own file, never the other one (D5)."""
    other = RolloutWriter.create(tmp_path, session_id="other")
    for i in range(3):
        other.append(user(100 + i))
    other.stop(StopKind.PAUSED)
    other.close()
    mine = RolloutWriter.create(tmp_path, session_id="mine")
    mine.append(user(0))
    mine.stop(StopKind.PAUSED)
    mine.close()
    link = tmp_path / "current.jsonl"
    link.symlink_to(mine.path)
    w = RolloutWriter.open(link)
    link.unlink()
    link.symlink_to(other.path)
    w.append(user(1))
    w.stop(StopKind.PAUSED)
    w.close()
    assert read_replay(mine.path).verified
    assert read_replay(other.path).verified


# --- D6: a worker thread that cannot start ------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_a_thread_that_cannot_start_leaks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the worker thread cannot start, create leaves no file and open no lock or fd (D6)."""
    w = RolloutWriter.create(tmp_path, session_id="exists")
    w.append(user(0))
    w.close()
    before = _open_fds()

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(WriterError, match="could not start the writer thread"):
        RolloutWriter.create(tmp_path, session_id="new")
    with pytest.raises(WriterError, match="could not start the writer thread"):
        RolloutWriter.open(w.path)
    monkeypatch.undo()
    assert _open_fds() == before
    assert [p.name for p in tmp_path.iterdir()] == [w.path.name]
    again = RolloutWriter.open(w.path)  # the lock was released
    again.close()


# --- D7: durability -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 42, "sometimes", 1.5, True])
def test_a_wrong_durability_is_refused(tmp_path: Path, bad: object) -> None:
    """A durability that is not a Durability (or its name) is refused, never silently OS (D7)."""
    with pytest.raises(ValueError, match="is not a Durability"):
        RolloutWriter.create(tmp_path, durability=bad)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("given", "expected"), [(d.value, d) for d in Durability])
def test_a_durability_name_means_that_durability(
    tmp_path: Path, given: str, expected: Durability
) -> None:
    """``durability="drain"`` is Durability.DRAIN (it fsyncs on drain), not a silent OS (D7)."""
    with RolloutWriter.create(tmp_path, durability=given) as w:
        assert w.durability is expected


# --- D8 (coordinates) and D13: empty coordinates ------------------------------------------------


def test_empty_coordinates_are_a_child_without_coordinates(tmp_path: Path) -> None:
    """Coordinates declared empty are listed as a child without them, not resumable (D13)."""
    with with_rollout_session_id(""), with_delegation_id(""):
        w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.stop(StopKind.PAUSED)
    w.close()
    (entry,) = list_sessions(tmp_path)
    assert entry.is_child
    assert not entry.eligibility.replayable
    assert "child_without_coordinates" in entry.flags


def test_a_wrong_typed_delegation_id_never_reaches_the_file(tmp_path: Path) -> None:
    """with_delegation_id(7) is refused at once; no undecodable session_meta is written (D8)."""
    with pytest.raises(TypeError, match="must be a str"), with_delegation_id(7):  # type: ignore[arg-type]
        RolloutWriter.create(tmp_path)
    assert list(tmp_path.iterdir()) == []


# --- D9: a cancelled asynchronous stop ----------------------------------------------------------


@pytest.mark.parametrize("kind", [StopKind.COMPLETED, StopKind.PAUSED])
def test_a_cancelled_astop_inside_async_with_is_the_only_stop(
    tmp_path: Path, kind: StopKind
) -> None:
    """Cancelling the task while it awaits astop() inside ``async with`` writes one stop, of
    the kind asked for (D9)."""

    async def main(root: Path) -> Path:
        w = RolloutWriter.create(root)
        started = asyncio.Event()

        async def agent() -> None:
            async with w:
                for i in range(50):
                    w.append(Message(role=Role.USER, content=f"{i} " + "y" * 100_000))
                started.set()
                await w.astop(kind, reason="asked")

        task = asyncio.ensure_future(agent())
        await started.wait()
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return w.path

    for trial in range(3):
        path = asyncio.run(main(tmp_path / str(trial)))
        assert [t.stop_kind for t in terminals(path)] == [kind.value]
        facts = read_stop_facts(path)
        assert facts.kind == kind
        assert resume_eligibility(facts).replayable == (kind == StopKind.PAUSED)


# --- D12: names near the file system's limit ----------------------------------------------------


@pytest.mark.parametrize("length", [251, 253, 255])
def test_a_long_named_session_reopens_after_a_kill(tmp_path: Path, length: int) -> None:
    """A session whose file name is 251-255 bytes reopens after a kill: its torn-line sidecar
    gets a name that fits (D12)."""
    fixed = len("2026-12-03_11-59-36_") + len("_") + len(".jsonl")
    agent = "a" * 120
    sid = "s" * (length - fixed - len(agent))
    w = RolloutWriter.create(tmp_path, session_id=sid, agent_name=agent)
    assert len(w.path.name) == length
    w.append(user(0))
    w.drain()
    abandon(w)
    with w.path.open("ab") as f:
        f.write(b'{"type":"message","seq":3,')
    again = RolloutWriter.open(w.path)
    assert again.repair is not None
    assert again.repair.sidecar is not None
    assert len(again.repair.sidecar.name.encode()) <= MAX_NAME_BYTES
    assert again.repair.sidecar.read_bytes() == b'{"type":"message","seq":3,'
    again.append(user(1))
    again.stop(StopKind.PAUSED)
    again.close()
    assert read_replay(w.path).verified


# --- D15: files that are not regular ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_open_refuses_a_non_regular_file_at_once(tmp_path: Path, kind: str) -> None:
    """open() on a FIFO, /dev/zero or a directory fails at once, reading nothing (D15)."""
    if kind == "fifo":
        target = tmp_path / "pipe.jsonl"
        os.mkfifo(target)
    elif kind == "directory":
        target = tmp_path / "dir.jsonl"
        target.mkdir()
    else:
        target = Path("/dev/zero")
    code = """
        import sys
        from ledger import RolloutWriter, WriterError
        try:
            RolloutWriter.open(sys.argv[1])
        except (WriterError, OSError) as exc:
            print("REFUSED", type(exc).__name__)
    """
    result = run_python(code, str(target), timeout=30)
    assert result.stdout.split()[0] == "REFUSED", result.stderr


# --- D2: nothing accepted that the reader cannot read back --------------------------------------


def test_a_line_over_the_reader_limit_is_refused_at_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record longer than the reader's line limit is refused at append, nothing is written,
    and the writer stays usable (D2)."""
    monkeypatch.setattr(writer_module, "DEFAULT_MAX_LINE_BYTES", 10_000)
    monkeypatch.setattr(reader_module, "DEFAULT_MAX_LINE_BYTES", 10_000)
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    with pytest.raises(ValueError, match="line limit"):
        w.append(Message(role=Role.TOOL, tool_call_id="c", content="\x01" * 3_000))
    assert w.next_seq == 3
    w.append(user(1))
    w.stop(StopKind.PAUSED)
    w.close()
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.messages == (user(0), user(1))


@pytest.mark.parametrize("summary", [123, b"bytes", ["a"]])
def test_compacted_refuses_a_summary_that_is_not_text(tmp_path: Path, summary: object) -> None:
    """compacted(summary=123) is refused: nothing unreadable is written (D2)."""
    with RolloutWriter.create(tmp_path) as w:
        with pytest.raises(TypeError, match="summary"):
            w.compacted([user(0)], summary=summary)  # type: ignore[arg-type]
        w.stop(StopKind.PAUSED)
    assert not any(
        isinstance(decode_record(line), Compacted) for line in w.path.read_bytes().splitlines()
    )


def test_no_checkpoint_over_a_damaged_read_back(tmp_path: Path) -> None:
    """When the file read back reports damage, stop writes a failed terminal record instead of
    a checkpoint that would bless it, and raises (D2)."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.drain()
    with w.path.open("ab") as f:  # damage written behind the writer's back
        f.write(b"this is not a record\n")
    with pytest.raises(writer_module.ReadBackError, match="damage"):
        w.stop(StopKind.PAUSED)
    w.close()
    rep = read_replay(w.path)
    assert not rep.verified
    assert rep.checkpoint is None
    facts = read_stop_facts(w.path)
    assert facts.kind == StopKind.FAILED
    assert "damage" in facts.reason
    assert not resume_eligibility(facts).replayable


def _lossy_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the writer encode messages with a field no reader knows: decoding drops it, so
    the record does not come back whole."""
    real = writer_lines.encode_record

    def lossy(record: object) -> bytes:
        data = real(record)  # type: ignore[arg-type]
        return data.replace(b'"message":{', b'"message":{"lost":1,', 1)

    monkeypatch.setattr(writer_lines, "encode_record", lossy)


def test_stop_notices_a_record_that_does_not_come_back_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the stop decodes what it reads back (a rewind since the last read makes it), a
    record whose decoding loses a value is caught there: no checkpoint (ADR 0052)."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.rewind(1)
    _lossy_encoding(monkeypatch)
    w.append(user(1))
    monkeypatch.undo()
    with pytest.raises(writer_module.ReadBackError, match="did not come back as written"):
        w.stop(StopKind.PAUSED)
    w.close()
    assert read_stop_facts(w.path).kind == StopKind.FAILED


def test_a_record_that_does_not_come_back_as_written_is_never_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the stop folds the lines it wrote without decoding them (ADR 0164), it checkpoints
    the bytes as written; a value that decoding loses is then reported by replay, which never
    calls the conversation verified."""
    w = RolloutWriter.create(tmp_path)
    _lossy_encoding(monkeypatch)
    w.append(user(0))
    monkeypatch.undo()
    w.stop(StopKind.PAUSED)
    w.close()
    rep = read_replay(w.path)
    assert not rep.verified
    assert [d.line for d in rep.degraded if d.kind == DegradationKind.UNKNOWN_FIELD] == [2]


_EXIT_WITH_EVERY_FD_IN_USE = """
import os, resource, sys
from ledger import Message, RolloutWriter
resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
writers = []
try:
    while True:
        w = RolloutWriter.create(sys.argv[1], durability="os")
        w.append(Message(role="user", content=f"hello {len(writers)}"))
        writers.append(w)
except OSError:
    pass
hog = []
try:
    while True:
        hog.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print(len(writers), flush=True)
"""


def test_exit_with_writers_open_and_every_fd_in_use(tmp_path: Path) -> None:
    """A process that exits with writers open while every descriptor is in use exits cleanly,
    and each writer's records reach its file with a stop point of kind closed (rough edge of
    issue 10; ADR 0053)."""
    result = run_python(_EXIT_WITH_EVERY_FD_IN_USE, str(tmp_path))
    assert result.returncode == 0, result.stderr
    opened = int(result.stdout)
    paths = sorted(tmp_path.glob("*.jsonl"))
    assert len(paths) >= opened > 10
    for path in paths[:opened]:
        rep = read_replay(path)
        assert rep.total_messages == 1
        assert rep.verified
        assert read_stop_facts(path).kind == StopKind.CLOSED
