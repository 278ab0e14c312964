"""A source file read once: its lines parsed, counted as ``census`` counts them, and hashed."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import attrs
import msgspec

from ledger.digest import DIGEST_PREFIX, file_sha256
from ledger.framing import BOM

__all__ = ["Source", "read_source"]

_decode = msgspec.json.Decoder().decode


@attrs.frozen
class Source:
    """One source file: ``values[i]`` is line ``i + 1`` parsed (``None`` when it is blank or
    unreadable, with the reason in ``problems``); ``checksum`` is the sha256 of its bytes."""

    path: Path
    checksum: str
    size: int
    values: tuple[Any, ...]
    problems: dict[int, str]

    @property
    def lines(self) -> int:
        """Physical lines: newline characters, and a last line without one."""
        return len(self.values)


def read_source(path: Path) -> Source:
    """Read ``path`` whole (one file at a time: memory follows the largest file, not the tree).

    Lines are split at ``\\n`` (a ``\\r`` before it is whitespace), a BOM is skipped, and a line
    that is not JSON, or not UTF-8, is kept as ``None`` with the reason.
    """
    # Opened without blocking and checked before reading (ADR 0039): a FIFO named *.jsonl in a
    # tree would hang the import, a link to a device would be read until memory runs out.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (only regular files are imported)")
        data = f.read()
    digest = file_sha256(data)[0].removeprefix(DIGEST_PREFIX)
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    values: list[Any] = []
    problems: dict[int, str] = {}
    for n, raw in enumerate(pieces, 1):
        if not raw.startswith(BOM):
            # JSON's own whitespace around a value changes nothing: most lines decode as they
            # are, without a stripped copy; any other line takes the careful path below.
            try:
                values.append(_decode(raw))
                continue
            except (msgspec.DecodeError, RecursionError):
                pass
        s = raw.strip()
        if s.startswith(BOM):
            s = s[len(BOM) :].strip()
        if not s:
            values.append(None)
            problems[n] = "blank"
            continue
        try:
            values.append(_decode(s))
        except (msgspec.DecodeError, RecursionError) as exc:
            values.append(None)
            problems[n] = _why(s, exc)
    return Source(
        path=Path(os.path.abspath(path)),
        checksum=digest,
        size=len(data),
        values=tuple(values),
        problems=problems,
    )


def _why(s: bytes, exc: BaseException) -> str:
    try:
        s.decode("utf-8")
    except UnicodeDecodeError as ude:
        return f"not UTF-8 (byte {ude.start})"
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    return f"not JSON ({exc})"
