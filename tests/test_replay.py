"""Replay: the conversation rebuilt exactly, verified, with every inexactness listed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import replay.replay as replay_module
from ledger import (
    DegradationKind,
    Message,
    Reasoning,
    ReasoningRecord,
    Role,
    StopKind,
    ToolCall,
    encode_line,
)
from ledger.digest import message_items
from ledger.testing import abandon
from ledger.writer import RolloutWriter
from replay import (
    Replay,
    ReplayTooLarge,
    estimate_tokens,
    handoff_report,
    read_memory,
    read_replay,
    read_stop_facts,
    resume_eligibility,
)
from replay.replay import BYTES_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS
from rollout_files import RolloutBuilder, conversation
from strategies import message_lists
from strategies import messages as any_messages


def kinds(rep: Replay) -> list[DegradationKind]:
    return [d.kind for d in rep.degraded]


def test_paused_session_replays_exactly(tmp_path: Path) -> None:
    """A session stopped on the terminal path replays message for message, verified, exact."""
    ms = conversation(3)
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.PAUSED, "lunch").write()
    rep = read_replay(path)
    assert rep.messages == tuple(ms)
    assert rep.verified
    assert rep.exact
    assert rep.degraded == ()
    assert rep.meta is not None
    assert rep.session_id == "s-1"
    assert rep.checkpoint is not None
    assert rep.checkpoint.message_count == len(ms)
    assert rep.terminal is not None
    assert rep.terminal.kind is StopKind.PAUSED
    assert rep.stop.found
    assert rep.stop.kind is StopKind.PAUSED
    assert rep.total_messages == len(ms)
    assert rep.path == path


@given(ms=message_lists)
def test_any_conversation_round_trips_verified(
    tmp_path_factory: pytest.TempPathFactory, ms: list[Message]
) -> None:
    """Any message sequence written record by record and checkpointed replays equal and verified."""
    d = tmp_path_factory.mktemp("rt")
    path = RolloutBuilder(d).extend(ms).stop(StopKind.PAUSED).write()
    rep = read_replay(path)
    assert rep.messages == tuple(ms)
    assert rep.verified
    assert rep.degraded == ()


def test_replay_is_not_the_lossy_view(tmp_path: Path) -> None:
    """System messages, long reasoning, huge and duplicate tool outputs come back as written."""
    long_output = "x" * 200_000 + "\n" + "é" * 10_000
    long_thought = "thinking " * 5_000
    ms = [
        Message(role="system", content="SYSTEM PROMPT " * 100),
        Message(role="developer", content="developer rules"),
        Message(role="user", content="go"),
        Message(
            role="assistant",
            reasoning=(Reasoning(text=long_thought, signature="sig", encrypted="E" * 5000),),
            tool_calls=(ToolCall(id="c1", name="shell", arguments="{not json"),),
        ),
        Message(role="tool", tool_call_id="c1", content="cancelled", is_error=True),
        Message(role="tool", tool_call_id="c1", content=long_output),
        Message(role="assistant", content="done"),
    ]
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.CANCELLED).write()
    rep = read_replay(path)
    assert rep.messages == tuple(ms)
    assert rep.messages[0].role == "system"
    assert rep.messages[5].content == long_output
    assert rep.messages[3].reasoning[0].text == long_thought
    assert [m.tool_call_id for m in rep.messages if m.role == "tool"] == ["c1", "c1"]
    assert rep.exact


def test_replay_module_does_not_import_the_lossy_view() -> None:
    """The replay module reaches none of the lossy view's code (SPEC rule 4)."""
    import replay.replay as mod

    names = set(vars(mod))
    assert not {"read_memory", "repair_tool_pairs", "view"} & names
    src = Path(mod.__file__).read_text(encoding="utf-8")
    assert "replay.view" not in src
    assert "replay.view" in sys.modules  # imported by the package, so the check above is meaningful


def test_editing_one_character_makes_verified_false(tmp_path: Path) -> None:
    """Changing one character of one message in the file is caught by the checkpoint digest."""
    path = RolloutBuilder(tmp_path).extend(conversation(2)).stop(StopKind.PAUSED).write()
    data = path.read_bytes()
    assert data.count(b"file1.txt") == 1
    path.write_bytes(data.replace(b"file1.txt", b"file1.txT"))
    rep = read_replay(path)
    assert not rep.verified
    assert DegradationKind.DIGEST_MISMATCH in kinds(rep)


@given(data=st.data())
def test_editing_any_message_character_is_caught(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Flipping any letter inside a message's text, wherever it sits, makes verified false."""
    ms = conversation(2)
    b = RolloutBuilder(tmp_path_factory.mktemp("edit")).extend(ms).stop(StopKind.PAUSED)
    raw = bytearray(b.data())
    text_spans = []
    for m in ms:
        text = msgspec.json.encode(m.text())[1:-1]
        at = raw.find(text)
        assert at >= 0
        text_spans += [at + i for i, c in enumerate(text) if chr(c).isalpha()]
    pos = data.draw(st.sampled_from(text_spans))
    raw[pos] = ord("Q") if raw[pos] != ord("Q") else ord("R")
    path = b.write()
    path.write_bytes(bytes(raw))
    rep = read_replay(path)
    assert not rep.verified
    assert DegradationKind.DIGEST_MISMATCH in kinds(rep)


def two_runs(tmp_path: Path) -> tuple[RolloutBuilder, int, int]:
    """A session paused once, resumed and stopped again; returns the builder and the byte
    offsets just after the first checkpoint line and just after the first terminal line."""
    b = RolloutBuilder(tmp_path).extend(conversation(1, tag="a")).checkpoint()
    cut = len(b.data())
    b.terminal(StopKind.PAUSED)
    paused_end = len(b.data())
    b.extend(conversation(1, tag="b")).stop(StopKind.COMPLETED)
    return b, cut, paused_end


@given(data=st.data())
def test_truncating_after_a_checkpoint_is_detected(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Cutting the file anywhere after its first checkpoint is never taken for the intact file."""
    b, first_ckpt_end, paused_end = two_runs(tmp_path_factory.mktemp("cut"))
    full = b.data()
    cut = data.draw(st.integers(min_value=first_ckpt_end, max_value=len(full) - 1))
    # Cut right after the first terminal record, the file is the whole, valid rollout of a
    # session paused once: nothing in it can tell, and nothing should. Cut just before a line
    # end that would be the file's last byte, only that line end is lost and every record is
    # whole (the reader accepts a last line without its line end).
    assume(cut not in (paused_end - 1, paused_end, len(full) - 1))
    path = b.write()
    path.write_bytes(full[:cut])
    rep = read_replay(path)
    detected = not rep.exact or rep.stop.killed or not rep.stop.found
    assert detected, (cut, rep)


def test_truncation_inside_the_last_line_is_a_torn_tail(tmp_path: Path) -> None:
    """A last line cut short is listed as a torn tail; the messages before it are kept."""
    b, _, _ = two_runs(tmp_path)
    full = b.data()
    path = b.write()
    path.write_bytes(full[:-5])
    rep = read_replay(path)
    assert DegradationKind.TORN_TAIL in kinds(rep)
    assert rep.verified  # the last checkpoint is intact; only the terminal record is torn
    assert rep.stop.killed


def test_records_after_the_last_checkpoint_are_listed(tmp_path: Path) -> None:
    """Messages after the last checkpoint (resumed, then killed) are replayed but flagged."""
    ms = conversation(1)
    extra = Message(role="user", content="and then?")
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.PAUSED).add(extra).write()
    rep = read_replay(path)
    assert rep.messages == (*ms, extra)
    assert DegradationKind.AFTER_CHECKPOINT in kinds(rep)
    assert not rep.verified


def test_last_checkpoint_is_the_one_verified(tmp_path: Path) -> None:
    """With several checkpoints, the last one is verified, against everything before it."""
    b, _, _ = two_runs(tmp_path)
    rep = read_replay(b.write())
    assert rep.verified
    assert rep.checkpoint is not None
    assert rep.checkpoint.message_count == len(rep.messages)
    assert rep.stop.checkpoint == rep.checkpoint


def test_forged_checkpoint_digest_is_a_mismatch(tmp_path: Path) -> None:
    """A checkpoint whose digest is not the rebuilt messages' is reported, not trusted."""
    path = (
        RolloutBuilder(tmp_path)
        .extend(conversation())
        .checkpoint(digest="sha256:" + "0" * 64)
        .terminal(StopKind.PAUSED)
        .write()
    )
    rep = read_replay(path)
    assert not rep.verified
    assert kinds(rep) == [DegradationKind.DIGEST_MISMATCH]
    assert rep.degraded[0].line == 9


def test_wrong_message_count_is_a_mismatch(tmp_path: Path) -> None:
    """A checkpoint claiming another message count than rebuilt fails verification."""
    ms = conversation()
    path = (
        RolloutBuilder(tmp_path).extend(ms).checkpoint(count=len(ms) + 1).terminal("paused").write()
    )
    rep = read_replay(path)
    assert not rep.verified
    assert DegradationKind.DIGEST_MISMATCH in kinds(rep)


def test_no_checkpoint_is_listed(tmp_path: Path) -> None:
    """A file without checkpoint replays its messages, unverified, with a no-checkpoint entry."""
    ms = conversation()
    path = RolloutBuilder(tmp_path).extend(ms).write()
    rep = read_replay(path)
    assert rep.messages == tuple(ms)
    assert not rep.verified
    assert kinds(rep) == [DegradationKind.NO_CHECKPOINT]
    assert not rep.stop.found


def test_damaged_line_is_listed_with_its_line(tmp_path: Path) -> None:
    """An unparseable line is one degradation with its line number, and reading goes on."""
    ms = conversation()
    b = RolloutBuilder(tmp_path).add(*ms[:2]).raw(b"{not json\n")
    b.seq += 1  # the damaged line carried a sequence number
    path = b.add(*ms[2:]).stop(StopKind.PAUSED).write()
    rep = read_replay(path)
    assert rep.messages == tuple(ms)
    assert kinds(rep) == [DegradationKind.UNPARSEABLE_LINE]
    assert rep.degraded[0].line == 4
    assert rep.verified


def test_sequence_gap_and_duplicate_are_listed(tmp_path: Path) -> None:
    """A missing and a repeated sequence number are each listed."""
    b = RolloutBuilder(tmp_path).add(Message(role="user", content="a"))
    b.seq += 2
    b.add(Message(role="user", content="b"))
    b.seq -= 1
    b.add(Message(role="user", content="c"))
    rep = read_replay(b.stop(StopKind.PAUSED).write())
    assert DegradationKind.SEQUENCE_GAP in kinds(rep)
    assert DegradationKind.SEQUENCE_DUPLICATE in kinds(rep)
    assert len(rep.messages) == 3


def test_compacted_rebuild_is_listed(tmp_path: Path) -> None:
    """A conversation rebuilt from a compacted record says so, and replays from the compaction."""
    summary = [Message(role="user", content="summary of earlier work")]
    after = [Message(role="assistant", content="continuing")]
    path = (
        RolloutBuilder(tmp_path)
        .extend(conversation(3))
        .compacted(summary, "earlier work")
        .extend(after)
        .stop(StopKind.PAUSED)
        .write()
    )
    rep = read_replay(path)
    assert rep.messages == (*summary, *after)
    assert rep.verified
    assert kinds(rep) == [DegradationKind.REBUILT_FROM_COMPACTED]
    assert rep.compactions == 1


def test_orphan_reasoning_at_the_end_is_listed(tmp_path: Path) -> None:
    """Reasoning blocks left without their assistant message at the end of the file are listed."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    b.raw(encode_line(ReasoningRecord(seq=b.seq, ts=b.started_at, reasoning=Reasoning(text="hm"))))
    rep = read_replay(b.write())
    assert DegradationKind.ORPHAN_REASONING in kinds(rep)


def test_missing_meta_is_listed(tmp_path: Path) -> None:
    """A file without session_meta is listed as such (and by its sequence gap)."""
    path = RolloutBuilder(tmp_path, meta=False).extend(conversation()).stop("paused").write()
    rep = read_replay(path)
    assert rep.meta is None
    assert DegradationKind.MISSING_META in kinds(rep)


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    """A UTF-8 BOM and CRLF line ends do not disturb replay or its verification."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    path = b.write()
    path.write_bytes(b"\xef\xbb\xbf" + b.data().replace(b"\n", b"\r\n"))
    rep = read_replay(path)
    assert rep.exact
    assert rep.stop.kind is StopKind.PAUSED


def test_missing_file_raises_oserror(tmp_path: Path) -> None:
    """A path that does not exist is an error, not an empty replay."""
    with pytest.raises(FileNotFoundError):
        read_replay(tmp_path / "nope.jsonl")


# --- cap and budget ----------------------------------------------------------------------------


def test_max_messages_keeps_the_most_recent(tmp_path: Path) -> None:
    """The message cap keeps the last N messages, lists the drop, and still verifies."""
    ms = conversation(3)
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.PAUSED).write()
    rep = read_replay(path, max_messages=3)
    assert rep.messages == tuple(ms[-3:])
    assert rep.total_messages == len(ms)
    assert rep.verified
    assert kinds(rep) == [DegradationKind.MESSAGE_CAP]
    assert read_replay(path, max_messages=0).messages == ()
    assert read_replay(path, max_messages=len(ms)).degraded == ()


def test_negative_limits_are_refused(tmp_path: Path) -> None:
    """A negative cap or budget is a caller error with a clear message."""
    path = RolloutBuilder(tmp_path).extend(conversation()).write()
    with pytest.raises(ValueError, match="max_messages"):
        read_replay(path, max_messages=-1)
    with pytest.raises(ValueError, match="token_budget"):
        read_replay(path, token_budget=-1)


@pytest.mark.parametrize(
    ("call", "error", "names"),
    [
        (lambda p: read_replay(p, max_messages=2.5), TypeError, "max_messages"),
        (lambda p: read_replay(p, max_messages="3"), TypeError, "max_messages"),
        (lambda p: read_replay(p, max_messages=True), TypeError, "max_messages"),
        (lambda p: read_replay(p, max_messages=float("nan")), TypeError, "max_messages"),
        (lambda p: read_replay(p, token_budget=float("nan")), ValueError, "token_budget"),
        (lambda p: read_replay(p, token_budget=float("inf")), ValueError, "token_budget"),
        (lambda p: read_replay(p, token_budget=-0.5), ValueError, "token_budget"),
        (lambda p: read_replay(p, token_budget="10"), TypeError, "token_budget"),  # noqa: S106 - a budget, not a password
        (lambda p: read_replay(p, token_budget=False), TypeError, "token_budget"),
        (lambda p: read_replay(p, token_counter=3), TypeError, "token_counter"),
        (lambda p: read_stop_facts(p, scan_budget=1.5), TypeError, "scan_budget"),
        (lambda p: read_stop_facts(p, scan_budget=-1), ValueError, "scan_budget"),
        (lambda p: read_memory(p, tool_output_limit=2.0), TypeError, "tool_output_limit"),
        (lambda p: read_memory(p, reasoning_limit=-3), ValueError, "reasoning_limit"),
        (lambda p: read_memory(p, reasoning_limit=True), TypeError, "reasoning_limit"),
        (lambda p: handoff_report(read_replay(p), recent_turns=1.5), TypeError, "recent_turns"),
        (lambda p: handoff_report(read_replay(p), recent_turns=-1), ValueError, "recent_turns"),
    ],
)
def test_numeric_parameters_of_the_read_functions_are_checked(
    tmp_path: Path, call: Callable[[Path], object], error: type[Exception], names: str
) -> None:
    """A wrong-typed, non-finite or negative parameter is refused with an error naming it."""
    path = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).write()
    with pytest.raises(error, match=names):
        call(path)


def test_a_real_budget_is_accepted(tmp_path: Path) -> None:
    """A float budget works like an int one: the comparison is with the estimate."""
    path = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).write()
    tokens = read_replay(path).estimated_tokens
    assert read_replay(path, token_budget=tokens + 0.5).estimated_tokens == tokens
    with pytest.raises(ReplayTooLarge):
        read_replay(path, token_budget=tokens - 0.5)


def test_over_budget_raises_carrying_the_complete_replay(tmp_path: Path) -> None:
    """Over the token budget, ReplayTooLarge carries the whole replay with its estimate."""
    ms = conversation(5)
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.PAUSED).write()
    full = read_replay(path)
    with pytest.raises(ReplayTooLarge) as info:
        read_replay(path, token_budget=full.estimated_tokens - 1)
    err = info.value
    assert isinstance(err.replay, Replay)
    assert err.replay == full
    assert err.replay.messages == tuple(ms)
    assert err.budget == full.estimated_tokens - 1
    assert str(full.estimated_tokens) in str(err)
    assert read_replay(path, token_budget=full.estimated_tokens) == full


def test_token_counter_is_pluggable(tmp_path: Path) -> None:
    """A caller's token counter replaces the default estimate."""
    ms = conversation(2)
    path = RolloutBuilder(tmp_path).extend(ms).write()
    rep = read_replay(path, token_counter=lambda m: 10)
    assert rep.estimated_tokens == 10 * len(ms)
    with pytest.raises(ReplayTooLarge):
        read_replay(path, token_counter=lambda m: 10, token_budget=10 * len(ms) - 1)


def test_default_estimate_ascii_and_cjk() -> None:
    """The default estimate counts ~4 ASCII bytes per token and one token per CJK character."""
    ascii_msg = Message(role="user", content="a" * 400)
    n_ascii = sum(len(item) for item in message_items(ascii_msg))  # as the writer's line holds it
    assert estimate_tokens(ascii_msg) == MESSAGE_OVERHEAD_TOKENS + -(-n_ascii // BYTES_PER_TOKEN)
    cjk = Message(role="user", content="你" * 400)
    assert 400 <= estimate_tokens(cjk) - MESSAGE_OVERHEAD_TOKENS <= 400 + n_ascii // 4
    assert (
        estimate_tokens(cjk) > 3 * (estimate_tokens(ascii_msg) - MESSAGE_OVERHEAD_TOKENS) // 4 * 2
    )


def test_estimate_is_the_sum_over_replayed_messages(tmp_path: Path) -> None:
    """The replay's estimate is the sum of the per-message estimates, each at least the overhead."""
    ms = conversation(3)
    path = RolloutBuilder(tmp_path).extend(ms).write()
    rep = read_replay(path)
    assert rep.estimated_tokens == sum(estimate_tokens(m) for m in ms)
    assert all(estimate_tokens(m) > MESSAGE_OVERHEAD_TOKENS for m in ms)
    assert read_replay(path, max_messages=2).estimated_tokens == sum(
        estimate_tokens(m) for m in ms[-2:]
    )


@settings(max_examples=30, deadline=None)
@given(
    ms=st.lists(any_messages(), min_size=1, max_size=8),
    cap=st.none() | st.integers(min_value=0, max_value=8),
    compact=st.booleans(),
)
def test_the_estimate_read_from_the_lines_is_the_messages_estimate(
    tmp_path_factory: pytest.TempPathFactory, ms: list[Message], cap: int | None, compact: bool
) -> None:
    """A replay takes the default estimate from the lines it read (ADR 0068): the same number
    :func:`estimate_tokens` gives for the messages replayed, ASCII or not, capped or not, with a
    compaction's messages (estimated by encoding) in the window or not."""
    with RolloutWriter.create(tmp_path_factory.mktemp("est"), session_id="est") as w:
        if compact:
            w.compacted(ms[:1], summary="first")
        for m in ms:
            if m.reasoning and m.role is not Role.ASSISTANT:
                continue
            w.append(m)
        w.stop("paused")
    rep = read_replay(w.path, max_messages=cap)
    assert rep.estimated_tokens == sum(estimate_tokens(m) for m in rep.messages)


def test_the_estimate_of_ascii_lines_encodes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For ASCII lines the estimate comes from their lengths alone: no message is encoded to
    count it, and the figure is the messages' estimate (with reasoning joined, and capped)."""
    ms = conversation(3)
    with RolloutWriter.create(tmp_path, session_id="ascii") as w:
        for m in ms:
            w.append(m)
        w.append(Message(role=Role.ASSISTANT, content="done", reasoning=(Reasoning(text="think"),)))
        w.stop("paused")
    want = read_replay(w.path).messages
    full, capped = sum(map(estimate_tokens, want)), sum(map(estimate_tokens, want[-2:]))

    def refuse(message: Message) -> int:
        raise AssertionError("a message was encoded to estimate it")

    monkeypatch.setattr(replay_module, "estimate_tokens", refuse)
    assert read_replay(w.path, token_budget=1 << 40).estimated_tokens == full
    assert read_replay(w.path, max_messages=2).estimated_tokens == capped


# --- end to end with the writer ----------------------------------------------------------------


@given(ms=message_lists)
def test_writer_output_replays_exactly(
    tmp_path_factory: pytest.TempPathFactory, ms: list[Message]
) -> None:
    """Whatever the writer records and checkpoints, replay gives back equal and verified."""
    with RolloutWriter.create(tmp_path_factory.mktemp("w"), agent_name="coder") as w:
        for m in ms:
            w.append(m)
        w.stop(StopKind.PAUSED, "pause")
    rep = read_replay(w.path)
    assert rep.messages == tuple(ms)
    assert rep.exact
    assert rep.stop.kind is StopKind.PAUSED
    assert resume_eligibility(rep.stop, meta=rep.meta).replayable


def test_writer_pause_resume_stop_last_checkpoint_wins(tmp_path: Path) -> None:
    """Paused, reopened, continued and cancelled: replay verifies against the last checkpoint."""
    first, second = conversation(1, tag="a"), conversation(2, tag="b")
    with RolloutWriter.create(tmp_path) as w:
        for m in first:
            w.append(m)
        w.stop(StopKind.PAUSED)
    with RolloutWriter.open(w.path) as w2:
        for m in second:
            w2.append(m)
        w2.stop(StopKind.CANCELLED, "user left")
    rep = read_replay(w.path)
    assert rep.messages == (*first, *second)
    assert rep.exact
    assert rep.checkpoint is not None
    assert rep.checkpoint.message_count == len(first) + len(second)
    assert rep.stop.checkpoint == rep.checkpoint
    assert rep.stop.reason == "user left"


def test_writer_resumed_then_killed(tmp_path: Path) -> None:
    """Reopened and killed without a stop: the records after the checkpoint are flagged."""
    with RolloutWriter.create(tmp_path) as w:
        for m in conversation(1):
            w.append(m)
        w.stop(StopKind.PAUSED)
    w2 = RolloutWriter.open(w.path)
    w2.append(Message(role="user", content="one more thing"))
    w2.drain()
    abandon(w2)
    rep = read_replay(w.path)
    assert not rep.verified
    assert DegradationKind.AFTER_CHECKPOINT in kinds(rep)
    assert rep.stop.killed
    assert rep.stop.earlier_terminal is not None
    assert not resume_eligibility(rep.stop).replayable


def test_writer_compaction_replays_from_the_compacted_record(tmp_path: Path) -> None:
    """After the writer compacts, replay restarts from the compaction and still verifies."""
    summary = [Message(role="user", content="summary so far")]
    with RolloutWriter.create(tmp_path) as w:
        for m in conversation(3):
            w.append(m)
        w.compacted(summary, "sum")
        w.append(Message(role="assistant", content="next"))
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.messages == (*summary, Message(role="assistant", content="next"))
    assert rep.verified
    assert kinds(rep) == [DegradationKind.REBUILT_FROM_COMPACTED]


def test_tokens_are_counted_once_and_only_when_asked(tmp_path: Path) -> None:
    """Without a budget the counter runs on first reading of the estimate, and only once."""
    ms = conversation(2)
    path = RolloutBuilder(tmp_path).extend(ms).write()
    calls: list[Message] = []

    def counter(m: Message) -> int:
        calls.append(m)
        return 1

    rep = read_replay(path, token_counter=counter)
    assert calls == []
    assert rep.estimated_tokens == len(ms)
    assert rep.estimated_tokens == len(ms)
    assert len(calls) == len(ms)


def test_replay_reads_only_the_window_after_the_last_compaction(tmp_path: Path) -> None:
    """By default the lines before the last compaction are not read; whole_file reads them."""
    path = (
        RolloutBuilder(tmp_path)
        .extend(conversation(3))
        .raw(b"garbage before the compaction\n")
        .compacted([Message(role="user", content="the summary")])
        .extend(conversation(1, tag="after"))
        .stop(StopKind.PAUSED)
        .write()
    )
    windowed = read_replay(path)
    whole = read_replay(path, whole_file=True)
    assert windowed.messages == whole.messages
    assert windowed.verified
    assert whole.verified
    assert DegradationKind.UNPARSEABLE_LINE not in {d.kind for d in windowed.degraded}
    assert DegradationKind.UNPARSEABLE_LINE in {d.kind for d in whole.degraded}
    (note,) = [d for d in windowed.degraded if d.kind is DegradationKind.REBUILT_FROM_COMPACTED]
    assert "were not read" in note.detail
