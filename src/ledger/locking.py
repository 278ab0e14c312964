"""The one-writer lock of a rollout, what a forked child does with it, and how readers see it.

A writer holds an exclusive ``flock`` on its open file description for as long as it is open
(ADR 0028). ``flock`` locks belong to the open file description, which ``fork`` shares: left
alone, a child could release its parent's lock (by closing the writer or leaving its ``with``
block) and keep it held after the parent died. So every writer registers here, and in a forked
child its descriptor is closed at once, without unlocking, and the writer refuses to be used
(ADR 0051). Readers probe the lock with a shared, non-blocking attempt, released at once; the
writer's own attempt retries for a moment so that a probe never makes it fail.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
import weakref
from pathlib import Path
from typing import Final, Protocol

__all__ = [
    "LOCK_RETRY_SECONDS",
    "ForkedWriter",
    "acquire",
    "register",
    "release",
    "track",
    "untrack",
    "writer_active",
]

LOCK_RETRY_SECONDS: Final = 0.05
"""How long a writer keeps trying for the lock before it reports it busy (a reader's probe
holds a shared lock for a few microseconds)."""


class ForkedWriter(Protocol):
    """What the fork hook needs of a writer: to forget its descriptor in a child."""

    def _forget_after_fork(self) -> None: ...


_writers: weakref.WeakSet[ForkedWriter] = weakref.WeakSet()
_fds: set[int] = set()
_writers_lock = threading.Lock()


def register(writer: ForkedWriter) -> None:
    """Make ``writer`` forget its descriptor in any child forked while it is open."""
    with _writers_lock:
        _writers.add(writer)


def track(fd: int) -> None:
    """Close ``fd`` in any child forked from now on, until :func:`untrack`: a rollout's
    descriptor from the moment it is opened, before a writer owns it (ADR 0055)."""
    with _writers_lock:
        _fds.add(fd)


def untrack(fd: int) -> None:
    """Stop closing ``fd`` in forked children (its writer owns it now, or it is closed)."""
    with _writers_lock:
        _fds.discard(fd)


def _after_fork_in_child() -> None:
    # Only this thread survives in the child; another thread of the parent may have held
    # _writers_lock at the fork, so it is not taken here (the sets are only read).
    global _writers_lock
    for writer in list(_writers):
        writer._forget_after_fork()
    for fd in list(_fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    _fds.clear()
    _writers_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def acquire(fd: int, path: Path, busy: type[Exception]) -> None:
    """Take the exclusive lock on ``fd`` or raise ``busy`` (constructed with a message and
    ``path``) when another writer holds it."""
    deadline = time.monotonic() + LOCK_RETRY_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() < deadline:
                time.sleep(0.002)
                continue
            raise busy(
                f"{path} is locked: another writer holds it (in this process or another); "
                "a rollout has exactly one writer at a time. Close the other writer first",
                path,
            ) from None
        return


def release(fd: int) -> None:
    """Release the lock held on ``fd`` (the caller then closes it)."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def writer_active(path: str | os.PathLike[str]) -> bool:
    """Whether a writer (in any process) holds the rollout at ``path`` open right now.

    The probe takes a shared lock without waiting and releases it at once; a file that cannot
    be opened, or is not a regular file, has no writer.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
