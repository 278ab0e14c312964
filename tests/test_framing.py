"""Framing: the forward and the backward line scans agree with each other, and with the
reader, at every cut of generated files (ADR 0062)."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import strategies as s
from ledger import Degradation, DegradationKind, RecordDecodeError, decode_record
from ledger.framing import (
    BOM,
    BackwardScan,
    LastPiece,
    LineBlock,
    LongLine,
    count_newlines,
    first_line,
    line_start,
    scan_forward,
    strip_bom,
)
from ledger.reader import iter_entries
from ledger.sources import ByteSource, BytesSource, FdSource, FileSource, reader_at

Line = tuple[int, int, bytes | None]


def forward_lines(data: bytes, *, chunk: int, max_line: int) -> list[Line]:
    """``(start, end, content)`` of every line the forward scan cuts (``end`` before ``\\n``,
    content ``None`` for a line it skipped as too long), checking the pieces follow on."""
    out: list[Line] = []
    pos: int | None = None
    for piece in scan_forward(
        reader_at(BytesSource(data)), chunk_bytes=chunk, max_line_bytes=max_line
    ):
        assert pos is None or piece.offset == pos, "a piece must start where the last ended"
        if isinstance(piece, LineBlock):
            assert piece.lines.endswith(b"\n")
            at = piece.offset
            for line in piece.lines.split(b"\n")[:-1]:
                out.append((at, at + len(line), line))
                at += len(line) + 1
            pos = at
        elif isinstance(piece, LongLine):
            end = piece.offset + piece.size
            pos = end
            if data[end - 1 : end] == b"\n":
                end -= 1
            out.append((piece.offset, end, None))
        else:
            assert isinstance(piece, LastPiece)
            out.append((piece.offset, piece.offset + len(piece.data), piece.data))
            pos = piece.offset + len(piece.data)
    return out


def backward_lines(data: bytes, end: int, *, first: int, block: int, carry: int) -> list[Line]:
    """The backward scan's lines of ``data[:end]``, put back in file order."""
    scan = BackwardScan(BytesSource(data), end=end, first_block=first, block=block, max_carry=carry)
    return list(reversed(list(scan.lines())))


def model_lines(data: bytes) -> list[tuple[int, int, bytes]]:
    """The pieces of ``data`` split at every ``\\n``, with their offsets (the mark left out)."""
    pos = len(BOM) if data.startswith(BOM) else 0
    out = []
    for piece in data[pos:].split(b"\n"):
        out.append((pos, pos + len(piece), piece))
        pos += len(piece) + 1
    return out


@given(
    data=s.framed_bytes(),
    first=st.integers(min_value=1, max_value=64),
    block=st.integers(min_value=1, max_value=64),
    carry=st.integers(min_value=0, max_value=120),
    chunk=st.integers(min_value=1, max_value=90),
)
@example(data=BOM, first=1, block=1, carry=0, chunk=1)
@example(data=BOM + b"ab\ncd", first=2, block=1, carry=1, chunk=2)
@example(data=BOM + b"L" * 50, first=4, block=4, carry=10, chunk=3)
@example(data=b"a\n" + b"L" * 10 + b"\n", first=1, block=1, carry=10, chunk=1)
def test_backward_scan_is_the_forward_scan_reversed_at_every_cut(
    data: bytes, first: int, block: int, carry: int, chunk: int
) -> None:
    """Cut the bytes anywhere: the backward scan yields the lines the forward scan cuts, in
    reverse, with the same offsets; a line comes without its bytes only when it is longer than
    the carry allows."""
    for end in range(len(data) + 1):
        cut = data[:end]
        back = backward_lines(data, end, first=first, block=block, carry=carry)
        model = model_lines(cut)
        assert [(a, b) for a, b, _ in back] == [(a, b) for a, b, _ in model]
        for (_, _, got), (_, _, want) in zip(back, model, strict=True):
            if got is None:
                assert len(want) > carry
            else:
                assert got == want
        forward = forward_lines(cut, chunk=chunk, max_line=10**6)
        # The forward scan has no piece after a final line end, nor for an empty source.
        expected = [line for line in model if line != (end, end, b"")]
        assert forward == expected


@given(
    data=s.framed_bytes(),
    chunk=st.integers(min_value=1, max_value=90),
    max_line=st.integers(min_value=0, max_value=60),
)
def test_forward_scan_skips_long_lines_where_they_are(
    data: bytes, chunk: int, max_line: int
) -> None:
    """Lines over the limit (a CR before the line end not counted) are reported where they
    start and never held; the others come whole, at any chunk size."""
    model = [line for line in model_lines(data) if line != (len(data), len(data), b"")]
    got = forward_lines(data, chunk=chunk, max_line=max_line)
    assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in model]
    for (_, _, content), (_, _, want) in zip(got, model, strict=True):
        body = want[:-1] if want.endswith(b"\r") else want
        assert (content is None) == (len(body) > max_line)
        if content is not None:
            assert content == want


def _reader_view(cut: bytes, *, chunk: int, limit: int) -> dict[int, object]:
    """What the forward reader makes of each line it reports: the record, or the kind of
    damage."""
    out: dict[int, object] = {}
    stream = io.BufferedReader(io.BytesIO(cut), buffer_size=max(chunk, 8))
    for line, entry in iter_entries(stream, max_line_bytes=limit):
        if isinstance(entry, Degradation):
            if entry.kind is DegradationKind.UNKNOWN_FIELD:
                continue  # a note before the record of the same line
            out[line] = entry.kind
        else:
            out[line] = entry
    return out


def _backward_view(data: bytes, end: int, *, block: int, limit: int) -> dict[int, object]:
    """The same, from the backward scan's lines of ``data[:end]``, numbered from the first."""
    lines = list(reversed(list(BackwardScan(BytesSource(data), end=end, block=block).lines())))
    out: dict[int, object] = {}
    for number, (start, stop, content) in enumerate(lines, start=1):
        assert content is not None
        body = content[:-1] if content.endswith(b"\r") else content
        if len(body) > limit:
            out[number] = DegradationKind.LINE_TOO_LONG
        elif content.strip():
            try:
                out[number] = decode_record(content)
            except RecordDecodeError:
                torn = number == len(lines)
                out[number] = (
                    DegradationKind.TORN_TAIL if torn else _damage_kind(data[start : stop + 1])
                )
    return out


def _damage_kind(raw: bytes) -> DegradationKind:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return DegradationKind.INVALID_UTF8
    return DegradationKind.UNPARSEABLE_LINE


@given(
    data=s.rollout_framed_bytes,
    block=st.integers(min_value=1, max_value=200),
    chunk=st.integers(min_value=1, max_value=300),
    limit=st.integers(min_value=60, max_value=400),
)
def test_backward_lines_read_as_the_forward_reader_reads_at_every_cut(
    data: bytes, block: int, chunk: int, limit: int
) -> None:
    """At every cut of a file of records, damage, blank, CRLF, over-long and torn lines, each
    line the backward scan gives decodes to the record the forward reader yields for that line
    number, and is damage (of the same kind) exactly where the reader reports damage."""
    for end in range(len(data) + 1):
        forward = _reader_view(data[:end], chunk=chunk, limit=limit)
        backward = _backward_view(data, end, block=block, limit=limit)
        assert backward.keys() == forward.keys(), end
        for line, got in backward.items():
            want = forward[line]
            if want is DegradationKind.INVALID_UTF8 or want is DegradationKind.UNPARSEABLE_LINE:
                assert got in (DegradationKind.INVALID_UTF8, DegradationKind.UNPARSEABLE_LINE)
            else:
                assert got == want, (end, line)


@given(data=s.framed_bytes(), block=st.integers(min_value=1, max_value=64))
def test_rfind_line_finds_the_last_line_with_a_prefix_at_every_cut(data: bytes, block: int) -> None:
    """The prefix search finds the start of the last line that begins with the prefix."""
    prefix = b'{"type":"compacted","seq":'
    for end in range(len(data) + 1):
        starts = [a for a, _, line in model_lines(data[:end]) if line.startswith(prefix)]
        scan = BackwardScan(BytesSource(data), end=end, first_block=block, block=block)
        assert scan.rfind_line(prefix) == (starts[-1] if starts else None)


@given(data=s.framed_bytes())
def test_line_start_and_newline_count_at_every_position(data: bytes) -> None:
    """The last line before any position starts where a plain split says, and the newlines
    before it are counted as a plain count does."""
    for end in range(len(data) + 1):
        assert line_start(BytesSource(data), end) == model_lines(data[:end])[-1][0]
        assert count_newlines(BytesSource(data), 0, end) == data[:end].count(b"\n")


def test_budget_stops_the_backward_scan() -> None:
    """The scan reads no more than its budget (rounded up to a block) and says it ran out."""
    data = b"line\n" * 1000
    scan = BackwardScan(BytesSource(data), budget=100, first_block=40, block=40)
    lines = list(scan.lines())
    assert scan.exhausted
    assert scan.scanned == 120
    assert all(line[0] >= len(data) - 120 for line in lines)


def test_a_source_that_shrinks_under_the_backward_scan_is_an_error() -> None:
    """A short read mid-scan (the file was cut meanwhile) raises, never misplaces lines."""

    class Shrunk(BytesSource):
        def size(self) -> int:
            return super().size() + 10

    scan = BackwardScan(Shrunk(b"a\nb\n"))
    with pytest.raises(OSError, match="changed while it was read"):
        list(scan.lines())


def test_the_mark_is_defined_once_and_only_leads() -> None:
    """The mark is stripped from the start only, and the first line comes with its end."""
    assert strip_bom(BOM + b"x" + BOM) == b"x" + BOM
    assert first_line(BOM + b'{"a":1}\r\nnext') == b'{"a":1}\r\n'
    assert first_line(b"no end") == b"no end"
    assert first_line(b"one\n") == b"one\n"


@given(data=st.binary(max_size=300), chunks=st.lists(st.integers(0, 310), max_size=6))
def test_every_source_gives_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunks: list[int]
) -> None:
    """A descriptor, a seekable file and bytes give the same size and bytes at any offset."""
    path = tmp_path_factory.mktemp("source") / "source.bin"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        with open(path, "rb") as f:
            sources: list[ByteSource] = [FdSource(fd), FileSource(f), BytesSource(data)]
            for source in sources:
                assert isinstance(source, ByteSource)
                assert source.size() == len(data)
                for offset in chunks:
                    for n in (0, 1, 7, len(data)):
                        assert source.read_at(offset, n) == data[offset : offset + n]
    finally:
        os.close(fd)
