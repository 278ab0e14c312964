"""The pure reducer: the fold law, the reasoning duals (SPEC rule 8) and degradations as data."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Compacted,
    Degradation,
    DegradationKind,
    Message,
    MessageRecord,
    Reasoning,
    ReasoningRecord,
    Record,
    Role,
    SessionMeta,
    Terminal,
    UnknownRecord,
    decode_record,
    encode_line,
    join_message,
    message_records,
    split_message,
)
from ledger.reader import iter_batches
from ledger.reducer import Entry, fold_batches, fold_lines
from replay import ReplayState, apply, fold

TS = datetime(2026, 12, 2, 16, 22, 5, tzinfo=UTC)


def meta(seq: int = 1, *, session_id: str = "s1", version: int = FORMAT_VERSION) -> SessionMeta:
    return SessionMeta(seq=seq, ts=TS, format_version=version, session_id=session_id, started_at=TS)


def msg(seq: int, role: Role = Role.USER, content: str | None = "x") -> MessageRecord:
    return MessageRecord(seq=seq, ts=TS, message=Message(role=role, content=content))


def rsn(seq: int, text: str | None = "think") -> ReasoningRecord:
    return ReasoningRecord(seq=seq, ts=TS, reasoning=Reasoning(text=text))


def write(messages: list[Message], first_seq: int = 2) -> list[Record]:
    """The records a writer emits for ``messages``, after its session_meta."""
    out: list[Record] = [meta()]
    seq = first_seq
    for m in messages:
        for r in message_records(m, first_seq=seq, ts=TS):
            out.append(r)
            seq = r.seq + 1
    return out


def kinds(state: ReplayState) -> list[DegradationKind]:
    return [d.kind for d in state.degraded]


# --- the duals (SPEC rule 8) -----------------------------------------------------------------


@given(ms=s.message_lists)
def test_written_messages_fold_back_equal(ms: list[Message]) -> None:
    """Any message sequence written as records and folded comes back equal, reasoning included."""
    state = fold(write(ms))
    assert list(state.messages) == ms
    assert [m.reasoning for m in state.messages] == [m.reasoning for m in ms]
    assert state.degraded == ()
    assert state.pending_reasoning == ()


@given(ms=s.message_lists)
def test_written_messages_fold_back_equal_through_bytes(ms: list[Message]) -> None:
    """The same holds through the line encoding: encode, decode, fold gives the messages back."""
    lines = [encode_line(r) for r in write(ms)]
    state = fold(decode_record(line) for line in lines)  # type: ignore[misc]
    assert list(state.messages) == ms
    assert state.degraded == ()


def test_reasoning_order_is_kept() -> None:
    """Several reasoning blocks come back on their assistant message in the order written."""
    blocks = tuple(Reasoning(text=t) for t in ("first", "", None, "last"))
    m = Message(role=Role.ASSISTANT, content="answer", reasoning=blocks)
    recs = write([Message(role=Role.USER, content="q"), m])
    assert [type(r).__name__ for r in recs] == [
        "SessionMeta",
        "MessageRecord",
        "ReasoningRecord",
        "ReasoningRecord",
        "ReasoningRecord",
        "ReasoningRecord",
        "MessageRecord",
    ]
    assert fold(recs).messages[1].reasoning == blocks


@given(m=s.messages())
def test_split_join_are_duals(m: Message) -> None:
    """`join_message(*split_message(m)) == m`, and the split message carries no reasoning."""
    blocks, bare = split_message(m)
    assert bare.reasoning == ()
    assert blocks == m.reasoning
    assert join_message(blocks, bare) == m


@given(blocks=st.lists(s.reasonings, max_size=4).map(tuple), m=s.messages(st.just(Role.ASSISTANT)))
def test_join_then_split(blocks: tuple[Reasoning, ...], m: Message) -> None:
    """Attached blocks come first, before those the message already carried, in order."""
    joined = join_message(blocks, m)
    assert joined.reasoning == blocks + m.reasoning
    assert split_message(joined) == (blocks + m.reasoning, split_message(m)[1])


# --- the fold law -----------------------------------------------------------------------------


@given(entries=s.entry_lists(), cut=st.integers(min_value=0))
def test_fold_law(entries: list[Entry], cut: int) -> None:
    """For any split point, `fold(a + b) == fold(b, fold(a))`."""
    k = cut % (len(entries) + 1)
    a, b = entries[:k], entries[k:]
    assert fold(a + b) == fold(b, fold(a))


@given(entries=s.entry_lists())
def test_apply_step_by_step_equals_fold(entries: list[Entry]) -> None:
    """Applying entries one by one gives the same state as folding them all."""
    state = ReplayState()
    for e in entries:
        state = apply(state, e)
    assert state == fold(entries)


@given(entries=s.entry_lists(), size=st.integers(min_value=1, max_value=5))
def test_fold_batches_and_lines_agree_with_apply(entries: list[Entry], size: int) -> None:
    """Folding numbered lines or batches gives the state of applying each entry at its line."""
    state = ReplayState()
    for i, e in enumerate(entries, start=1):
        state = apply(state, e, line=i)
    numbered = list(enumerate(entries, start=1))
    assert fold_lines(numbered) == state
    batches = [(i + 1, entries[i : i + size]) for i in range(0, len(entries), size)]
    assert fold_batches(batches) == state


@given(entries=s.entry_lists())
def test_fold_does_not_change_its_input(entries: list[Entry]) -> None:
    """Folding from a state leaves that state as it was (the state is an immutable value)."""
    start = fold(entries)
    snapshot = (start.messages, start.degraded, start.pending_reasoning)
    fold(entries, start)
    assert (start.messages, start.degraded, start.pending_reasoning) == snapshot


# --- degradations -------------------------------------------------------------------------------


def test_clean_file_has_no_degradation() -> None:
    """A well-formed sequence yields no degradation at all."""
    state = fold([meta(), msg(2), rsn(3), msg(4, Role.ASSISTANT)])
    assert state.degraded == ()
    assert state.last_seq == 4


def test_sequence_gap() -> None:
    """A jump in sequence numbers is reported once, with the line's seq."""
    state = fold_lines([(1, meta()), (2, msg(2)), (3, msg(5))])
    assert kinds(state) == [DegradationKind.SEQUENCE_GAP]
    assert (state.degraded[0].line, state.degraded[0].seq) == (3, 5)
    assert "2 record(s) missing" in state.degraded[0].detail
    assert len(state.messages) == 2


def test_first_record_not_numbered_one_is_a_gap() -> None:
    """A file whose first record is not seq 1 is missing records before it."""
    assert kinds(fold([meta(seq=3)])) == [DegradationKind.SEQUENCE_GAP]


def test_damaged_lines_account_for_their_seqs() -> None:
    """A damaged line the reader reported accounts for the number it carried: no extra gap."""
    damage = Degradation(kind=DegradationKind.UNPARSEABLE_LINE, detail="bad", line=3)
    state = fold_lines([(1, meta()), (2, msg(2)), (3, damage), (4, msg(4))])
    assert kinds(state) == [DegradationKind.UNPARSEABLE_LINE]


def test_duplicate_seq() -> None:
    """A repeated sequence number is reported as a duplicate; the record is still applied."""
    state = fold([meta(), msg(2), msg(2)])
    assert kinds(state) == [DegradationKind.SEQUENCE_DUPLICATE]
    assert len(state.messages) == 2


def test_backwards_seq() -> None:
    """A sequence number lower than the previous one is reported as a duplicate."""
    state = fold([meta(), msg(2), msg(3), msg(2)])
    assert kinds(state) == [DegradationKind.SEQUENCE_DUPLICATE]
    assert state.last_seq == 3


def test_orphan_reasoning_before_user_message() -> None:
    """Reasoning followed by a non-assistant message is dropped and reported as an orphan."""
    state = fold_lines([(1, meta()), (2, rsn(2)), (3, msg(3, Role.USER))])
    assert kinds(state) == [DegradationKind.ORPHAN_REASONING]
    assert state.degraded[0].line == 3
    assert state.messages == (Message(role=Role.USER, content="x"),)
    assert state.pending_reasoning == ()


def test_orphan_reasoning_before_compaction() -> None:
    """Reasoning pending when a compaction arrives is dropped and reported as an orphan."""
    comp = Compacted(seq=3, ts=TS, messages=(Message(role=Role.USER, content="s"),))
    state = fold([meta(), rsn(2), comp])
    assert kinds(state) == [DegradationKind.ORPHAN_REASONING]
    assert state.pending_reasoning == ()


def test_reasoning_at_end_stays_pending() -> None:
    """Reasoning at the end of what was read waits for its assistant message (it may follow)."""
    state = fold([meta(), msg(2), rsn(3)])
    assert state.pending_reasoning == (Reasoning(text="think"),)
    assert fold([msg(4, Role.ASSISTANT)], state).messages[-1].reasoning == (
        Reasoning(text="think"),
    )


def test_unknown_record() -> None:
    """An unknown record is reported with its type and seq, and its seq still counts."""
    unknown = UnknownRecord(type="tool_usage", seq=2, raw=b"{}")
    state = fold_lines([(1, meta()), (2, unknown), (3, msg(3))])
    assert kinds(state) == [DegradationKind.UNKNOWN_RECORD]
    assert (state.degraded[0].line, state.degraded[0].seq) == (2, 2)
    assert "tool_usage" in state.degraded[0].detail


def test_session_meta_not_first() -> None:
    """A session_meta after another record is reported but still taken as the meta."""
    state = fold([msg(1), meta(seq=2)])
    assert kinds(state) == [DegradationKind.META_NOT_FIRST]
    assert state.meta == meta(seq=2)


def test_repeated_session_meta() -> None:
    """A second session_meta is reported and the first one is kept."""
    state = fold([meta(), msg(2), meta(seq=3, session_id="other")])
    assert kinds(state) == [DegradationKind.META_REPEATED]
    assert state.meta is not None
    assert state.meta.session_id == "s1"


def test_newer_format_version() -> None:
    """A session_meta of a newer format version is reported, and the meta is kept."""
    state = fold([meta(version=FORMAT_VERSION + 1)])
    assert kinds(state) == [DegradationKind.NEWER_FORMAT]
    assert state.meta is not None


def test_degradations_from_the_reader_are_kept() -> None:
    """Degradation entries are collected in order, as given."""
    ds = [
        Degradation(kind=DegradationKind.TORN_TAIL, detail="t", line=9),
        Degradation(kind=DegradationKind.INVALID_UTF8, detail="u", line=4),
    ]
    assert fold(ds).degraded == tuple(ds)


# --- compaction, checkpoints, terminal ---------------------------------------------------------


def test_compacted_restarts_the_message_sequence() -> None:
    """A compacted record replaces the conversation; later messages append to the replacement."""
    summary = (Message(role=Role.SYSTEM, content="summary"), Message(role=Role.USER, content="q"))
    recs: list[Entry] = [
        meta(),
        msg(2, content="a"),
        msg(3, content="b"),
        Compacted(seq=4, ts=TS, messages=summary, summary="sum"),
        msg(5, content="c"),
    ]
    state = fold_lines(enumerate(recs, start=1))
    assert state.messages == (*summary, Message(role=Role.USER, content="c"))
    assert (state.compactions, state.compacted_line) == (1, 4)
    assert state.degraded == ()


def test_last_checkpoint_wins() -> None:
    """With several checkpoints, the state holds the last one and the messages it covered."""
    c1 = AgentCheckpoint(seq=3, ts=TS, digest="sha256:1", message_count=1)
    c2 = AgentCheckpoint(seq=6, ts=TS, digest="sha256:2", message_count=3)
    recs: list[Entry] = [meta(), msg(2), c1, msg(4), msg(5), c2, msg(7)]
    state = fold_lines(enumerate(recs, start=1))
    assert state.checkpoint == c2
    assert state.checkpoint_line == 6
    assert len(state.at_checkpoint) == 3
    assert state.after_checkpoint == 1


def test_at_checkpoint_is_the_snapshot_at_the_checkpoint() -> None:
    """`at_checkpoint` is the conversation when the checkpoint was read, not what followed."""
    c = AgentCheckpoint(seq=4, ts=TS, digest="sha256:x", message_count=2)
    state = fold([meta(), msg(2, content="a"), msg(3, content="b"), c, msg(5, content="late")])
    assert [m.content for m in state.at_checkpoint] == ["a", "b"]
    assert [m.content for m in state.messages] == ["a", "b", "late"]


def test_records_after_checkpoint_are_counted() -> None:
    """Messages, reasoning and compactions after the checkpoint are counted; terminal is not."""
    c = AgentCheckpoint(seq=3, ts=TS, digest="sha256:x", message_count=1)
    comp = Compacted(seq=6, ts=TS, messages=())
    term = Terminal(seq=7, ts=TS, stop_kind="paused")
    state = fold([meta(), msg(2), c, rsn(4), msg(5, Role.ASSISTANT), comp, term])
    assert state.after_checkpoint == 3
    assert state.terminal == term


def test_last_terminal_wins() -> None:
    """With several terminal records, the state holds the last one and its line."""
    t1 = Terminal(seq=2, ts=TS, stop_kind="paused")
    t2 = Terminal(seq=3, ts=TS, stop_kind="completed")
    state = fold_lines([(1, meta()), (2, t1), (3, t2)])
    assert (state.terminal, state.terminal_line) == (t2, 3)


@given(recs=st.lists(s.records, max_size=12))
def test_fold_counts_every_entry(recs: list[Record]) -> None:
    """Every entry folded is counted, whatever it is."""
    assert fold(s.with_seqs(recs)).entries == len(recs)


def test_state_is_frozen() -> None:
    """The reducer state cannot be assigned to."""
    state = fold([meta()])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        state.messages = ()  # type: ignore[misc]


@given(entries=s.entry_lists())
def test_the_readers_batches_fold_as_the_steps_do(entries: list[Entry]) -> None:
    """Records written as lines and folded through the reader's batches (the inline path, with
    the items cut from the lines) give the state of folding the records one step at a time."""
    records = [e for e in entries if not isinstance(e, Degradation | UnknownRecord)]
    data = b"".join(encode_line(r) for r in records)  # type: ignore[arg-type]
    via_reader = fold_batches(iter_batches(io.BytesIO(data)))
    assert via_reader == fold_lines(enumerate(records, start=1))
