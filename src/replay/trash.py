"""The trash of a root: where pruned sessions wait, its audit log, its lock (ADR 0133).

Layout, inside the root (hidden: the listing and ``find_session`` skip dot-directories)::

    <root>/.trash/files/<the session's path relative to the root>
    <root>/.trash/audit.jsonl     one line per action, appended before the action is taken
    <root>/.trash/lock            held by the one prune, restore or emptying at work

The audit log is a write-ahead log: a line saying what will happen (``prune``, ``restore``,
``delete``) is appended and synced before the file is moved or deleted, so that a run killed
half way leaves a line the next run finishes (or cancels, with a ``cancel`` line saying why).
Moves are renames; across file systems, a copy checked against the logged sha256, then the
original removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from ledger.digest import file_sha256

__all__ = [
    "AUDIT_NAME",
    "TRASH_DIR",
    "AuditEntry",
    "FileHeldError",
    "TrashBusyError",
    "TrashError",
    "append_audit",
    "command_text",
    "move_file",
    "now",
    "partial_of",
    "read_audit",
    "relative_to_root",
    "safe_entry",
    "trash_dir",
    "trash_files",
    "trash_lock",
]

TRASH_DIR: Final = ".trash"
"""The trash's directory inside a root."""

AUDIT_NAME: Final = "audit.jsonl"
_FILES: Final = "files"
_LOCK: Final = "lock"
_PARTIAL: Final = ".partial"


class TrashError(OSError):
    """A prune, restore or emptying could not do what it was asked; the message says why."""


class TrashBusyError(TrashError):
    """Another prune, restore or emptying holds the root's trash."""


class FileHeldError(TrashError):
    """A file retention leaves alone for now: a writer has it open, or it is not a regular
    file (a symbolic link, a FIFO); the message says which."""


class AuditEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One line of the audit log: what was done to which session, when, why, and by which
    command. ``path`` is where the session lives outside the trash and ``trash_path`` where it
    lives inside, both relative to the root; ``digest`` (written ``sha256``, from
    :func:`ledger.digest.file_sha256`) and ``size`` are of the file's bytes.

    ``action`` is ``prune`` (moved to the trash), ``restore`` (moved back), ``delete``
    (removed from the trash for good) or ``cancel`` (a logged action that was not carried
    out, and why).
    """

    action: str
    at: datetime
    path: str
    trash_path: str
    session_id: str | None = None
    digest: str | None = msgspec.field(default=None, name="sha256")
    size: int | None = None
    why: str = ""
    command: tuple[str, ...] = ()


_encoder = msgspec.json.Encoder(order="deterministic")
_decoder = msgspec.json.Decoder(AuditEntry)


def trash_dir(root: str | os.PathLike[str]) -> Path:
    """The trash of ``root``."""
    return Path(root) / TRASH_DIR


def trash_files(root: str | os.PathLike[str]) -> Path:
    """Where the trash of ``root`` keeps pruned sessions."""
    return trash_dir(root) / _FILES


def relative_to_root(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, POSIX-style, as the audit log writes paths."""
    return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()


def now() -> datetime:
    """The time an audit line records (UTC)."""
    return datetime.now(UTC)


@contextlib.contextmanager
def trash_lock(root: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the trash of ``root`` for one prune, restore or emptying; a second one fails at
    once with :class:`TrashBusyError` naming the process that holds it."""
    where = trash_dir(root)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(where / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise TrashBusyError(
                errno.EBUSY,
                f"another prune, restore or emptying of the trash is running on this root "
                f"(process {holder}); nothing was done: run again once it has finished",
                os.fspath(where),
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_audit(root: str | os.PathLike[str]) -> tuple[list[AuditEntry], int]:
    """The audit log's entries in order, and how many lines could not be read (a line torn by
    a kill is never acted upon: the action it announced had not started)."""
    path = trash_dir(root) / AUDIT_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    entries: list[AuditEntry] = []
    bad = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            entry = _decoder.decode(line)
        except msgspec.DecodeError:
            bad += 1
            continue
        if entry.at.tzinfo is None:
            # A line without a zone (written by hand or by another tool): the log's times are
            # UTC, and a naive time cannot be compared with the clock.
            entry = msgspec.structs.replace(entry, at=entry.at.replace(tzinfo=UTC))
        entries.append(entry)
    return entries, bad


def safe_entry(e: AuditEntry) -> bool:
    """Whether ``e`` names a file in the trash (``trash_path``) and one in the root outside it
    (``path``), both relative and without ``..``: a line naming anything else (a log edited by
    hand, or damaged) is never acted upon."""

    def inside(text: str) -> tuple[str, ...] | None:
        parts = tuple(text.split("/"))
        if not text or text.startswith("/") or any(p in ("", ".", "..") for p in parts):
            return None
        return parts

    where, back = inside(e.trash_path), inside(e.path)
    return (
        where is not None
        and back is not None
        and where[:2] == (TRASH_DIR, _FILES)
        and len(where) > 2
        and back[0] != TRASH_DIR
    )


def command_text(argv: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The command line as the log can hold it: a byte that is not UTF-8 (a Latin-1 file name)
    is written as ``\\xNN``."""
    return tuple(os.fsencode(a).decode("utf-8", "backslashreplace") for a in argv)


def append_audit(root: str | os.PathLike[str], entry: AuditEntry) -> None:
    """Append ``entry`` to the audit log and sync it, before the action it announces."""
    where = trash_dir(root)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(where / AUDIT_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        size = os.fstat(fd).st_size
        # A line torn by a kill is ended, never removed: the log only grows.
        lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
        data = lead + _encoder.encode(entry) + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def move_file(src: Path, dst: Path, digest: str) -> None:
    """Move ``src`` to ``dst`` (which must not exist), on any file system.

    A rename when both lie on one file system; otherwise a copy to ``dst.partial`` hashed as it
    is written, checked against ``digest`` (its sha256), renamed into place and synced, then
    ``src`` removed.
    """
    if os.path.lexists(dst):
        raise TrashError(
            errno.EEXIST, f"{dst} already exists: nothing is overwritten", os.fspath(dst)
        )
    dst.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.rename(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _copy_across(src, dst, digest)
    _sync_dir(dst.parent)
    _sync_dir(src.parent)


def partial_of(dst: Path) -> Path:
    """Where a copy across file systems is written before it is complete."""
    return dst.with_name(dst.name + _PARTIAL)


def _copy_across(src: Path, dst: Path, digest: str) -> None:
    partial = partial_of(dst)
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()  # what a killed copy left
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with open(src, "rb") as f, os.fdopen(os.dup(fd), "wb") as out:
            got, _ = file_sha256(f, sink=out)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        os.close(fd)
        partial.unlink()
        raise
    os.close(fd)
    if got != digest:
        partial.unlink()
        raise TrashError(
            errno.EIO,
            f"the copy of {src} across file systems does not match its logged sha256 "
            f"({got} != {digest}); the original is left in place",
            os.fspath(src),
        )
    os.rename(partial, dst)
    _sync_dir(dst.parent)
    src.unlink()


def _sync_dir(directory: Path) -> None:
    # So that a rename or removal survives a crash of the machine, not only of the process.
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
