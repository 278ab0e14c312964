"""Resource faults: a full disk, failing writes and syncs, denied permissions, a file removed or
replaced under an open writer.

In each case a clear exception reaches the caller (naming the file and the cause), no record
that was drained is lost, and no half record is left behind that the next ``open`` does not
repair. Faults are injected by wrapping ``os`` functions for the rollout's inode only, so the
rest of the process (and pytest) is untouched.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import DegradationKind, Message, Reasoning, Role, StopKind
from ledger.testing import hold
from ledger.writer import Durability, RolloutWriter, WriterError, WriterFailedError
from replay import read_replay, read_stop_facts


def user(i: int) -> Message:
    """A small user message."""
    return Message(role=Role.USER, content=f"message {i}")


def thinker(i: int, blocks: int = 2) -> Message:
    """An assistant message with reasoning blocks (several records on disk)."""
    return Message(
        role=Role.ASSISTANT,
        content=f"answer {i}",
        reasoning=tuple(
            Reasoning(text=f"thought {i}.{b}", signature=f"s{b}") for b in range(blocks)
        ),
    )


class Faults:
    """Failures injected into ``os`` calls made on one file (matched by inode)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.inode: int | None = None
        # Per function: how many calls succeed first, how many bytes the failing write still
        # writes, and the errno it fails with.
        self.plans: dict[str, dict[str, int]] = {}
        self.calls: dict[str, int] = {}

    def target(self, path: Path) -> None:
        self.inode = path.stat().st_ino

    def fail(
        self, name: str, err: int, *, after: int = 0, partial: int = 0, buffers: int = 0
    ) -> None:
        """Make ``os.<name>`` on the target fail with ``err`` after ``after`` good calls.

        ``write`` covers ``writev`` too: the writer writes the batches due at once with one
        ``writev``, one buffer per batch. The failing call may first write ``partial`` bytes,
        or its first ``buffers`` buffers whole (a disk that fills between two batches).
        """
        if name == "write":
            self._install("writev", err, after, partial, buffers)
        self._install(name, err, after, partial, buffers)

    def _install(self, name: str, err: int, after: int, partial: int, buffers: int = 0) -> None:
        self.plans[name] = {"err": err, "after": after, "partial": partial, "buffers": buffers}
        self.calls[name] = 0
        real = getattr(os, name)

        def wrapper(fd: int, *args: Any) -> Any:
            plan = self.plans.get(name)
            if plan is None or not self._ours(fd):
                return real(fd, *args)
            self.calls[name] += 1
            if self.calls[name] <= plan["after"]:
                return real(fd, *args)
            if name == "write" and plan["partial"]:
                n = real(fd, bytes(args[0])[: plan["partial"]])
                plan["partial"] = 0
                return n
            if name == "writev" and plan["buffers"]:
                whole = list(args[0])[: plan["buffers"]]
                plan["buffers"] = 0
                return real(fd, whole)
            if name == "writev" and plan["partial"]:
                data = b"".join(bytes(b) for b in args[0])[: plan["partial"]]
                plan["partial"] = 0
                return real(fd, [data])
            raise OSError(plan["err"], os.strerror(plan["err"]))

        self.monkeypatch.setattr(os, name, wrapper)

    def heal(self) -> None:
        """Stop injecting faults: the disk has room again."""
        self.plans.clear()

    def _ours(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == self.inode
        except OSError:
            return False


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[Faults]:
    """A fault injector; undone after the test."""
    f = Faults(monkeypatch)
    yield f
    f.heal()


def held(writer: RolloutWriter) -> RolloutWriter:
    """Hold the writer's worker (for its whole life) so queued records are written only by a
    drain."""
    hold(writer).__enter__()
    return writer


def replay_messages(path: Path) -> tuple[Message, ...]:
    """The messages of the rollout at ``path``."""
    return read_replay(path).messages


# --- a full disk ------------------------------------------------------------------------------


def test_disk_full_and_truncate_failing_leaves_a_half_line_that_open_repairs(
    tmp_path: Path, faults: Faults
) -> None:
    """When the disk fills mid-line and even the cut-back fails, the next open repairs the tail."""
    w = RolloutWriter.create(tmp_path)
    faults.target(w.path)
    for i in range(3):
        w.append(user(i))
    w.drain()
    faults.fail("write", errno.ENOSPC, partial=7)
    faults.fail("ftruncate", errno.EIO)
    w.append(user(3))
    with pytest.raises(WriterFailedError, match="No space left on device") as info:
        w.drain()
    assert str(w.path) in str(info.value)
    faults.heal()
    with pytest.raises(WriterFailedError):
        w.close()
    rep = read_replay(w.path)
    assert rep.messages == tuple(user(i) for i in range(3))
    assert [d.kind for d in rep.degraded if d.kind == DegradationKind.TORN_TAIL] == [
        DegradationKind.TORN_TAIL
    ]
    with RolloutWriter.open(w.path) as again:
        assert again.repair is not None
        assert again.repair.kind == "torn_line_moved"
        again.append(user(4))
        again.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.messages == (*(user(i) for i in range(3)), user(4))
    assert rep.verified
    assert rep.degraded == ()


def test_disk_full_during_stop_keeps_the_conversation(tmp_path: Path, faults: Faults) -> None:
    """A full disk while the stop point is written raises, and a later stop verifies."""
    w = RolloutWriter.create(tmp_path)
    faults.target(w.path)
    for i in range(4):
        w.append(user(i))
    w.drain()
    faults.fail("write", errno.ENOSPC, partial=30)
    with pytest.raises(WriterFailedError, match="No space left"):
        w.stop(StopKind.PAUSED)
    faults.heal()
    with pytest.raises(WriterFailedError):
        w.close()
    assert not read_stop_facts(w.path).found
    rep = read_replay(w.path)
    assert rep.messages == tuple(user(i) for i in range(4))
    # The half-written checkpoint line was cut back: the file ends on a whole record.
    assert DegradationKind.TORN_TAIL not in {d.kind for d in rep.degraded}
    assert w.path.read_bytes().endswith(b"\n")
    with RolloutWriter.open(w.path) as again:
        again.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.degraded == ()
    assert read_stop_facts(w.path).kind == StopKind.PAUSED


def test_disk_full_while_creating_leaves_no_rollout_behind(
    tmp_path: Path, faults: Faults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the session_meta cannot be written, create raises and leaves no half file behind."""
    real_open = os.open

    def open_and_target(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        fd = real_open(path, flags, *args, **kw)
        if str(path).endswith(".jsonl"):
            faults.inode = os.fstat(fd).st_ino
        return fd

    monkeypatch.setattr(os, "open", open_and_target)
    faults.fail("write", errno.ENOSPC, partial=5)
    with pytest.raises(OSError, match="No space left"):
        RolloutWriter.create(tmp_path, session_id="full-disk")
    assert list(tmp_path.glob("*.jsonl")) == []


def test_fsync_failure_on_drain_is_raised(tmp_path: Path, faults: Faults) -> None:
    """An fsync error (the data may not be on disk) is raised by drain, not swallowed."""
    w = RolloutWriter.create(tmp_path)
    faults.target(w.path)
    w.append(user(0))
    faults.fail("fsync", errno.EIO)
    with pytest.raises(WriterFailedError, match="Input/output error"):
        w.drain()
    faults.heal()
    with pytest.raises(WriterFailedError):
        w.close()
    assert replay_messages(w.path) == (user(0),)


def test_disk_full_between_reasoning_and_its_message_loses_only_that_message(
    tmp_path: Path, faults: Faults
) -> None:
    """A batch cut between a message's reasoning and the message leaves no stray reasoning."""
    w = held(RolloutWriter.create(tmp_path))
    faults.target(w.path)
    for i in range(31):  # with the session_meta's seq 1, records 2..32
        w.append(user(i))
    w.append(thinker(31))  # reasoning at 33 and 34, the message at 35: a batch ends after 33
    faults.fail("write", errno.ENOSPC, buffers=1)  # the first batch is written, not the second
    with pytest.raises(WriterFailedError):
        w.drain()
    faults.heal()
    with pytest.raises(WriterFailedError):
        w.close()
    mine = thinker(99, blocks=1)
    with RolloutWriter.open(w.path) as again:
        again.append(mine)
        again.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.messages[-1] == mine
    assert rep.messages == (*(user(i) for i in range(31)), mine)


def test_a_batch_kept_from_a_failed_write_is_counted_only_once_synced(
    tmp_path: Path, faults: Faults
) -> None:
    """Durability.BATCH: the whole batches a failed write left in the file count as written
    only if an fsync covers them; when it fails too, they are cut back with the rest."""
    w = held(RolloutWriter.create(tmp_path, durability=Durability.BATCH))
    faults.target(w.path)
    for i in range(40):  # records 2..41: a batch of 32, then one of 8
        w.append(user(i))
    faults.fail("write", errno.ENOSPC, buffers=1)
    faults.fail("fsync", errno.EIO)
    with pytest.raises(WriterFailedError, match=r"records after seq 1 were not written"):
        w.drain()
    faults.heal()
    with pytest.raises(WriterFailedError):
        w.close()
    assert replay_messages(w.path) == ()


def test_a_batch_kept_from_a_failed_write_is_synced_before_it_counts(
    tmp_path: Path, faults: Faults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Durability.BATCH: when the fsync works, the first batch stays, and the error says so."""
    w = held(RolloutWriter.create(tmp_path, durability=Durability.BATCH))
    faults.target(w.path)
    for i in range(40):
        w.append(user(i))
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    faults.fail("write", errno.ENOSPC, buffers=1)
    monkeypatch.setattr(os, "fsync", counting_fsync)
    with pytest.raises(WriterFailedError, match=r"records after seq 33 were not written"):
        w.drain()
    monkeypatch.setattr(os, "fsync", real_fsync)
    faults.heal()
    with pytest.raises(WriterFailedError):
        w.close()
    size = w.path.stat().st_size
    assert size in synced  # what was counted was synced first
    assert replay_messages(w.path) == tuple(user(i) for i in range(32))


# --- permissions and missing places ------------------------------------------------------------


def deny(monkeypatch: pytest.MonkeyPatch, match: Callable[[str], bool]) -> None:
    """Make os.open raise EACCES for paths that ``match`` (tests run as root, chmod is moot)."""
    real_open = os.open

    def fake(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if match(os.fsdecode(path)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", fake)


def test_permission_denied_on_open_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a rollout the process may not write raises PermissionError naming the file."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(user(0))
    before = w.path.read_bytes()
    deny(monkeypatch, lambda p: p.endswith(".jsonl"))
    with pytest.raises(PermissionError) as info:
        RolloutWriter.open(w.path)
    assert w.path.name in str(info.value)
    monkeypatch.undo()
    assert w.path.read_bytes() == before


def test_permission_denied_on_create_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating a rollout where the process may not write raises PermissionError naming it."""
    deny(monkeypatch, lambda p: p.endswith(".jsonl"))
    with pytest.raises(PermissionError) as info:
        RolloutWriter.create(tmp_path, session_id="denied")
    assert "denied" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_create_under_a_file_is_an_oserror(tmp_path: Path) -> None:
    """A directory argument that is a regular file raises an OSError, not a half-made rollout."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(OSError):  # noqa: PT011 - which OSError depends on the platform
        RolloutWriter.create(blocker)
    with pytest.raises(OSError):  # noqa: PT011
        RolloutWriter.create(blocker / "below")


def test_open_a_directory_is_an_oserror(tmp_path: Path) -> None:
    """Opening a directory as a rollout raises an OSError."""
    with pytest.raises(OSError):  # noqa: PT011 - IsADirectoryError on Linux
        RolloutWriter.open(tmp_path)


# --- the file changes under the writer ----------------------------------------------------------


def test_file_deleted_under_an_open_writer_is_reported(tmp_path: Path) -> None:
    """Deleting the rollout while a writer is open surfaces at drain as a WriterFailedError."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.drain()
    w.path.unlink()
    w.append(user(1))
    with pytest.raises(WriterFailedError, match=r"removed|No such file"):
        w.drain()
    with pytest.raises(WriterFailedError):
        w.append(user(2))
    with pytest.raises(WriterFailedError):
        w.stop(StopKind.PAUSED)
    with pytest.raises(WriterFailedError):
        w.close()
    w.close()  # idempotent once reported


def test_file_replaced_under_an_open_writer_is_reported_and_untouched(tmp_path: Path) -> None:
    """A file renamed over the rollout is never written by the old writer; drain reports it."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.drain()
    other = tmp_path / "other.tmp"
    other.write_bytes(b"someone else's file\n")
    os.replace(other, w.path)
    w.append(user(1))
    with pytest.raises(WriterFailedError):
        w.drain()
    with pytest.raises(WriterFailedError):
        w.close()
    assert w.path.read_bytes() == b"someone else's file\n"


def test_file_deleted_before_stop_is_reported_by_stop(tmp_path: Path) -> None:
    """stop() on a deleted rollout raises instead of checkpointing nothing."""
    w = RolloutWriter.create(tmp_path)
    w.append(user(0))
    w.drain()
    w.path.unlink()
    with pytest.raises((WriterFailedError, OSError)):
        w.stop(StopKind.PAUSED)
    with pytest.raises(WriterError):
        w.close()
