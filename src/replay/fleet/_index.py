"""The fleet index: one Parquet row per rollout object, partitioned by day, written by DuckDB.

It lives under the root in ``.index/day=YYYY-MM-DD/part-<run>.parquet`` (hidden from the
listing, as every name starting with a dot is). Each run writes new parts only, create-only,
for the objects that are new or changed since the index was last written, and a tombstone row
for each object gone; readers keep the newest row per object. ``rebuild`` writes every row
anew and then removes the older parts. The index is a cache of what the rollouts say: always
rebuildable from them, never their source of truth (ADR 0143).
"""

from __future__ import annotations

import gc
import secrets
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, NamedTuple

import attrs
import msgspec

from ledger.codec import RecordDecodeError, decode_record
from ledger.records import AgentCheckpoint, SessionMeta, Terminal
from replay._location import ObjectURL
from replay.fleet._duck import connect, duck_path
from replay.fleet._listed import LISTING_CODING, LISTING_ERRORS, decode_listing
from replay.fleet._store import INDEX_DIR, ObjectInfo, Store, store_error
from replay.sessions import SessionEntry, entry_from_parts, usual_entry
from replay.stop import StopFacts

__all__ = [
    "INDEX_DIR",
    "FleetIndex",
    "IndexRow",
    "index_entries",
    "read_index",
    "write_parts",
]

_json = msgspec.json.Encoder()


def _record(text: str) -> Any:
    try:
        return decode_record(text)
    except RecordDecodeError:
        return None


class IndexRow(NamedTuple):
    """What the index says of one object, as its listing columns hold it: enough to rebuild
    its listing entry exactly.

    A plain tuple of the fetched values (a listing from the index makes one per object, and
    for some only to compare their size and version); the stop facts and the entry are built
    when asked for. ``listed`` is the entry the row keeps (ADR 0159), decoded and named by the
    URL the store gives the object; a row that has one is fetched without its head and stop
    columns, which are then ``None``.
    """

    path: str
    size: int
    version: str
    head: str | None
    stop_checkpoint: str | None
    stop_terminal: str | None
    stop_earlier_terminal: str | None
    stop_records_after: int
    stop_damaged_lines: int
    stop_bytes_scanned: int
    stop_exhausted: bool
    stop_found: bool
    killed: bool
    listed: SessionEntry | None = None

    @property
    def stop(self) -> StopFacts:
        """The stop facts the object's tail gave when it was indexed."""
        return self.listed.stop if self.listed is not None else _stop_facts(self)

    def entry(self, url: ObjectURL) -> SessionEntry:
        """The listing entry of the object, as reading its head and tail would give it."""
        return _entry(url, self)


def _terminal(text: str | None) -> Terminal | None:
    # A stored text that is another record (a damaged or foreign index) is no terminal.
    record = None if text is None else _record(text)
    return record if isinstance(record, Terminal) else None


def _stop_facts(row: IndexRow) -> StopFacts:
    # One unpacking instead of a field lookup per column: this runs once per listed object.
    _, _, _, _, cp, term, earlier, after, damaged, scanned, exhausted, found, killed, _ = row
    try:  # the texts this library wrote decode at the first try; anything else as _record does
        checkpoint = None if cp is None else decode_record(cp)
    except RecordDecodeError:
        checkpoint = None
    if not isinstance(checkpoint, AgentCheckpoint):
        checkpoint = None
    try:
        terminal = None if term is None else decode_record(term)
    except RecordDecodeError:
        terminal = None
    if isinstance(terminal, Terminal):
        kind, stop_kind, reason = terminal.kind, terminal.stop_kind, terminal.reason
    else:
        terminal, kind, stop_kind, reason = None, None, None, ""
    return StopFacts(
        found is True,  # DuckDB gives each flag as a bool, or None when missing
        kind,
        stop_kind,
        reason,
        checkpoint,
        terminal,
        killed is True,
        _terminal(earlier),
        after,
        damaged,
        scanned,
        exhausted is True,
    )


_LISTING_COLUMNS: Final = IndexRow._fields[:-1]
_CODED: Final = f"listing_coding = '{LISTING_CODING}'"
# A row is rebuilt from its columns only when every value the rules need is there (a stop
# record's text is NULL when there is none): a NULL elsewhere (a damaged or foreign part), or
# a head holding U+FFFD for bytes that were not UTF-8, would give another entry than the file.
_NULLABLE: Final = ("stop_checkpoint", "stop_terminal", "stop_earlier_terminal")
_REBUILDABLE: Final = " AND ".join(
    [
        *(f"{c} IS NOT NULL" for c in _LISTING_COLUMNS if c not in _NULLABLE),
        "NOT contains(head, chr(65533))",
    ]
)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Building 100,000 entries allocates a few hundred thousand objects without a cycle among
    # them; the collector would walk the growing heap again and again for nothing (ADR 0147).
    # After the batch, freeze-then-unfreeze moves the young objects into the oldest generation
    # in one step (a list splice): the young collection that would otherwise walk the whole
    # batch once more, finding nothing, is skipped (ADR 0148). Objects the caller froze are
    # never unfrozen: with a freeze in place, the batch is left to the collector as it is.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def index_entries(rows: Iterable[tuple[ObjectURL, IndexRow]]) -> list[SessionEntry]:
    """The listing entries of ``(url, row)`` pairs, built in one batch."""
    with _gc_paused():
        return [_entry(url, row) for url, row in rows]


def _entry(url: ObjectURL, row: IndexRow) -> SessionEntry:
    listed = row.listed
    if listed is not None:
        return listed if listed.path == url else msgspec.structs.replace(listed, path=url)
    head, stop = row.head or "", _stop_facts(row)
    # The usual head, one session_meta line as the writer ends it, is decoded from the text
    # DuckDB gave (the same value as from its bytes: it is valid UTF-8) and the usual file
    # decided at once; any other row goes through entry_from_parts, as an object's would.
    if head[:1] == "{" and head.find("\n") == len(head) - 1:
        try:
            meta = decode_record(head)
        except RecordDecodeError:
            meta = None
        if type(meta) is SessionMeta:
            name = url[url.rfind("/") + 1 :]
            entry = usual_entry(url, name, row.size, meta, stop) if name else None
            if entry is not None:
                return entry
    return entry_from_parts(url, size=row.size, head=head.encode(), stop=stop)


@attrs.frozen
class FleetIndex:
    """The newest row of every object the index describes, and when the index was written."""

    rows: Mapping[str, IndexRow]
    written_at: datetime
    files: tuple[str, ...]


def newest_rows_sql(
    files: Sequence[str],
    store: Store,
    columns: str = "*",
    *,
    unique: bool = False,
    where: str = "true",
) -> str:
    """A query for the newest row per object across the index's parts, tombstones dropped,
    of those newest rows only the ones ``where`` holds for.

    ``unique`` says the parts hold one row per object and no tombstone (a first run, or a
    rebuild): the rows are then read as they are, without the window that picks the newest.
    """
    listed = ", ".join("'" + duck_path(store, f).replace("'", "''") + "'" for f in files)
    # Built from our own column names, conditions and the index's part paths (quotes
    # doubled), never from a value read out of a rollout.
    parts = f"read_parquet([{listed}], union_by_name = true, hive_partitioning = false)"
    if unique:
        return f"SELECT {columns} FROM {parts} WHERE {where}"  # noqa: S608
    return (
        f"SELECT {columns} FROM ("  # noqa: S608
        f"SELECT *, row_number() OVER (PARTITION BY path ORDER BY indexed_at DESC) AS _n "
        f"FROM {parts}) WHERE _n = 1 AND NOT deleted AND ({where})"
    )


def read_index(store: Store, files: Sequence[str]) -> FleetIndex | None:
    """The index in the parts ``files`` (from :func:`scan_root`), or ``None`` when there are none
    or they cannot be read."""
    if not files:
        return None
    con = connect(store)
    try:
        paths = [duck_path(store, f) for f in files]
        written = con.execute(
            "SELECT max(indexed_at), count(*) = count(DISTINCT path) AND NOT bool_or(deleted) "
            "FROM read_parquet(?, union_by_name = true)",
            [paths],
        ).fetchone()
        unique = bool(written is not None and written[1])
        names = con.execute("SELECT * FROM read_parquet(?, union_by_name = true) LIMIT 0", [paths])
        coded = {"listing", "listing_coding"} <= {d[0] for d in names.description}
        columns = ", ".join(_LISTING_COLUMNS)
        out: dict[str, IndexRow] = {}
        where = _REBUILDABLE
        if coded:
            fast = newest_rows_sql(files, store, "listing", unique=unique, where=_CODED)
            with _gc_paused():
                whole = _decode_rows(store, con.execute(fast).fetchall(), out)
            # Rows of another coding, and every row when a listing does not decode (a damaged
            # or foreign part), are read from their columns.
            if whole:
                where += f" AND listing_coding IS DISTINCT FROM '{LISTING_CODING}'"
            else:
                out.clear()
        query = newest_rows_sql(files, store, columns, unique=unique, where=where)
        rows = con.execute(query).fetchall()
    except Exception:
        # A damaged part makes the index useless, never the listing wrong: read the objects.
        return None
    finally:
        con.close()
    with _gc_paused():
        make = tuple.__new__  # IndexRow._make without its checks: DuckDB gave every column
        for r in rows:
            out[r[0]] = make(IndexRow, (*r, None))
    when = written[0] if written is not None else None
    if when is None:
        return None
    return FleetIndex(rows=out, written_at=when.astimezone(UTC), files=tuple(files))


def _decode_rows(store: Store, texts: list[tuple[Any]], out: dict[str, IndexRow]) -> bool:
    """Each row's ``listing`` decoded, with its entry, into ``out``; whether all decoded."""
    url_of, make, decode = store.url_of, tuple.__new__, decode_listing
    for (text,) in texts:
        try:
            (path, size, version, name, sid, agent, started, parent, delegation, meta, stop,
             elig, flags, notes) = decode(text)  # fmt: skip
        except LISTING_ERRORS:
            return False
        entry = SessionEntry(
            url_of(path), name, sid, agent, started, parent, delegation, size, meta, stop, elig,
            flags, notes,
        )  # fmt: skip
        # IndexRow without its checks, its head and stop columns left out (not fetched).
        out[path] = make(IndexRow, (path, size, version, *_UNFETCHED, entry))
    return True


_UNFETCHED: Final = (None, None, None, None, 0, 0, 0, False, False, False)


def tombstone(store: Store, path: str, row: IndexRow, now: datetime) -> dict[str, Any]:
    """The row that says the object at ``path``, which the index held as ``row``, is gone."""
    return {
        "path": path,
        "url": str(store.url_of(path)),
        "key": store.key(path),
        "size": row.size,
        "version": row.version,
        "indexed_at": now,
        "deleted": True,
        "day": None,
    }


def write_parts(store: Store, rows: Sequence[Mapping[str, Any]], run: str) -> list[str]:
    """Write ``rows`` as one Parquet part per day under the index, create-only; their paths."""
    from replay.fleet._rows import COLUMNS

    if not rows:
        return []
    written: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rollout-index-") as tmp:
        source = Path(tmp, "rows.jsonl")
        with open(source, "wb") as f:
            for row in rows:
                f.write(_json.encode({k: row.get(k) for k in COLUMNS}) + b"\n")
        out = Path(tmp, "parts")
        con = connect(None)
        try:
            columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items()) + "}"
            con.execute(  # our column types and temporary paths only
                f"COPY (SELECT * FROM read_ndjson('{source}', columns = {columns}, "  # noqa: S608
                "format = 'newline_delimited')) "
                f"TO '{out}' (FORMAT parquet, PARTITION_BY (day), WRITE_PARTITION_COLUMNS true)"
            )
        finally:
            con.close()
        for local in sorted(out.rglob("*.parquet")):
            day = local.parent.name  # day=YYYY-MM-DD, or day=NULL for sessions without a start
            target = store.join(INDEX_DIR, day, f"part-{run}-{local.stem}.parquet")
            try:
                store.fs.makedirs(store.fs._parent(target), exist_ok=True)
                with store.fs.open(target, "xb") as f:
                    f.write(local.read_bytes())
            except Exception as exc:
                raise store_error(exc, store.url_of(target), "writing the index") from None
            written.append(target)
    return written


def run_id(now: datetime) -> str:
    """A part name's run: sortable by time, unique across machines."""
    return now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(4)


def gone_rows(
    index: FleetIndex | None, infos: Sequence[ObjectInfo], store: Store, now: datetime
) -> list[dict[str, Any]]:
    """Tombstones for the objects the index holds that the store no longer lists."""
    if index is None:
        return []
    present = {i.path for i in infos}
    return [tombstone(store, p, r, now) for p, r in index.rows.items() if p not in present]


def now_utc() -> datetime:
    """The time a run stamps on its rows."""
    return datetime.now(UTC)
