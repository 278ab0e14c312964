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
from collections.abc import Mapping
from typing import Any, Final

import attrs

from ledger.schema import json_schema
from replay._location import is_url
from replay.fleet._duck import connect, duck_path
from replay.fleet._index import newest_rows_sql
from replay.fleet._rows import COLUMNS
from replay.fleet._store import Store, open_store, scan_root

__all__ = ["FleetSQL", "SQLResult", "fleet_sql", "record_columns", "root_url"]

_MAX_DEPTH: Final = 12


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
    """A DuckDB connection over the fleet at ``root`` (a URL or a local directory)."""
    store = open_store(root_url(root))
    con = connect(store)
    notes = []
    scan = scan_root(store)
    files = scan.index_parts
    if files:
        con.execute(f"CREATE VIEW sessions AS {newest_rows_sql(files, store)}")
    else:
        con.execute(f"CREATE VIEW sessions AS {_empty(COLUMNS)}")
        notes.append(f"no index under {store.url}: `sessions` is empty (run `rollout index`)")
    columns = record_columns()
    typed = "{" + ", ".join(f"'{n}': '{t}'" for n, t in columns.items()) + "}"
    prefix = "file://" if store.scheme == "file" else ""
    if scan.objects:
        glob = duck_path(store, store.join("**", "*.jsonl")).replace("'", "''")
        con.execute(
            "CREATE VIEW records AS SELECT * EXCLUDE (filename), "  # noqa: S608 - see above
            f"'{prefix}' || filename AS url FROM read_ndjson('{glob}', columns = {typed}, "
            "format = 'newline_delimited', filename = true, ignore_errors = true, "
            "maximum_object_size = 536870912)"
        )
    else:
        con.execute(f"CREATE VIEW records AS {_empty({**columns, 'url': 'VARCHAR'})}")
    return FleetSQL(con=con, store=store, note="; ".join(notes) or None)
