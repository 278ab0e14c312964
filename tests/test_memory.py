"""ConversationMemory: a private, bounded, thread-safe list with a fixed JSON wire form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    ConversationMemory,
    Durability,
    MemoryWireError,
    Message,
    Reasoning,
    RolloutWriter,
    StopKind,
    ToolCall,
    WriterClosedError,
    checkpoint_digest,
)
from ledger.reader import rebuild

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def user(i: int | str) -> Message:
    return Message(role="user", content=f"u{i}")


# --- privacy ---------------------------------------------------------------------------------


def test_snapshot_is_a_copy() -> None:
    """snapshot() returns a tuple that later appends do not change."""
    memory = ConversationMemory()
    memory.append(user(0))
    snap = memory.snapshot()
    memory.append(user(1))
    assert snap == (user(0),)
    assert isinstance(snap, tuple)
    assert memory.snapshot() == (user(0), user(1))


def test_the_list_is_not_reachable_as_an_attribute() -> None:
    """No public attribute hands out the underlying list, and no new attributes can be added."""
    memory = ConversationMemory()
    memory.append(user(0))
    public = [name for name in dir(memory) if not name.startswith("_")]
    for name in public:
        assert not isinstance(getattr(memory, name), list), name
    with pytest.raises(AttributeError):
        memory.messages = []  # type: ignore[attr-defined]


def test_last_message() -> None:
    """last_message() is the newest message, or None when empty."""
    memory = ConversationMemory()
    assert memory.last_message() is None
    memory.append(user(0))
    memory.append(user(1))
    assert memory.last_message() == user(1)
    assert len(memory) == 2


def test_add_helpers_build_the_messages() -> None:
    """add_system/add_user/add_assistant/add_tool_result append the messages they return."""
    memory = ConversationMemory()
    call = ToolCall(id="c1", name="shell", arguments="{}")
    made = [
        memory.add_system("rules"),
        memory.add_user("hi"),
        memory.add_assistant(reasoning=[Reasoning(text="think")], tool_calls=[call]),
        memory.add_tool_result("c1", "ok", is_error=True),
        memory.add_assistant("done", is_anchored=True),
    ]
    assert memory.snapshot() == tuple(made)
    assert [m.role for m in made] == ["system", "user", "assistant", "tool", "assistant"]
    assert made[2].reasoning == (Reasoning(text="think"),)
    assert made[2].tool_calls == (call,)
    assert made[3].tool_call_id == "c1"
    assert made[3].is_error
    assert made[4].is_anchored


def test_append_refuses_what_is_not_a_message() -> None:
    """append() takes ledger.Message values only."""
    with pytest.raises(TypeError, match=r"ledger\.Message"):
        ConversationMemory().append("hi")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3"])
def test_max_size_must_be_a_positive_int(bad: object) -> None:
    """A max_size that is not a positive int is refused."""
    with pytest.raises(ValueError, match="max_size"):
        ConversationMemory(bad)  # type: ignore[arg-type]


# --- truncation --------------------------------------------------------------------------------


def test_truncation_drops_the_oldest_unprotected_message() -> None:
    """Over max_size, the oldest message that is not system/developer or anchored goes first."""
    memory = ConversationMemory(4)
    memory.add_system("rules")
    memory.append(Message(role="user", content="task", is_anchored=True))
    for i in range(5):
        memory.append(user(i))
    assert memory.snapshot() == (
        Message(role="system", content="rules"),
        Message(role="user", content="task", is_anchored=True),
        user(3),
        user(4),
    )
    assert memory.dropped == 3


def test_developer_messages_are_protected_too() -> None:
    """Developer messages are instructions like system messages and are kept."""
    memory = ConversationMemory(2)
    memory.append(Message(role="developer", content="d"))
    memory.append(user(0))
    memory.append(user(1))
    assert memory.snapshot() == (Message(role="developer", content="d"), user(1))


def test_the_new_message_is_kept_even_if_only_protected_ones_remain() -> None:
    """When everything older is protected, the bound is exceeded rather than lose them."""
    memory = ConversationMemory(2)
    memory.add_system("a")
    memory.add_system("b")
    memory.append(user(0))
    assert len(memory) == 3
    assert memory.last_message() == user(0)


@given(msgs=s.message_lists, max_size=st.integers(min_value=1, max_value=6))
def test_truncation_keeps_every_protected_message_and_the_newest(
    msgs: list[Message], max_size: int
) -> None:
    """After any appends, protected messages all remain, in order, and the newest is last."""
    memory = ConversationMemory(max_size)
    for m in msgs:
        memory.append(m)
    snap = memory.snapshot()

    def protected(m: Message) -> bool:
        return m.is_anchored or m.role in ("system", "developer")

    assert [m for m in snap if protected(m)] == [m for m in msgs if protected(m)]
    n_protected = sum(map(protected, snap))
    assert len(snap) <= max(max_size, n_protected + 1)
    if msgs:
        assert snap[-1] == msgs[-1]
    # What is kept is a subsequence of what was appended.
    it = iter(msgs)
    assert all(any(m == x for x in it) for m in snap)
    assert memory.dropped == len(msgs) - len(snap)


def test_replace_loads_wholesale_without_truncation() -> None:
    """replace() keeps every message it is given, even beyond max_size."""
    memory = ConversationMemory(2)
    memory.replace(user(i) for i in range(5))
    assert memory.snapshot() == tuple(user(i) for i in range(5))
    memory.append(user(5))
    assert memory.snapshot() == (user(4), user(5))


def test_replace_keeps_a_copy_of_the_callers_list() -> None:
    """replace() copies what it is given: changing the caller's list later changes nothing
    inside (SPEC rule 3), and neither does changing the list a snapshot was built from."""
    memory = ConversationMemory()
    given = [user(0), user(1)]
    memory.replace(given)
    given.append(user(2))
    given[0] = user(9)
    assert memory.snapshot() == (user(0), user(1))
    memory.append(user(3))
    assert given == [user(9), user(1), user(2)]


# --- the wire form ----------------------------------------------------------------------------


def test_wire_form_is_exact() -> None:
    """to_json() is exactly {"messages":[...],"max_size":n} with the record format's messages."""
    memory = ConversationMemory(10)
    memory.add_user("hi")
    assert memory.to_json() == '{"messages":[{"role":"user","content":"hi"}],"max_size":10}'
    assert ConversationMemory().to_json() == '{"messages":[],"max_size":null}'


@given(msgs=s.message_lists, max_size=st.none() | st.integers(min_value=1, max_value=5))
def test_wire_form_round_trips(msgs: list[Message], max_size: int | None) -> None:
    """from_json(to_json()) gives the same messages and max_size, whatever the messages."""
    memory = ConversationMemory(max_size)
    memory.replace(msgs)
    again = ConversationMemory.from_json(memory.to_json())
    assert again.snapshot() == tuple(msgs)
    assert again.max_size == max_size
    assert list(json.loads(memory.to_json())) == ["messages", "max_size"]


@pytest.mark.parametrize(
    "data",
    [
        "",
        "[]",
        '{"messages":{}}',
        '{"messages":[{"role":"alien"}],"max_size":null}',
        '{"messages":[],"max_size":0}',
        '{"messages":[],"max_size":null,"other":1}',
    ],
)
def test_bad_wire_form_is_a_clear_error(data: str) -> None:
    """Anything that is not the wire form raises MemoryWireError saying what was expected."""
    with pytest.raises(MemoryWireError):
        ConversationMemory.from_json(data)


# --- binding to a writer ----------------------------------------------------------------------


def test_bound_memory_writes_every_append_to_the_rollout(tmp_path: Path) -> None:
    """With a writer bound, every appended message is in the rollout, even ones truncated away."""
    writer = RolloutWriter.create(tmp_path)
    memory = ConversationMemory(3, writer=writer)
    memory.add_system("rules")
    for i in range(5):
        memory.append(user(i))
    memory.add_assistant("done", reasoning=[Reasoning(text="t")])
    writer.stop(StopKind.PAUSED)
    writer.close()
    state = rebuild(writer.path)
    assert len(state.messages) == 7
    assert state.messages[-1] == memory.last_message()
    assert state.checkpoint is not None
    assert state.checkpoint.digest == checkpoint_digest(state.messages)


def test_bind_later_and_unbind(tmp_path: Path) -> None:
    """bind(writer) sends later appends to the rollout; bind(None) stops it."""
    memory = ConversationMemory()
    memory.append(user(0))
    with RolloutWriter.create(tmp_path) as writer:
        memory.bind(writer)
        assert memory.writer is writer
        memory.append(user(1))
        memory.bind(None)
        memory.append(user(2))
    assert rebuild(writer.path).messages == (user(1),)


def test_compact_records_the_compaction(tmp_path: Path) -> None:
    """compact() replaces the conversation and records a compaction in the bound rollout."""
    with RolloutWriter.create(tmp_path) as writer:
        memory = ConversationMemory(writer=writer)
        for i in range(4):
            memory.append(user(i))
        memory.compact([user("summary")], summary="s")
        memory.append(user(9))
    assert memory.snapshot() == (user("summary"), user(9))
    assert rebuild(writer.path).messages == memory.snapshot()


def test_a_refusing_writer_leaves_memory_unchanged(tmp_path: Path) -> None:
    """If the bound writer refuses a message, memory does not keep it either."""
    writer = RolloutWriter.create(tmp_path)
    memory = ConversationMemory(writer=writer)
    memory.append(user(0))
    writer.close()
    with pytest.raises(WriterClosedError):
        memory.append(user(1))
    assert memory.snapshot() == (user(0),)


# --- concurrency: the gate --------------------------------------------------------------------

N_THREADS = 8
PER_THREAD = 400


class GilYieldingWriter:
    """A stand-in writer that records each message and then lets other threads run.

    A real writer may block on its own lock at this point; yielding here makes the window
    between "the rollout has it" and "memory has it" wide, so that a memory without its lock
    shows the race on every run instead of once in a while.
    """

    def __init__(self) -> None:
        self.got: list[Message] = []

    def append(self, message: Message) -> None:
        self.got.append(message)
        time.sleep(0)

    def compacted(self, messages: Iterable[Message], summary: str | None = None) -> None:
        self.got = list(messages)


def race(directory: str | None, max_size: int | None = None) -> None:
    """8 threads append at once to a memory bound to a writer; check that nothing was lost.

    ``directory=None`` binds a :class:`GilYieldingWriter`, otherwise a real rollout writer in
    ``directory``. Runs with a tiny switch interval so threads swap almost every bytecode.
    """
    fake = GilYieldingWriter() if directory is None else None
    writer = fake or RolloutWriter.create(directory or "", durability=Durability.OS)
    memory = ConversationMemory(max_size, writer=writer)
    barrier = threading.Barrier(N_THREADS)

    def work(t: int) -> None:
        barrier.wait()
        for i in range(PER_THREAD):
            memory.append(Message(role="user", content=f"{t}:{i}"))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    if fake is not None:
        written = tuple(fake.got)
    else:
        assert isinstance(writer, RolloutWriter)
        writer.close()
        written = rebuild(writer.path).messages
    total = N_THREADS * PER_THREAD
    assert len(written) == total, f"the rollout has {len(written)} of {total} messages"
    snap = memory.snapshot()
    if max_size is None:
        assert len(snap) == total, f"memory kept {len(snap)} of {total} messages"
        # Memory and rollout agree message for message: no interleaving between them.
        assert snap == written, "memory and rollout disagree on the order of messages"
    else:
        assert len(snap) == max_size, f"memory holds {len(snap)}, not max_size={max_size}"
        assert memory.dropped == total - max_size, f"dropped {memory.dropped}"
        assert snap == written[-max_size:], "memory is not the newest messages of the rollout"
    for t in range(N_THREADS):
        mine = [m.text() for m in written if m.text().startswith(f"{t}:")]
        assert mine == [f"{t}:{i}" for i in range(PER_THREAD)], f"thread {t} lost or reordered"


@pytest.mark.parametrize("max_size", [None, 50])
@pytest.mark.parametrize("bound_to", ["rollout", "yielding-writer"])
def test_concurrent_appends_lose_nothing(
    tmp_path: Path, max_size: int | None, bound_to: str
) -> None:
    """Appends from 8 threads at once all land, in memory and in the writer, in one order."""
    race(str(tmp_path) if bound_to == "rollout" else None, max_size)


def test_concurrent_appends_lose_nothing_in_dev_mode(tmp_path: Path) -> None:
    """The same race, in a child interpreter running with PYTHONDEVMODE."""
    code = (
        "import sys; sys.path[:0] = sys.argv[1:3]; import test_memory as t;"
        "t.race(sys.argv[3]); t.race(sys.argv[4], 50); t.race(None); t.race(None, 50);"
        "print('ok')"
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "dev",
            "-W",
            "error",
            "-c",
            code,
            str(TESTS),
            str(SRC),
            str(tmp_path / "a"),
            str(tmp_path / "b"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDEVMODE": "1"},
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_extend_appends_in_order_and_truncates() -> None:
    """extend() appends each message in order, with the same truncation as append()."""
    memory = ConversationMemory(3)
    memory.add_system("s")
    memory.extend(user(i) for i in range(4))
    assert memory.snapshot() == (Message(role="system", content="s"), user(2), user(3))
    memory.clear()
    assert memory.snapshot() == ()
