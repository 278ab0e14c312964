"""The file work of a writer: making a new rollout, taking up an existing one, reading it back.

Each function works on a descriptor and leaves nothing behind when it fails: a new file it
made is removed, a lock it took is released, a descriptor it opened is closed (ADR 0051).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import logging
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from ledger import locking
from ledger.batch_writes import writev_all
from ledger.framing import CHUNK_BYTES
from ledger.naming import (
    ROLLOUT_SUFFIX,
    RolloutNameError,
    parse_rollout_filename,
    session_token,
)
from ledger.reader import rebuild_stream
from ledger.reducer import ReplayState
from ledger.tail import FILE_MODE, TailRepair, check_head, repair_tail
from ledger.writer_errors import (
    Durability,
    RolloutExistsError,
    RolloutFileError,
    WriterBusyError,
    WriterError,
)

__all__ = ["FoldRead", "PreadFile", "new_rollout", "session_rollout", "taken_rollout"]

_preadv: Callable[[int, list[Any], int], int] | None = getattr(os, "preadv", None)

log = logging.getLogger("ledger.writer")


def session_rollout(directory: Path, session_id: str, agent_name: str | None) -> Path | None:
    """A rollout of ``session_id`` already in ``directory`` (its names only are read), if any.

    Two files claiming one session id are damage (SPEC section 6), so ``create`` looks first; two
    creates racing for one new id can still both pass, and the listing flags them.
    """
    token = session_token(session_id, agent_name)
    marker = f"_{token}"
    try:
        entries = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with entries:
        for entry in entries:
            name = entry.name
            if marker not in name or not name.endswith(ROLLOUT_SUFFIX):
                continue
            try:
                parsed = parse_rollout_filename(name)
            except RolloutNameError:
                continue
            if parsed.session_token == token or parsed.session_id == session_id:
                return directory / name
    return None


@contextlib.contextmanager
def new_rollout(
    directory: Path, name: str, first_line: bytes, durability: Durability
) -> Iterator[tuple[Path, int]]:
    """Create ``directory/name`` exclusively, locked, holding ``first_line``; yield its absolute
    path and descriptor. If the block fails, the file is removed and released."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise RolloutFileError(
            f"{directory} exists but is not a directory: pass the directory that holds the "
            "rollouts",
            directory,
            exc,
        ) from None
    except OSError as exc:
        raise RolloutFileError(
            f"cannot make the directory {directory} ({exc.strerror or exc}); nothing was written",
            directory,
            exc,
        ) from exc
    path = directory / name
    try:
        fd = os.open(
            path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, FILE_MODE
        )
    except FileExistsError:
        raise RolloutExistsError(
            f"{path} already exists: a rollout is never overwritten; pass another "
            "session_id or continue that session with RolloutWriter.open()",
            path,
        ) from None
    except OSError as exc:
        if exc.filename is not None:
            raise  # the system's own error names the file (permission denied, ...)
        raise RolloutFileError(
            f"cannot create the rollout {path} ({exc.strerror or exc}); nothing was written",
            path,
            exc,
        ) from exc
    locking.track(fd)
    # Absolute from here on, so that a later chdir() cannot change what the path names.
    path = path.absolute()
    try:
        locking.acquire(fd, path, WriterBusyError)
        writev_all(fd, [first_line])
        if durability is not Durability.OS:
            os.fsync(fd)
            _fsync_dir(directory)
        yield path, fd
    except BaseException as exc:
        # The file is ours (created exclusively) and holds no session yet: a half-made
        # rollout would only show up later as a damaged session.
        with contextlib.suppress(OSError):
            path.unlink()
        locking.release(fd)
        locking.untrack(fd)
        os.close(fd)
        if isinstance(exc, OSError) and not isinstance(exc, WriterError):
            raise RolloutFileError(
                f"cannot write the new rollout {path} ({exc.strerror or exc}); it was removed",
                path,
                exc,
            ) from exc
        raise


@contextlib.contextmanager
def taken_rollout(
    path: Path, durability: Durability
) -> Iterator[tuple[Path, int, ReplayState, TailRepair | None, FoldRead | None]]:
    """Take up the existing rollout at ``path``: yield its absolute path, a locked descriptor,
    its state, the tail repair made and what the state was folded from (``None`` when that
    cannot be said: the next read-back then starts from byte 0). Nothing is touched unless it
    is a regular file whose first line is a ``session_meta`` this library can continue. If the
    block fails, the lock and the descriptor are released."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise WriterError(
            f"{path} does not exist: start a new rollout with RolloutWriter.create()", path
        ) from None
    except IsADirectoryError as exc:
        raise RolloutFileError(f"{path} is not a rollout: it is a directory", path, exc) from None
    except OSError as exc:
        if exc.filename is not None and exc.errno != errno.ENXIO:
            raise  # the system's own error names the file (permission denied, ...)
        raise RolloutFileError(
            f"{path} cannot be opened as a rollout ({exc.strerror or exc}); nothing was changed",
            path,
            exc,
        ) from exc
    locking.track(fd)
    path = path.absolute()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriterError(
                f"{path} is not a rollout: it is not a regular file (a FIFO, device or "
                "directory); nothing was read or written",
                path,
            )
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        locking.acquire(fd, path, WriterBusyError)
        head = check_head(fd)
        if isinstance(head, str):
            raise WriterError(
                f"{path} is not a rollout this library can continue: {head}; nothing was "
                "changed. Start a new rollout with RolloutWriter.create()",
                path,
            )
        repair = repair_tail(fd, path)
        if repair is not None:
            log.warning("repaired the tail of %s: %s", path, repair)
            if durability is not Durability.OS:
                os.fsync(fd)
        # What was folded is taken from the very bytes the fold read, as it read them: neither
        # the size nor the bytes found after the fold, which a program ignoring the lock may
        # have appended to or rewritten meanwhile (ADR 0067).
        with _TallyReader(PreadFile(fd)) as f:
            state = rebuild_stream(f, from_last_compaction=True)
            folded = f.folded()
        yield path, fd, state, repair, folded
    except BaseException as exc:
        locking.release(fd)
        locking.untrack(fd)
        os.close(fd)
        if isinstance(exc, OSError) and not isinstance(exc, WriterError):
            raise RolloutFileError(
                f"cannot take up the rollout {path} ({exc.strerror or exc}); the file is as "
                "it was, but for a repaired tail when the repair finished",
                path,
                exc,
            ) from exc
        raise


def _fsync_dir(directory: Path) -> None:
    # So that the new file's name survives a crash as well as its content.
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


class FoldRead(NamedTuple):
    """What a fold read of a file, from byte 0 to the end it met: ``offset`` bytes ending at a
    line end, ``lines`` of them, of CRC-32 ``crc``."""

    offset: int
    crc: int
    lines: int


class _TallyReader(io.BufferedReader):
    """A buffered reader that keeps the CRC-32 and line count of the bytes its caller reads in
    one pass from byte 0 on (a read at byte 0 starts the pass again; a read elsewhere, as a
    scan from the end, is not part of it)."""

    def __init__(self, raw: PreadFile) -> None:
        super().__init__(raw, CHUNK_BYTES)
        self._crc = 0
        self._lines = 0
        self._end = 0
        self._last = b""

    def _saw(self, at: int, data: bytes) -> None:
        if at == 0:
            self._crc, self._lines, self._end, self._last = 0, 0, 0, b""
        if at == self._end and data:
            self._crc = zlib.crc32(data, self._crc)
            self._lines += data.count(b"\n")
            self._end += len(data)
            self._last = data[-1:]

    def read(self, size: int | None = -1, /) -> bytes:
        at = self.tell()
        data = super().read(size)
        self._saw(at, data)
        return data

    def read1(self, size: int = -1, /) -> bytes:
        at = self.tell()
        data = super().read1(size)
        self._saw(at, data)
        return data

    def readline(self, size: int | None = -1, /) -> bytes:
        at = self.tell()
        data = super().readline(size)
        self._saw(at, data)
        return data

    def readinto(self, buffer: Any, /) -> int:
        at = self.tell()
        n = super().readinto(buffer)
        self._saw(at, bytes(memoryview(buffer)[:n]))
        return n

    def readinto1(self, buffer: Any, /) -> int:
        at = self.tell()
        n = super().readinto1(buffer)
        self._saw(at, bytes(memoryview(buffer)[:n]))
        return n

    def folded(self) -> FoldRead | None:
        """What the last pass read, when it read every byte from 0 to where the reader stands
        and ended at a line end; else ``None``."""
        if self._end != self.tell() or self._last != b"\n":
            return None
        return FoldRead(self._end, self._crc, self._lines)


class PreadFile(io.RawIOBase):
    """A read-only, seekable stream over a file descriptor, by positional reads only.

    It never moves the descriptor's own offset, so a writer can read back the file it holds
    (through the descriptor it writes, whatever the path now names) while it appends.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if _preadv is not None:  # straight into the caller's buffer: one copy, not two
            n = _preadv(self._fd, [buffer], self._pos)
        else:
            data = os.pread(self._fd, len(buffer), self._pos)
            n = len(data)
            buffer[:n] = data
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_SET:
            self._pos = offset
        elif whence == os.SEEK_CUR:
            self._pos += offset
        else:
            self._pos = os.fstat(self._fd).st_size + offset
        return self._pos

    def tell(self) -> int:
        return self._pos
