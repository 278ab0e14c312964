"""How a writer reads its own file back before a checkpoint, reading each byte's records once.

A writer remembers what its last read of the file established (a :class:`ReadMark`: the file's
first ``offset`` bytes, their CRC-32 and line count, and the state the reducer folded from
them). The next read-back checks that those bytes are still what was folded (one CRC pass, no
decoding), then decodes and folds only the bytes after them into that state. By the reducer's
fold law (``fold(a + b) == fold(b, fold(a))``), the state is the one a fold of the whole file
gives: the checkpoint stays computed from the file (SPEC rule 1), while a session stopped at
every turn no longer decodes its whole history at every stop (ADR 0067).
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Generator, Iterator, Sequence
from typing import Any, Final

import attrs

from ledger.batch_writes import OwnRecords
from ledger.codec import encode_lines
from ledger.damage import Degradation
from ledger.framing import CHUNK_BYTES
from ledger.reader import iter_batches
from ledger.records import RECORD_TYPES, Record
from ledger.reducer import Batch, Entry, ReplayState, fold_batches
from ledger.writer_files import FoldRead, PreadFile

__all__ = ["ReadMark", "mark_of_open", "read_back"]

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
    fd: int, own: tuple[int, int, int], last_seq: int, mark: ReadMark
) -> tuple[ReplayState, str | None, ReadMark]:
    """Rebuild the file through ``fd`` from ``mark`` on, and say what is wrong if it is
    damaged, or changed before ``mark.offset``, or does not end at ``last_seq``, or does not
    give back the writer's own records as they were written (``own`` is their first seq, count
    and CRC-32 of their lines, :meth:`BatchQueue.own_records`). Returns the state, the problem
    (``None`` when there is none) and the mark of this read (the given one after a problem)."""
    if mark.offset and _crc_of(fd, mark.offset) != mark.crc:
        assert mark.state is not None
        return (
            mark.state,
            f"the file's first {mark.offset} bytes changed after this writer read them (another "
            "program wrote to it)",
            mark,
        )
    first, want_count, want_crc = own
    got = OwnRecords(first)

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

    raw = _TallyFile(fd, mark.offset, mark.crc)
    with io.BufferedReader(raw, CHUNK_BYTES) as f:
        batches = iter_batches(f, first_line=mark.lines + 1, offset=mark.offset)
        state = fold_batches(tapped(batches), mark.state)
    damage = [d for d in state.degraded if d.is_damage]
    if damage:
        return state, _describe_damage(damage), mark
    if state.last_seq != last_seq:
        return (
            state,
            f"the file read back ends at seq {state.last_seq}, but this writer wrote up to "
            f"seq {last_seq}",
            mark,
        )
    if (got.count, got.crc) != (want_count, want_crc):
        return (
            state,
            f"the {want_count} record(s) this writer wrote from seq {first} did not come back "
            f"as written ({got.count} read back, content differs): a value was lost between "
            "encoding and decoding",
            mark,
        )
    if raw.last not in (b"", _NL) or not isinstance(lines, int):
        # A read-back ends at a line end, and the reader says where: else the next reads from 0.
        return state, None, ReadMark()
    # Ending at a line end, the reader's last line is the number of line ends read.
    return state, None, ReadMark(raw.size, raw.crc, lines, state)


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
