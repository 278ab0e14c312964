"""How a worker's turn reaches the file: the batches' bytes written in as few system calls as
the kernel allows, what a failed write left whole, and the CRC-32 witness of what was written
(ADR 0021, ADR 0052). No locks and no queue here: :mod:`ledger.batching` owns those."""

from __future__ import annotations

import errno
import os
import zlib
from collections.abc import Sequence
from typing import Final

__all__ = ["OwnRecords", "slices", "synced", "whole_batches", "writev_all"]

_IOV_MAX: Final = 1024


def writev_all(fd: int, buffers: Sequence[bytes | memoryview]) -> int:
    """Write every buffer, in order, with as few system calls as the kernel allows."""
    total = 0
    pending = [memoryview(b) for b in buffers if b]
    while pending:
        n = os.writev(fd, pending[:_IOV_MAX])
        if n == 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        total += n
        while n:
            head = pending[0]
            if n >= len(head):
                n -= len(head)
                pending.pop(0)
            else:
                pending[0] = head[n:]
                n = 0
    return total


class OwnRecords:
    """What a writer wrote since it opened the file, or since its last read-back (which is
    where the next one starts): the first seq, how many records, the CRC-32 of their lines,
    each with its line end (ADR 0052), continued from ``seed``.

    The seed is the CRC-32 of the file's bytes before those lines, as the writer's last read
    of the file found them (ADR 0164): the witness's CRC is then the CRC-32 of the whole file
    as it should be, which a read-back that reads the file to its end compares without
    decoding anything."""

    __slots__ = ("count", "crc", "first", "seed")

    def __init__(self, first: int, seed: int = 0) -> None:
        self.first = first
        self.seed = seed
        self.count = 0
        self.crc = seed

    def add_lines(self, lines: bytes | memoryview, count: int) -> None:
        """Count ``count`` records given as their lines, each ending in ``\\n``, one buffer."""
        self.crc = zlib.crc32(lines, self.crc)
        self.count += count

    def copy(self) -> OwnRecords:
        twin = OwnRecords(self.first, self.seed)
        twin.count, twin.crc = self.count, self.crc
        return twin

    def snapshot(self) -> tuple[int, int, int, int]:
        """``(first seq, count, CRC-32, seed)``."""
        return self.first, self.count, self.crc, self.seed


def synced(fd: int) -> bool:
    """``fsync`` ``fd``; False when it fails."""
    try:
        os.fsync(fd)
    except OSError:
        return False
    return True


def whole_batches(batches: list[list[bytes]], sizes: list[int], landed: int) -> tuple[int, int]:
    """``(records, bytes)`` of the batches that fit whole in the first ``landed`` bytes."""
    count = size = 0
    for batch, n in zip(batches, sizes, strict=True):
        if size + n > landed:
            break
        count += len(batch)
        size += n
    return count, size


def slices(data: bytes, sizes: list[int]) -> list[bytes | memoryview]:
    """``data`` (the batches' lines joined) cut at the batches' ends: one buffer per batch."""
    if len(sizes) == 1:
        return [data]
    view = memoryview(data)
    out: list[bytes | memoryview] = []
    start = 0
    for n in sizes:
        out.append(view[start : start + n])
        start += n
    return out
