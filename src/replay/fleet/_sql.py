"""SQL over a fleet with DuckDB: the ``sessions`` view (the index) and ``records`` (the lines).

``records`` reads every rollout under the root with DuckDB's ``read_ndjson`` and an explicit
column list derived from the published JSON Schema (:func:`ledger.json_schema`), never
DuckDB's guess from a sample: a field that is absent from the first thousand lines keeps its
type, and a future field does not break old queries (ADR 0145). Lines that do not parse are
skipped (``rollout verify`` is the tool for damage). ``sessions`` is the newest row of every
object in the index; without an index it is empty and :attr:`FleetSQL.note` says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ledger.schema import json_schema
from replay._location import is_url
from replay.fleet._duck import connect, duck_path
from replay.fleet._index import newest_rows_sql
from replay.fleet._rows import COLUMNS
from replay.fleet._store import ObjectInfo, Store, open_store, scan_root

__all__ = [
    "FleetSQL",
    "SQLResult",
    "duckdb_error",
    "first_line",
    "fleet_sql",
    "record_columns",
    "root_url",
]

_MAX_DEPTH: Final = 12
_GLOB: Final = frozenset("*?[]")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Types:
    """JSON Schema nodes as DuckDB types; anything that is not one type is ``JSON``."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.defs: Mapping[str, Any] = schema.get("$defs", {})

    def resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return self.resolve(self.defs[ref.removeprefix("#/$defs/")])
        return node

    def of(self, node: Mapping[str, Any], depth: int = 0) -> str:
        node = self.resolve(node)
        if depth > _MAX_DEPTH:
            return "JSON"
        branches = node.get("anyOf") or node.get("oneOf")
        if branches:
            types = {
                self.of(b, depth + 1) for b in branches if self.resolve(b).get("type") != "null"
            }
            return types.pop() if len(types) == 1 else "JSON"
        if "enum" in node:
            return "VARCHAR"
        kind = node.get("type")
        if kind == "string":
            return "TIMESTAMPTZ" if node.get("format") == "date-time" else "VARCHAR"
        if kind == "integer":
            return "BIGINT"
        if kind == "number":
            return "DOUBLE"
        if kind == "boolean":
            return "BOOLEAN"
        if kind == "array":
            items = node.get("items")
            return f"{self.of(items, depth + 1)}[]" if isinstance(items, Mapping) else "JSON"
        if kind == "object" and node.get("properties"):
            fields = ", ".join(
                f"{_quote(k)} {self.of(v, depth + 1)}"
                for k, v in sorted(node["properties"].items())
            )
            return f"STRUCT({fields})"
        return "JSON"


def record_columns(schema: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The ``records`` view's columns and DuckDB types, from the JSON Schema of a line.

    One column per property of any record type (``type`` first); a property that two record
    types give different types is ``JSON``.
    """
    schema = json_schema() if schema is None else schema
    types = _Types(schema)
    columns: dict[str, str] = {"type": "VARCHAR"}
    for branch in schema.get("anyOf", ()):
        record = types.resolve(branch)
        for name, node in sorted(record.get("properties", {}).items()):
            if name == "type":
                continue
            t = types.of(node)
            columns[name] = t if columns.get(name, t) == t else "JSON"
    return columns


def root_url(root: str | os.PathLike[str]) -> str:
    """A root as a URL: a URL as it is, a local directory as ``file://`` and its absolute path."""
    text = os.fspath(root)
    return text if is_url(text) else "file://" + os.path.abspath(text)


@attrs.frozen
class SQLResult:
    """The result of one query: column names and rows of plain Python values."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@attrs.frozen
class FleetSQL:
    """An open DuckDB connection with the two views; ``note`` says what they lack, if anything."""

    con: Any = attrs.field(repr=False)
    store: Store
    note: str | None

    def query(self, sql: str) -> SQLResult:
        """Run one statement and fetch its rows."""
        cur = self.con.execute(sql)
        names = tuple(d[0] for d in cur.description) if cur.description else ()
        return SQLResult(columns=names, rows=tuple(tuple(r) for r in cur.fetchall()))

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    def __enter__(self) -> FleetSQL:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _empty(columns: Mapping[str, str]) -> str:
    cols = ", ".join(f"CAST(NULL AS {t}) AS {_quote(n)}" for n, t in columns.items())
    return f"SELECT {cols} WHERE false"


def fleet_sql(root: str | os.PathLike[str]) -> FleetSQL:
    """A DuckDB connection over the fleet at ``root`` (a URL or a local directory).

    ``records`` reads the objects the listing lists (hidden folders such as the trash and the
    index left out), not a glob; ``note`` says when ``sessions`` is empty, unreadable or does
    not describe the objects as they are now, and which objects ``records`` cannot read.
    """
    store = open_store(root_url(root))
    con = connect(store)
    notes = []
    scan = scan_root(store)
    files = scan.index_parts
    indexed = False
    if files:
        try:
            con.execute(f"CREATE VIEW sessions AS {newest_rows_sql(files, store)}")
            notes += _stale(con, scan.objects)
            indexed = True
        except duckdb_error() as exc:
            con.execute("DROP VIEW IF EXISTS sessions")
            notes.append(
                f"the index under {store.url} cannot be read ({first_line(exc)}): `sessions` "
                "is empty; `rollout index --rebuild` writes it anew"
            )
    if not indexed:
        con.execute(f"CREATE VIEW sessions AS {_empty(COLUMNS)}")
        if not files:
            notes.append(f"no index under {store.url}: `sessions` is empty (run `rollout index`)")
    columns = record_columns()
    typed = "{" + ", ".join(f"'{n}': '{t}'" for n, t in columns.items()) + "}"
    prefix = "file://" if store.scheme == "file" else ""
    # DuckDB reads each path as a glob, and fsspec reads "?versionId=" as a version: a key
    # holding a glob character cannot be named, only left out and said so.
    readable = [o for o in scan.objects if not _GLOB.intersection(o.path)]
    if len(readable) < len(scan.objects):
        bad = [str(o.url) for o in scan.objects if _GLOB.intersection(o.path)]
        notes.append(
            f"{len(bad)} object(s) with * ? [ or ] in their key left out of `records` (no "
            f"path can name them): {', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''}; "
            "rename them"
        )
    if readable:
        listed = ", ".join(
            "'" + duck_path(store, o.path).replace("'", "''") + "'" for o in readable
        )
        con.execute(
            "CREATE VIEW records AS SELECT * EXCLUDE (filename), "  # noqa: S608 - see above
            f"'{prefix}' || filename AS url FROM read_ndjson([{listed}], columns = {typed}, "
            "format = 'newline_delimited', filename = true, ignore_errors = true, "
            "maximum_object_size = 536870912)"
        )
    else:
        con.execute(f"CREATE VIEW records AS {_empty({**columns, 'url': 'VARCHAR'})}")
    return FleetSQL(con=con, store=store, note="; ".join(notes) or None)


def _stale(con: Any, objects: Sequence[ObjectInfo]) -> list[str]:
    """A note when the index does not describe the objects as the store lists them now."""
    rows = con.execute("SELECT path, size, version, indexed_at FROM sessions").fetchall()
    held = {r[0]: (r[1], r[2]) for r in rows}
    now = {o.path: (o.size, o.version) for o in objects}
    changed = sum(1 for p, v in now.items() if held.get(p) != v)
    gone = sum(1 for p in held if p not in now)
    if not changed and not gone:
        return []
    written = max((r[3] for r in rows), default=None)
    when = f"written {written:%Y-%m-%d %H:%M:%S %Z}" if written is not None else "empty"
    return [
        f"`sessions` comes from the index ({when}), which is behind the store: {changed} "
        f"object(s) new or changed since, {gone} gone; `rollout index` brings it up to date"
    ]


def duckdb_error() -> type[Exception]:
    """DuckDB's base error class (imports duckdb)."""
    import duckdb

    return duckdb.Error


def first_line(exc: BaseException) -> str:
    """An engine's error as one line: the last line of a Python traceback it wraps (an fsspec
    error raised inside DuckDB), else its first line."""
    text = str(exc).strip()
    if "Traceback (most recent call last)" in text:
        tail = [line for line in text.splitlines() if line.strip()]
        return tail[-1].strip() if tail else text
    return text.splitlines()[0] if text else type(exc).__name__
