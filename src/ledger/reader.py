"""Stream a rollout file line by line into reducer entries, turning damage into degradations.

Memory is bounded by the longest line read (and by ``max_line_bytes``): lines are read one at a
time and never the whole file at once. A UTF-8 BOM and CRLF line ends are accepted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO, Final

from ledger.codec import RecordDecodeError, decode_record
from ledger.damage import Degradation, DegradationKind
from ledger.reducer import Entry, ReplayState, fold_lines

__all__ = ["DEFAULT_MAX_LINE_BYTES", "iter_entries", "iter_file_entries", "rebuild"]

DEFAULT_MAX_LINE_BYTES: Final = 512 * 1024 * 1024
"""Lines longer than this are skipped (and reported) instead of being held in memory."""

_BOM: Final = b"\xef\xbb\xbf"
_SKIP_CHUNK: Final = 1 << 20


def iter_file_entries(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, Entry]]:
    """Yield ``(line_number, entry)`` for every non-blank line of the rollout at ``path``."""
    with open(path, "rb") as f:
        yield from iter_entries(f, max_line_bytes=max_line_bytes)


def iter_entries(
    f: BinaryIO, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, first_line: int = 1
) -> Iterator[tuple[int, Entry]]:
    """Yield ``(line_number, entry)`` for every non-blank line read from the binary stream ``f``."""
    lineno = first_line - 1
    readline = f.readline
    limit = max_line_bytes + 1
    while True:
        raw = readline(limit)
        if not raw:
            return
        lineno += 1
        if not raw.endswith(b"\n") and len(raw) >= limit:
            skipped = len(raw) + _skip_rest_of_line(f)
            yield (
                lineno,
                Degradation(
                    kind=DegradationKind.LINE_TOO_LONG,
                    detail=f"line of {skipped} bytes is longer than the limit of {max_line_bytes}; "
                    "skipped without reading it into memory",
                    line=lineno,
                ),
            )
            continue
        if lineno == first_line and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        try:
            yield lineno, decode_record(raw)
        except RecordDecodeError as exc:
            if not raw.strip():
                continue
            yield lineno, _damage(raw, lineno, str(exc))


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
        if why.startswith("invalid UTF-8")
        else DegradationKind.UNPARSEABLE_LINE
    )
    return Degradation(kind=kind, detail=f"unreadable line ({why}); skipped", line=lineno)


def _skip_rest_of_line(f: BinaryIO) -> int:
    skipped = 0
    while True:
        chunk = f.readline(_SKIP_CHUNK)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped


def rebuild(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> ReplayState:
    """Rebuild the state of the whole rollout at ``path`` (the writer's terminal path uses this)."""
    return fold_lines(iter_file_entries(path, max_line_bytes=max_line_bytes))
