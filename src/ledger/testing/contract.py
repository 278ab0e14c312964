"""The contract every rollout writer implementation must pass (needs pytest).

An abstract test case in the manner of eventsourcing's recorder tests: subclass
:class:`WriterContract` in a ``test_*`` module, implement the three hooks, and pytest runs the
whole contract against that implementation. The base class is not collected on its own (its
name does not start with ``Test``). For :class:`~ledger.writer.RolloutWriter` the hooks are
``RolloutWriter.create``, ``RolloutWriter.open`` and :func:`ledger.testing.hold`.
"""

from __future__ import annotations

import abc
import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import (
    AgentCheckpoint,
    Message,
    Reasoning,
    Role,
    RolloutNameError,
    SessionMeta,
    StopKind,
    Terminal,
    ToolCall,
    checkpoint_digest,
    decode_record,
    with_delegation_id,
    with_rollout_session_id,
)
from ledger.reader import rebuild
from ledger.records import Compacted, Record, Rewind, UnknownRecord


def conversation() -> list[Message]:
    """A short conversation with reasoning blocks, a tool call and its result."""
    return [
        Message(role=Role.SYSTEM, content="Be brief."),
        Message(role=Role.USER, content="List the files."),
        Message(
            role=Role.ASSISTANT,
            reasoning=(
                Reasoning(text="I will run ls.", signature="sig-a"),
                Reasoning(text="", encrypted="opaque=="),
            ),
            tool_calls=(ToolCall(id="call_1", name="shell", arguments='{"cmd": "ls"'),),
        ),
        Message(role=Role.TOOL, tool_call_id="call_1", content="a.txt\nb.txt", is_error=False),
        Message(role=Role.ASSISTANT, content="Two files.", is_anchored=True),
    ]


def read_records(path: Path) -> list[Record | UnknownRecord]:
    """Every record of the file, in order (the file must be undamaged)."""
    return [decode_record(line) for line in path.read_bytes().splitlines()]


class WriterContract(abc.ABC):
    """What any writer must do; subclasses bind it to one implementation."""

    # --- hooks -----------------------------------------------------------------------------

    @abc.abstractmethod
    def create(self, directory: Path, **kwargs: Any) -> Any:
        """Start a new rollout in ``directory`` (``create(directory, **kwargs)``)."""

    @abc.abstractmethod
    def reopen(self, path: Path) -> Any:
        """Continue the rollout at ``path``."""

    @abc.abstractmethod
    def hold_writes(self, writer: Any) -> contextlib.AbstractContextManager[None]:
        """Inside the block, the writer writes nothing to the file until a drain asks it to."""

    busy_error: type[BaseException] = Exception
    closed_error: type[BaseException] = Exception

    # --- fixtures ----------------------------------------------------------------------------

    @pytest.fixture
    def writer(self, tmp_path: Path) -> Iterator[Any]:
        w = self.create(tmp_path, agent_name="tester")
        try:
            yield w
        finally:
            w.close()

    # --- the contract ------------------------------------------------------------------------

    def test_session_meta_is_the_first_record(self, writer: Any) -> None:
        """A new rollout starts with a session_meta at seq 1 naming the session and the agent."""
        writer.drain()
        (first,) = read_records(writer.path)
        assert isinstance(first, SessionMeta)
        assert first.seq == 1
        assert first.session_id == writer.session_id
        assert first.agent_name == "tester"
        assert writer.path.name.endswith(f"_{writer.session_id}_tester.jsonl")

    def test_delegation_coordinates_come_from_context(self, tmp_path: Path) -> None:
        """A child's session_meta records the parent session id and delegation id in context."""
        with with_rollout_session_id("parent-1"), with_delegation_id("call_9"):
            w = self.create(tmp_path)
        w.close()
        meta = read_records(w.path)[0]
        assert isinstance(meta, SessionMeta)
        assert (meta.parent_session_id, meta.delegation_id) == ("parent-1", "call_9")

    @pytest.mark.parametrize("empty", ["", None])
    def test_empty_coordinates_are_recorded_as_a_child_without_them(
        self, tmp_path: Path, empty: str | None
    ) -> None:
        """Coordinates declared empty are recorded as empty strings, never as a root (rule 13)."""
        with with_rollout_session_id(empty), with_delegation_id(empty):
            w = self.create(tmp_path)
        w.close()
        meta = read_records(w.path)[0]
        assert isinstance(meta, SessionMeta)
        assert (meta.parent_session_id, meta.delegation_id) == ("", "")

    def test_no_block_means_a_root(self, tmp_path: Path) -> None:
        """Outside any delegation block the session is a root: both coordinates absent."""
        w = self.create(tmp_path)
        w.close()
        meta = read_records(w.path)[0]
        assert isinstance(meta, SessionMeta)
        assert (meta.parent_session_id, meta.delegation_id) == (None, None)

    def test_messages_come_back_exactly_after_stop(self, writer: Any) -> None:
        """Appended messages, reasoning and tool calls included, are rebuilt equal from the file."""
        for m in conversation():
            writer.append(m)
        writer.stop(StopKind.PAUSED, "lunch")
        state = rebuild(writer.path)
        assert state.messages == tuple(conversation())
        assert state.degraded == ()

    def test_sequence_numbers_are_contiguous(self, writer: Any) -> None:
        """Records carry seq 1, 2, 3, ... in file order, one per reasoning block and message."""
        for m in conversation():
            writer.append(m)
        writer.stop(StopKind.COMPLETED)
        seqs = [r.seq for r in read_records(writer.path)]
        assert seqs == list(range(1, len(seqs) + 1))
        # meta + 5 messages + 2 reasoning blocks + checkpoint + terminal
        assert len(seqs) == 1 + 5 + 2 + 2

    def test_stop_digest_equals_the_digest_of_the_file(self, writer: Any) -> None:
        """The checkpoint's digest is checkpoint_digest over the messages rebuilt from the file."""
        for m in conversation():
            writer.append(m)
        writer.stop(StopKind.PAUSED)
        state = rebuild(writer.path)
        assert state.checkpoint is not None
        assert state.checkpoint.digest == checkpoint_digest(state.at_checkpoint)
        assert state.checkpoint.message_count == len(state.at_checkpoint) == 5

    def test_stop_digest_covers_the_compaction_not_what_was_appended(self, writer: Any) -> None:
        """After a compaction the checkpoint covers the rebuilt conversation, not every append."""
        msgs = conversation()
        for m in msgs:
            writer.append(m)
        summary = Message(role=Role.USER, content="Summary: two files were listed.")
        writer.compacted([msgs[0], summary], summary="listed files")
        tail = Message(role=Role.ASSISTANT, content="Anything else?")
        writer.append(tail)
        writer.stop(StopKind.PAUSED)
        state = rebuild(writer.path)
        expected = (msgs[0], summary, tail)
        assert state.messages == expected
        assert state.checkpoint is not None
        assert state.checkpoint.message_count == 3
        assert state.checkpoint.digest == checkpoint_digest([tail], compacted=expected[:2])
        assert state.checkpoint.digest == state.at_checkpoint_digest

    def test_stop_drains_before_it_reads_the_file(self, writer: Any) -> None:
        """Records still queued when stop is called are covered by the checkpoint (drain first)."""
        msgs = [Message(role=Role.USER, content=f"m{i}") for i in range(100)]
        with self.hold_writes(writer):
            for m in msgs:
                writer.append(m)
            writer.stop(StopKind.PAUSED)
        state = rebuild(writer.path)
        assert state.checkpoint is not None
        assert state.checkpoint.message_count == 100
        assert state.checkpoint.digest == checkpoint_digest(msgs)

    def test_no_checkpoint_is_written_per_step(self, writer: Any) -> None:
        """Appending and draining write no checkpoint or terminal record until stop."""
        for i in range(50):
            writer.append(Message(role=Role.USER, content=str(i)))
            if i % 10 == 0:
                writer.drain()
        writer.drain()
        kinds = [type(r) for r in read_records(writer.path)]
        assert AgentCheckpoint not in kinds
        assert Terminal not in kinds
        writer.stop(StopKind.PAUSED)
        kinds = [type(r) for r in read_records(writer.path)]
        assert kinds.count(AgentCheckpoint) == 1
        assert kinds[-2:] == [AgentCheckpoint, Terminal]

    def test_drain_makes_records_readable(self, writer: Any) -> None:
        """After drain() every record appended before it is in the file."""
        for m in conversation():
            writer.append(m)
        writer.drain()
        assert rebuild(writer.path).messages == tuple(conversation())

    def test_second_writer_on_the_same_file_fails_at_once(self, writer: Any) -> None:
        """Opening a file that a writer holds fails with an error naming the file."""
        with pytest.raises(self.busy_error) as info:
            self.reopen(writer.path)
        assert str(writer.path) in str(info.value)
        assert "another writer" in str(info.value)

    def test_reopen_continues_the_sequence(self, writer: Any) -> None:
        """A reopened rollout continues its sequence numbers and its conversation."""
        msgs = conversation()
        writer.append(msgs[0])
        writer.stop(StopKind.PAUSED)
        writer.close()
        again = self.reopen(writer.path)
        try:
            assert again.session_id == writer.session_id
            for m in msgs[1:]:
                again.append(m)
            again.stop(StopKind.COMPLETED)
        finally:
            again.close()
        records = read_records(writer.path)
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        assert rebuild(writer.path).messages == tuple(msgs)

    def test_last_checkpoint_wins_across_resumes(self, writer: Any) -> None:
        """A session paused and resumed twice has two checkpoints; the last one describes it."""
        msgs = conversation()
        writer.append(msgs[0])
        writer.stop(StopKind.PAUSED)
        writer.close()
        again = self.reopen(writer.path)
        for m in msgs[1:]:
            again.append(m)
        again.stop(StopKind.PAUSED, "second pause")
        again.close()
        state = rebuild(writer.path)
        kinds = [type(r) for r in read_records(writer.path)]
        assert kinds.count(AgentCheckpoint) == 2
        assert state.checkpoint is not None
        assert state.checkpoint.message_count == 5
        assert state.checkpoint.digest == checkpoint_digest(msgs)
        assert state.terminal is not None
        assert state.terminal.reason == "second pause"

    def test_stop_records_the_kind_reason_and_error(self, writer: Any) -> None:
        """The terminal record carries the stop kind, the reason and the error detail."""
        try:
            raise RuntimeError("model unavailable")
        except RuntimeError as exc:
            writer.stop(StopKind.FAILED, "provider down", error=exc)
        terminal = read_records(writer.path)[-1]
        assert isinstance(terminal, Terminal)
        assert terminal.kind is StopKind.FAILED
        assert terminal.reason == "provider down"
        assert terminal.error is not None
        assert terminal.error.type == "RuntimeError"
        assert terminal.error.message == "model unavailable"
        assert "Traceback" in (terminal.error.traceback or "")

    @pytest.mark.parametrize("kind", ["resting", "PAUSED", 3, None])
    def test_stop_refuses_what_is_not_a_stop_kind(self, writer: Any, kind: Any) -> None:
        """A stop kind that is not a StopKind member is refused and nothing is written."""
        writer.drain()
        before = writer.path.read_bytes()
        with pytest.raises(ValueError, match="not a StopKind"):
            writer.stop(kind)
        writer.drain()
        assert writer.path.read_bytes() == before

    def test_closed_writer_refuses_records(self, writer: Any) -> None:
        """After close, append and stop raise instead of losing the record silently."""
        writer.close()
        with pytest.raises(self.closed_error):
            writer.append(Message(role=Role.USER, content="late"))
        with pytest.raises(self.closed_error):
            writer.stop(StopKind.PAUSED)

    def test_close_is_idempotent_and_releases_the_file(self, writer: Any) -> None:
        """close() twice is fine, and afterwards another writer may open the file."""
        writer.close()
        writer.close()
        self.reopen(writer.path).close()

    def test_appends_from_threads_get_distinct_ordered_seqs(self, writer: Any) -> None:
        """Concurrent appends lose nothing and each thread's messages keep their order."""
        n_threads, per_thread = 8, 200
        barrier = threading.Barrier(n_threads)

        def work(t: int) -> None:
            barrier.wait()
            for i in range(per_thread):
                writer.append(Message(role=Role.USER, content=f"{t}:{i}"))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        # A tiny switch interval makes the interpreter swap threads between almost every
        # bytecode, so that an unguarded read-modify-write of the sequence counter shows up.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        finally:
            sys.setswitchinterval(interval)
        writer.drain()
        records = read_records(writer.path)
        assert [r.seq for r in records] == list(range(1, n_threads * per_thread + 2))
        got = [m.text() for m in rebuild(writer.path).messages]
        for t in range(n_threads):
            assert [x for x in got if x.startswith(f"{t}:")] == [
                f"{t}:{i}" for i in range(per_thread)
            ]

    def test_compacted_keeps_reasoning_inline(self, writer: Any) -> None:
        """A compaction record carries its messages whole, reasoning included."""
        msgs = conversation()
        writer.compacted(msgs, summary="all of it")
        writer.drain()
        record = read_records(writer.path)[-1]
        assert isinstance(record, Compacted)
        assert record.messages == tuple(msgs)
        assert record.summary == "all of it"

    def test_rewind_digest_covers_the_conversation_as_rebuilt(self, writer: Any) -> None:
        """After a rewind the checkpoint covers the truncated conversation; the abandoned
        records stay in the file (ADR 0131)."""
        msgs = conversation()
        for m in msgs:
            writer.append(m)
        writer.rewind(to=3)  # keep the records up to seq 3: the first two messages
        again = Message(role=Role.USER, content="Start over, please.")
        writer.append(again)
        writer.stop(StopKind.PAUSED)
        state = rebuild(writer.path)
        assert state.messages == (msgs[0], msgs[1], again)
        assert state.checkpoint is not None
        assert state.checkpoint.digest == checkpoint_digest(state.messages)
        assert [a.message for a in state.rewound.abandoned] == msgs[2:]
        assert any(isinstance(r, Rewind) and r.to == 3 for r in read_records(writer.path))

    @pytest.mark.parametrize("to", [0, 99])
    def test_rewind_outside_the_conversation_writes_nothing(self, writer: Any, to: int) -> None:
        """A rewind before the start or past the last record is refused, and nothing is
        written."""
        writer.append(Message(role=Role.USER, content="one"))
        writer.drain()
        before = writer.path.read_bytes()
        with pytest.raises(ValueError, match="rewind"):
            writer.rewind(to=to)
        writer.drain()
        assert writer.path.read_bytes() == before

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("session_id", "a\x00b"),
            ("session_id", ""),
            ("session_id", "x" * 129),
            ("agent_name", "../up"),
            ("agent_name", "a/b"),
            ("agent_name", "x\x00"),
            ("agent_name", ".."),
        ],
    )
    def test_ids_that_could_escape_the_directory_are_refused(
        self, tmp_path: Path, field: str, value: str
    ) -> None:
        """An agent name with '/', '..' or NUL, or a session id that is empty, too long or holds
        NUL, creates no file (other session keys are escaped, ADR 0016)."""
        with pytest.raises(RolloutNameError):
            self.create(tmp_path / "d", **{field: value})
        assert not (tmp_path / "d").exists() or list((tmp_path / "d").iterdir()) == []
        assert [p.name for p in tmp_path.iterdir() if p.name != "d"] == []
