"""Stream a rollout file into reducer entries, turning damage into degradations.

The file is read in chunks of :data:`~ledger.framing.CHUNK_BYTES` (120 KiB), never whole:
memory is bounded by the chunk size and the longest line (itself bounded by
``max_line_bytes``). A chunk of intact lines is decoded in one call; a chunk with any damage is
decoded again line by line so that each damaged line becomes its own degradation with its line
number and reading goes on. A UTF-8 BOM and CRLF line ends are accepted; blank lines are
skipped.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import BinaryIO, Final

import attrs
import msgspec

from ledger.codec import RecordDecodeError, decode_record_reporting
from ledger.damage import Degradation, DegradationKind
from ledger.digest import Item, block_items, record_item
from ledger.framing import (
    CHUNK_BYTES,
    BackwardScan,
    LineBlock,
    LongLine,
    count_newlines,
    scan_forward,
)
from ledger.records import Record
from ledger.reducer import Entry, ReplayState, fold_batches
from ledger.sources import FileSource

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "iter_batches",
    "iter_entries",
    "iter_file_entries",
    "rebuild",
    "rebuild_stream",
]

DEFAULT_MAX_LINE_BYTES: Final = 512 * 1024 * 1024
"""Lines longer than this are skipped (and reported) instead of being held in memory."""

_batch_decoder: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)

Batch = tuple[int, Sequence[Entry], Sequence[Item | None] | None]
"""Entries of consecutive lines, with the number of the first line and the digest item of each
entry as cut from its line (``None`` for an entry without one; the whole sequence ``None`` when
no entry has one)."""


def iter_batches(
    f: BinaryIO,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
    first_line: int = 1,
    offset: int | None = None,
) -> Generator[Batch, None, int]:
    """Yield batches of entries from the binary stream ``f``, in file order.

    Every entry of a batch comes from the line after the previous one's; blank lines
    interrupt a batch, so the line numbers stay exact. ``first_line`` is the number of the line
    ``f`` is positioned at and ``offset`` its byte offset in the file (by default 0 for line 1,
    else where ``f`` stands): a BOM is only looked for at offset 0.

    Returns, as the generator's value, the number of the last line read (``first_line - 1``
    when there was none): the ``\\n`` read, plus one for a last piece without its line end.
    """
    if offset is None:
        offset = 0 if first_line == 1 else f.tell()
    lineno = first_line - 1  # lines fully consumed so far
    for piece in scan_forward(
        f.read, offset=offset, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes
    ):
        if isinstance(piece, LineBlock):
            lineno += yield from _decode_block(piece, lineno)
        elif isinstance(piece, LongLine):
            lineno += 1
            yield lineno, (_too_long(lineno, piece.size, max_line_bytes),), None
        else:
            lineno += 1
            entries, items = _decode_line(piece.data, lineno)
            if entries:
                yield lineno, entries, items
    return lineno


def _decode_block(block: LineBlock, lineno: int) -> Generator[Batch, None, int]:
    """Decode the lines of ``block`` (none over the limit) that follow ``lineno``; return how
    many lines it held."""
    try:
        records = _batch_decoder.decode_lines(block.view)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        pass
    else:
        # decode_lines skips blank lines and accepts several values on one line; cutting
        # the items walks the lines and gives up unless each one starts with "{" and holds
        # exactly one of the records, so the line numbers below are exact.
        cut = block_items(block.data, records, block.start, block.end)
        if cut is not None:
            yield lineno + 1, records, cut
            return len(records)
    raws = block.lines.split(b"\n")[:-1]
    for raw in raws:
        lineno += 1
        entries, items = _decode_line(raw + b"\n", lineno)
        if entries:
            yield lineno, entries, items
    return len(raws)


def _decode_line(
    raw: bytes, lineno: int
) -> tuple[tuple[Entry, ...], tuple[Item | None, ...] | None]:
    """The entries of one line: its record (after what it did not know, when it had such
    fields), its damage, or nothing for a blank line; and their digest items."""
    try:
        record, unknown = decode_record_reporting(raw)
    except RecordDecodeError as exc:
        if not raw.strip():
            return (), None
        return (_damage(raw, lineno, str(exc)),), None
    item = record_item(record, raw)
    if unknown is None:
        return (record,), (item,)
    # Reported first, with the line's own number, so that the record after it keeps its line.
    note = Degradation(
        kind=DegradationKind.UNKNOWN_FIELD,
        detail=unknown.describe(),
        line=lineno,
        seq=getattr(record, "seq", None),
    )
    return (note, record), (None, item)


def _too_long(lineno: int, size: int, limit: int) -> Degradation:
    return Degradation(
        kind=DegradationKind.LINE_TOO_LONG,
        detail=f"line of {size} bytes is longer than the limit of {limit}; "
        "skipped without holding it in memory",
        line=lineno,
    )


def _damage(raw: bytes, lineno: int, why: str) -> Degradation:
    if not raw.endswith(b"\n"):
        return Degradation(
            kind=DegradationKind.TORN_TAIL,
            detail=f"the last line is incomplete ({len(raw)} bytes, no line end): "
            f"a writer stopped mid-write; {why}",
            line=lineno,
        )
    kind = (
        DegradationKind.INVALID_UTF8
        if why.startswith("invalid UTF-8") or not _is_utf8(raw)
        else DegradationKind.UNPARSEABLE_LINE
    )
    return Degradation(kind=kind, detail=f"unreadable line ({why}); skipped", line=lineno)


def _is_utf8(raw: bytes) -> bool:
    # The decoder may stop at a wrong value before it reaches the bad bytes further on.
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def iter_entries(
    f: BinaryIO, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, Entry]]:
    """Yield ``(line_number, entry)`` for every non-blank line read from the binary stream ``f``."""
    for first_line, entries, _ in iter_batches(f, max_line_bytes=max_line_bytes):
        for offset, entry in enumerate(entries):
            yield first_line + offset, entry


def iter_file_entries(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, Entry]]:
    """Yield ``(line_number, entry)`` for every non-blank line of the rollout at ``path``."""
    with open(path, "rb") as f:
        yield from iter_entries(f, max_line_bytes=max_line_bytes)


def rebuild(
    path: str | os.PathLike[str] | BinaryIO,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    initial: ReplayState | None = None,
    from_last_compaction: bool = False,
    checkpoint_seq: int | None = None,
) -> ReplayState:
    """Rebuild the state of the whole rollout at ``path``.

    With ``from_last_compaction``, the records between the first line and the last
    ``compacted`` record are not read at all: that record replaces every message before it, so
    the messages (and the sequence numbers that follow) come out the same as from a full fold,
    while time and memory follow the window after it. Damage in the lines skipped is then not
    reported (``window_start_line`` says where reading resumed). ``checkpoint_seq`` names a
    checkpoint the caller must see: the window is used only when the compaction precedes it.
    Whenever the window cannot be used safely, the whole file is folded.

    ``path`` may also be a binary file already open (and seekable): it is read from its start
    and left open, so a caller that checked what it opened reads that very file.
    """
    if not isinstance(path, str | os.PathLike):
        return rebuild_stream(
            path,
            max_line_bytes=max_line_bytes,
            initial=initial,
            from_last_compaction=from_last_compaction,
            checkpoint_seq=checkpoint_seq,
        )
    with open(path, "rb") as f:
        return rebuild_stream(
            f,
            max_line_bytes=max_line_bytes,
            initial=initial,
            from_last_compaction=from_last_compaction,
            checkpoint_seq=checkpoint_seq,
        )


def rebuild_stream(
    f: BinaryIO,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    initial: ReplayState | None = None,
    from_last_compaction: bool = False,
    checkpoint_seq: int | None = None,
    tap: Callable[[Sequence[Entry]], None] | None = None,
) -> ReplayState:
    """:func:`rebuild` over an open, seekable binary stream positioned anywhere.

    ``tap``, when given, sees every batch of entries before the reducer folds it (the writer
    checks its own records this way, in the same pass).
    """

    def batches(stream: BinaryIO, first_line: int = 1) -> Iterator[Batch]:
        it = iter_batches(stream, max_line_bytes=max_line_bytes, first_line=first_line)
        if tap is None:
            return it
        return _tapped(it, tap)

    if from_last_compaction and initial is None:
        state = _rebuild_window(f, max_line_bytes, checkpoint_seq, batches)
        if state is not None:
            return state
    f.seek(0)
    return fold_batches(batches(f), initial)


def _tapped(it: Iterator[Batch], tap: Callable[[Sequence[Entry]], None]) -> Iterator[Batch]:
    for batch in it:
        tap(batch[1])
        yield batch


# --- the window after the last compaction ---------------------------------------------------

_COMPACTED_START: Final = b'{"type":"compacted","seq":'
_COMPACTED_SEQ: Final = re.compile(rb'\{"type":"compacted","seq":([0-9]{1,19}),')
# The forward chunk's size, for the same reasons (ADR 0162): 1 MiB blocks took half as long again.
_SCAN_BYTES: Final = CHUNK_BYTES


def _rebuild_window(
    f: BinaryIO,
    max_line_bytes: int,
    checkpoint_seq: int | None,
    batches: Callable[[BinaryIO, int], Iterator[Batch]],
) -> ReplayState | None:
    found = _last_compaction(f)
    if found is None:
        return None
    start, seq = found
    if checkpoint_seq is not None and checkpoint_seq < seq:
        return None
    f.seek(0)
    head = f.readline(min(max_line_bytes, start) + 1)
    if not head.endswith(b"\n") or len(head) > start:
        return None
    state = fold_batches(iter_batches(io.BytesIO(head), max_line_bytes=max_line_bytes))
    line = 2 + count_newlines(FileSource(f), len(head), start)  # the head is line 1
    # The records skipped are accounted for by the compaction: the sequence resumes at its seq.
    state = attrs.evolve(state, last_seq=seq - 1, window_start_line=line)
    f.seek(start)
    state = fold_batches(batches(f, line), state)
    if state.compactions == 0:
        return None  # the compacted line itself was damaged: only a full fold is exact
    return state


def _last_compaction(f: BinaryIO) -> tuple[int, int] | None:
    """The offset and seq of the last line that starts as a ``compacted`` record, if any."""
    # Read, never mapped: a file truncated while mapped (a writer repairing a torn tail) would
    # kill the reader with SIGBUS instead of showing it damage.
    start = BackwardScan(FileSource(f), block=_SCAN_BYTES).rfind_line(_COMPACTED_START)
    if start is None:
        return None
    f.seek(start)
    m = _COMPACTED_SEQ.match(f.read(64))
    return None if m is None else (start, int(m[1]))
