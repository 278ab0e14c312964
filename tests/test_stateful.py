"""A stateful test of the write side against a plain list model: writer -> file -> replay.

Rules append, drain, compact, stop with any kind, reopen, and crash (the writer is abandoned
with records still queued, sometimes leaving half a line behind, and a new writer opens the
file). After every step the replay of the file must equal the model's drained conversation,
the stop facts must match the last stop, and the eligibility must follow its kind.

The writer is held (its test seam ``_hold``) so that queued records reach the file only when a
drain asks for them; a crash therefore loses exactly the records still queued, and the model
knows which ones those are.
"""

from __future__ import annotations

import os
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

from ledger import DegradationKind, Message, StopKind
from ledger.writer import Durability, RolloutWriter
from replay import read_replay, read_stop_facts, resume_eligibility
from strategies import messages

REPLAYABLE = frozenset({StopKind.PAUSED, StopKind.CANCELLED})


def abandon(writer: RolloutWriter) -> bytes | None:
    """Crash ``writer``: drop what is queued, stop its worker, close its file without draining.

    Returns the first queued line (what a killed process was about to write), if any.
    """
    with writer._cond:
        first = writer._queue[0] if writer._queue else None
        writer._queue.clear()
        writer._closing = True
        writer._cond.notify_all()
    writer._worker.join()
    writer._closed = True
    os.close(writer._fd)
    return first


class WriterMachine(RuleBasedStateMachine):
    """The writer, the file and the replay, against a list model."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="rollout-stateful-"))
        self.writer: RolloutWriter | None = None
        # The model: the conversation the file holds, the operations still queued, the kind of
        # the last stop and whether records were written after it.
        self.file: list[Message] = []
        self.queued: list[tuple[str, tuple[Message, ...]]] = []
        self.last_stop: StopKind | None = None
        self.after_stop = False
        self.compactions = 0

    @initialize()
    def create(self) -> None:
        self.writer = self._hold(
            RolloutWriter.create(self.dir, agent_name="model", durability=Durability.OS)
        )

    @staticmethod
    def _hold(writer: RolloutWriter) -> RolloutWriter:
        writer._hold = True
        return writer

    @property
    def w(self) -> RolloutWriter:
        assert self.writer is not None
        return self.writer

    def _written(self) -> None:
        for op, ms in self.queued:
            if op == "append":
                self.file.extend(ms)
            else:
                self.file[:] = ms
                self.compactions += 1
            if self.last_stop is not None:
                self.after_stop = True
        self.queued.clear()

    @rule(message=messages())
    def append(self, message: Message) -> None:
        self.w.append(message)
        self.queued.append(("append", (message,)))

    @rule()
    def drain(self) -> None:
        self.w.drain()
        self._written()

    @rule(kept=st.lists(messages(), max_size=3))
    def compact(self, kept: list[Message]) -> None:
        self.w.compacted(kept, summary="compacted")
        self.queued.append(("compact", tuple(kept)))

    @rule(kind=st.sampled_from(StopKind))
    def stop(self, kind: StopKind) -> None:
        self.w.stop(kind, reason=f"stopped {kind}")
        self._written()
        self.last_stop = kind
        self.after_stop = False

    @rule()
    def reopen(self) -> None:
        self.w.close()
        self._written()
        self.writer = self._hold(RolloutWriter.open(self.w.path, durability=Durability.OS))
        assert self.writer.repair is None

    @precondition(lambda self: self.writer is not None)
    @rule(torn=st.floats(min_value=0.0, max_value=1.0))
    def crash(self, torn: float) -> None:
        path = self.w.path
        first = abandon(self.w)
        self.queued.clear()
        half = None
        if first is not None and torn > 0.3 and len(first) > 2:
            # A process killed inside its write leaves part of a line, never all of it.
            half = first[: 1 + int((len(first) - 3) * torn)]
            with path.open("ab") as f:
                f.write(half)
        self.writer = self._hold(RolloutWriter.open(path, durability=Durability.OS))
        if half is not None:
            assert self.writer.repair is not None
            assert self.writer.repair.sidecar is not None
            assert self.writer.repair.sidecar.read_bytes() == half
        else:
            assert self.writer.repair is None

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
        shutil.rmtree(self.dir, ignore_errors=True)


# The loaded profile (ci in CI) decides the number of runs; each run is kept short.
WriterMachine.TestCase.settings = settings(stateful_step_count=12)
TestWriterMachine = WriterMachine.TestCase
TestWriterMachine.__doc__ = "Writer, file and replay agree with a list model under every rule."
