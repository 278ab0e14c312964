"""Listing a fleet: from its index where the index is current, from the objects elsewhere."""

from __future__ import annotations

import os
from datetime import datetime

import attrs

from replay._location import ObjectURL
from replay.fleet._objects import object_entries
from replay.fleet._store import open_store, scan_root
from replay.sessions import SessionEntry, finish_listing

__all__ = ["FleetListing", "list_fleet"]


@attrs.frozen
class FleetListing:
    """The sessions under a fleet root, and how they were found.

    ``from_index`` entries came from the index written at ``index_written_at`` (the objects
    unchanged since); ``read`` objects were read because the index does not hold them as they
    are now (or there is no index: ``index_written_at`` is ``None``).
    """

    root: ObjectURL
    entries: tuple[SessionEntry, ...]
    index_written_at: datetime | None = None
    from_index: int = 0
    read: int = 0


def list_fleet(url: str | os.PathLike[str], *, use_index: bool = True) -> FleetListing:
    """One entry per rollout object under ``url``, as :func:`replay.list_sessions` lists files.

    The store's listing gives every object's size and version; an object the index holds
    with that same size and version is taken from the index (no request at all), any other
    is read from its head and tail (one ranged request, concurrently). The index is never
    trusted for an object it does not describe as it is now.
    """
    store = open_store(url)
    scan = scan_root(store)
    infos = list(scan.objects)
    entries: list[SessionEntry] = []
    todo = infos
    written_at: datetime | None = None
    if use_index:
        from replay.fleet._index import IndexRow, index_entries, read_index

        index = read_index(store, scan.index_parts)
        if index is not None:
            written_at = index.written_at
            todo = []
            current: list[tuple[ObjectURL, IndexRow]] = []
            for info in infos:
                row = index.rows.get(info.path)
                if row is not None and row.size == info.size and row.version == info.version:
                    current.append((info.url, row))
                else:
                    todo.append(info)
            entries = index_entries(current)
    from_index = len(entries)
    entries += object_entries(store, todo)
    return FleetListing(
        root=store.url,
        entries=finish_listing(entries),
        index_written_at=written_at,
        from_index=from_index,
        read=len(todo),
    )
