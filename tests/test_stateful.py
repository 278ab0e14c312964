"""A stateful test of the write side against a plain list model: writer -> file -> replay.

Rules append, drain, compact, stop with any kind, reopen, and crash: the writer is abandoned
with records still queued, of which any whole lines and perhaps part of the next reach the file
(as when a process is killed inside its worker's write), and a new writer opens the file. After
every step the replay of the file must equal the model's drained conversation, the stop facts
must match the last stop, and the eligibility must follow its kind.

The writer is held (its test seam ``_hold``) so that queued records reach the file only when a
drain asks for them, or when a crash writes them; the model knows which operations those are:
the ones whose every line reached the file.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ledger import DegradationKind, Message, Role, StopKind
from ledger.testing import abandon, hold
from ledger.writer import Durability, RolloutWriter
from replay import read_replay, read_stop_facts, resume_eligibility
from strategies import messages

REPLAYABLE = frozenset({StopKind.PAUSED, StopKind.CANCELLED})

# Assistant messages (which carry reasoning, several records each) half the time, so that a
# crash often lands inside one message's records.
turns = messages(roles=st.sampled_from([Role.ASSISTANT, Role.ASSISTANT, Role.USER, Role.TOOL]))


class WriterMachine(RuleBasedStateMachine):
    """The writer, the file and the replay, against a list model."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="rollout-stateful-"))
        self.writer: RolloutWriter | None = None
        # The model: the conversation the file holds, the operations still queued, the kind of
        # the last stop and whether records were written after it.
        self.file: list[Message] = []
        self.queued: list[tuple[str, tuple[Message, ...], int]] = []
        self.last_stop: StopKind | None = None
        self.after_stop = False
        self.compactions = 0
        # Whether close() owes a stop point (ADR 0053): a new writer, or records since a stop.
        self.unstopped = False
        self.holds = contextlib.ExitStack()

    @initialize()
    def create(self) -> None:
        self.writer = self._hold(
            RolloutWriter.create(self.dir, agent_name="model", durability=Durability.OS)
        )
        self.unstopped = True

    def _hold(self, writer: RolloutWriter) -> RolloutWriter:
        # Held for the writer's whole life: queued records reach the file only by a drain.
        return self.holds.enter_context(hold(writer))

    @property
    def w(self) -> RolloutWriter:
        assert self.writer is not None
        return self.writer

    def _written(self, lines: int | None = None) -> None:
        """The queued operations reached the file: all of them, or those whose every line is
        among the first ``lines`` lines written."""
        done = 0
        for op, ms, n in self.queued:
            if lines is not None and done + n > lines:
                break
            done += n
            if op == "append":
                self.file.extend(ms)
            else:
                self.file[:] = ms
                self.compactions += 1
            if self.last_stop is not None:
                self.after_stop = True
        self.queued.clear()

    @rule(batch=st.lists(turns, min_size=1, max_size=5))
    def append(self, batch: list[Message]) -> None:
        for message in batch:
            self.w.append(message)
            self.queued.append(("append", (message,), 1 + len(message.reasoning)))
        self.unstopped = True

    @rule()
    def drain(self) -> None:
        self.w.drain()
        self._written()

    @rule(kept=st.lists(messages(), max_size=3))
    def compact(self, kept: list[Message]) -> None:
        self.w.compacted(kept, summary="compacted")
        self.queued.append(("compact", tuple(kept), 1))
        self.unstopped = True

    @rule(kind=st.sampled_from(StopKind))
    def stop(self, kind: StopKind) -> None:
        self.w.stop(kind, reason=f"stopped {kind}")
        self._written()
        self.last_stop = kind
        self.after_stop = False
        self.unstopped = False

    @rule()
    def reopen(self) -> None:
        self.w.close()
        self._written()
        if self.unstopped:  # close() wrote a stop point of its own
            self.last_stop = StopKind.CLOSED
            self.after_stop = False
            self.unstopped = False
        self.writer = self._hold(RolloutWriter.open(self.w.path, durability=Durability.OS))
        assert self.writer.repair is None

    @precondition(lambda self: self.writer is not None)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """Kill the writer while its worker writes: some queued lines reach the file, the
        next one perhaps only in part, and a new writer opens the file."""
        path = self.w.path
        lines = abandon(self.w)
        assert len(lines) == sum(n for _, _, n in self.queued)
        # Where the kill lands: inside the records of one queued operation (or after them all).
        starts = [0]
        for _, _, n in self.queued:
            starts.append(starts[-1] + n)
        op = data.draw(st.integers(0, len(self.queued)), label="operation hit")
        within = self.queued[op][2] if op < len(self.queued) else 1
        written = starts[op] + data.draw(st.integers(0, within - 1), label="its lines written")
        tail = b""
        if written < len(lines) and data.draw(st.booleans(), label="torn"):
            line = lines[written]
            # Anything from one byte to the whole record without its line end.
            tail = line[: data.draw(st.integers(1, len(line) - 1), label="torn bytes")]
        with path.open("ab") as f:
            f.write(b"".join(lines[:written]) + tail)
        if tail and len(tail) == len(lines[written]) - 1:
            written += 1  # a whole record: open only adds its line end
        clean = not tail and written in starts
        self._written(written)
        self.writer = self._hold(RolloutWriter.open(path, durability=Durability.OS))
        self.unstopped = False
        if clean:
            assert self.writer.repair is None
        else:
            assert self.writer.repair is not None

    @invariant()
    def replay_equals_the_drained_model(self) -> None:
        if self.writer is None:
            return
        rep = read_replay(self.w.path)
        assert list(rep.messages) == self.file
        kinds = {d.kind for d in rep.degraded}
        allowed = {
            DegradationKind.NO_CHECKPOINT,
            DegradationKind.AFTER_CHECKPOINT,
            DegradationKind.REBUILT_FROM_COMPACTED,
        }
        assert kinds <= allowed, [str(d) for d in rep.degraded]
        assert (DegradationKind.REBUILT_FROM_COMPACTED in kinds) == (self.compactions > 0)
        stopped_last = self.last_stop is not None and not self.after_stop
        assert rep.verified == stopped_last

    @invariant()
    def stop_facts_match_the_last_stop(self) -> None:
        if self.writer is None:
            return
        facts = read_stop_facts(self.w.path)
        decision = resume_eligibility(facts)
        assert decision.reason
        if self.last_stop is None:
            assert not facts.found
            assert not decision.replayable
        elif self.after_stop:
            assert facts.found
            assert facts.killed
            assert facts.terminal is None
            assert not decision.replayable
        else:
            assert facts.found
            assert facts.kind == self.last_stop
            assert facts.checkpoint is not None
            assert facts.checkpoint.message_count == len(self.file)
            assert decision.replayable == (self.last_stop in REPLAYABLE)

    def teardown(self) -> None:
        if self.writer is not None and not self.writer.closed:
            self.writer.close()
        self.holds.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# The loaded profile (ci in CI) decides the number of runs; each run is kept short.
WriterMachine.TestCase.settings = settings(stateful_step_count=12)
TestWriterMachine = WriterMachine.TestCase
TestWriterMachine.__doc__ = "Writer, file and replay agree with a list model under every rule."
