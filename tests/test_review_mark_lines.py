"""A stop's read mark counts the line ends of the bytes it covers (ADR 0067).

The mark's ``lines`` comes from the reader's last line number: it must equal the ``\\n`` in the
mark's first ``offset`` bytes whatever those lines hold (blank lines, CRLF ends, a BOM, lines
longer than a chunk or than the limit, notes, compactions, rewinds), after any number of stops
and after a resume, so that the line numbers of later damage are the file's own.
"""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import Message, ReadBackError, Role, RolloutWriter, StopKind
from ledger.framing import BOM, CHUNK_BYTES
from ledger.reader import iter_batches
from ledger.records import Event, Turn, Usage
from replay import read_replay

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _user(i: int, size: int = 0) -> Message:
    return Message(role=Role.USER, content=f"question {i}" + "x" * size)


def _mark_holds(w: RolloutWriter) -> None:
    """The mark covers whole lines, and as many as the ``\\n`` in its bytes."""
    mark = w._mark  # type: ignore[attr-defined]
    data = w.path.read_bytes()[: mark.offset]
    assert mark.offset == 0 or data.endswith(b"\n")
    assert mark.lines == data.count(b"\n"), (mark.lines, data.count(b"\n"))


def _outside(path: Path, data: bytes) -> None:
    """Another program appends ``data``, ignoring the lock."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _lines_of(path: Path) -> list[bytes]:
    """The file's lines, by a plain split: line ``n`` is ``[n - 1]``."""
    return path.read_bytes().split(b"\n")


def test_stops_with_notes_compactions_and_rewinds_keep_the_count(tmp_path: Path) -> None:
    with RolloutWriter.create(tmp_path, session_id="many") as w:
        for turn in range(4):
            w.note(Turn(seq=0, ts=_EPOCH, boundary="start", turn_id=f"t{turn}"))
            w.append(_user(turn))
            w.note(Usage(seq=0, ts=_EPOCH, response_id=f"r{turn}", input_tokens=1))
            if turn == 1:
                w.compacted([_user(10)], summary="kept")
            if turn == 2:
                w.rewind(w.next_seq - 2, reason="back")
            w.note(Event(seq=0, ts=_EPOCH, kind="interrupted"))
            w.stop(StopKind.PAUSED)
            _mark_holds(w)
    assert read_replay(w.path, whole_file=True).verified


def test_blank_and_crlf_lines_between_stops_are_counted(tmp_path: Path) -> None:
    """Blank lines (bare, CRLF, spaces) written by another program are lines of the file."""
    with RolloutWriter.create(tmp_path, session_id="blank") as w:
        for turn, junk in enumerate([b"\n", b"\r\n\n", b"   \n\t\r\n", b"\n" * 5]):
            w.append(_user(turn))
            w.drain()
            _outside(w.path, junk)
            w.stop(StopKind.PAUSED)
            _mark_holds(w)
    replay = read_replay(w.path, whole_file=True)
    assert replay.verified, replay.degraded


def test_lines_longer_than_a_chunk_are_counted(tmp_path: Path) -> None:
    with RolloutWriter.create(tmp_path, session_id="long") as w:
        for turn in range(3):
            w.append(_user(turn, CHUNK_BYTES + 7 * turn))
            w.append(_user(100 + turn))
            w.stop(StopKind.PAUSED)
            _mark_holds(w)


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("bom", [False, True])
def test_a_resumed_writer_counts_from_its_open(tmp_path: Path, crlf: bool, bom: bool) -> None:
    with RolloutWriter.create(tmp_path, session_id="resumed") as w:
        w.append(_user(0))
        w.append(_user(1, CHUNK_BYTES))
        w.stop(StopKind.PAUSED)
    data = w.path.read_bytes()
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    w.path.write_bytes((BOM if bom else b"") + data.replace(b"\n", b"\n\n", 1))
    for again in range(3):
        with RolloutWriter.open(w.path) as r:
            _mark_holds(r)
            for turn in range(2):
                r.append(_user(10 * again + turn))
                r.stop(StopKind.PAUSED)
                _mark_holds(r)
    replay = read_replay(w.path, whole_file=True)
    assert replay.verified, replay.degraded


def test_damage_after_several_stops_has_the_file_line_number(tmp_path: Path) -> None:
    """A line another program damaged, found by a later stop, is reported with its own line."""
    with RolloutWriter.create(tmp_path, session_id="damaged") as w:
        for turn in range(3):
            w.append(_user(turn))
            if turn == 1:
                w.compacted([_user(10)], summary="kept")
            w.drain()
            _outside(w.path, b"\n\r\n")
            w.stop(StopKind.PAUSED)
            _mark_holds(w)
        w.append(_user(3))
        w.drain()
        _outside(w.path, b"not json at all\n")
        with pytest.raises(ReadBackError) as raised:
            w.stop(StopKind.PAUSED)
        _mark_holds(w)
    lines = _lines_of(w.path)
    bad = lines.index(b"not json at all") + 1
    assert f"line {bad}" in str(raised.value) or f"line={bad}" in str(raised.value)
    for whole_file in (True, False):  # the window after the compaction numbers them alike
        replay = read_replay(w.path, whole_file=whole_file)
        damaged = [d for d in replay.degraded if d.is_damage]
        assert [d.line for d in damaged] == [bad]


def test_a_torn_line_between_stops_leaves_the_mark_alone(tmp_path: Path) -> None:
    with RolloutWriter.create(tmp_path, session_id="torn") as w:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
        before = w._mark  # type: ignore[attr-defined]
        _outside(w.path, b'{"type":"message","seq":')
        w.append(_user(1))
        with pytest.raises(ReadBackError):
            w.stop(StopKind.PAUSED)
        assert w._mark == before  # type: ignore[attr-defined]
        _mark_holds(w)


# --- the reader's count, whatever the lines ---------------------------------------------------

_RECORD = (
    b'{"type":"message","seq":%d,"ts":"2026-12-03T00:00:00Z","message":'
    b'{"role":"user","content":"%s"}}'
)

_pieces = st.one_of(
    st.sampled_from([b"", b" ", b"\r", b"{", b"}", b"not json", b"\xff\xfe", b"{}", b"[1]"]),
    st.integers(1, 40).map(lambda n: b"{" + b"y" * n + b"}"),
    st.integers(0, 60).map(lambda n: _RECORD % (n, b"z" * n)),
    st.binary(max_size=30),
)
_ends = st.sampled_from([b"\n", b"\r\n", b"\n\n", b""])


@given(
    body=st.lists(st.tuples(_pieces, _ends), max_size=12),
    bom=st.booleans(),
    chunk=st.integers(1, 64),
    limit=st.integers(1, 200),
    skip=st.integers(0, 12),
)
def test_the_reader_returns_the_line_ends_it_read(
    body: list[tuple[bytes, bytes]], bom: bool, chunk: int, limit: int, skip: int
) -> None:
    """``iter_batches`` returns the ``\\n`` it read, plus one for a last piece without one,
    from the line it starts at, and numbers each degradation as a plain split does."""
    data = (BOM if bom else b"") + b"".join(p + e for p, e in body)
    # Start after the first ``skip`` lines, as a read-back from a mark does.
    offset = 0
    for _ in range(skip):
        cut = data.find(b"\n", offset)
        if cut < 0:
            break
        offset = cut + 1
    first = data[:offset].count(b"\n") + 1
    f = io.BytesIO(data)
    f.seek(offset)
    it = iter_batches(f, chunk_bytes=chunk, max_line_bytes=limit, first_line=first, offset=offset)
    while True:
        try:
            next(it)
        except StopIteration as done:
            last = done.value
            break
    rest = data[offset:]
    if offset == 0 and bom:
        rest = rest[len(BOM) :]  # the mark is not a line's content
    want = data.count(b"\n") + (1 if rest and not rest.endswith(b"\n") else 0)
    assert last == want


@pytest.mark.parametrize(
    "tail",
    [b"", b"\n\n", b'{"type":"message","seq":', b"   ", b"\r\n  \n", b"\r"],
    ids=["none", "blank", "torn", "spaces", "crlf-blank", "cr"],
)
def test_a_resumed_writer_after_a_compaction_and_a_repaired_tail(
    tmp_path: Path, tail: bytes
) -> None:
    with RolloutWriter.create(tmp_path, session_id="repaired") as w:
        w.append(_user(0))
        w.compacted([_user(1)], summary="kept")
        w.append(_user(2))
        w.stop(StopKind.PAUSED)
    _outside(w.path, tail)
    with RolloutWriter.open(w.path) as r:
        _mark_holds(r)
        r.stop(StopKind.PAUSED)
        _mark_holds(r)
        r.append(_user(3))
        r.compacted([_user(4)], summary="again")
        r.stop(StopKind.PAUSED)
        _mark_holds(r)
    replay = read_replay(w.path, whole_file=True)
    assert replay.verified, replay.degraded


def test_a_record_without_its_line_end_is_completed_on_open(tmp_path: Path) -> None:
    with RolloutWriter.create(tmp_path, session_id="unended") as w:
        w.append(_user(0))
        w.stop(StopKind.PAUSED)
    w.path.write_bytes(w.path.read_bytes().rstrip(b"\n"))
    with RolloutWriter.open(w.path) as r:
        _mark_holds(r)
        for turn in range(2):
            r.append(_user(turn))
            r.stop(StopKind.PAUSED)
            _mark_holds(r)


def test_a_reader_that_does_not_say_where_it_stopped_leaves_no_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the reader's last line number, the stop keeps no mark (the next one reads from
    byte 0) rather than a mark without a line count; both stops checkpoint the file."""
    import ledger.readback as readback

    real = readback.iter_batches

    def silent(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        yield from real(*args, **kwargs)  # type: ignore[arg-type]

    w = RolloutWriter.create(tmp_path, session_id="s")
    w.append(_user(1))
    monkeypatch.setattr(readback, "_read_back_undecoded", lambda *args: None)  # the typed path
    monkeypatch.setattr(readback, "iter_batches", silent)
    w.stop(StopKind.PAUSED)
    assert w._mark.offset == 0  # type: ignore[attr-defined]
    assert w._mark.state is None  # type: ignore[attr-defined]
    monkeypatch.setattr(readback, "iter_batches", real)
    w.append(_user(2))
    w.stop(StopKind.PAUSED)
    _mark_holds(w)
    w.close()
    assert read_replay(w.path).verified
