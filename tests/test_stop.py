"""Stop facts: read from the tail only, the last checkpoint wins, not found is not an error."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import replay.stop as stop_mod
from ledger import AgentCheckpoint, ErrorDetail, Message, RolloutWriter, StopKind, Terminal
from ledger.reader import rebuild
from replay import read_replay, read_stop_facts
from replay.stop import stop_facts_from_bytes
from rollout_files import RolloutBuilder, conversation


def test_terminal_path_gives_kind_reason_and_checkpoint(tmp_path: Path) -> None:
    """A session stopped on the terminal path has its kind, reason and checkpoint found."""
    path = (
        RolloutBuilder(tmp_path)
        .extend(conversation())
        .checkpoint()
        .terminal(StopKind.FAILED, "tool crashed", ErrorDetail(type="OSError", message="disk"))
        .write()
    )
    facts = read_stop_facts(path)
    assert facts.found
    assert facts.kind is StopKind.FAILED
    assert facts.stop_kind == "failed"
    assert facts.reason == "tool crashed"
    assert facts.checkpoint is not None
    assert facts.checkpoint.message_count == len(conversation())
    assert facts.terminal is not None
    assert facts.terminal.error is not None
    assert not facts.killed
    assert facts.records_after == 0
    assert not facts.legacy
    assert not facts.unknown_kind


def test_not_found_is_not_an_error(tmp_path: Path) -> None:
    """A file with no checkpoint and no terminal gives found=False, never an exception."""
    path = RolloutBuilder(tmp_path).extend(conversation()).write()
    facts = read_stop_facts(path)
    assert not facts.found
    assert facts.kind is None
    assert facts.checkpoint is None
    assert facts.terminal is None
    assert not facts.killed
    assert "unknown" in facts.describe()


def test_empty_and_blank_files_are_not_found(tmp_path: Path) -> None:
    """An empty file or one of blank lines has no stop facts, without error."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n\n  \r\n")
    assert not read_stop_facts(empty).found
    assert not read_stop_facts(blank).found


def test_last_checkpoint_wins(tmp_path: Path) -> None:
    """Paused, resumed and stopped again: the stop facts hold the last checkpoint and terminal."""
    b = RolloutBuilder(tmp_path).extend(conversation(1, tag="a")).stop(StopKind.PAUSED, "first")
    first_count = len(b.model)
    b.extend(conversation(2, tag="b")).stop(StopKind.CANCELLED, "second")
    facts = read_stop_facts(b.write())
    assert facts.checkpoint is not None
    assert facts.checkpoint.message_count == len(b.model) != first_count
    assert facts.kind is StopKind.CANCELLED
    assert facts.reason == "second"
    assert facts.checkpoint == rebuild(b.path).checkpoint


def test_killed_after_resume_keeps_the_last_checkpoint(tmp_path: Path) -> None:
    """Resumed then killed: a stop point is found, marked killed, with the earlier terminal."""
    b = RolloutBuilder(tmp_path).extend(conversation(1)).stop(StopKind.PAUSED, "break")
    ckpt_count = len(b.model)
    b.add(Message(role="user", content="again"), Message(role="assistant", content="ok"))
    facts = read_stop_facts(b.write())
    assert facts.found
    assert facts.killed
    assert facts.terminal is None
    assert facts.kind is None
    assert facts.checkpoint is not None
    assert facts.checkpoint.message_count == ckpt_count
    assert facts.earlier_terminal is not None
    assert facts.earlier_terminal.kind is StopKind.PAUSED
    assert facts.records_after == 3  # two messages and the earlier terminal


def test_killed_between_checkpoint_and_terminal(tmp_path: Path) -> None:
    """A torn terminal line after the checkpoint: killed with its checkpoint, damage counted."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    path = b.write()
    path.write_bytes(b.data()[:-10])
    facts = read_stop_facts(path)
    assert facts.found
    assert facts.killed
    assert facts.checkpoint is not None
    assert facts.damaged_lines == 1
    assert facts.records_after == 0


def test_legacy_terminal_without_kind(tmp_path: Path) -> None:
    """A terminal record without a stop kind is found, legacy, with no kind."""
    path = RolloutBuilder(tmp_path).extend(conversation()).terminal(None, "old").write()
    facts = read_stop_facts(path)
    assert facts.found
    assert facts.legacy
    assert facts.kind is None
    assert facts.checkpoint is None
    assert not facts.killed


def test_unknown_kind_string_is_kept(tmp_path: Path) -> None:
    """A stop kind this library does not know is kept as written, with no StopKind."""
    path = RolloutBuilder(tmp_path).extend(conversation()).stop("snoozed").write()
    facts = read_stop_facts(path)
    assert facts.found
    assert facts.unknown_kind
    assert facts.stop_kind == "snoozed"
    assert facts.kind is None


def big_session(directory: Path, n_messages: int) -> RolloutBuilder:
    b = RolloutBuilder(directory)
    b.extend(Message(role="user", content=f"message {i} " + "x" * 200) for i in range(n_messages))
    return b


def test_cost_does_not_grow_with_the_file_on_the_terminal_path(tmp_path: Path) -> None:
    """A clean stop is read from the same number of bytes whether the file is 50 KB or 5 MB."""
    small = big_session(tmp_path / "small", 200).stop(StopKind.PAUSED).write()
    large = big_session(tmp_path / "large", 20_000).stop(StopKind.PAUSED).write()
    assert large.stat().st_size > 50 * small.stat().st_size
    a, b = read_stop_facts(small), read_stop_facts(large)
    assert a.found
    assert b.found
    assert a.bytes_scanned == b.bytes_scanned


def test_killed_scan_decodes_only_possible_stop_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scanning back over records after the checkpoint decodes only the last line and stop lines."""
    b = big_session(tmp_path, 50).stop(StopKind.PAUSED)
    b.extend(Message(role="assistant", content=f"later {i}") for i in range(2000))
    path = b.write()
    decoded: list[bytes] = []
    real = stop_mod.decode_record

    def counting(data: bytes | str) -> object:
        decoded.append(data if isinstance(data, bytes) else data.encode())
        return real(data)

    monkeypatch.setattr(stop_mod, "decode_record", counting)
    facts = read_stop_facts(path)
    assert facts.found
    assert facts.killed
    assert facts.records_after == 2001
    assert len(decoded) == 3  # the last message, the earlier terminal, the checkpoint


def test_scan_budget_bounds_the_search(tmp_path: Path) -> None:
    """When the budget runs out before a checkpoint, the facts say so instead of reading on."""
    b = big_session(tmp_path, 10).stop(StopKind.PAUSED)
    b.extend(Message(role="user", content="y" * 1000) for _ in range(1000))
    path = b.write()
    facts = read_stop_facts(path, scan_budget=100_000)
    assert not facts.found
    assert facts.exhausted
    assert facts.bytes_scanned < 200_000
    assert "scanned" in facts.describe()
    assert read_stop_facts(path).found


def test_long_lines_after_the_checkpoint_are_skipped_by_their_prefix(tmp_path: Path) -> None:
    """Multi-megabyte lines after the checkpoint do not hide it and are not held whole."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    b.add(Message(role="tool", tool_call_id="c9", content="z" * 3_000_000))
    b.add(Message(role="user", content="after"))
    facts = read_stop_facts(b.write())
    assert facts.found
    assert facts.killed
    assert facts.checkpoint is not None
    assert facts.records_after == 3


def test_bom_crlf_and_trailing_blank_lines(tmp_path: Path) -> None:
    """CRLF line ends and blank lines after the terminal record do not hide it."""
    b = RolloutBuilder(tmp_path).stop(StopKind.CANCELLED)
    path = b.write()
    path.write_bytes(b"\xef\xbb\xbf" + b.data().replace(b"\n", b"\r\n") + b"\r\n\n")
    facts = read_stop_facts(path)
    assert facts.found
    assert facts.kind is StopKind.CANCELLED
    assert facts.checkpoint is not None


def test_foreign_key_order_is_still_recognised(tmp_path: Path) -> None:
    """A stop record whose "type" is not its first key is still found by decoding it."""
    b = RolloutBuilder(tmp_path).extend(conversation()).checkpoint()
    b.raw(b'{"seq":99,"stop_kind":"paused","ts":"2026-12-02T09:30:00Z","type":"terminal"}\n')
    facts = read_stop_facts(b.write())
    assert facts.kind is StopKind.PAUSED
    assert facts.checkpoint is not None


def test_missing_file_raises(tmp_path: Path) -> None:
    """A missing file is an OSError, not 'not found' facts."""
    with pytest.raises(FileNotFoundError):
        read_stop_facts(tmp_path / "gone.jsonl")


# --- the tail reader agrees with the forward fold ----------------------------------------------

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("msg"), st.integers(min_value=0, max_value=400)),
        st.tuples(st.just("stop"), st.sampled_from([*StopKind, None, "snoozed"])),
        st.tuples(st.just("ckpt"), st.none()),
        st.tuples(st.just("torn"), st.none()),
        st.tuples(st.just("type_last_ckpt"), st.none()),
        st.tuples(st.just("damaged_ckpt"), st.none()),
    ),
    max_size=12,
)

# A checkpoint line cut short by a bad byte: it starts as a checkpoint and does not decode.
DAMAGED_CHECKPOINT = b'{"type":"agent_checkpoint","seq":5,"ts":"2026-12-02T09:3\xff0Z","di\n'


@given(
    ops=_ops,
    first_block=st.integers(min_value=1, max_value=300),
    block=st.integers(min_value=1, max_value=300),
    carry=st.integers(min_value=1, max_value=500),
)
def test_tail_reader_agrees_with_the_forward_fold(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, object]],
    first_block: int,
    block: int,
    carry: int,
) -> None:
    """For any sequence of records and any block sizes, the tail finds the fold's last checkpoint
    and the terminal record exactly when it ends the file."""
    b = RolloutBuilder(tmp_path_factory.mktemp("agree"))
    for op, arg in ops:
        if op == "msg":
            assert isinstance(arg, int)
            b.add(Message(role="user", content="m" * arg))
        elif op == "stop":
            b.stop(arg if arg is None else str(arg))
        elif op == "ckpt":
            b.checkpoint()
        elif op == "type_last_ckpt":
            b.checkpoint(type_last=True)
        elif op == "damaged_ckpt":
            b.raw(DAMAGED_CHECKPOINT)
        else:
            b.raw(b'{"type":"message","seq":1,"ts":"2026-1\n')
    path = b.write()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stop_mod, "_FIRST_BLOCK", first_block)
        mp.setattr(stop_mod, "_BLOCK", block)
        mp.setattr(stop_mod, "_MAX_CARRY", carry)
        facts = read_stop_facts(path)
    state = rebuild(path)
    assert facts.checkpoint == state.checkpoint
    last = _last_record(b.lines)
    ends_with_terminal = isinstance(last, Terminal)
    assert (facts.terminal is not None) == ends_with_terminal
    if ends_with_terminal:
        assert facts.terminal == state.terminal
    assert facts.found == (state.checkpoint is not None or ends_with_terminal)
    assert facts.killed == (facts.found and not ends_with_terminal)


def _agrees_with_the_forward_fold(data: bytes) -> None:
    """The tail's checkpoint is the forward fold's last one, and its terminal record is there
    exactly when a terminal record is the last whole record of ``data``."""
    facts = stop_facts_from_bytes(data)
    state = rebuild(io.BytesIO(data))
    assert facts.checkpoint == state.checkpoint
    ends_with_terminal = isinstance(_last_record(data.split(b"\n")), Terminal)
    assert (facts.terminal is not None) == ends_with_terminal
    assert facts.found == (state.checkpoint is not None or ends_with_terminal)
    assert facts.killed == (facts.found and not ends_with_terminal)


def _agrees_at_every_cut(data: bytes) -> None:
    for end in range(len(data) + 1):
        _agrees_with_the_forward_fold(data[:end])


def _resumed(directory: Path) -> RolloutBuilder:
    """Paused with a checkpoint, then resumed: more messages after the stop point."""
    b = RolloutBuilder(directory).extend(conversation(1)).stop(StopKind.PAUSED, "break")
    return b.add(Message(role="user", content="again"))


def test_a_checkpoint_with_type_not_first_before_the_last_line_is_found(tmp_path: Path) -> None:
    """A checkpoint another encoder wrote with "type" last, followed by more lines, is the
    tail's last checkpoint, as it is the forward fold's; at every cut of the file too."""
    b = _resumed(tmp_path).checkpoint(type_last=True)
    b.add(Message(role="user", content="more"), Message(role="assistant", content="ok"))
    facts = read_stop_facts(b.write())
    assert facts.checkpoint is not None
    assert facts.checkpoint.message_count == len(b.model) - 2
    assert facts.records_after == 2
    assert facts.killed
    _agrees_at_every_cut(b.data())


def test_a_damaged_checkpoint_line_after_the_last_checkpoint_is_skipped(tmp_path: Path) -> None:
    """A damaged checkpoint-looking line after the real last checkpoint of a resumed session is
    counted as damage and the scan goes on to the real one, as the forward fold does; at every
    cut of the file too."""
    b = _resumed(tmp_path)
    count = len(b.model) - 1  # the paused stop's checkpoint, before the resumed message
    b.raw(DAMAGED_CHECKPOINT).add(Message(role="assistant", content="ok"))
    facts = read_stop_facts(b.write())
    assert facts.checkpoint is not None
    assert facts.checkpoint.message_count == count
    assert facts.damaged_lines == 1
    assert facts.records_after == 3  # the terminal of the pause, the two messages after it
    assert facts.killed
    assert facts.earlier_terminal is not None
    _agrees_at_every_cut(b.data())


def _last_record(lines: list[bytes]) -> object:
    from ledger import RecordDecodeError, decode_record

    for line in reversed(lines):
        try:
            return decode_record(line)
        except RecordDecodeError:
            continue
    return None


def test_checkpoint_record_type_is_what_the_prefix_names() -> None:
    """The prefix the scan matches is how the codec starts a checkpoint line."""
    from datetime import UTC, datetime

    from ledger import encode_line

    line = encode_line(
        AgentCheckpoint(seq=1, ts=datetime.now(UTC), digest="sha256:x", message_count=0)
    )
    assert line.startswith(stop_mod._CHECKPOINT_PREFIX)
    term = encode_line(Terminal(seq=1, ts=datetime.now(UTC)))
    assert term.startswith(stop_mod._TERMINAL_PREFIX)


def test_stop_never_searches_backwards_for_a_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stop()` reads on from where the writer's last read ended (its open or its last stop,
    ADR 0067), never back from the end for a compaction, whether or not one was written."""
    from ledger import reader

    calls: list[int] = []
    real = reader._last_compaction

    def spy(f: Any) -> Any:
        calls.append(1)
        return real(f)

    monkeypatch.setattr(reader, "_last_compaction", spy)

    def stop_calls(writer: RolloutWriter) -> int:
        before = len(calls)
        writer.stop(StopKind.PAUSED)
        return len(calls) - before

    with RolloutWriter.create(tmp_path, session_id="plain") as w:
        w.append(Message(role="user", content="hi"))
        assert stop_calls(w) == 0
    with RolloutWriter.open(w.path) as again:
        again.compacted([Message(role="user", content="in short")])
        assert stop_calls(again) == 0
    assert read_replay(w.path).verified
    with RolloutWriter.open(w.path) as third:
        third.append(Message(role="user", content="more"))
        assert stop_calls(third) == 0
    assert read_replay(w.path).verified
