"""Reading in place (ADR 0162), attacked from outside: the chunked reader, the digest items cut
from the chunks, the token estimate and the writer's read-back must not depend on where the
chunks fall, nor on which read call the platform offers."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import ledger.writer_files
from ledger import (
    Degradation,
    Message,
    ReadBackError,
    Reasoning,
    Role,
    RolloutWriter,
    StopKind,
    WriterFailedError,
    decode_record,
    encode_line,
    message_records,
)
from ledger.digest import record_item
from ledger.framing import CHUNK_BYTES, BackwardScan, LineBlock, scan_forward
from ledger.reader import iter_batches
from ledger.reducer import ReplayState, fold_batches
from ledger.sources import BytesSource
from ledger.testing import fail_writes
from replay import read_replay
from replay._location import location
from replay.replay import Replay, estimate_tokens, replay_from_state
from replay.stop import stop_facts_from_file

TS = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)
BOM = b"\xef\xbb\xbf"
CHUNKS = [1, 2, 3, 7, 64, 333, 4096, CHUNK_BYTES]


def _state_at(path: Path, chunk_bytes: int) -> tuple[ReplayState, Replay]:
    """The whole file folded with chunks of ``chunk_bytes``, and its replay."""
    with open(path, "rb") as f:
        stop = stop_facts_from_file(f, f.seek(0, 2))
        f.seek(0)
        state = fold_batches(iter_batches(f, chunk_bytes=chunk_bytes))
    return state, replay_from_state(state, location(path), stop=stop)


def _slow_items(data: bytes) -> list[tuple[int, object, bytes | None]]:
    """Each line's record and digest item, decoded one line at a time (BOM and blanks aside)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    out: list[tuple[int, object, bytes | None]] = []
    for i, line in enumerate(data.split(b"\n")[:-1], start=1):
        if not line.strip():
            continue
        record = decode_record(line + b"\n")
        out.append((i, record, record_item(record, line + b"\n")))
    return out


def _fast_items(data: bytes, chunk_bytes: int) -> list[tuple[int, object, bytes | None]]:
    out: list[tuple[int, object, bytes | None]] = []
    batches = list(iter_batches(io.BytesIO(data), chunk_bytes=chunk_bytes))
    # Every batch is kept until the end: an item must not change once later chunks are read.
    for first, entries, items in batches:
        for k, entry in enumerate(entries):
            assert not isinstance(entry, Degradation), entry
            item = None if items is None else items[k]
            out.append((first + k, entry, None if item is None else bytes(item)))
    return out


def _messages(text: str, n: int) -> list[Message]:
    out = []
    for i in range(n):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        reasoning = (Reasoning(text=f"think {i} {text}"),) if role is Role.ASSISTANT else ()
        out.append(Message(role=role, content=f"{i}: {text * (i % 5 + 1)}", reasoning=reasoning))
    return out


def _write_session(tmp_path: Path, text: str, *, compact: bool, rewind: bool) -> Path:
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        for m in _messages(text, 12):
            w.append(m)
        if compact:
            w.compacted([Message(role=Role.USER, content=f"summary {text}")])
            for m in _messages(text, 5):
                w.append(m)
        if rewind:
            w.rewind(to=w.next_seq - 3)
            w.append(Message(role=Role.ASSISTANT, content=f"again {text}"))
        w.stop(StopKind.PAUSED)
    return w.path


# --- the forward scan at the real chunk size ------------------------------------------------


def _line(size: int, fill: str = "a") -> bytes:
    """A record line of ``size`` bytes with its line end (a message of padded text; a byte or
    two fewer when ``fill`` is wider than one byte)."""

    def line(content: str) -> bytes:
        (record,) = message_records(Message(role=Role.USER, content=content), first_seq=2, ts=TS)
        return encode_line(record)

    pad = size - len(line(""))
    assert pad >= 0
    return line(fill * (pad // len(fill.encode())))


@pytest.mark.parametrize("delta", [-2, -1, 0, 1, 2])
@pytest.mark.parametrize("prefix", [0, 1, 3])
def test_lines_of_about_one_chunk_read_as_one_line_each(delta: int, prefix: int) -> None:
    """Lines exactly as long as the default chunk, or a byte either side, after a short
    line that shifts them, come back one record each with their own items."""
    big = _line(CHUNK_BYTES + delta)
    small = _line(200 + prefix)
    data = small + big + big + small + big
    assert _fast_items(data, CHUNK_BYTES) == _slow_items(data)


@given(
    sizes=st.lists(st.integers(min_value=190, max_value=700), min_size=1, max_size=8),
    fill=st.sampled_from(["a", "é", "字"]),
    blank=st.sampled_from([b"", b"\n", b"\r\n", b"  \n"]),
    crlf=st.booleans(),
    bom=st.booleans(),
    chunk_bytes=st.integers(min_value=1, max_value=800),
)
@example(sizes=[200, 200], fill="a", blank=b"", crlf=True, bom=True, chunk_bytes=201)
def test_items_as_read_at_any_chunk_size(
    sizes: list[int], fill: str, blank: bytes, crlf: bool, bom: bool, chunk_bytes: int
) -> None:
    """Records and digest items are those of a line-by-line reading, wherever the chunks fall
    (a CRLF or a BOM split between reads, blank lines at the boundaries), and stay so after
    every later chunk has been read."""
    lines = []
    for size in sizes:
        line = _line(size, fill)
        lines.append(line[:-1] + b"\r\n" if crlf else line)
        lines.append(blank)
    data = (BOM if bom else b"") + b"".join(lines)
    assert _fast_items(data, chunk_bytes) == _slow_items(data)


def test_damage_in_the_first_block_after_a_held_line_is_reported_on_its_line() -> None:
    """A held line ends in a chunk whose next line is damaged: the line numbers stay exact."""
    good = _line(300)
    data = good + b"{not json}\n" + good + good[:50] + b"\xff\n" + good
    for chunk in (7, 100, 299, 301, 305, 320, 4096):
        got = [
            (first + k, type(e).__name__)
            for first, entries, _ in iter_batches(io.BytesIO(data), chunk_bytes=chunk)
            for k, e in enumerate(entries)
        ]
        assert got == [
            (1, "MessageRecord"),
            (2, "Degradation"),
            (3, "MessageRecord"),
            (4, "Degradation"),
            (5, "MessageRecord"),
        ], chunk


@pytest.mark.parametrize("text", ["plain", "déjà vu ✓ 字"])
@pytest.mark.parametrize(("compact", "rewind"), [(False, False), (True, False), (True, True)])
def test_checkpoint_and_estimate_at_any_chunk_size(
    tmp_path: Path, text: str, compact: bool, rewind: bool
) -> None:
    """The checkpoint ``stop()`` wrote verifies at every chunk size, the digest computed is the
    same, and the token estimate from the lines read is the one of the messages."""
    path = _write_session(tmp_path, text, compact=compact, rewind=rewind)
    whole = read_replay(path, whole_file=True)
    window = read_replay(path)
    assert whole.verified
    assert window.verified
    want = sum(estimate_tokens(m) for m in whole.messages)
    assert whole.estimated_tokens == window.estimated_tokens == want
    for crlf in (False, True):
        if crlf:
            path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        digests = set()
        for chunk in CHUNKS:
            state, rep = _state_at(path, chunk)
            assert rep.verified, (crlf, chunk, rep.degraded)
            assert rep.messages == whole.messages
            assert rep.estimated_tokens == want, (crlf, chunk)
            digests.add(state.at_checkpoint_digest)
        assert len(digests) == 1


def test_the_estimate_of_ascii_lines_does_not_follow_the_chunk_tail(tmp_path: Path) -> None:
    """An ASCII message followed by a non-ASCII one: whether the chunk that holds the first
    ends in the second changes how the estimate is computed, never its value."""
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        for i in range(40):
            w.append(Message(role=Role.USER, content="x" * (i * 7) + ("字" if i % 3 else "")))
        w.stop(StopKind.PAUSED)
    want = sum(estimate_tokens(m) for m in read_replay(w.path).messages)
    for chunk in range(150, 400, 7):
        assert _state_at(w.path, chunk)[1].estimated_tokens == want, chunk


def test_raw_extra_values_survive_the_chunks_after_them(tmp_path: Path) -> None:
    """``extra`` values are decoded as raw JSON from the chunk: they stay right once every
    later chunk has been read and the file's bytes are gone."""
    extras = [msgspec.Raw(msgspec.json.encode({"k": i, "pad": "p" * (i * 13)})) for i in range(30)]
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        for i, extra in enumerate(extras):
            w.append(Message(role=Role.USER, content=f"m{i}", extra=extra))
        w.stop(StopKind.PAUSED)
    for chunk in (5, 97, 4096):
        data = bytearray(w.path.read_bytes())
        f = io.BytesIO(data)
        state = fold_batches(iter_batches(f, chunk_bytes=chunk))
        f.close()
        data[:] = b"\0" * len(data)
        got = [bytes(m.extra) for m in state.messages]  # type: ignore[arg-type]
        assert got == [bytes(e) for e in extras], chunk


class _ReusedBuffer(io.RawIOBase):
    """A stream whose ``read`` hands out one buffer, refilled at every call."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0
        self._buffer = bytearray()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytearray:  # type: ignore[override]
        n = len(self._data) - self._pos if size < 0 else size
        piece = self._data[self._pos : self._pos + n]
        self._pos += len(piece)
        self._buffer[:] = piece
        return self._buffer


def test_a_stream_that_reuses_its_buffer_is_read_as_copies(tmp_path: Path) -> None:
    """Blocks, digest items and ``extra`` values are views of what the stream returns: a
    stream that refills one buffer must not change them once read."""
    extras = [msgspec.Raw(msgspec.json.encode({"k": i, "pad": "p" * (i * 13)})) for i in range(30)]
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        for i, extra in enumerate(extras):
            w.append(Message(role=Role.USER, content=f"m{i}", extra=extra))
        w.stop(StopKind.PAUSED)
    data = w.path.read_bytes()
    want = fold_batches(iter_batches(io.BytesIO(data), chunk_bytes=4096))
    for chunk in (5, 97, 4096):
        state = fold_batches(iter_batches(_ReusedBuffer(data), chunk_bytes=chunk))  # type: ignore[arg-type]
        assert [bytes(m.extra) for m in state.messages] == [bytes(e) for e in extras], chunk  # type: ignore[arg-type]
        assert state.digest() == want.digest() == state.checkpoint.digest, chunk  # type: ignore[union-attr]


@given(
    data=st.lists(
        st.sampled_from([b"\n", b"{", b'{"type":"compacted","seq":', b"x", b"\r\n", BOM]),
        max_size=30,
    ).map(b"".join),
    first=st.integers(min_value=1, max_value=40),
    block=st.integers(min_value=1, max_value=40),
)
def test_rfind_line_at_every_block_size(data: bytes, first: int, block: int) -> None:
    """The backward prefix search, which looks across block boundaries apart, finds what a
    plain search of the whole bytes finds, with any first and later block sizes."""
    prefix = b'{"type":"compacted","seq":'
    body = data[len(BOM) :] if data.startswith(BOM) else data
    at = len(data) - len(body)
    starts = [at] if body.startswith(prefix) else []
    i = data.find(b"\n" + prefix)
    while i >= 0:
        starts.append(i + 1)
        i = data.find(b"\n" + prefix, i + 1)
    scan = BackwardScan(BytesSource(data), first_block=first, block=block)
    assert scan.rfind_line(prefix) == (max(starts) if starts else None)


def test_a_growing_file_is_read_to_where_it_stood_or_further() -> None:
    """Bytes appended while the file is read are read as lines too, never out of order."""
    good = _line(300)
    stream = io.BytesIO(good * 3)
    seen = []
    for first, entries, _ in iter_batches(stream, chunk_bytes=256):
        seen.append((first, len(entries)))
        if first == 1:
            end = stream.tell()
            stream.seek(0, 2)
            stream.write(good * 2)
            stream.seek(end)
    assert sum(n for _, n in seen) == 5


def test_blocks_are_views_of_immutable_chunks() -> None:
    """Every block's bytes are ``bytes``, never a buffer a later read may refill."""
    data = _line(300) * 5 + b"torn"
    f = io.BytesIO(data)
    for piece in scan_forward(f.read, chunk_bytes=333, max_line_bytes=10**6):
        if isinstance(piece, LineBlock):
            assert type(piece.data) is bytes


# --- the writer -----------------------------------------------------------------------------


def _appender(w: RolloutWriter, tag: int, n: int, text: str) -> Callable[[], None]:
    def run() -> None:
        for i in range(n):
            w.append(Message(role=Role.USER, content=f"{tag}.{i} {text * (i % 7)}"))

    return run


@pytest.mark.parametrize("preadv", [True, False])
def test_many_threads_then_stop_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preadv: bool
) -> None:
    """Threads appending at once, large and small records, then stop(): the read-back accepts
    the file, the checkpoint verifies, with or without preadv."""
    if not preadv:
        monkeypatch.setattr(ledger.writer_files, "_preadv", None)
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        threads = [
            threading.Thread(target=_appender(w, t, 40, "字é" if t % 2 else "x" * 400))
            for t in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path, whole_file=True)
    assert rep.verified
    assert len(rep.messages) == 160
    with RolloutWriter.open(w.path) as w2:
        for m in _messages("large " * 2000, 32):  # a full batch of large records
            w2.append(m)
        w2.stop(StopKind.PAUSED)
    rep = read_replay(w2.path)
    assert rep.verified
    assert len(rep.messages) == 192


@pytest.mark.parametrize("preadv", [True, False])
def test_read_back_refuses_a_file_changed_by_another_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preadv: bool
) -> None:
    """With or without preadv, bytes changed under a writer before its stop() are seen."""
    if not preadv:
        monkeypatch.setattr(ledger.writer_files, "_preadv", None)
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        for m in _messages("y" * 300, 10):
            w.append(m)
        w.drain()
        data = w.path.read_bytes()
        at = data.index(b"yyy", len(data) // 2)
        with open(w.path, "r+b") as f:
            f.seek(at)
            f.write(b"z")
        with pytest.raises(ReadBackError):
            w.stop(StopKind.PAUSED)


@pytest.mark.parametrize("partial", [0, 10, 5000])
def test_a_failed_batch_of_large_records_leaves_a_file_that_verifies(
    tmp_path: Path, partial: int
) -> None:
    """A batch of large records fails part-way: the file is cut back to whole records, and a
    writer that opens it again stops with a checkpoint every chunk size verifies."""
    w = RolloutWriter.create(tmp_path, session_id="s")
    for m in _messages("é" * 50, 4):
        w.append(m)
    w.drain()
    with fail_writes(w, partial=partial):
        for m in _messages("z" * 3000, 32):
            w.append(m)
        with pytest.raises(WriterFailedError):
            w.drain()
    with pytest.raises(WriterFailedError):
        w.close()
    with RolloutWriter.open(w.path) as again:
        again.append(Message(role=Role.USER, content="after"))
        again.stop(StopKind.PAUSED)
    for chunk in (1, 333, CHUNK_BYTES):
        rep = _state_at(w.path, chunk)[1]
        assert rep.verified, chunk
        assert len(rep.messages) == 5


def test_rfind_line_prefers_a_match_across_a_boundary_to_one_before_it() -> None:
    """Two matching lines, the last one cut by a block boundary: it is the one found, at every
    pair of block sizes."""
    prefix = b'{"type":"compacted","seq":'
    data = b"a\n" + prefix + b"1}\n" + prefix + b"2}\n"
    want = data.rindex(prefix)
    for first in range(1, 80):
        for block in range(1, 80):
            scan = BackwardScan(BytesSource(data), first_block=first, block=block)
            assert scan.rfind_line(prefix) == want, (first, block)
