"""How a writer reads its own file back before a checkpoint, reading each byte's records once.

A writer remembers what its last read of the file established (a :class:`ReadMark`: the file's
first ``offset`` bytes, their CRC-32 and line count, and the state the reducer folded from
them). The next read-back checks that those bytes are still what was folded (one CRC pass, no
decoding), then decodes and folds only the bytes after them into that state. By the reducer's
fold law (``fold(a + b) == fold(b, fold(a))``), the state is the one a fold of the whole file
gives: the checkpoint stays computed from the file (SPEC rule 1), while a session stopped at
every turn no longer decodes its whole history at every stop (ADR 0067).

When the writer wrote only messages, reasoning blocks and records outside the conversation since
that read, and the bytes after the mark are, by their CRC-32, the lines it wrote, those lines
are folded from their envelopes without being decoded (:mod:`ledger.readback_lines`, ADR 0164).
Otherwise they are decoded, folded and re-encoded as ADR 0052 says.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Container, Generator, Iterator, Sequence
from typing import Any, Final

import attrs

from ledger.batch_writes import OwnRecords
from ledger.codec import encode_lines
from ledger.damage import Degradation
from ledger.framing import CHUNK_BYTES
from ledger.readback_lines import Tally, fold_own_lines, tally_of
from ledger.reader import DEFAULT_MAX_LINE_BYTES, iter_batches
from ledger.records import RECORD_TYPES, Record
from ledger.reducer import Batch, Entry, ReplayState, fold_batches
from ledger.writer_files import FoldRead, PreadFile

__all__ = ["ReadMark", "mark_of_created", "mark_of_open", "read_back"]

Own = tuple[int, int, int, int]
"""The writer's witness (:meth:`OwnRecords.snapshot`): first seq, count, CRC-32, seed."""
Covered = tuple[str, int]
"""What a checkpoint written now holds: the digest and the message count."""

_OWN_TYPES: Final = frozenset(RECORD_TYPES)
_NL: Final = b"\n"


@attrs.frozen
class ReadMark:
    """What a read of the file established: its first ``offset`` bytes (whole lines, ``lines``
    of them, CRC-32 ``crc``) fold to ``state``. The empty mark (nothing read yet) reads from the
    start."""

    offset: int = 0
    crc: int = 0
    lines: int = 0
    state: ReplayState | None = None
    # Set instead of ``state`` by a read that folded undecoded lines (ADR 0164): what a
    # checkpoint needs, and all that a next read can continue without decoding; ``typed`` is
    # then the mark of the last read that decoded, where a read that must decode starts.
    tally: Tally | None = None
    typed: ReadMark | None = None


class _TallyFile(PreadFile):
    """Positional reads from ``start`` that keep the CRC-32 of every byte read, continuing
    ``crc``. The lines are counted by the reader, which numbers them anyway (counting ``\\n``
    here was a tenth of a stop)."""

    def __init__(self, fd: int, start: int, crc: int) -> None:
        super().__init__(fd)
        self.seek(start)
        self.crc = crc
        self.size = start
        self.last = b""

    def readinto(self, buffer: Any) -> int:
        # PreadFile's read, straight into the buffer; the CRC is taken over the buffer itself.
        self.seek(self.size)
        n = super().readinto(buffer)
        if n:
            view = memoryview(buffer)[:n]
            self.crc = zlib.crc32(view, self.crc)
            self.size += n
            self.last = bytes(view[-1:])
        return n


def _crc_of(fd: int, size: int) -> int | None:
    """The CRC-32 of the file's first ``size`` bytes; ``None`` when the file is shorter now."""
    crc = 0
    pos = 0
    while pos < size:
        data = os.pread(fd, min(CHUNK_BYTES, size - pos), pos)
        if not data:
            return None
        crc = zlib.crc32(data, crc)
        pos += len(data)
    return crc


def read_back(
    fd: int,
    own: Own,
    last_seq: int,
    mark: ReadMark,
    *,
    decode: Container[int] | None = None,
) -> tuple[Covered | None, str | None, ReadMark]:
    """Rebuild the file through ``fd`` from ``mark`` on, and say what is wrong if it is
    damaged, or changed before ``mark.offset``, or does not end at ``last_seq``, or does not
    give back the writer's own records as they were written (``own`` is their first seq, count,
    CRC-32 of their lines and the CRC-32 that one continues, :meth:`BatchQueue.own_records`).

    ``decode``, when given, says that :func:`~ledger.readback_lines.fold_own_lines` can fold
    every record the writer wrote since ``mark``, decoding only those of these seqs; that fold
    is then tried first.

    Returns the digest and message count a checkpoint holds (``None`` with a problem), the
    problem (``None`` when there is none) and the mark of this read (the given one after a
    problem)."""
    if mark.offset and _crc_of(fd, mark.offset) != mark.crc:
        return (
            None,
            f"the file's first {mark.offset} bytes changed after this writer read them (another "
            "program wrote to it)",
            mark,
        )
    if decode is not None:
        undecoded = _read_back_undecoded(fd, own, last_seq, mark, decode)
        if undecoded is not None:
            return undecoded
    return _read_back_typed(fd, own, last_seq, mark)


def _read_back_undecoded(
    fd: int, own: Own, last_seq: int, mark: ReadMark, decode: Container[int]
) -> tuple[Covered, None, ReadMark] | None:
    """The read-back of ADR 0164, or ``None`` when it cannot vouch for the file (the typed one
    then reads the same bytes and says what is wrong, if anything is)."""
    first, count, crc, seed = own
    tally = mark.tally if mark.state is None else tally_of(mark.state)
    if (
        tally is None
        or not mark.offset
        or seed != mark.crc  # the witness continues another read than this mark's
        or first != tally.last_seq + 1
    ):
        return None
    raw = _TallyFile(fd, mark.offset, mark.crc)
    folded = fold_own_lines(
        raw.read, mark.offset, tally, decode=decode, max_line_bytes=DEFAULT_MAX_LINE_BYTES
    )
    if folded is None:
        return None
    tally, lines = folded
    # The bytes after the mark are the writer's own lines, bit for bit (to CRC-32's certainty,
    # as the typed witness is): the same count, and the CRC-32 of the whole file equal to the
    # witness's, which continues the mark's over the lines as they were encoded.
    if lines != count or raw.crc != crc or tally.last_seq != last_seq:
        return None
    return (
        (tally.digest(), tally.messages),
        None,
        ReadMark(
            raw.size,
            raw.crc,
            mark.lines + lines,
            tally=tally,
            typed=mark if mark.state is not None else mark.typed,
        ),
    )


def _read_back_typed(
    fd: int, own: Own, last_seq: int, mark: ReadMark
) -> tuple[Covered | None, str | None, ReadMark]:
    first, want_count, want_crc, seed = own
    # A mark without a decoded state (ADR 0164) cannot start a typed fold: it starts at the last
    # read that decoded (the whole file without one). The witness counts only records from
    # ``first`` on, wherever reading starts.
    start = mark if mark.state is not None else mark.typed or ReadMark()
    got = OwnRecords(first, seed)

    lines: int | None = None  # the number of the last line read, once the reader is done

    def tapped(batches: Generator[Batch, None, int]) -> Iterator[Batch]:
        nonlocal lines
        while True:
            try:
                batch = next(batches)
            except StopIteration as done:
                lines = done.value
                return
            # One encoder call per batch: the records re-encoded as lines must give back, bit
            # for bit, the lines this writer wrote (a value decoding loses would change them).
            records: list[Record] = [e for e in batch[1] if type(e) in _OWN_TYPES]  # type: ignore[misc]
            mine: Sequence[Entry] = [r for r in records if r.seq >= first]
            if mine:
                got.add_lines(encode_lines(mine), len(mine))  # type: ignore[arg-type]
            yield batch

    raw = _TallyFile(fd, start.offset, start.crc)
    with io.BufferedReader(raw, CHUNK_BYTES) as f:
        batches = iter_batches(f, first_line=start.lines + 1, offset=start.offset)
        state = fold_batches(tapped(batches), start.state)
    damage = [d for d in state.degraded if d.is_damage]
    if damage:
        return None, _describe_damage(damage), mark
    if state.last_seq != last_seq:
        return (
            None,
            f"the file read back ends at seq {state.last_seq}, but this writer wrote up to "
            f"seq {last_seq}",
            mark,
        )
    if (got.count, got.crc) != (want_count, want_crc):
        return (
            None,
            f"the {want_count} record(s) this writer wrote from seq {first} did not come back "
            f"as written ({got.count} read back, content differs): a value was lost between "
            "encoding and decoding",
            mark,
        )
    if raw.last not in (b"", _NL):
        # The writer writes whole lines: another program cut or changed the last one, and a
        # checkpoint written now would run on from it.
        return (
            None,
            "the file read back does not end with a line end (another program changed its "
            "last line)",
            mark,
        )
    covered = (state.digest(), len(state.messages))
    if not isinstance(lines, int):
        # A read-back ends at a line end, and the reader says where: else the next reads from 0.
        return covered, None, ReadMark()
    # Ending at a line end, the reader's last line is the number of line ends read.
    return covered, None, ReadMark(raw.size, raw.crc, lines, state)


def mark_of_created(fd: int, size: int) -> ReadMark:
    """The mark of a read of the ``size`` bytes a new rollout starts with (its
    ``session_meta``), read back and folded; the empty mark when they do not fold cleanly."""
    data = os.pread(fd, size, 0)
    if len(data) != size or not data.endswith(_NL):
        return ReadMark()
    state = fold_batches(iter_batches(io.BytesIO(data)))
    if state.meta is None or any(d.is_damage for d in state.degraded):
        return ReadMark()
    return ReadMark(size, zlib.crc32(data), 1, state)


def mark_of_open(read: FoldRead | None, state: ReplayState) -> ReadMark:
    """The mark of the read :meth:`RolloutWriter.open` made: what its fold read (taken as it
    read it, never read again) and the ``state`` folded from it; the empty mark when that
    cannot be said."""
    if read is None:
        return ReadMark()
    return ReadMark(read.offset, read.crc, read.lines, state)


def _describe_damage(damage: list[Degradation]) -> str:
    more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
    return f"the file read back reports damage: {damage[0]}{more}"
