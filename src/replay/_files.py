"""Opening a rollout for reading: a regular file, or a clear error at once.

Every read entry of ``replay`` (replay, stop facts, the lossy view, the listing, the command)
opens through :func:`open_rollout_fd`, so that a FIFO, a character device such as
``/dev/zero``, a directory or a socket is refused before a byte is read. ``open()`` on a FIFO
blocks until a writer appears, and ``/dev/zero`` never ends: the file is therefore opened
without blocking and checked with ``fstat`` on the descriptor itself, so a path swapped between
a check and the open cannot slip through.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Final

from ledger.error_copies import CopiedAsRaised
from replay._location import is_url

__all__ = ["NotARegularFileError", "open_rollout", "open_rollout_fd"]

_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_FLAGS: Final = (
    os.O_RDONLY
    | _NONBLOCK
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
# What open() itself says for some special files (a socket: ENXIO), before fstat can tell.
_SPECIAL_OPEN_ERRORS: Final = frozenset({errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP})


class NotARegularFileError(CopiedAsRaised, OSError):
    """The path names a FIFO, a device, a directory or a socket: a rollout is a regular file."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        super().__init__(
            errno.EISDIR if what == "a directory" else errno.EINVAL,
            f"not a regular file ({what}): a rollout is a regular file; "
            "pass the path of a .jsonl file",
            os.fspath(path),
        )
        self.what = what


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_rollout_fd(path: str | os.PathLike[str]) -> int:
    """Open ``path`` read-only and return its descriptor, or raise if it is not a regular file.

    Raises :class:`NotARegularFileError` (an ``OSError``) at once for anything else, and the
    usual ``OSError`` when the file cannot be opened. The caller closes the descriptor.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno in _SPECIAL_OPEN_ERRORS:
            try:
                mode = os.stat(path).st_mode
            except OSError:
                raise exc from None
            if not stat.S_ISREG(mode):
                raise NotARegularFileError(path, _describe(mode)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFileError(path, _describe(mode))
        if _NONBLOCK:
            # Regular files ignore the flag; cleared so the descriptor behaves as usual.
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_rollout(path: str | os.PathLike[str]) -> BinaryIO:
    """:func:`open_rollout_fd` as a buffered binary file object (closed by the caller).

    A URL (``s3://bucket/x.jsonl``) opens the object through :mod:`replay.fleet` instead: a
    buffered, seekable stream of ranged reads.
    """
    if is_url(path):
        from replay.fleet._objects import open_object

        return open_object(os.fspath(path))
    fd = open_rollout_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
