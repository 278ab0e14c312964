"""The kill -9 campaign: a writer killed at random moments loses nothing it had drained.

A child process (``tests/fault_child.py``) writes a rollout and prints, flushed, how many
messages each ``drain`` acknowledged; the parent kills it with SIGKILL at a random moment,
sometimes several times in a row on the same file (each time continuing it with
``RolloutWriter.open``). After each kill the file must replay every acknowledged message, in
order, with nothing but a degradation of its tail; at the end the parent continues the file
itself, stops it, and the replay must be exact. CI runs a few trials
(``ROLLOUT_TORTURE_TRIALS``, default 3); ``benchmarks/torture.py`` runs hundreds and prints the
counts.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import fault_child
from ledger import DegradationKind, Message, Reasoning, Role, StopKind
from ledger.writer import RolloutWriter, WriterError
from replay import read_replay, read_stop_facts, resume_eligibility
from strategies import fault_conversation, fault_rollout_lines

CHILD = Path(fault_child.__file__).resolve()
TRIALS = int(os.environ.get("ROLLOUT_TORTURE_TRIALS", "3"))

# What a kill may leave in a file: a torn last line, reasoning written without its message,
# no checkpoint yet, or records after the last checkpoint. Nothing else.
TAIL_DAMAGE = frozenset(
    {
        DegradationKind.TORN_TAIL,
        DegradationKind.ORPHAN_REASONING,
        DegradationKind.NO_CHECKPOINT,
        DegradationKind.AFTER_CHECKPOINT,
    }
)


class Child:
    """A running fault_child process and what it has printed so far."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.path: Path | None = None
        self.acked: int | None = None
        self.done = False
        self.started = threading.Event()
        self.stalled = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            word, _, rest = raw.decode().strip().partition(" ")
            if word == "PATH":
                self.path = Path(rest)
                self.started.set()
            elif word == "ACK":
                self.acked = int(rest)
            elif word == "DONE":
                self.done = True
            elif word == "STALLED":
                self.stalled.set()
        self.started.set()
        self.stalled.set()

    def kill(self) -> str:
        """SIGKILL the child, wait for it, and return what it wrote on stderr."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join()
        assert self.proc.stderr is not None
        err = self.proc.stderr.read().decode()
        self.proc.stdout.close()  # type: ignore[union-attr]
        self.proc.stderr.close()
        return err


def check_after_kill(
    path: Path, seed: int, acked: int, resumed_at: int, counts: Counter[str]
) -> int:
    """Check the file a killed child left; return how many messages it holds."""
    rep = read_replay(path)
    got = rep.messages
    want = fault_child.messages(seed, 0, len(got))
    counts["records acknowledged"] += 0  # keep the key visible in reports
    lost = max(0, acked - len(got))
    if got != tuple(want):
        first_bad = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
        lost += max(0, acked - first_bad)
        raise AssertionError(
            f"{path}: message {first_bad} differs from what was appended "
            f"(acknowledged {acked}, in file {len(got)}, resumed at {resumed_at}): it has "
            f"{len(got[first_bad].reasoning)} reasoning block(s) where "
            f"{len(want[first_bad].reasoning)} were appended; {got[first_bad]!r:.200}"
        )
    counts["records lost"] += lost
    assert lost == 0, f"{path}: {lost} acknowledged message(s) lost"
    for d in rep.degraded:
        counts[f"tail damage: {d.kind}"] += 1
        assert d.kind in TAIL_DAMAGE, f"{path}: {d}"
        if d.kind in (DegradationKind.TORN_TAIL, DegradationKind.ORPHAN_REASONING):
            # Only the end of the file may be torn: the reducer names no earlier line.
            assert d.kind == DegradationKind.TORN_TAIL or d.line is None, d
    torn = [d for d in rep.degraded if d.kind == DegradationKind.TORN_TAIL]
    assert len(torn) <= 1
    # The tail reader agrees with the whole fold on the last stop point, torn tail or not.
    facts = read_stop_facts(path)
    assert facts.checkpoint == rep.checkpoint
    assert resume_eligibility(facts).reason
    return len(got)


def explain(path: Path, got: tuple[Message, ...], want: list[Message], resumed_at: int) -> str:
    """Say where a replay after a resume differs from what was appended."""
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return (
                f"{path}: after the resume at message {resumed_at}, message {i} differs: it has "
                f"{len(a.reasoning)} reasoning block(s) where {len(b.reasoning)} were appended "
                f"({a.role} vs {b.role})"
            )
    return f"{path}: {len(got)} messages replayed, {len(want)} appended"


def kill_campaign(trials: int, workdir: Path, rng: random.Random) -> Counter[str]:
    """Run ``trials`` files, each killed 1-3 times, then continued and stopped; count it all."""
    counts: Counter[str] = Counter()
    for trial in range(trials):
        seed = rng.randrange(1 << 30)
        directory = workdir / f"t{trial}"
        directory.mkdir()
        path: Path | None = None
        in_file = 0
        for kill in range(rng.randint(1, 3)):
            # A quarter of the kills land inside a write for certain: the child's worker
            # writes part of a batch and stalls there (see fault_child.stall_writes).
            stall = (
                [f"{rng.choice(('half', 'line'))}:{rng.randint(0, 30)}"]
                if rng.random() < 0.25
                else []
            )
            if path is None:
                child = Child(["create", str(directory), str(seed), "0", *stall])
            else:
                child = Child(["open", str(path), str(seed), str(in_file), *stall])
            if stall:
                assert child.stalled.wait(60), "the child did not reach its stalled write"
                counts["kills inside a write"] += 1
            elif rng.random() < 0.15:
                # Sometimes kill while it starts: during import, create, or open's repair.
                time.sleep(rng.uniform(0.0, 0.4))
            else:
                assert child.started.wait(30), "the child did not start"
                time.sleep(rng.uniform(0.0, 0.25))
            err = child.kill()
            counts["kills"] += 1
            assert "Traceback" not in err, err
            assert not child.done, "the child ran out of messages before it was killed"
            created = sorted(directory.glob("*.jsonl"))
            assert len(created) <= 1, created
            if created:
                path = created[0]
                assert child.path in (None, path)
            if path is None:
                counts["killed before the file existed"] += 1
                continue
            acked = child.acked or 0
            if child.acked is None and kill == 0:
                counts["killed before the first drain"] += 1
            counts["records acknowledged"] += max(0, acked - in_file)
            if read_replay(path).meta is None:
                # Killed inside create, before its session_meta was whole: nothing was
                # acknowledged, and the file is not a rollout that open() would continue.
                assert not acked, acked
                counts["killed inside create"] += 1
                break
            in_file = check_after_kill(path, seed, max(acked, in_file), in_file, counts)
        counts["trials"] += 1
        if path is None or read_replay(path).meta is None:
            if path is not None:
                with pytest.raises(WriterError):
                    RolloutWriter.open(path)
            continue
        # The parent continues the file, as a resumed session would, and stops it.
        with RolloutWriter.open(path) as w:
            if w.repair is not None:
                counts[f"repairs: {w.repair.kind}"] += 1
            extra = fault_child.messages(seed, in_file, in_file + 4)
            for m in extra:
                w.append(m)
            w.stop(StopKind.PAUSED, reason="after the kills")
        rep = read_replay(path)
        want = fault_child.messages(seed, 0, in_file + 4)
        assert rep.messages == tuple(want), explain(path, rep.messages, want, in_file)
        assert rep.degraded == (), [str(d) for d in rep.degraded]
        assert rep.verified
        facts = read_stop_facts(path)
        assert facts.kind == StopKind.PAUSED
        assert resume_eligibility(facts).replayable
        counts["files exact after resume"] += 1
    return counts


def test_kill_9_loses_nothing_drained(tmp_path: Path) -> None:
    """Writers killed with SIGKILL at random moments lose no acknowledged message."""
    seed = int(os.environ.get("ROLLOUT_TORTURE_SEED", int.from_bytes(os.urandom(4))))
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    counts = kill_campaign(TRIALS, tmp_path, rng)
    print(f"kill -9 campaign (seed {seed}):", dict(counts))
    assert counts["trials"] == TRIALS
    assert counts["records lost"] == 0


def test_child_messages_are_a_pure_function() -> None:
    """The child's messages depend only on (seed, index), so the parent can rebuild them."""
    assert fault_child.messages(7, 0, 30) == fault_child.messages(7, 0, 30)
    assert fault_child.message(7, 1) != fault_child.message(8, 1)


def test_open_repairs_a_torn_line_and_keeps_it(tmp_path: Path) -> None:
    """open() cuts a torn last line off, keeps its bytes in a sidecar and continues the file."""
    lines = fault_rollout_lines(fault_conversation(), checkpoint=False)
    path = tmp_path / "r.jsonl"
    torn = lines[-1][:-9]
    path.write_bytes(b"".join(lines[:-1]) + torn)
    with RolloutWriter.open(path) as w:
        assert w.repair is not None
        assert w.repair.kind == "torn_line_moved"
        assert w.repair.sidecar is not None
        assert w.repair.sidecar.read_bytes() == torn
        w.append(Message(role=Role.USER, content="again"))
        w.stop(StopKind.PAUSED)
    rep = read_replay(path)
    assert rep.verified
    assert rep.degraded == ()


def test_open_adds_a_missing_line_end(tmp_path: Path) -> None:
    """open() ends a complete last record that lost only its line end, and keeps the record."""
    lines = fault_rollout_lines(fault_conversation(), checkpoint=False)
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(lines)[:-1])
    with RolloutWriter.open(path) as w:
        assert w.repair is not None
        assert w.repair.kind == "newline_added"
        w.stop(StopKind.PAUSED)
    rep = read_replay(path)
    assert len(rep.messages) == len(fault_conversation())
    assert rep.verified


def test_open_cuts_reasoning_left_without_its_message(tmp_path: Path) -> None:
    """Reasoning written without its message by a killed writer never attaches to a later one."""
    lines = fault_rollout_lines(fault_conversation(), checkpoint=False)
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(lines[:5]))  # meta, 2 messages, then 2 reasoning records only
    mine = Message(role=Role.ASSISTANT, content="after resume", reasoning=(Reasoning(text="m"),))
    with RolloutWriter.open(path) as w:
        w.append(mine)
        w.stop(StopKind.PAUSED)
    rep = read_replay(path)
    assert rep.messages[-1] == mine


@pytest.mark.parametrize("how", ["half", "line"])
def test_a_kill_inside_a_write_is_repaired(tmp_path: Path, how: str) -> None:
    """A writer killed in the middle of a write loses nothing acknowledged, and open repairs it."""
    seed = 1234
    child = Child(["create", str(tmp_path), str(seed), "0", f"{how}:3"])
    assert child.stalled.wait(60), "the child did not reach its stalled write"
    assert "Traceback" not in child.kill()
    [path] = tmp_path.glob("*.jsonl")
    counts: Counter[str] = Counter()
    in_file = check_after_kill(path, seed, child.acked or 0, 0, counts)
    if how == "half":
        assert counts["tail damage: torn_tail"] == 1
    with RolloutWriter.open(path) as w:
        if how == "half":
            assert w.repair is not None
            assert w.repair.kind == "torn_line_moved"
        w.append(fault_child.message(seed, in_file))
        w.stop(StopKind.PAUSED)
    rep = read_replay(path)
    assert rep.messages == tuple(fault_child.messages(seed, 0, in_file + 1))
    assert rep.verified
    assert rep.degraded == ()


def test_a_kill_inside_create_leaves_a_file_that_is_no_session(tmp_path: Path) -> None:
    """Killed while writing its session_meta, create leaves a torn head that nobody resumes."""
    child = Child(["create", str(tmp_path), "99", "0", "half:0"])
    assert child.stalled.wait(60), "the child did not reach its stalled write"
    assert "Traceback" not in child.kill()
    assert child.acked is None
    [path] = tmp_path.glob("*.jsonl")
    rep = read_replay(path)
    assert rep.meta is None
    assert DegradationKind.TORN_TAIL in {d.kind for d in rep.degraded}
    with pytest.raises(WriterError, match="not a rollout"):
        RolloutWriter.open(path)
