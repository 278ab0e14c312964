"""A DuckDB connection that reads a store's objects, and the Parquet files of the index.

DuckDB's own ``httpfs`` extension is downloaded on first use, which an offline machine cannot
do; DuckDB reads any fsspec file system registered with it instead
(``register_filesystem``), which is also how credentials and endpoints stay in one place
(ADR 0142). A local root is read by path, with nothing registered.
"""

from __future__ import annotations

from typing import Any

from replay.fleet._store import Store

__all__ = ["connect", "duck_path"]


def connect(store: Store | None = None) -> Any:
    """An in-memory DuckDB connection that can read ``store``'s objects (imports duckdb)."""
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            "the index and SQL need the fleet extra: pip install 'rollout-ledger[fleet]'"
        ) from exc
    con = duckdb.connect(":memory:")
    # Keep DuckDB off the network and off the home directory: nothing is auto-installed.
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_progress_bar = false")
    if store is not None and store.scheme != "file":
        con.register_filesystem(store.fs)
    return con


def duck_path(store: Store, path: str) -> str:
    """``path`` (in the store's terms) as DuckDB must name it: a URL, or a local path."""
    return path if store.scheme == "file" else str(store.url_of(path))
