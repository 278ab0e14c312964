"""Byte sources: what :mod:`ledger.framing` reads lines from.

A source is anything that can say its size and give the bytes at an offset: a file descriptor
read positionally, a seekable binary file object (an fsspec file among them), bytes in memory.
An object store's ranged reads fit the same two methods (ADR 0062).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import BinaryIO, Final, Protocol, runtime_checkable

__all__ = ["ByteSource", "BytesSource", "FdSource", "FileSource", "reader_at"]

# Linux returns at most about 2 GiB from one pread; asking in bounded pieces also keeps a huge
# request from allocating its whole size before the first byte is known to exist.
_MAX_PREAD: Final = 1 << 24


@runtime_checkable
class ByteSource(Protocol):
    """Bytes that can be read at any offset: a local file now, any seekable object later.

    ``read_at`` returns fewer than ``n`` bytes only at the end of the source.
    """

    def size(self) -> int:
        """The number of bytes in the source, now."""
        ...

    def read_at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes starting at ``offset`` (fewer only at the end)."""
        ...


class FdSource:
    """A file descriptor read positionally: its own offset never moves, so a writer can read
    back the file it appends to through the descriptor it holds (ADR 0051)."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def read_at(self, offset: int, n: int) -> bytes:
        fd = self._fd
        data = os.pread(fd, min(n, _MAX_PREAD), offset)
        if len(data) == n or not data:
            return data
        # A short read is not the end of a regular file: ask again for the rest.
        parts = [data]
        got = len(data)
        while got < n:
            more = os.pread(fd, min(n - got, _MAX_PREAD), offset + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)


class FileSource:
    """A seekable binary file object, read with ``seek`` and ``read`` (it is left where the
    last read ended). An fsspec file fits as it is."""

    __slots__ = ("_f",)

    def __init__(self, f: BinaryIO) -> None:
        self._f = f

    def size(self) -> int:
        f = self._f
        here = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(here)
        return int(end)

    def read_at(self, offset: int, n: int) -> bytes:
        f = self._f
        f.seek(offset)
        data = f.read(n)
        while 0 < len(data) < n:
            more = f.read(n - len(data))
            if not more:
                break
            data += more
        return data


class BytesSource:
    """Bytes already in memory (the listing reads small files whole)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def size(self) -> int:
        return len(self._data)

    def read_at(self, offset: int, n: int) -> bytes:
        return self._data[offset : offset + n]


def reader_at(source: ByteSource, offset: int = 0) -> Callable[[int], bytes]:
    """A ``read(n)`` over ``source`` that starts at ``offset`` and moves on as it reads."""
    pos = offset

    def read(n: int) -> bytes:
        nonlocal pos
        data = source.read_at(pos, n)
        pos += len(data)
        return data

    return read
