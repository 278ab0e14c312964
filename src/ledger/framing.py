"""How rollout lines sit in bytes: the one home for framing (ADR 0062).

A rollout is a sequence of lines, each ended by ``\\n`` (a ``\\r`` before it is tolerated),
perhaps led by a UTF-8 byte-order mark that is not part of the first line. What follows the last
``\\n`` is the *last piece*: a torn write, or a complete record that lost only its line end.

Everything that needs to know where lines start and end reads them here, over a
:class:`~ledger.sources.ByteSource` or a ``read(n)`` function: forward in chunks
(:func:`scan_forward`, the reader's path: bounded memory, over-long lines skipped without being
held) and backward in blocks from an end (:class:`BackwardScan`: the stop facts of the tail, the
start of a torn last line, the last line that starts with a given prefix). There is one
backward scanner; its lines are those of the forward scan in reverse, which a property test
checks at every cut of generated files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, NamedTuple

from ledger.sources import ByteSource

__all__ = [
    "BOM",
    "CHUNK_BYTES",
    "BackwardScan",
    "LastPiece",
    "LineBlock",
    "LongLine",
    "content_end",
    "count_newlines",
    "first_line",
    "line_start",
    "scan_forward",
    "strip_bom",
]

BOM: Final = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark: tolerated before the first line, never part of it."""

CHUNK_BYTES: Final = 120 * 1024
"""How much the forward scan reads at a time: small enough to be decoded, cut and hashed while
it is still in the cache, and under the C allocator's threshold for mapping fresh memory
(128 KiB by default in glibc), so that every chunk reuses memory already touched (ADR 0162)."""

_FIRST_BLOCK: Final = 16 * 1024
_BLOCK: Final = 64 * 1024
_MAX_CARRY: Final = 1024 * 1024


# --- lines and their ends ---------------------------------------------------------------------


def strip_bom(data: bytes) -> bytes:
    """``data`` without a leading byte-order mark."""
    return data[len(BOM) :] if data.startswith(BOM) else data


def first_line(data: bytes) -> bytes:
    """The first line of ``data`` (a file's first bytes), mark removed, with its ``\\n`` if any."""
    data = strip_bom(data)
    end = data.find(b"\n")
    # Not sliced when the line is all there is: the listing's head is usually just that.
    return data if end < 0 or end == len(data) - 1 else data[: end + 1]


def content_end(data: bytes, start: int, end: int) -> int:
    """Where the content of the line ``data[start:end]`` ends: before its ``\\n`` or ``\\r\\n``."""
    if end > start and data[end - 1] == 0x0A:
        end -= 1
    if end > start and data[end - 1] == 0x0D:
        end -= 1
    return end


# --- forward ----------------------------------------------------------------------------------


class LineBlock(NamedTuple):
    """Complete lines: ``data[start:end]``, which ends with ``\\n`` and starts at byte
    ``offset`` of the source.

    ``data`` is usually the chunk as read, whole: slicing the lines out of it would copy them
    into memory never touched before, and its first touch costs more than the copy (a sixth of
    a replay). The block is not counted here either: the reader numbers its lines in the pass
    that decodes them (counting ``\\n`` again would cost a tenth of a replay)."""

    offset: int
    data: bytes
    start: int
    end: int

    @property
    def whole(self) -> bool:
        """The block's lines are all of ``data``."""
        return self.start == 0 and self.end == len(self.data)

    @property
    def view(self) -> bytes | memoryview:
        """The block's bytes, never copied."""
        return self.data if self.whole else memoryview(self.data)[self.start : self.end]

    @property
    def lines(self) -> bytes:
        """The block's bytes (a copy unless they are all of ``data``)."""
        return self.data if self.whole else self.data[self.start : self.end]


class LongLine(NamedTuple):
    """One line longer than the limit, skipped without being held: where it starts, and its
    size (with its line end, when it has one)."""

    offset: int
    size: int


class LastPiece(NamedTuple):
    """One line: the bytes after the last ``\\n`` of the source (a torn write, or a complete
    record that lost its line end)."""

    offset: int
    data: bytes


def scan_forward(
    read: Callable[[int], bytes],
    *,
    offset: int = 0,
    chunk_bytes: int = CHUNK_BYTES,
    max_line_bytes: int,
) -> Iterator[LineBlock | LongLine | LastPiece]:
    """Cut what ``read(n)`` returns (the next bytes, ``b""`` at the end) into lines, in order.

    ``offset`` is the source offset of the first byte ``read`` returns; a byte-order mark is
    looked for only at offset 0. Whole lines come in blocks, one per chunk read; a line whose
    content (without its end) is longer than ``max_line_bytes`` comes as a :class:`LongLine`
    and is never held beyond one chunk; what follows the last ``\\n`` is a :class:`LastPiece`.
    Each :class:`LongLine` and :class:`LastPiece` is one line; a block holds as many as its
    ``\\n``.
    """

    def chunk() -> bytes:
        # Blocks, digest items and decoded ``msgspec.Raw`` values are views of what ``read``
        # returns: a stream that hands out a reused buffer is copied, never aliased.
        data = read(chunk_bytes)
        return data if type(data) is bytes else bytes(data)

    pos = offset  # source offset of the next byte not yet in a yielded line
    held: list[bytes] = []  # the start of a line longer than one chunk
    held_size = 0
    skipping = False  # inside a line longer than max_line_bytes
    skipped = 0
    data = chunk()
    if offset == 0:
        # A short read (a pipe, a tiny chunk) may split the mark: gather its three bytes.
        while data and len(data) < len(BOM) and BOM.startswith(data):
            more = chunk()
            if not more:
                break
            data += more
        if data.startswith(BOM):
            data = data[len(BOM) :] or chunk()
            pos = len(BOM)
    while data:
        cut = data.rfind(b"\n")
        if cut < 0:
            if skipping:
                skipped += len(data)
            else:
                held.append(data)
                held_size += len(data)
                # One byte of slack for the CR of a CRLF end; the exact length is checked once
                # the line is complete, wherever the chunks happened to split it.
                if held_size > max_line_bytes + 1:
                    skipping, skipped = True, held_size
                    held.clear()
                    held_size = 0
            data = chunk()
            continue
        if skipping:
            # The over-long line ends in this chunk: report it and go on after it.
            end = data.find(b"\n") + 1
            yield LongLine(pos, skipped + end)
            pos += skipped + end
            skipping, skipped = False, 0
            data = data[end:]
            cut = data.rfind(b"\n")
            if cut < 0:
                if data:
                    held.append(data)
                    held_size = len(data)
                data = chunk()
                continue
        begin = 0
        if held:
            # The line begun in earlier chunks ends in this one: it comes as a block of its own,
            # so the rest of the chunk is never copied.
            begin = data.find(b"\n") + 1
            line = b"".join(held) + data[:begin]
            held.clear()
            yield from _blocks(pos, line, 0, len(line), max_line_bytes)
            pos += len(line)
        if begin <= cut:
            yield from _blocks(pos, data, begin, cut + 1, max_line_bytes)
            pos += cut + 1 - begin
        held_size = len(data) - cut - 1
        if held_size:
            held.append(data[cut + 1 :])
        data = chunk()
    if skipping:
        yield LongLine(pos, skipped)
    elif held:
        tail = b"".join(held)
        if content_end(tail, 0, len(tail)) > max_line_bytes:
            yield LongLine(pos, len(tail))
        else:
            yield LastPiece(pos, tail)


def _blocks(
    pos: int, data: bytes, start: int, end: int, max_line_bytes: int
) -> Iterator[LineBlock | LongLine]:
    """The lines ``data[start:end]`` at source offset ``pos``, as one block unless a line in
    them is over the limit."""
    if end - start > max_line_bytes + 1:
        # Rare with the default limit (a block is at most one chunk or one line): only then can
        # a line in it be over the limit.
        yield from _split_long(data[start:end], pos, max_line_bytes)
    else:
        yield LineBlock(pos, data, start, end)


def _split_long(block: bytes, pos: int, max_line_bytes: int) -> Iterator[LineBlock | LongLine]:
    """``block`` with its over-long lines taken out as :class:`LongLine`."""
    start = 0
    run = 0  # where the current run of ordinary lines starts
    find = block.find
    while start < len(block):
        end = find(b"\n", start) + 1
        if content_end(block, start, end) - start > max_line_bytes:
            if run < start:
                yield LineBlock(pos + run, block, run, start)
            yield LongLine(pos + start, end - start)
            run = end
        start = end
    if run < len(block):
        yield LineBlock(pos + run, block, run, len(block))


def count_newlines(source: ByteSource, begin: int, end: int) -> int:
    """How many ``\\n`` the source holds between ``begin`` and ``end``, read a chunk at a time."""
    count = 0
    pos = begin
    while pos < end:
        data = source.read_at(pos, min(CHUNK_BYTES, end - pos))
        if not data:
            break
        count += data.count(b"\n")
        pos += len(data)
    return count


# --- backward ---------------------------------------------------------------------------------


class BackwardScan:
    """The lines of a source before ``end``, from the last to the first, read in blocks.

    Reads a first block of ``first_block`` bytes, then blocks of ``block`` bytes, and never more
    than ``budget`` bytes in all (``exhausted`` says the budget ran out first). A line longer
    than ``max_carry`` is not held: it is yielded with ``data=None`` and can be read back with
    :meth:`read` if it matters. ``scanned`` counts the bytes read by the scan.
    """

    def __init__(
        self,
        source: ByteSource,
        *,
        end: int | None = None,
        budget: int | None = None,
        first_block: int = _FIRST_BLOCK,
        block: int = _BLOCK,
        max_carry: int = _MAX_CARRY,
    ) -> None:
        self.source = source
        self.end = source.size() if end is None else end
        self.budget = budget
        self.first_block = first_block
        self.block = block
        self.max_carry = max_carry
        self.scanned = 0
        self.exhausted = False

    def read(self, offset: int, n: int) -> bytes:
        """``n`` bytes of the source at ``offset`` (not counted in ``scanned``)."""
        return self.source.read_at(offset, n)

    def blocks(self) -> Iterator[tuple[int, bytes]]:
        """``(offset, data)`` of consecutive blocks, from ``end`` back to the start."""
        pos = self.end
        size = self.first_block
        while pos > 0:
            if self.budget is not None and self.scanned >= self.budget:
                self.exhausted = True
                return
            n = min(size, pos)
            size = self.block
            pos -= n
            data = self.source.read_at(pos, n)
            self.scanned += n
            if len(data) != n:
                # The source shrank under the scan: its lines can no longer be placed.
                raise OSError(
                    f"short read: {len(data)} of {n} bytes at offset {pos} "
                    f"(the source changed while it was read); read it again"
                )
            yield pos, data

    def lines(self) -> Iterator[tuple[int, int, bytes | None]]:
        """``(start, end, data)`` per line, the last first; ``end`` and ``data`` exclude the
        line's ``\\n`` (a ``\\r`` before it is kept); ``data`` is ``None`` for a line longer
        than ``max_carry``.

        These are the pieces of the bytes before ``end`` split at every ``\\n``, in reverse:
        the first one yielded is what follows the last ``\\n`` (empty when the bytes end with
        one), the last one is the first line (empty for an empty source). A byte-order mark at
        offset 0 is not part of the first line."""
        line_end = self.end
        carry = b""  # the start of the block after this one, up to the current line end
        too_long = False
        max_carry = self.max_carry
        for pos, buf in self.blocks():
            i = len(buf)
            while True:
                j = buf.rfind(b"\n", 0, i)
                if j < 0:
                    break
                yield pos + j + 1, line_end, None if too_long else buf[j + 1 : i] + carry
                carry = b""
                too_long = False
                line_end = pos + j
                i = j
            if not too_long:
                carry = buf[:i] + carry
                if len(carry) > max_carry:
                    carry = b""
                    too_long = True
        if self.exhausted:
            return
        start = 0
        data = None if too_long else carry
        if data is not None:
            if data.startswith(BOM):
                data, start = data[len(BOM) :], len(BOM)
        else:
            if self.source.read_at(0, min(line_end, len(BOM))) == BOM:
                start = len(BOM)
            if line_end - start <= max_carry:  # only the mark made it too long
                data = self.source.read_at(start, line_end - start)
        yield start, line_end, data

    def rfind_line(self, prefix: bytes) -> int | None:
        """The offset of the last line (before ``end``) that starts with ``prefix``, if any."""
        needle = b"\n" + prefix
        overlap = len(needle) - 1
        carry = b""  # the first bytes of the block after this one
        for pos, buf in self.blocks():
            # A match across the blocks' boundary starts after any match inside this block:
            # it is looked for first, in a copy of the few bytes around the boundary only
            # (copying the block to join them would cost more than the search).
            tail = len(buf) - min(overlap, len(buf))
            i = (buf[tail:] + carry).rfind(needle)
            if i >= 0:
                return pos + tail + i + 1
            i = buf.rfind(needle)
            if i >= 0:
                return pos + i + 1
            carry = (buf + carry)[:overlap] if len(buf) < overlap else buf[:overlap]
        if self.exhausted:
            return None
        head = self.source.read_at(0, min(self.end, len(BOM) + len(prefix)))
        if head.startswith(prefix):
            return 0
        if head.startswith(BOM) and head[len(BOM) :].startswith(prefix):
            return len(BOM)
        return None


def line_start(source: ByteSource, end: int) -> int:
    """Where the last line before ``end`` starts: just after the last ``\\n`` before ``end``
    (0 for the first line, or after the byte-order mark when the file has one)."""
    for start, _, _ in BackwardScan(source, end=end, max_carry=0).lines():
        return start
    return 0  # pragma: no cover - lines() always yields at least the first line
