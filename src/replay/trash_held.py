"""Holding a file of the trash while it is hashed, checked and moved or deleted (ADR 0133).

Apart from :mod:`replay.trash` (the layout, the audit log, the lock, the moves): these are the
steps every action on one file takes first, so that no writer takes the session up meanwhile
and no bytes are acted on that its prune line does not vouch for.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from ledger.digest import file_sha256
from replay.trash import AuditEntry, FileHeldError, TrashError

__all__ = [
    "fd_hash",
    "file_hash",
    "held_as_pruned",
    "held_file",
    "held_file_saying",
    "same_file",
]


def file_hash(path: Path) -> tuple[str, int]:
    """The sha256 and size of the regular file at ``path`` (anything else, a FIFO or a
    device, is refused with an ``OSError`` at once, never waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        return fd_hash(fd)
    finally:
        os.close(fd)


def fd_hash(fd: int) -> tuple[str, int]:
    """The sha256 and size of the whole file open as ``fd`` (its offset is not used)."""
    with os.fdopen(os.dup(fd), "rb") as f:
        f.seek(0)
        return file_sha256(f)


def held_as_pruned(
    fd: int,
    pruned: AuditEntry | None,
    path: Path,
    inside: str,
    outcome: str,
    error: type[TrashError] = TrashError,
) -> tuple[str, int]:
    """The sha256 and size of the held file ``fd`` (``inside`` the trash, at ``path``), checked
    against the digest the audit log recorded when it was pruned.

    Raises ``error`` when the bytes differ (the file changed in the trash) or when its prune
    line records no sha256 (a prune always writes one: the line was written by hand or by
    another tool, and nothing vouches for the bytes); ``outcome`` (what was not done, and what
    the operator may do) ends the message. A file with no prune on record is not checked.
    """
    sha, size = fd_hash(fd)
    if pruned is not None and pruned.digest is None:
        raise error(
            errno.EIO,
            f"{inside}: its prune line in the audit log records no sha256, so nothing says its "
            f"bytes (sha256 {sha}) are those pruned. {outcome}",
            os.fspath(path),
        )
    if pruned is not None and sha != pruned.digest:
        raise error(
            errno.EIO,
            f"{inside} is not what was pruned: its sha256 is {sha}, the audit log recorded "
            f"{pruned.digest} when it was pruned; it changed in the trash. {outcome}",
            os.fspath(path),
        )
    return sha, size


@contextlib.contextmanager
def held_file_saying(
    path: Path, lead: str, outcome: str, remedies: Mapping[int, str]
) -> Iterator[int]:
    """:func:`held_file`, its refusal said for the operator: ``lead`` (which file of the trash),
    the reason, ``outcome`` (what was not done) and the remedy ``remedies`` gives for the
    refusal's errno. The command line shows only the message, so it must name the file."""
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(held_file(path))
        except FileHeldError as exc:
            remedy = remedies.get(exc.errno or 0, "see to it by hand")
            raise FileHeldError(
                exc.errno, f"{lead}: {exc.strerror}. {outcome}: {remedy}", exc.filename
            ) from None
        yield fd


@contextlib.contextmanager
def held_file(path: Path) -> Iterator[int]:
    """Open the regular file at ``path`` (not through a symbolic link) and hold it with a
    shared ``flock`` while it is hashed, logged and moved or deleted: no writer can take the
    session up meanwhile (a writer's exclusive lock waits on it, then reports it busy).

    Raises :class:`FileHeldError` when a writer has it open or it is not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise FileHeldError(
            errno.ELOOP, "a symbolic link: retention moves the file itself", os.fspath(path)
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileHeldError(
                errno.EINVAL, "not a regular file (a FIFO, device or directory)", os.fspath(path)
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FileHeldError(
                errno.EBUSY, "a writer has it open: it is a live session", os.fspath(path)
            ) from None
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def same_file(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the very file open as ``fd``."""
    try:
        now_at = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now_at.st_dev, now_at.st_ino) == (held.st_dev, held.st_ino)
