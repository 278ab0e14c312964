"""Regression tests for what the second outside pass found after the first round of fixes.

Signals and forks meeting the writer's locks (interruption between two bytecodes of an append,
a handler calling the writer, a fork while a lock is held or before a writer owns its
descriptor), cancelled asynchronous constructors, hostile values (cycles, NaN in containers,
positional arguments, int subclasses), the command's blind spots (unreadable directories,
undecodable names, a closed pipe, ids that look like paths) and raw errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import inspect
import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

import ledger.tail as tail_module
import ledger.writer_lines as writer_lines
from ledger import (
    DegradationKind,
    InvalidFieldError,
    Message,
    MessageRecord,
    Role,
    RolloutExistsError,
    RolloutWriter,
    StopKind,
    ToolCall,
    WriterClosedError,
    WriterError,
    raw_json,
)
from ledger.batching import BatchQueue
from ledger.memory import ConversationMemory
from ledger.testing import abandon, hold, intercept_writes
from replay import list_sessions, read_replay, read_stop_facts, resume_eligibility
from replay.cli import cli

SRC = Path(__file__).resolve().parents[1] / "src"
ROLLOUT = Path(sys.executable).parent / "rollout"


def user(i: int) -> Message:
    """A small user message."""
    return Message(role=Role.USER, content=f"message {i}")


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


# --- interruptions ------------------------------------------------------------------------------


def test_a_call_from_inside_another_call_is_refused_and_harms_nothing(tmp_path: Path) -> None:
    """A writer call made on the thread that is inside another call of the same writer (what a
    signal handler does) is refused with an error saying so; the file stays whole."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    real = writer_lines.encode_record
    nested: list[BaseException] = []

    def handler_like(record: Any) -> bytes:
        try:
            w.stop(StopKind.INTERRUPTED)
        except WriterError as exc:
            nested.append(exc)
        return real(record)

    writer_lines.encode_record = handler_like  # type: ignore[assignment]
    try:
        w.append(user(1))
    finally:
        writer_lines.encode_record = real
    assert len(nested) == 1
    assert "inside another call of the same writer" in str(nested[0])
    w.stop(StopKind.PAUSED)
    w.close()
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.messages == (user(0), user(1))


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_keyboard_interrupt_anywhere_in_appends_leaves_a_whole_file(tmp_path: Path) -> None:
    """Ctrl-C landing between any two bytecodes of append (or of leaving the block) never makes
    a sequence number twice: every file ends with one interrupted stop and verifies."""
    rng = random.Random(7)  # noqa: S311 - test timing, not secrets

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        for trial in range(40):
            w = RolloutWriter.create(tmp_path / str(trial), durability="os")
            with pytest.raises(KeyboardInterrupt), w:  # noqa: PT012 - the loop is interrupted
                # Armed inside the block: armed before it, on a loaded machine the alarm could
                # ring before the block was entered, and nothing would catch it.
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.0005, 0.01))
                while True:
                    w.append(Message(role=Role.ASSISTANT, content="t"))
            signal.setitimer(signal.ITIMER_REAL, 0)
            rep = read_replay(w.path)
            kinds = {d.kind for d in rep.degraded}
            assert DegradationKind.SEQUENCE_DUPLICATE not in kinds, trial
            assert rep.verified, (trial, [str(d) for d in rep.degraded])
            assert read_stop_facts(w.path).kind in (StopKind.INTERRUPTED, StopKind.CLOSED)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def until_draining(writer: RolloutWriter) -> None:
    """Return once a drain of ``writer`` waits (and a little after)."""
    deadline = time.monotonic() + 5
    while not writer._q.flush_wanted and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)


@contextlib.contextmanager
def writes_blocked(writer: RolloutWriter) -> Iterator[threading.Event]:
    """In the block, the worker's writes wait until the event given is set (set on leaving)."""
    unblock = threading.Event()

    def blocked_write(fd: int, buffers: Any, real: Any) -> int:
        unblock.wait(5)
        return int(real(fd, buffers))

    try:
        with intercept_writes(writer, blocked_write):
            yield unblock
    finally:
        unblock.set()


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_a_second_interrupt_in_a_drain_never_releases_a_lock_it_does_not_hold(
    tmp_path: Path,
) -> None:
    """Two interruptions in a row during drain(): the first while it waits, the second while it
    takes the queue's lock back, which another thread holds meanwhile. The drain raises
    KeyboardInterrupt, the other thread's hold is left alone (Condition.wait used to release
    it on the way out), and the writer goes on."""
    w = RolloutWriter.create(tmp_path, durability="os")
    q = w._q
    rang: list[int] = []

    def interrupt(signum: int, frame: object) -> None:
        rang.append(signum)
        raise KeyboardInterrupt

    seen: list[bool] = []

    def interrupt_twice_holding_the_lock() -> None:
        until_draining(w)
        with q._lock:
            os.kill(os.getpid(), signal.SIGALRM)  # lands in the wait
            time.sleep(0.2)  # the drain now waits for this lock
            os.kill(os.getpid(), signal.SIGALRM)  # lands while it takes the lock back
            time.sleep(0.2)
            seen.append(q._lock.locked())
            if not seen[-1]:
                q._lock.acquire()  # so that leaving the block has a lock to release

    old = signal.signal(signal.SIGALRM, interrupt)
    other = threading.Thread(target=interrupt_twice_holding_the_lock)
    try:
        with writes_blocked(w) as unblock:
            w.append(Message(role=Role.USER, content="kept"))
            other.start()
            with pytest.raises(KeyboardInterrupt):
                w.drain()
            other.join(5)
            unblock.set()
            w.drain()
    finally:
        signal.signal(signal.SIGALRM, old)
    assert len(rang) == 2
    assert seen == [True]
    w.stop(StopKind.PAUSED)
    w.close()
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.messages == (Message(role=Role.USER, content="kept"),)


def test_an_interrupt_while_close_waits_for_the_worker_still_closes(tmp_path: Path) -> None:
    """A second Ctrl-C landing while close() waits for the worker to end: close() raises it,
    but only once the worker has ended and the writer is closed; nothing half closed is left
    to accept appends it can no longer write."""
    w = RolloutWriter.create(tmp_path, durability="os")
    w.append(Message(role=Role.USER, content="kept"))
    w.stop(StopKind.PAUSED)
    code = BatchQueue.join.__code__
    lines, first = inspect.getsourcelines(BatchQueue.join)
    target = first + next(i for i, x in enumerate(lines) if "self.thread.is_alive()" in x)

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is not code:
            return None

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line" and frame.f_lineno == target:
                sys.settrace(None)
                raise KeyboardInterrupt
            return local

        return local

    sys.settrace(trace)
    try:
        with pytest.raises(KeyboardInterrupt):
            w.close()
    finally:
        sys.settrace(None)
    assert w.closed
    assert not w._q.thread.is_alive()
    with pytest.raises(WriterClosedError):
        w.append(Message(role=Role.USER, content="refused"))
    w.close()  # idempotent
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.messages == (Message(role=Role.USER, content="kept"),)


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_a_handler_that_closes_the_writer_during_a_drain_is_refused(tmp_path: Path) -> None:
    """A signal handler calling close() while the drain waits is a call from inside a call:
    refused (ADR 0055), so the drain raises that refusal instead of failing on a descriptor the
    handler closed under it; the writer then closes normally."""
    w = RolloutWriter.create(tmp_path, durability="os")

    def close_it(signum: int, frame: object) -> None:
        w.close()

    def ring() -> None:
        until_draining(w)
        os.kill(os.getpid(), signal.SIGALRM)

    old = signal.signal(signal.SIGALRM, close_it)
    bell = threading.Thread(target=ring)
    try:
        with writes_blocked(w) as unblock:
            w.append(Message(role=Role.USER, content="kept"))
            bell.start()
            with pytest.raises(WriterError, match=r"inside another call"):
                w.drain()
            bell.join(5)
            unblock.set()
            w.close()
    finally:
        signal.signal(signal.SIGALRM, old)
    assert read_replay(w.path).messages == (Message(role=Role.USER, content="kept"),)


# --- cancelled asynchronous constructors --------------------------------------------------------


def test_a_cancelled_acreate_leaves_no_file_and_no_lock(tmp_path: Path) -> None:
    """acreate cancelled before it returns leaves nothing: a retry makes the one file."""

    async def main() -> None:
        for _ in range(5):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(RolloutWriter.acreate(tmp_path, session_id="user_1"), 0.0001)
        await asyncio.sleep(0.3)  # the constructor's thread finishes and is undone
        w = await RolloutWriter.acreate(tmp_path, session_id="user_1")
        await w.aclose()

    asyncio.run(main())
    assert len(list(tmp_path.glob("*.jsonl"))) == 1


def test_a_cancelled_aopen_does_not_keep_the_file_locked(tmp_path: Path) -> None:
    """aopen cancelled before it returns closes the writer it made: the file opens again."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.stop(StopKind.PAUSED)
    w.close()
    before = w.path.read_bytes()

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(RolloutWriter.aopen(w.path), 0.0001)
        await asyncio.sleep(0.3)

    asyncio.run(main())
    RolloutWriter.open(w.path).close()
    assert w.path.read_bytes() == before


# --- forks --------------------------------------------------------------------------------------

_FORK_WHILE_A_STOP_HOLDS_THE_LOCK = """
import os, sys, threading
from ledger import Message, RolloutWriter, StopKind, WriterError
from ledger.testing import intercept_writes
w = RolloutWriter.create(sys.argv[1])
gate = threading.Event()
def slow(fd, buffers, real):
    gate.wait()
    return real(fd, buffers)
with intercept_writes(w, slow):
    w.append(Message(role="user", content="hi"))
    t = threading.Thread(target=w.stop, args=(StopKind.PAUSED,))
    t.start()
    import time; time.sleep(0.2)  # the stop holds the writer's lock, waiting for the write
    pid = os.fork()
    if pid == 0:
        try:
            w.append(Message(role="user", content="child"))
        except WriterError as exc:
            os.write(1, b"REFUSED\\n" if b"belongs to process" in str(exc).encode() else b"?\\n")
        os._exit(0)
    os.waitpid(pid, 0)
    gate.set()
    t.join()
w.close()
"""


def test_a_fork_while_another_thread_holds_the_lock_does_not_hang_the_child(
    tmp_path: Path,
) -> None:
    """A child forked while a thread of the parent is inside stop() is refused at once."""
    result = run_python(_FORK_WHILE_A_STOP_HOLDS_THE_LOCK, str(tmp_path), timeout=30)
    assert result.stdout.split() == ["REFUSED"], result.stderr


_FORK_DURING_OPEN = """
import os, sys, time
import ledger.locking as locking
from ledger import RolloutWriter
real = locking.acquire
def fork_first(fd, path, busy):
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1); os.dup2(null, 2)
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
    real(fd, path, busy)
locking.acquire = fork_first
w = RolloutWriter.open(sys.argv[1])
os._exit(9)  # killed, the child forked inside open() alive
"""


def test_a_child_forked_inside_open_does_not_keep_the_lock(tmp_path: Path) -> None:
    """A child forked while open() holds a descriptor no writer owns yet does not keep the file
    locked after the parent dies."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.stop(StopKind.PAUSED)
    w.close()
    result = run_python(_FORK_DURING_OPEN, str(w.path))
    pid = int(result.stdout.split()[0])
    try:
        RolloutWriter.open(w.path).close()
    finally:
        os.kill(pid, signal.SIGKILL)


# --- hostile values -----------------------------------------------------------------------------


def test_raw_json_refuses_a_value_that_contains_itself() -> None:
    """A dict that contains itself is refused at once (it used to spin forever)."""
    config: dict[str, Any] = {"name": "agent"}
    config["self"] = config
    with pytest.raises(InvalidFieldError, match="contains itself"):
        raw_json(config)


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@dataclasses.dataclass
class _Sampling:
    temperature: float


class _Hiding(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        return [(k, v) for k, v in super().items() if k != "temperature"]


@pytest.mark.parametrize(
    "value",
    [
        {"sampling": _Sampling(temperature=math.nan)},
        {"scores": {math.inf}},
        _Hiding(temperature=math.nan),
        {1: "a"},
        {"when": b"bytes"},
        _nested(70),
    ],
    ids=["dataclass", "set", "dict-subclass", "int-key", "bytes", "too-deep"],
)
def test_raw_json_refuses_what_json_would_change(value: object) -> None:
    """NaN in a dataclass, a set or a dict subclass, non-str keys, bytes, over-deep nesting:
    refused, never written as something else."""
    with pytest.raises(InvalidFieldError):
        raw_json(value)


def test_positional_arguments_are_refused() -> None:
    """The value types are keyword-only: a positional value is refused, never merged or lost."""
    with pytest.raises(TypeError, match="keyword arguments only"):
        Message("user", role="assistant")  # type: ignore[misc]
    with pytest.raises(TypeError, match="keyword arguments only"):
        ToolCall("id", "name")  # type: ignore[misc]


def test_an_int_subclass_keeps_its_value() -> None:
    """An int subclass that lies in __int__ is stored as the value it is."""

    class Seq(int):
        def __int__(self) -> int:
            return 999

    record = MessageRecord(seq=Seq(5), ts=datetime.now(UTC), message=user(0))
    assert record.seq == 5
    assert type(record.seq) is int


def test_a_token_counter_must_return_a_count(tmp_path: Path) -> None:
    """A counter returning NaN, a negative number or text never switches a budget off."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(user(0))
        w.stop(StopKind.PAUSED)
    for bad, error in ((math.nan, ValueError), (-5, ValueError), ("12", TypeError)):
        with pytest.raises(error, match="token_counter"):
            read_replay(w.path, token_budget=100, token_counter=lambda m, b=bad: b)


def test_memory_helpers_refuse_bytes_and_dicts() -> None:
    """add_user/add_tool_result with bytes or a dict say what content takes."""
    memory = ConversationMemory()
    with pytest.raises(InvalidFieldError, match=r"Message\.content"):
        memory.add_tool_result("c", b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidFieldError, match=r"Message\.content"):
        memory.add_user({"type": "text"})  # type: ignore[arg-type]


def test_resume_eligibility_takes_stop_facts() -> None:
    """resume_eligibility(None) is a TypeError naming what it takes."""
    with pytest.raises(TypeError, match="StopFacts"):
        resume_eligibility(None)  # type: ignore[arg-type]


# --- the writer's files -------------------------------------------------------------------------


def test_create_refuses_an_empty_directory_name(tmp_path: Path) -> None:
    """create("") names no directory: refused, never the current directory."""
    with pytest.raises(ValueError, match="names no directory"):
        RolloutWriter.create("")


def test_create_refuses_a_key_that_already_has_a_rollout(tmp_path: Path) -> None:
    """A second create with a session id that has a rollout there is refused; open() continues."""
    with RolloutWriter.create(tmp_path, session_id="user_123") as w:
        w.append(user(0))
    with pytest.raises(RolloutExistsError, match="already has a rollout"):
        RolloutWriter.create(tmp_path, session_id="user_123")
    assert len(list(tmp_path.glob("*.jsonl"))) == 1


def test_open_a_directory_is_a_rollout_error_and_an_oserror(tmp_path: Path) -> None:
    """open() on a directory says so, as a WriterError that is also an OSError."""
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    with pytest.raises(WriterError, match="directory") as info:
        RolloutWriter.open(d)
    assert isinstance(info.value, OSError)


def test_a_full_disk_during_repair_leaves_no_empty_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the torn tail cannot be kept aside (disk full), open fails naming the file and
    leaves no empty sidecar behind; the rollout is untouched."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.drain()
    abandon(w)
    with w.path.open("ab") as f:
        f.write(b'{"type":"mess')
    before = w.path.read_bytes()

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tail_module, "_write_all", full)
    for _ in range(2):
        with pytest.raises(OSError, match=str(w.path.name)):
            RolloutWriter.open(w.path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [w.path.name]
    assert w.path.read_bytes() == before


def test_stop_from_a_deep_stack_reads_back_the_deepest_raw_json(tmp_path: Path) -> None:
    """A value nested as deep as the door allows reads back even when stop() is called from
    deep inside a framework's stack."""
    from ledger import MAX_RAW_DEPTH

    deep = msgspec.Raw(b"[" * MAX_RAW_DEPTH + b"]" * MAX_RAW_DEPTH)
    w = RolloutWriter.create(tmp_path)
    w.append(Message(role=Role.USER, content="x", extra=deep))

    def down(n: int) -> None:
        if n:
            down(n - 1)
        else:
            w.stop(StopKind.PAUSED)

    down(sys.getrecursionlimit() - 250)
    w.close()
    assert read_replay(w.path).verified


# --- the command --------------------------------------------------------------------------------


def test_an_unreadable_directory_is_reported_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory under the root that cannot be read is an error of the listing (or a warning
    and a failure status in the command), never a silent hole."""
    hidden = tmp_path / "team-b"
    hidden.mkdir()
    with RolloutWriter.create(hidden) as w:
        w.stop(StopKind.PAUSED)
    real = os.scandir

    def refuse(path: Any = ".") -> Any:
        if os.fspath(path) == os.fspath(hidden):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", refuse)
    with pytest.raises(PermissionError):
        list_sessions(tmp_path)
    seen: list[OSError] = []
    assert list_sessions(tmp_path, on_error=seen.append) == ()
    assert seen[0].filename == os.fspath(hidden)
    for args, status in ((["ls"], 1), (["verify", "--all"], 1), (["grep", "x"], 2)):
        result = CliRunner().invoke(cli, ["--root", str(tmp_path), *args])
        assert result.exit_code == status, (args, result.output)
        assert "cannot read the directory" in result.output


def test_json_output_survives_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """A rollout whose file name is not UTF-8 is listed in --json with its bytes escaped."""
    with RolloutWriter.create(tmp_path) as w:
        w.stop(StopKind.PAUSED)
    odd = os.fsencode(tmp_path) + b"/2026-12-03_10-00-00_x\xff.jsonl"
    os.rename(w.path, odd)
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "ls", "--json"])
    assert result.exit_code == 0, result.output
    paths = [s["path"] for s in json.loads(result.output)["sessions"]]
    assert any("\\xff" in p for p in paths)


def test_a_reader_that_leaves_early_is_not_a_failure(tmp_path: Path) -> None:
    """`rollout grep --json | head -c1` and `show --raw | head -c1` exit 0 (not 'no match')."""
    with RolloutWriter.create(tmp_path, session_id="piped") as w:
        for i in range(3000):
            w.append(Message(role=Role.USER, content=f"needle {i} " + "x" * 100))
        w.stop(StopKind.PAUSED)
    for args in (["grep", "needle", "--json"], ["show", "--raw", "piped"]):
        proc = subprocess.Popen(
            [str(ROLLOUT), "--root", str(tmp_path), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        proc.stdout.read(1)
        proc.stdout.close()
        assert proc.wait(timeout=60) == 0, args
        assert proc.stderr is not None
        assert proc.stderr.read() == b""
        proc.stderr.close()


def test_export_never_writes_over_a_rollout(tmp_path: Path) -> None:
    """`rollout export S -o FILE` refuses when FILE is a rollout: its own or a live one."""
    with RolloutWriter.create(tmp_path, session_id="mine") as w:
        w.stop(StopKind.PAUSED)
    live = RolloutWriter.create(tmp_path, session_id="live")
    with hold(live):
        live.append(user(0))
        live.drain()
        for target in (w.path, live.path):
            before = target.read_bytes()
            result = CliRunner().invoke(
                cli, ["--root", str(tmp_path), "export", "mine", "-o", str(target)]
            )
            assert result.exit_code == 1
            assert "is a rollout" in result.output
            assert target.read_bytes() == before
    live.close()


@pytest.mark.parametrize("key", ["~nobody-at-all", "chat.jsonl", "/abs", "./x"])
def test_keys_that_look_like_paths_are_found(tmp_path: Path, key: str) -> None:
    """A framework key that looks like a path, and names no file, is resolved as a session id;
    `~user` for a user that does not exist is not an internal error."""
    with RolloutWriter.create(tmp_path, session_id=key) as w:
        w.stop(StopKind.PAUSED)
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "verify", "--", key])
    assert result.exit_code == 0, result.output
    assert "OK" in result.output


def test_export_imports_in_a_fresh_interpreter() -> None:
    """`import replay.export` works on its own (no import cycle through the command)."""
    result = run_python("import replay.export; print('ok')")
    assert result.stdout.strip() == "ok", result.stderr
