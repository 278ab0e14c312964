"""What :meth:`RolloutWriter.open` checks and mends before it appends to an existing file.

The head first (ADR 0051): nothing is touched unless the file is a regular file whose first line
is a ``session_meta`` of a format this library writes. Then the tail (ADR 0022): a complete
last record lacking only its line end gets one; an incomplete last line, and reasoning records
whose message was never written, are cut off and kept byte for byte in a sidecar file whose
name always fits the file system's limit.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from pathlib import Path
from typing import Final

import attrs

from ledger.codec import RecordDecodeError, decode_record
from ledger.framing import BOM, line_start, strip_bom
from ledger.naming import MAX_NAME_BYTES
from ledger.records import FORMAT_VERSION, ReasoningRecord, SessionMeta
from ledger.sources import FdSource

__all__ = ["HEAD_LIMIT", "TailRepair", "check_head", "pread_all", "repair_tail", "sidecar_name"]

HEAD_LIMIT: Final = 1 << 20
"""A first line longer than this is not a ``session_meta`` this library wrote."""

FILE_MODE: Final = 0o600


@attrs.frozen
class TailRepair:
    """What :meth:`RolloutWriter.open` did to the last line left by a writer that was killed.

    ``kind`` is ``"newline_added"`` (a complete record lacked only its line end),
    ``"torn_line_moved"`` (an incomplete line was cut off the file and kept, byte for byte, in
    ``sidecar``) or ``"orphan_reasoning_moved"`` (reasoning records whose message was never
    written, and anything after them, were cut off and kept in ``sidecar``). ``offset`` is where
    the cut (or the completed line) starts; ``size`` the number of bytes concerned.
    """

    kind: str
    offset: int
    size: int
    sidecar: Path | None = None

    def __str__(self) -> str:
        if self.kind == "newline_added":
            return f"added the missing line end after the complete record at byte {self.offset}"
        what = (
            "an incomplete last line"
            if self.kind == "torn_line_moved"
            else "reasoning records left without their message"
        )
        return f"moved {what} ({self.size} bytes at byte {self.offset}) to {self.sidecar}"


def pread_all(fd: int, n: int, offset: int) -> bytes:
    """``n`` bytes at ``offset`` (fewer at the end of the file), read positionally."""
    return FdSource(fd).read_at(offset, n)


def check_head(fd: int) -> SessionMeta | str:
    """The ``session_meta`` that starts the file open as ``fd``, or why it is not a rollout."""
    head = strip_bom(pread_all(fd, HEAD_LIMIT + len(BOM) + 1, 0))
    end = head.find(b"\n")
    if end < 0:
        if not head:
            return "it is empty"
        if len(head) > HEAD_LIMIT:
            return f"its first line is longer than {HEAD_LIMIT} bytes"
        end = len(head)
    try:
        record = decode_record(head[:end])
    except RecordDecodeError as exc:
        return f"its first line is not a record ({exc})"
    if not isinstance(record, SessionMeta):
        kind = getattr(record, "type", None) or type(record).__name__
        return f"its first line is a {kind!r} record, not session_meta"
    if record.format_version > FORMAT_VERSION:
        return (
            f"it was written in format version {record.format_version}, newer than this "
            f"library's {FORMAT_VERSION}; upgrade rollout-ledger to continue it"
        )
    return record


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n == 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[n:]


def repair_tail(fd: int, path: Path) -> TailRepair | None:
    """Make the file open as ``fd`` end with a complete message (ADR 0022).

    A torn last line, and reasoning records at the very end (their message was never
    written), are moved byte for byte to a sidecar file; a complete last record lacking only
    its line end gets one.
    """
    source = FdSource(fd)
    size = source.size()
    if size == 0:
        return None
    cut: int | None = None
    newline_at: int | None = None
    if os.pread(fd, 1, size - 1) != b"\n":
        start = line_start(source, size)
        try:
            decode_record(pread_all(fd, size - start, start))
        except RecordDecodeError:
            cut = start
        else:
            _write_all(fd, b"\n")
            newline_at = start
            size += 1
    # Reasoning records belong to the message after them; at the end of the file that message
    # was never written, and left there they would attach to the next assistant message.
    orphans_at: int | None = None
    end = size if cut is None else cut
    while end > 0:
        start = line_start(source, end - 1)
        try:
            record = decode_record(pread_all(fd, end - start, start))
        except RecordDecodeError:
            break
        if not isinstance(record, ReasoningRecord):
            break
        orphans_at = end = start
    if orphans_at is not None:
        cut = orphans_at
    if cut is None:
        if newline_at is None:
            return None
        return TailRepair(kind="newline_added", offset=newline_at, size=size - 1 - newline_at)
    moved = pread_all(fd, size - cut, cut)
    sidecar = _write_sidecar(path, moved)
    os.ftruncate(fd, cut)
    kind = "torn_line_moved" if orphans_at is None else "orphan_reasoning_moved"
    return TailRepair(kind=kind, offset=cut, size=len(moved), sidecar=sidecar)


def sidecar_name(name: str, n: int = 0) -> str:
    """The name of the ``n``-th sidecar of the rollout called ``name``, within the name limit.

    ``<name>.torn``, then ``<name>.torn.1``, ...; a name too long for that keeps its start and
    gets ``~`` and 8 hex digits of a digest of the whole name before the suffix.
    """
    suffix = ".torn" if n == 0 else f".torn.{n}"
    full = name + suffix
    if len(full.encode("utf-8")) <= MAX_NAME_BYTES:
        return full
    tag = "~" + hashlib.blake2b(name.encode("utf-8"), digest_size=4).hexdigest()
    keep = MAX_NAME_BYTES - len(suffix) - len(tag)
    return name.encode("utf-8")[:keep].decode("utf-8", "ignore") + tag + suffix


def _write_sidecar(path: Path, data: bytes) -> Path:
    n = 0
    while True:
        sidecar = path.with_name(sidecar_name(path.name, n))
        try:
            fd = os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileExistsError:
            n += 1
            continue
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            # A sidecar that does not hold the whole tail is worse than none (a full disk).
            with contextlib.suppress(OSError):
                sidecar.unlink()
            raise
        finally:
            os.close(fd)
        return sidecar
