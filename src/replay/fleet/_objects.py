"""Reading rollout objects: a buffered stream for replay, and heads and tails for the listing.

The listing asks for one byte range per object (two for an object over 64 KiB: its first
4 KiB and its last 60 KiB, by offsets from the size the store listed), all at once (fsspec's
``cat_ranges``, concurrent on an async store such as s3fs), and takes the sizes and versions
from the store's own listing: no request per object beyond those ranges, no ``HEAD``. The stop
facts of a sealed session lie in its last few kilobytes (ADR 0032); when the backward scan
needs more (a session killed after a resume), the object is opened and read further, and an
object that changed meanwhile is flagged, never read as a mix of two versions. Replay streams
an object through :class:`io.BufferedReader` in large blocks: fsspec files fetch a block per
request, and s3fs checks the object's ETag on every one.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any, BinaryIO, Final

from ledger.sources import FileSource
from replay.fleet._store import (
    ObjectInfo,
    Store,
    StoreError,
    open_store,
    store_error,
    version_of,
)
from replay.session_entry import HEAD_LIMIT
from replay.sessions import SessionEntry, entry_from_parts
from replay.stop import (
    DEFAULT_SCAN_BUDGET,
    StopFacts,
    stop_facts_from_bytes,
    stop_facts_from_source,
)

__all__ = [
    "HEAD_BYTES",
    "LISTING_BYTES",
    "object_entries",
    "object_entry",
    "object_stop_facts",
    "open_object",
]

LISTING_BYTES: Final = 64 * 1024
"""The bytes the listing reads of one object at most (a sealed session's stop point in them)."""
HEAD_BYTES: Final = 4 * 1024
"""The bytes of an object's start read for its ``session_meta`` when it is over 64 KiB."""
_BLOCK: Final = 4 * 1024 * 1024
_TAIL_BLOCK: Final = 64 * 1024


def _open(store: Store, path: str, block_size: int) -> Any:
    try:
        return store.fs.open(path, "rb", block_size=block_size, cache_type="readahead")
    except Exception as exc:
        raise store_error(exc, store.url_of(path), "opening the object") from None


class _ObjectStream(io.RawIOBase):
    """An fsspec file as a raw stream whose errors name the object and say what to do."""

    def __init__(self, f: Any, url: str) -> None:
        super().__init__()
        self._f = f
        self._url = url

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._f.read(len(buffer))
        except Exception as exc:
            raise store_error(exc, self._url, "reading the object") from None
        n = len(data)
        buffer[:n] = data
        return n

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return int(self._f.seek(offset, whence))

    def tell(self) -> int:
        return int(self._f.tell())

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


def open_object(url: str, *, block_size: int = _BLOCK) -> BinaryIO:
    """The object at ``url`` as a buffered, seekable binary stream (closed by the caller).

    Raises ``FileNotFoundError`` when there is no such object, :class:`StoreError` when the
    store refuses or fails (a wrong credential, an object replaced while it is read).
    """
    store = open_store(url)
    path = store.path_of(url)
    f = _open(store, path, block_size)
    if f.size is None:  # pragma: no cover - every store we read reports sizes
        raise StoreError(url, "the store does not report the object's size")
    return io.BufferedReader(_ObjectStream(f, url), buffer_size=block_size)


def object_size(f: BinaryIO) -> int:
    """The size of a stream from :func:`open_object` (or any seekable stream), left at 0."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    return size


def object_stop_facts(url: str, *, scan_budget: int = DEFAULT_SCAN_BUDGET) -> StopFacts:
    """The stop facts of the object at ``url``, read from its tail (ranged reads only)."""
    with open_object(url, block_size=_TAIL_BLOCK) as f:
        return stop_facts_from_source(FileSource(f), end=object_size(f), scan_budget=scan_budget)


class _TailSource:
    """A byte source over an object of known size whose last bytes are already here; reads
    before them go to the store.

    The object is opened (and its size checked against the listing's) only when the backward
    scan needs more than the prefetched tail, and only the bytes before the tail are asked for.
    """

    def __init__(self, store: Store, info: ObjectInfo, tail: bytes) -> None:
        self._store = store
        self._info = info
        self._tail = tail
        self._tail_at = info.size - len(tail)
        self._f: Any = None

    def size(self) -> int:
        return self._info.size

    def read_at(self, offset: int, n: int) -> bytes:
        n = min(n, max(0, self._info.size - offset))
        if n <= 0:
            return b""
        if offset >= self._tail_at:
            lo = offset - self._tail_at
            return self._tail[lo : lo + n]
        before = min(n, self._tail_at - offset)
        data = self._fetch(offset, before)
        if before < n and len(data) == before:
            data += self._tail[: n - before]
        return data

    def _fetch(self, pos: int, n: int) -> bytes:
        url = self._info.url
        if self._f is None:
            self._f = _open(self._store, self._info.path, _TAIL_BLOCK)
            if self._f.size != self._info.size:
                raise StoreError(
                    url,
                    f"the object changed while it was listed ({self._info.size} bytes listed, "
                    f"{self._f.size} now); list again",
                )
        try:
            self._f.seek(pos)
            data: bytes = self._f.read(n)
        except Exception as exc:
            raise store_error(exc, url, "reading the object's tail") from None
        return data

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _ranges(
    infos: Sequence[ObjectInfo],
) -> tuple[list[str], list[int], list[int | None], list[int]]:
    """The ranges to fetch: ``(paths, starts, ends, owner)``; ``owner`` maps range to object.

    Each range asks for one byte past the end the listing reported, so that an object that
    grew since is seen to have changed (one that shrank returns fewer bytes).
    """
    paths: list[str] = []
    starts: list[int] = []
    ends: list[int | None] = []
    owner: list[int] = []
    for i, info in enumerate(infos):
        if info.size == 0:
            continue
        if info.size <= LISTING_BYTES:
            paths.append(info.path)
            starts.append(0)
            ends.append(info.size + 1)
            owner.append(i)
        else:
            paths += [info.path, info.path]
            starts += [0, info.size - (LISTING_BYTES - HEAD_BYTES)]
            ends += [HEAD_BYTES, info.size + 1]
            owner += [i, i]
    return paths, starts, ends, owner


def object_entries(store: Store, infos: Sequence[ObjectInfo]) -> list[SessionEntry]:
    """The listing entries of ``infos``: heads and tails fetched concurrently, one range each.

    An object that vanished or cannot be read is listed, flagged unreadable, with the store's
    error in its notes; a store that refuses the credential raises :class:`StoreError`.
    """
    paths, starts, ends, owner = _ranges(infos)
    got: list[Any] = []
    if paths:
        try:
            got = store.fs.cat_ranges(paths, starts, ends, on_error="return")
        except Exception as exc:
            raise store_error(exc, store.url, "reading the objects' heads and tails") from None
    parts: list[list[Any]] = [[] for _ in infos]
    for i, data in zip(owner, got, strict=True):
        parts[i].append(data)
    entries = []
    for info, part in zip(infos, parts, strict=True):
        entries.append(_entry(store, info, part))
    return entries


def _entry(store: Store, info: ObjectInfo, part: list[Any]) -> SessionEntry:
    failed = next((p for p in part if isinstance(p, BaseException)), None)
    if isinstance(failed, PermissionError):
        raise store_error(failed, info.url, "reading the object")
    if failed is not None:
        return entry_from_parts(
            info.url,
            size=info.size,
            head=None,
            stop=None,
            unreadable=store_error(failed, info.url, "reading the object"),
        )
    try:
        if info.size == 0:
            return entry_from_parts(info.url, size=0, head=b"", stop=StopFacts(found=False))
        if len(part) == 1:
            data: bytes = part[0]
            if len(data) != info.size:
                raise StoreError(info.url, "the object changed while it was listed; list again")
            return entry_from_parts(
                info.url, size=info.size, head=data, stop=stop_facts_from_bytes(data)
            )
        head, tail = part
        if len(tail) != LISTING_BYTES - HEAD_BYTES:
            raise StoreError(info.url, "the object changed while it was listed; list again")
        if b"\n" not in head:
            head = _fetch_head(store, info)
        source = _TailSource(store, info, tail)
        try:
            stop = stop_facts_from_source(source)
        finally:
            source.close()
        return entry_from_parts(info.url, size=info.size, head=head, stop=stop)
    except PermissionError as exc:
        raise store_error(exc, info.url, "reading the object") from None
    except OSError as exc:
        return entry_from_parts(
            info.url,
            size=info.size,
            head=None,
            stop=None,
            unreadable=store_error(exc, info.url, "reading the object"),
        )


def object_entry(url: str) -> SessionEntry:
    """The listing entry of the one object at ``url`` (its size from the store, then as listed)."""
    store = open_store(url)
    path = store.path_of(url)
    try:
        info = store.fs.info(path)
    except Exception as exc:
        raise store_error(exc, url, "looking at the object") from None
    listed = ObjectInfo(
        path=path, url=store.url_of(path), size=int(info["size"]), version=version_of(info)
    )
    return object_entries(store, [listed])[0]


def _fetch_head(store: Store, info: ObjectInfo) -> bytes:
    # A session_meta longer than 4 KiB (large metadata): read up to the limit the local
    # listing reads.
    try:
        data: bytes = store.fs.cat_file(info.path, start=0, end=min(info.size, HEAD_LIMIT))
    except Exception as exc:
        raise store_error(exc, info.url, "reading the object's first line") from None
    return data
