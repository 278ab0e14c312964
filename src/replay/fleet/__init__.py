"""Rollouts across a fleet: object storage, shipping, the Parquet index, SQL and Dask jobs.

Needs the ``fleet`` extra (``pip install 'rollout-ledger[fleet]'``: fsspec, s3fs, duckdb,
dask[distributed]); ``import replay`` never imports it, and this package imports DuckDB and
Dask only in the functions that use them. Any fsspec URL is a root (``s3://bucket/prefix``,
``gs://``, ``az://``, ``memory://``, ``file://``); the read functions of :mod:`replay` take
such URLs too.
"""

from replay._location import ObjectURL
from replay.fleet._fleetwide import IndexReport, build_index, verify_fleet
from replay.fleet._listing import FleetListing, list_fleet
from replay.fleet._ship import ShipAction, ShipItem, ShipReport, ship
from replay.fleet._sql import FleetSQL, SQLResult, fleet_sql, record_columns
from replay.fleet._store import (
    StoreAccessError,
    StoreError,
    open_store,
    storage_options,
)

__all__ = [
    "FleetListing",
    "FleetSQL",
    "IndexReport",
    "ObjectURL",
    "SQLResult",
    "ShipAction",
    "ShipItem",
    "ShipReport",
    "StoreAccessError",
    "StoreError",
    "build_index",
    "fleet_sql",
    "list_fleet",
    "open_store",
    "record_columns",
    "ship",
    "storage_options",
    "verify_fleet",
]
