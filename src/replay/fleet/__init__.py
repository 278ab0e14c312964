"""Rollouts across a fleet: object storage, shipping, the Parquet index, SQL and Dask jobs.

Needs the ``fleet`` extra (``pip install 'rollout-ledger[fleet]'``: fsspec, s3fs, duckdb,
dask[distributed]); ``import replay`` never imports it, and this package imports DuckDB and
Dask only in the functions that use them. Any fsspec URL is a root (``s3://bucket/prefix``,
``gs://``, ``az://``, ``memory://``, ``file://``); the read functions of :mod:`replay` take
such URLs too.
"""

from replay._location import ObjectURL
from replay.fleet._listing import FleetListing, list_fleet
from replay.fleet._store import StoreError, open_store, storage_options

__all__ = [
    "FleetListing",
    "ObjectURL",
    "StoreError",
    "list_fleet",
    "open_store",
    "storage_options",
]
