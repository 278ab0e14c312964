"""The streaming reader: damage becomes degradations with line numbers, and reading goes on."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    FORMAT_VERSION,
    Degradation,
    DegradationKind,
    Message,
    MessageRecord,
    Reasoning,
    Record,
    RecordDecodeError,
    Role,
    SessionMeta,
    UnknownRecord,
    decode_record,
    encode_line,
    encode_record,
    message_records,
)
from ledger.reader import iter_batches, iter_file_entries, rebuild
from ledger.reducer import Entry

TS = datetime(2026, 12, 2, 16, 22, 5, tzinfo=UTC)
BOM = b"\xef\xbb\xbf"


def _lines() -> list[bytes]:
    meta = SessionMeta(seq=1, ts=TS, format_version=FORMAT_VERSION, session_id="s1", started_at=TS)
    recs: list[Record] = [meta]
    seq = 2
    for m in (
        Message(role=Role.USER, content="hi ✓"),
        Message(role=Role.ASSISTANT, content="yo", reasoning=(Reasoning(text="t"),)),
        Message(role=Role.USER, content="bye"),
    ):
        for r in message_records(m, first_seq=seq, ts=TS):
            recs.append(r)
            seq = r.seq + 1
    return [encode_line(r) for r in recs]


LINES = _lines()  # 5 lines: meta, user, reasoning, assistant, user


def _write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "r.jsonl"
    p.write_bytes(data)
    return p


def _kinds(entries: list[tuple[int, Entry]]) -> list[tuple[int, str]]:
    return [
        (line, e.kind if isinstance(e, Degradation) else type(e).__name__) for line, e in entries
    ]


def test_clean_file(tmp_path: Path) -> None:
    """A clean file yields one record per line, numbered from 1, and rebuilds without damage."""
    p = _write(tmp_path, b"".join(LINES))
    entries = list(iter_file_entries(p))
    assert [line for line, _ in entries] == [1, 2, 3, 4, 5]
    assert [e for _, e in entries] == [decode_record(x) for x in LINES]
    state = rebuild(p)
    assert state.degraded == ()
    assert [m.content for m in state.messages] == ["hi ✓", "yo", "bye"]
    assert state.messages[1].reasoning == (Reasoning(text="t"),)


def test_bom_is_accepted(tmp_path: Path) -> None:
    """A UTF-8 BOM at the start of the file is skipped."""
    state = rebuild(_write(tmp_path, BOM + b"".join(LINES)))
    assert state.degraded == ()
    assert state.meta is not None


def test_crlf_is_accepted(tmp_path: Path) -> None:
    """CRLF line ends read the same as LF."""
    crlf = b"".join(x[:-1] + b"\r\n" for x in LINES)
    assert rebuild(_write(tmp_path, crlf)) == rebuild(_write(tmp_path, b"".join(LINES)))


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    """Blank and whitespace-only lines are skipped and line numbers still count them."""
    data = LINES[0] + b"\n" + b"   \r\n" + b"".join(LINES[1:]) + b"\n\n"
    entries = list(iter_file_entries(_write(tmp_path, data)))
    assert [line for line, _ in entries] == [1, 4, 5, 6, 7]
    assert all(not isinstance(e, Degradation) for _, e in entries)


def test_torn_last_line(tmp_path: Path) -> None:
    """A last line cut mid-write is a TORN_TAIL degradation with its line number."""
    data = b"".join(LINES[:4]) + LINES[4][:20]
    entries = list(iter_file_entries(_write(tmp_path, data)))
    assert _kinds(entries)[-1] == (5, DegradationKind.TORN_TAIL)
    state = rebuild(_write(tmp_path, data))
    assert [d.kind for d in state.degraded] == [DegradationKind.TORN_TAIL]
    assert state.degraded[0].line == 5
    assert len(state.messages) == 2


def test_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    """A last line that is a whole record but lacks its `\\n` is read, not called torn."""
    data = b"".join(LINES[:4]) + LINES[4][:-1]
    assert rebuild(_write(tmp_path, data)).degraded == ()


def test_invalid_utf8(tmp_path: Path) -> None:
    """A line with invalid UTF-8 is an INVALID_UTF8 degradation; the lines after it are read."""
    bad = LINES[1].replace("✓".encode(), b"\xff\xfe")
    data = LINES[0] + bad + b"".join(LINES[2:])
    state = rebuild(_write(tmp_path, data))
    assert [(d.kind, d.line) for d in state.degraded] == [(DegradationKind.INVALID_UTF8, 2)]
    assert [m.content for m in state.messages] == ["yo", "bye"]


@pytest.mark.parametrize(
    "bad",
    [
        b'{"type":"message","seq":"x","ts":"2026-01-01T00:00:00Z","message":{"content":"\xff"}}',
        b'{"type":"message","seq":2,"ts":"2026-01-01T00:00:00Z","message":{"role":"u","x":"\xff"}}',
    ],
    ids=["bad-seq-first", "bad-role-first"],
)
def test_invalid_utf8_after_another_fault(tmp_path: Path, bad: bytes) -> None:
    """A line with invalid UTF-8 is INVALID_UTF8 even when the decoder stops at an earlier fault."""
    data = LINES[0] + bad + b"\n" + b"".join(LINES[2:])
    state = rebuild(_write(tmp_path, data))
    assert [(d.kind, d.line) for d in state.degraded] == [(DegradationKind.INVALID_UTF8, 2)]


@pytest.mark.parametrize(
    "garbage",
    [b"not json", b"{", b"[1,2,3]", b'{"seq":2}', b'{"type":"message","seq":2}', b"}{"],
)
def test_garbage_line(tmp_path: Path, garbage: bytes) -> None:
    """A line that is not a record is an UNPARSEABLE_LINE degradation and reading goes on."""
    data = LINES[0] + garbage + b"\n" + b"".join(LINES[2:])
    state = rebuild(_write(tmp_path, data))
    assert [(d.kind, d.line) for d in state.degraded] == [(DegradationKind.UNPARSEABLE_LINE, 2)]
    assert len(state.messages) == 2


def test_nul_filled_lines(tmp_path: Path) -> None:
    """NUL-filled lines (a crash of the file system) are unparseable lines, each reported."""
    data = LINES[0] + b"\x00" * 64 + b"\n" + b"\x00" * 7 + LINES[1] + b"".join(LINES[2:])
    state = rebuild(_write(tmp_path, data))
    assert [(d.kind, d.line) for d in state.degraded] == [
        (DegradationKind.UNPARSEABLE_LINE, 2),
        (DegradationKind.UNPARSEABLE_LINE, 3),
    ]
    assert [m.content for m in state.messages] == ["yo", "bye"]


def test_nul_tail_is_torn(tmp_path: Path) -> None:
    """A run of NULs at the end of the file without a line end is a torn tail."""
    data = b"".join(LINES) + b"\x00" * 4096
    state = rebuild(_write(tmp_path, data))
    assert [(d.kind, d.line) for d in state.degraded] == [(DegradationKind.TORN_TAIL, 6)]


def test_line_too_long_is_skipped_and_reading_goes_on(tmp_path: Path) -> None:
    """A line over `max_line_bytes` is LINE_TOO_LONG with its line, and later lines are read."""
    limit = max(len(x) for x in LINES) + 8
    long = encode_line(
        MessageRecord(seq=2, ts=TS, message=Message(role=Role.USER, content="x" * 5000))
    )
    data = LINES[0] + long + b"".join(LINES[2:])
    entries = list(iter_file_entries(_write(tmp_path, data), max_line_bytes=limit))
    assert _kinds(entries) == [
        (1, "SessionMeta"),
        (2, DegradationKind.LINE_TOO_LONG),
        (3, "ReasoningRecord"),
        (4, "MessageRecord"),
        (5, "MessageRecord"),
    ]
    assert str(limit) in entries[1][1].detail  # type: ignore[union-attr]
    state = rebuild(_write(tmp_path, data), max_line_bytes=limit)
    assert [d.kind for d in state.degraded] == [DegradationKind.LINE_TOO_LONG]


def test_unknown_record_is_reported(tmp_path: Path) -> None:
    """A line of an unknown record type is read as such and reported by the reducer."""
    data = LINES[0] + b'{"type":"tool_schema","seq":2,"tokens":5}\n' + b"".join(LINES[2:])
    entries = list(iter_file_entries(_write(tmp_path, data)))
    assert isinstance(entries[1][1], UnknownRecord)
    state = rebuild(_write(tmp_path, data))
    assert [(d.kind, d.line) for d in state.degraded] == [(DegradationKind.UNKNOWN_RECORD, 2)]


def test_empty_file(tmp_path: Path) -> None:
    """An empty file yields nothing and an empty state."""
    p = _write(tmp_path, b"")
    assert list(iter_file_entries(p)) == []
    assert rebuild(p).entries == 0


# --- the reader against a line-by-line model ---------------------------------------------------

_piece = st.one_of(
    s.records.map(encode_record),
    s.records.map(lambda r: encode_record(r) + b"\r"),
    s.unknown_records.map(lambda u: b'{"type":"zz_new","seq":%d}' % (u.seq or 0)),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b"  ", b"\r", b"\t \r", b"\x00" * 9, b"{", b"\xff\xfe", b"x" * 300]),
)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _model(data: bytes, max_line_bytes: int) -> list[tuple[int, object]]:
    """What the reader must yield, computed one line at a time in the simplest way."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    parts = data.split(b"\n")
    out: list[tuple[int, object]] = []
    for i, part in enumerate(parts, start=1):
        last = i == len(parts)
        if last and not part:
            break
        raw = part if last else part + b"\n"
        content = part[:-1] if part.endswith(b"\r") else part
        if len(content) > max_line_bytes:
            out.append((i, DegradationKind.LINE_TOO_LONG))
            continue
        if not part.strip():
            continue
        try:
            out.append((i, decode_record(raw)))
        except RecordDecodeError as exc:
            if last:
                out.append((i, DegradationKind.TORN_TAIL))
            elif str(exc).startswith("invalid UTF-8") or not _utf8(part):
                out.append((i, DegradationKind.INVALID_UTF8))
            else:
                out.append((i, DegradationKind.UNPARSEABLE_LINE))
    return out


def _read(data: bytes, max_line_bytes: int, chunk_bytes: int) -> list[tuple[int, object]]:
    out: list[tuple[int, object]] = []
    f = io.BytesIO(data)
    for first, entries, _ in iter_batches(
        f, max_line_bytes=max_line_bytes, chunk_bytes=chunk_bytes
    ):
        for k, e in enumerate(entries):
            out.append((first + k, e.kind if isinstance(e, Degradation) else e))
    return out


@given(
    pieces=st.lists(_piece, max_size=12),
    bom=st.booleans(),
    final_newline=st.booleans(),
    max_line_bytes=st.integers(min_value=4, max_value=400),
    chunk_bytes=st.integers(min_value=1, max_value=300),
)
@example(pieces=[b"ab\r"], bom=False, final_newline=True, max_line_bytes=2, chunk_bytes=3)
@example(pieces=[b"{}", b"ab\r"], bom=False, final_newline=True, max_line_bytes=2, chunk_bytes=6)
@example(pieces=[b"ab\r\r"], bom=False, final_newline=True, max_line_bytes=3, chunk_bytes=4)
@example(pieces=[LINES[0][:-1]], bom=True, final_newline=True, max_line_bytes=400, chunk_bytes=1)
@example(pieces=[LINES[0][:-1]], bom=True, final_newline=True, max_line_bytes=400, chunk_bytes=2)
def test_reader_matches_line_model(
    pieces: list[bytes], bom: bool, final_newline: bool, max_line_bytes: int, chunk_bytes: int
) -> None:
    """For any file and chunk size, the chunked reader yields what a line-by-line reading does."""
    data = (BOM if bom else b"") + b"\n".join(pieces) + (b"\n" if final_newline else b"")
    assert _read(data, max_line_bytes, chunk_bytes) == _model(data, max_line_bytes)


@given(recs=st.lists(s.records, max_size=10), chunk_bytes=st.integers(min_value=1, max_value=512))
def test_reader_yields_every_record(recs: list[Record], chunk_bytes: int) -> None:
    """Every record written is read back, equal and in order, whatever the chunk size."""
    data = b"".join(encode_line(r) for r in recs)
    got = _read(data, 10**6, chunk_bytes)
    assert got == [(i, r) for i, r in enumerate(recs, start=1)]


# --- the window after the last compaction ---------------------------------------------------

from ledger import AgentCheckpoint, Compacted, checkpoint_digest  # noqa: E402


def _session(tmp_path: Path, steps: list[str]) -> Path:
    """Write a rollout from steps: "m" a message, "c" a compaction, "k" a checkpoint."""
    meta = SessionMeta(seq=1, ts=TS, format_version=FORMAT_VERSION, session_id="s1", started_at=TS)
    lines = [encode_line(meta)]
    seq, msgs, n = 2, [], 0
    for step in steps:
        if step == "m":
            n += 1
            m = Message(role=Role.ASSISTANT, content=f"m{n}", reasoning=(Reasoning(text=f"r{n}"),))
            for r in message_records(m, first_seq=seq, ts=TS):
                lines.append(encode_line(r))
                seq = r.seq + 1
            msgs.append(m)
        elif step == "c":
            msgs = [Message(role=Role.USER, content=f"summary of {len(msgs)}")]
            lines.append(encode_line(Compacted(seq=seq, ts=TS, messages=tuple(msgs))))
            seq += 1
        else:
            cp = AgentCheckpoint(
                seq=seq, ts=TS, digest=checkpoint_digest(msgs), message_count=len(msgs)
            )
            lines.append(encode_line(cp))
            seq += 1
    return _write(tmp_path, b"".join(lines))


@given(steps=st.lists(st.sampled_from("mmmck"), max_size=25))
def test_window_rebuild_gives_the_messages_of_a_full_fold(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """Reading only from the last compaction rebuilds the same messages, checkpoint and seq."""
    path = _session(tmp_path_factory.mktemp("w"), steps)
    full = rebuild(path)
    cp_seq = full.checkpoint.seq if full.checkpoint is not None else None
    window = rebuild(path, from_last_compaction=True, checkpoint_seq=cp_seq)
    assert window.messages == full.messages
    assert window.last_seq == full.last_seq
    assert window.checkpoint == full.checkpoint
    assert window.meta == full.meta
    assert list(window.degraded) == []
    assert window.compacted_line == full.compacted_line
    assert window.checkpoint_line == full.checkpoint_line
    assert window.at_checkpoint == full.at_checkpoint
    if window.window_start_line is not None:
        assert window.window_start_line == full.compacted_line
    elif "c" in steps:
        assert cp_seq is not None  # the window is refused only for an earlier checkpoint


def test_window_skips_the_lines_before_the_last_compaction(tmp_path: Path) -> None:
    """Damage before the last compaction is not read, and reading resumes at its line."""
    path = _session(tmp_path, ["m", "m", "c", "m"])
    data = path.read_bytes().split(b"\n")
    data[2] = b"garbage"  # line 3, before the compaction on line 6
    path.write_bytes(b"\n".join(data))
    full = rebuild(path)
    window = rebuild(path, from_last_compaction=True)
    assert [d.line for d in full.degraded] == [3]
    assert window.degraded == ()
    assert window.window_start_line == 6
    assert window.messages == full.messages


def test_window_is_not_used_past_the_checkpoint_to_verify(tmp_path: Path) -> None:
    """A checkpoint before the last compaction needs the full fold to be verified."""
    path = _session(tmp_path, ["m", "k", "m", "c", "m"])
    full = rebuild(path)
    assert full.checkpoint is not None
    kept = rebuild(path, from_last_compaction=True, checkpoint_seq=full.checkpoint.seq)
    assert kept == full
    assert kept.window_start_line is None


def test_a_damaged_compacted_line_falls_back_to_the_full_fold(tmp_path: Path) -> None:
    """When the last compacted line cannot be decoded, the whole file is folded instead."""
    path = _session(tmp_path, ["m", "c", "m"])
    data = path.read_bytes().split(b"\n")
    assert data[3].startswith(b'{"type":"compacted"')
    data[3] = data[3][:40] + b"\xff" + data[3][41:]
    path.write_bytes(b"\n".join(data))
    window = rebuild(path, from_last_compaction=True)
    assert window == rebuild(path)
    assert window.window_start_line is None


@pytest.mark.parametrize("chunk_bytes", [64, 100, 256, 1 << 20])
def test_lines_across_chunks_are_decoded_as_blocks_in_place(chunk_bytes: int) -> None:
    """Wherever the chunks fall, every conversation item is cut from the bytes as read (a view,
    never a copy of the lines, never the line-by-line path), and the lines are all there."""
    data = b"".join(LINES * 40)
    seen = 0
    for line, entries, items in iter_batches(io.BytesIO(data), chunk_bytes=chunk_bytes):
        assert items is not None, line
        for entry, item in zip(entries, items, strict=True):
            seen += 1
            if not isinstance(entry, SessionMeta):
                assert type(item) is memoryview, (line, entry)
    assert seen == len(LINES) * 40
