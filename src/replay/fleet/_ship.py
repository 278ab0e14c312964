"""Shipping sealed rollouts to object storage: create-only, idempotent, and safe to kill.

Each rollout under a local root goes to ``<to>/<YYYY-MM-DD>/<its file name>`` (the day of its
start, from its name): the object's name is the file's name, so the naming rule's mirror
(SPEC rule 13) holds for objects too. For each file, in order:

1. it is held with a shared ``flock`` for the whole step, so that no writer can take it up
   (resume) while it is read, uploaded and deleted, and a file a writer holds is skipped;
2. a file without a stop point is skipped unless asked (``include_unsealed``);
3. an object already at its key is compared with the file (size and the store's MD5, or
   the bytes read back): the same bytes are *present*, anything else is a *conflict*, never
   overwritten;
4. otherwise the file is streamed to the key with a create-only write (``IfNoneMatch: *`` on
   S3): a concurrent shipper of the same file finds it present, never doubles it;
5. with ``move``, the local file is deleted only after the object is verified to hold the
   same bytes, and only if the path still names the very file that was shipped.

A ship killed at any point leaves every file either local, remote, or both with the same
bytes; running it again finishes the job (ADR 0141).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import attrs

from ledger.naming import RolloutNameError, parse_rollout_filename
from replay._files import open_rollout_fd
from replay._location import ObjectURL
from replay.fleet._store import Store, StoreAccessError, open_store, store_error
from replay.sessions import iter_rollout_paths, list_sessions
from replay.stop import stop_facts_from_fd

__all__ = ["ShipAction", "ShipItem", "ShipReport", "remote_key", "ship"]

PART_BYTES: Final = 8 * 1024 * 1024
_READ: Final = 1 << 20


class ShipAction(StrEnum):
    """What shipping did with one local rollout."""

    UPLOADED = "uploaded"
    PRESENT = "present"
    WOULD_UPLOAD = "would_upload"
    SKIPPED = "skipped"
    CONFLICT = "conflict"
    FAILED = "failed"


@attrs.frozen
class ShipItem:
    """One local rollout and its fate: ``action``, whether the local copy was ``moved``."""

    path: Path
    url: ObjectURL | None
    action: ShipAction
    size: int = 0
    moved: bool = False
    reason: str = ""


@attrs.frozen
class ShipReport:
    """Every local rollout shipping looked at, and the bytes it sent and read back."""

    to: ObjectURL
    items: tuple[ShipItem, ...]
    bytes_sent: int
    bytes_read_back: int

    @property
    def ok(self) -> bool:
        """No conflict and no failure (skipped files are not failures)."""
        return not any(i.action in (ShipAction.CONFLICT, ShipAction.FAILED) for i in self.items)

    def count(self, action: ShipAction) -> int:
        """How many items ended with ``action``."""
        return sum(1 for i in self.items if i.action == action)


def remote_key(name: str) -> str:
    """The key of the rollout file called ``name`` under the destination: ``YYYY-MM-DD/name``.

    Raises :class:`ledger.RolloutNameError` for a name the naming rule does not parse.
    """
    parsed = parse_rollout_filename(name)
    # Not strftime: its %Y does not pad a year below 1000 to four digits on every platform,
    # and the key must not depend on the machine that ships.
    return f"{parsed.started_at.date().isoformat()}/{name}"


@attrs.define
class _Digests:
    size: int = 0
    md5: str = ""
    part_etag: str = ""
    blake2b: str = ""


def _digests(fd: int, size: int) -> _Digests:
    """MD5 (S3's ETag of a one-part upload), the multipart ETag at our part size, BLAKE2b."""
    whole, b2 = hashlib.md5(usedforsecurity=False), hashlib.blake2b()
    parts: list[bytes] = []
    offset = 0
    while offset < size:
        part = hashlib.md5(usedforsecurity=False)
        end = min(size, offset + PART_BYTES)
        while offset < end:
            chunk = os.pread(fd, min(_READ, end - offset), offset)
            if not chunk:
                raise OSError(errno.EIO, "the file got shorter while it was read")
            whole.update(chunk)
            b2.update(chunk)
            part.update(chunk)
            offset += len(chunk)
        parts.append(part.digest())
    multipart = hashlib.md5(b"".join(parts), usedforsecurity=False).hexdigest()
    return _Digests(
        size=size,
        md5=whole.hexdigest(),
        part_etag=f"{multipart}-{len(parts)}",
        blake2b=b2.hexdigest(),
    )


def _read_back_blake2b(store: Store, key: str) -> tuple[str, int]:
    b2 = hashlib.blake2b()
    n = 0
    with store.fs.open(key, "rb", block_size=PART_BYTES) as f:
        while chunk := f.read(PART_BYTES):
            b2.update(chunk)
            n += len(chunk)
    return b2.hexdigest(), n


@attrs.define
class _Counters:
    sent: int = 0
    read_back: int = 0


def _same_bytes(store: Store, key: str, info: dict[str, Any], d: _Digests, c: _Counters) -> bool:
    """Whether the object at ``key`` (listed as ``info``) holds exactly the file's bytes."""
    if int(info.get("size", -1)) != d.size:
        return False
    etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
    if etag and etag in (d.md5, d.part_etag):
        return True
    # No checksum this store computes that we can match: read the object back.
    digest, n = _read_back_blake2b(store, key)
    c.read_back += n
    return digest == d.blake2b


def _conflict(store: Store, key: str, info: dict[str, Any], fd: int, c: _Counters) -> str:
    """Why the object at ``key`` is not the file: an earlier state of it (the session grew after
    it was shipped, such as a paused session resumed), or other bytes."""
    other = "an object with other bytes is already there; neither was changed"
    size = int(info.get("size", -1))
    if size <= 0 or size >= os.fstat(fd).st_size:
        return other
    digest, n = _read_back_blake2b(store, key)
    c.read_back += n
    if n != size or digest != _digests(fd, size).blake2b:
        return other
    return (
        f"the store holds an earlier state of this session (its first {size} bytes): it grew "
        "after it was shipped (resumed?); shipping never replaces an object, so remove the "
        "remote one and ship again to replace it, nothing was changed"
    )


def _info(store: Store, key: str) -> dict[str, Any] | None:
    try:
        return dict(store.fs.info(key))
    except FileNotFoundError:
        return None


def _upload(store: Store, key: str, fd: int, size: int, c: _Counters) -> None:
    if store.scheme == "file":
        store.fs.makedirs(store.fs._parent(key), exist_ok=True)  # object stores have no folders
    out = store.fs.open(key, "xb", block_size=PART_BYTES)
    try:
        offset = 0
        while offset < size:
            chunk = os.pread(fd, min(PART_BYTES, size - offset), offset)
            if not chunk:
                raise OSError(errno.EIO, "the file got shorter while it was uploaded")
            out.write(chunk)
            offset += len(chunk)
    except BaseException:
        _abandon(store, key, out)
        raise
    out.close()
    c.sent += size


def _abandon(store: Store, key: str, out: Any) -> None:
    """Give up an upload that did not get all its bytes (an error, Ctrl-C): nothing may be
    committed, since closing would complete a multipart upload with the parts sent so far."""
    from fsspec.spec import AbstractBufferedFile

    if isinstance(out, AbstractBufferedFile):
        try:
            out.discard()  # aborts the multipart upload; a one-shot put was never sent
        finally:
            out.closed = True  # never flushed, not even by the garbage collector
    else:  # a local file, created exclusively above: it is ours to remove
        out.close()
        store.fs.rm_file(key)


def _delete_local(path: Path, fd: int) -> bool:
    """Delete ``path`` if it still names the file open as ``fd`` (else leave it alone); whether
    it was deleted here (``False``: another ship of the same root deleted it first)."""
    held = os.fstat(fd)
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
        raise OSError(errno.ESTALE, "the path names another file now; left alone", str(path))
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _ship_one(
    store: Store,
    path: Path,
    *,
    move: bool,
    dry_run: bool,
    include_unsealed: bool,
    c: _Counters,
    keep: str = "",
) -> ShipItem:
    try:
        key = store.join(remote_key(path.name))
    except RolloutNameError as exc:
        return ShipItem(path, None, ShipAction.SKIPPED, reason=f"not a rollout name: {exc}")
    url = store.url_of(key)
    try:
        fd = open_rollout_fd(path)
    except FileNotFoundError:
        # Another ship (or a prune) of the same root moved it since the walk found it.
        return ShipItem(path, url, ShipAction.SKIPPED, reason="gone since it was listed")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return ShipItem(path, url, ShipAction.SKIPPED, reason="a writer holds it open")
        size = os.fstat(fd).st_size
        if not include_unsealed and not stop_facts_from_fd(fd, size).found:
            return ShipItem(
                path,
                url,
                ShipAction.SKIPPED,
                size,
                reason="no stop point yet (pass --include-unsealed to ship it anyway)",
            )
        digests = _digests(fd, size)
        try:
            info = _info(store, key)
            if info is None:
                if dry_run:
                    return ShipItem(path, url, ShipAction.WOULD_UPLOAD, size)
                try:
                    _upload(store, key, fd, size, c)
                    action = ShipAction.UPLOADED
                except FileExistsError:
                    action = ShipAction.PRESENT  # another shipper won the race
                info = _info(store, key)
            else:
                action = ShipAction.PRESENT
            if info is None or not _same_bytes(store, key, info, digests, c):
                why = (
                    "the object vanished after it was written"
                    if info is None
                    else _conflict(store, key, info, fd, c)
                )
                kind = ShipAction.FAILED if info is None else ShipAction.CONFLICT
                return ShipItem(path, url, kind, size, reason=why)
        except PermissionError as exc:
            raise store_error(exc, url, "shipping") from None
        except OSError as exc:
            if isinstance(exc, PermissionError):
                raise
            return ShipItem(
                path, url, ShipAction.FAILED, size, reason=str(store_error(exc, url, "shipping"))
            )
        moved = False
        if move and not dry_run and not keep:
            moved = _delete_local(path, fd)
        return ShipItem(path, url, action, size, moved=moved, reason=keep if move else "")
    finally:
        os.close(fd)


def _fork_sources(base: Path) -> dict[str, str]:
    """The local rollouts a fork under ``base`` reads by reference (ADR 0130), with the reason
    they stay: moving one away would leave its forks without their history (as retention
    holds them, ADR 0133)."""
    entries = list_sessions(base)
    readers: dict[str, list[str]] = {}
    for e in entries:
        if e.fork is not None and not e.fork.copied and e.session_id is not None:
            readers.setdefault(e.fork.session_id, []).append(e.session_id)
    out: dict[str, str] = {}
    for e in entries:
        forks = readers.get(e.session_id or "")
        if forks and isinstance(e.path, Path):
            shown = ", ".join(forks[:3]) + (f" and {len(forks) - 3} more" if len(forks) > 3 else "")
            out[os.path.abspath(e.path)] = (
                f"kept here: fork {shown} reads it; ship or copy the fork (rollout fork --copy), "
                "then move this one"
            )
    return out


def ship(
    root: str | os.PathLike[str],
    to: str,
    *,
    move: bool = False,
    dry_run: bool = False,
    include_unsealed: bool = False,
    progress: Callable[[ShipItem], None] | None = None,
) -> ShipReport:
    """Ship every sealed rollout under the local ``root`` to the URL ``to`` (see the module).

    Returns a :class:`ShipReport`; ``progress`` sees each item as it is done. Raises
    :class:`~replay.fleet.StoreError` (and deletes nothing more) when the store refuses the
    credential; a file-level failure is an item, and the others are still shipped.
    """
    base = Path(root)
    if not base.is_dir():
        raise NotADirectoryError(
            errno.ENOTDIR, "ship reads a local directory of rollouts: pass --root DIR", str(base)
        )
    store = open_store(to)
    counters = _Counters()
    items = []
    kept = _fork_sources(base) if move else {}
    for path in sorted(iter_rollout_paths(base)):
        try:
            item = _ship_one(
                store,
                path,
                move=move,
                dry_run=dry_run,
                include_unsealed=include_unsealed,
                c=counters,
                keep=kept.get(os.path.abspath(path), ""),
            )
        except StoreAccessError:
            raise  # the credential: nothing more can be shipped, and nothing was deleted
        except OSError as exc:
            item = ShipItem(path, None, ShipAction.FAILED, reason=exc.strerror or str(exc))
        items.append(item)
        if progress is not None:
            progress(item)
    return ShipReport(
        to=store.url,
        items=tuple(items),
        bytes_sent=counters.sent,
        bytes_read_back=counters.read_back,
    )
