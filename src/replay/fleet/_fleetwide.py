"""The fleet-wide operations: verify every object, and build or update the index."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import attrs

from replay._location import ObjectURL
from replay.fleet._index import gone_rows, now_utc, read_index, run_id, write_parts
from replay.fleet._jobs import BATCH_OBJECTS, batches, run_batches, verify_batch
from replay.fleet._rows import index_rows
from replay.fleet._store import list_objects, open_store, scan_root, store_error

__all__ = ["IndexReport", "build_index", "verify_fleet"]


def verify_fleet(
    url: str | os.PathLike[str], *, scheduler: str | None = None, batch: int = BATCH_OBJECTS
) -> list[dict[str, Any]]:
    """Verify every rollout object under ``url``; one plain result per object, in path order.

    Each result has the fields of ``rollout verify --json`` (``url``, ``session_id``,
    ``status``, ``verified``, ``digest``, ``messages``, ``degraded``, ``problems``,
    ``error``). ``scheduler``: ``None`` (this process), ``"local"`` (a Dask ``LocalCluster``)
    or a Dask scheduler's address. ``batch`` is the most objects one task reads.
    """
    store = open_store(url)
    infos = list_objects(store)
    results = run_batches(
        verify_batch,
        os.fspath(url),
        store.options,
        batches(infos, objects=batch),
        scheduler=scheduler,
    )
    return [r for batch in results for r in batch]


@attrs.frozen
class IndexReport:
    """What one run of :func:`build_index` did."""

    root: ObjectURL
    objects: int
    indexed: int
    unchanged: int
    removed: int
    errors: tuple[tuple[str, str], ...]
    parts: tuple[ObjectURL, ...]
    written_at: datetime


def build_index(
    url: str | os.PathLike[str],
    *,
    rebuild: bool = False,
    scheduler: str | None = None,
    batch: int = BATCH_OBJECTS,
) -> IndexReport:
    """Index every rollout object under ``url``: new and changed ones only, unless ``rebuild``.

    Each object is read once, whole (its stop facts, identity, verdict, message counts and
    token usage); the rows are written as Parquet under ``.index/``, one part per day. With
    ``rebuild``, every object is read again and the older parts are removed once the new ones
    are written. Objects that cannot be read are reported in ``errors`` and left out.
    """
    store = open_store(url)
    scan = scan_root(store)
    infos = list(scan.objects)
    current = read_index(store, scan.index_parts)
    index = None if rebuild else current
    # Every part listed before this run, also those that cannot be read (a damaged part would
    # otherwise make the index ignored for good).
    old_files = scan.index_parts if rebuild else ()
    todo = []
    for info in infos:
        row = index.rows.get(info.path) if index is not None else None
        # A row without the entry as this version lists it (ADR 0159) is written again too.
        if (
            row is None
            or row.size != info.size
            or row.version != info.version
            or row.listed is None
        ):
            todo.append(info)
    now = now_utc()
    results = run_batches(
        index_rows,
        os.fspath(url),
        store.options,
        batches(todo, objects=batch),
        now,
        scheduler=scheduler,
    )
    rows: list[dict[str, Any]] = [r for batch_rows, _ in results for r in batch_rows]
    errors = tuple(e for _, batch_errors in results for e in batch_errors)
    gone = gone_rows(index, infos, store, now)
    parts = write_parts(store, [*rows, *gone], run_id(now))
    for old in old_files:
        try:
            store.fs.rm_file(old)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise store_error(exc, store.url_of(old), "removing an old index part") from None
    return IndexReport(
        root=store.url,
        objects=len(infos),
        indexed=len(rows),
        unchanged=len(infos) - len(todo),
        removed=len(gone),
        errors=errors,
        parts=tuple(store.url_of(p) for p in parts),
        written_at=now,
    )
