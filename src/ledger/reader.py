"""Stream a rollout file into reducer entries, turning damage into degradations.

The file is read in chunks of a few MiB, never whole: memory is bounded by the chunk size and
the longest line (itself bounded by ``max_line_bytes``). A chunk of intact lines is decoded in
one call; a chunk with any damage is decoded again line by line so that each damaged line
becomes its own degradation with its line number and reading goes on. A UTF-8 BOM and CRLF
line ends are accepted; blank lines are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import BinaryIO, Final

import msgspec

from ledger.codec import RecordDecodeError, decode_record
from ledger.damage import Degradation, DegradationKind
from ledger.records import Record
from ledger.reducer import Entry, ReplayState, fold_batches

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "iter_batches",
    "iter_entries",
    "iter_file_entries",
    "rebuild",
]

DEFAULT_MAX_LINE_BYTES: Final = 512 * 1024 * 1024
"""Lines longer than this are skipped (and reported) instead of being held in memory."""

CHUNK_BYTES: Final = 4 * 1024 * 1024

_BOM: Final = b"\xef\xbb\xbf"
_batch_decoder: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)

Batch = tuple[int, Sequence[Entry]]
"""Entries of consecutive lines, with the number of the first line."""


def iter_batches(
    f: BinaryIO, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[Batch]:
    """Yield batches of entries from the binary stream ``f``, in file order.

    Every entry of a batch comes from the line after the previous one's; blank lines
    interrupt a batch, so the line numbers stay exact.
    """
    lineno = 0  # lines fully consumed so far
    held: list[bytes] = []  # the start of a line longer than one chunk
    held_size = 0
    skipping = False  # inside a line longer than max_line_bytes
    skipped = 0
    first = True
    read = f.read
    while True:
        data = read(chunk_bytes)
        if not data:
            break
        if first:
            first = False
            # A short read (a pipe, a tiny chunk) may split the BOM: gather its three bytes.
            while len(data) < len(_BOM) and _BOM.startswith(data):
                more = read(chunk_bytes)
                if not more:
                    break
                data += more
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        cut = data.rfind(b"\n")
        if cut < 0:
            if skipping:
                skipped += len(data)
                continue
            held.append(data)
            held_size += len(data)
            # One byte of slack for the CR of a CRLF end; the exact length is checked once
            # the line is complete (``_decode_line``), wherever the chunks happened to split it.
            if held_size > max_line_bytes + 1:
                skipping, skipped = True, held_size
                held.clear()
                held_size = 0
            continue
        if skipping:
            # The over-long line ends in this chunk: report it and go on after it.
            end = data.find(b"\n") + 1
            lineno += 1
            yield lineno, (_too_long(lineno, skipped + end, max_line_bytes),)
            skipping, skipped = False, 0
            data = data[end:]
            cut = data.rfind(b"\n")
            if cut < 0:
                held.append(data)
                held_size = len(data)
                continue
        complete = data[: cut + 1]
        if held:
            complete = b"".join(held) + complete
            held.clear()
        held_size = len(data) - cut - 1
        if held_size:
            held.append(data[cut + 1 :])
        lines = complete.count(b"\n")
        yield from _decode_block(complete, lines, lineno, max_line_bytes)
        lineno += lines
    if skipping:
        lineno += 1
        yield lineno, (_too_long(lineno, skipped, max_line_bytes),)
    elif held:
        tail = b"".join(held)
        lineno += 1
        entry = _decode_line(tail, lineno, max_line_bytes)
        if entry is not None:
            yield lineno, (entry,)


def _decode_block(block: bytes, lines: int, lineno: int, max_line_bytes: int) -> Iterator[Batch]:
    """Decode the ``lines`` lines of ``block`` (which ends in ``\\n``) that follow ``lineno``."""
    if len(block) <= max_line_bytes:
        try:
            records = _batch_decoder.decode_lines(block)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            pass
        else:
            # decode_lines skips blank lines; only trust its numbering when there are none.
            if len(records) == lines:
                yield lineno + 1, records
                return
    for raw in block.split(b"\n")[:-1]:
        lineno += 1
        entry = _decode_line(raw + b"\n", lineno, max_line_bytes)
        if entry is not None:
            yield lineno, (entry,)


def _decode_line(raw: bytes, lineno: int, max_line_bytes: int) -> Entry | None:
    if _content_length(raw) > max_line_bytes:
        return _too_long(lineno, len(raw), max_line_bytes)
    try:
        return decode_record(raw)
    except RecordDecodeError as exc:
        if not raw.strip():
            return None
        return _damage(raw, lineno, str(exc))


def _content_length(raw: bytes) -> int:
    """The length of a line without its end (``\n`` or ``\r\n``)."""
    n = len(raw)
    if raw.endswith(b"\n"):
        n -= 1
    if n and raw[n - 1] == 0x0D:
        n -= 1
    return n


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
    for first_line, entries in iter_batches(f, max_line_bytes=max_line_bytes):
        for offset, entry in enumerate(entries):
            yield first_line + offset, entry


def iter_file_entries(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, Entry]]:
    """Yield ``(line_number, entry)`` for every non-blank line of the rollout at ``path``."""
    with open(path, "rb") as f:
        yield from iter_entries(f, max_line_bytes=max_line_bytes)


def rebuild(
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    initial: ReplayState | None = None,
) -> ReplayState:
    """Rebuild the state of the whole rollout at ``path`` (the writer's terminal path uses this)."""
    with open(path, "rb") as f:
        return fold_batches(iter_batches(f, max_line_bytes=max_line_bytes), initial)
