"""The fleet's rows of the benchmark (SPEC section 5, object storage; issue 15).

Against a moto S3 server on 127.0.0.1 in this process (``replay.fleet.testing.LocalS3``,
which counts every request and the bytes of its body both ways):

- listing N sealed sessions: the bytes on the wire (LIST responses and ranged GET bodies)
  against N x 64 KiB; the goal is <= N x 64 KiB plus headers;
- shipping N sessions: every byte sent or received against the data's size; goal <= 1.05x;
- the listing from an index of 100,000 sessions (10,000 with --quick): reading the Parquet
  parts and rebuilding every entry, timed; goal <= 1 s. The store's LIST of the keys is
  not included (it is the same with or without an index);
- one DuckDB query over the local files and over the bucket: the rows must agree.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks import datasets, gen
from ledger import StopKind, rollout_filename

Add = Callable[..., None]

_QUERY = (
    "SELECT type, count(*), sum(coalesce(message_count, 0)), "
    "count(*) FILTER (WHERE message.role = 'tool') FROM records GROUP BY ALL ORDER BY ALL"
)


def _fleet_dir(root: Path, n: int) -> Path:
    base = gen.conversation(40, "ascii")
    for i in range(n):
        k = 6 + i % 30
        datasets.write_rollout(
            root,
            f"f{i:05d}",
            lambda k=k: base[:k],
            stop=(StopKind.PAUSED, StopKind.COMPLETED, StopKind.FAILED)[i % 3],
            agent_name="coder" if i % 2 else None,
        )
    return root


def _synthetic_index(url: str, n: int, work: Path) -> None:
    """An index of ``n`` rows, replicated from the rows of a few real rollouts (renamed)."""
    from replay.fleet._fleetwide import build_index
    from replay.fleet._index import IndexRow, now_utc, run_id, write_parts
    from replay.fleet._listed import listing_text
    from replay.fleet._sql import fleet_sql
    from replay.fleet._store import open_store

    seed = work / "seed"
    _fleet_dir(seed, 6)
    build_index("file://" + str(seed), scheduler=None)
    with fleet_sql(seed) as q:
        result = q.query("SELECT * EXCLUDE (_n) FROM sessions")
    templates = [dict(zip(result.columns, r, strict=True)) for r in result.rows]
    store = open_store(url)
    now = now_utc()
    rows = []
    for i in range(n):
        t = dict(templates[i % len(templates)])
        sid = f"x{i:07d}"
        old = t["session_id"]
        started = t["started_at"] + timedelta(seconds=i)
        name = rollout_filename(started, sid, t["agent_name"])
        path = store.join(f"{started:%Y-%m-%d}", name)
        t.update(
            path=path,
            url=str(store.url_of(path)),
            key=store.key(path),
            session_id=sid,
            started_at=started,
            day=started.date(),
            indexed_at=now,
            head=t["head"]
            .replace(old, sid)
            .replace(
                f'"started_at":"{t["started_at"]:%Y-%m-%dT%H:%M:%S}',
                f'"started_at":"{started:%Y-%m-%dT%H:%M:%S}',
            ),
        )
        # The entry the row keeps is the one its head and stop records give under its name.
        row = IndexRow(*(t[k] for k in IndexRow._fields[:-1]))
        t["listing"] = listing_text(path, t["size"], t["version"], row.entry(store.url_of(path)))
        rows.append(t)
    write_parts(store, rows, run_id(now))


def run_fleet(quick: bool, add: Add, raw: dict[str, Any]) -> None:
    """Measure the fleet's rows; ``add(case, value, vs, ratio, goal, ok)`` prints each."""
    try:
        import fsspec

        from replay.fleet import fleet_sql, list_fleet, ship
        from replay.fleet._duck import connect
        from replay.fleet._index import index_entries, newest_rows_sql, read_index
        from replay.fleet._objects import LISTING_BYTES
        from replay.fleet._store import open_store, scan_root
        from replay.fleet.testing import LocalS3
    except ImportError as exc:
        add("fleet extra not installed", f"{exc}", "", None, "", None)
        return
    n_list = 200 if quick else 2_000
    n_index = 10_000 if quick else 100_000
    saved = {
        k: os.environ.get(k)
        for k in (
            "AWS_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_DEFAULT_REGION",
        )
    }
    datasets.data_root().mkdir(parents=True, exist_ok=True)
    with (
        LocalS3() as s3,
        tempfile.TemporaryDirectory(prefix="fleet-", dir=datasets.data_root()) as tmp,
    ):
        os.environ.update(
            AWS_ENDPOINT_URL=s3.endpoint,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",  # noqa: S106 - the local fake server's key
            AWS_DEFAULT_REGION="us-east-1",
        )
        try:
            work = Path(tmp)
            local = _fleet_dir(work / "local", n_list)
            data = sum(p.stat().st_size for p in local.glob("*.jsonl"))
            fsspec.filesystem("s3").mkdir("bench-fleet")
            url = "s3://bench-fleet/team"

            # ship: every byte once
            s3.reset_counts()
            t0 = time.perf_counter()
            report = ship(local, url)
            t_ship = time.perf_counter() - t0
            wire = sum(r.sent_bytes + r.body_bytes for r in s3.counted())
            ratio = wire / data
            raw["fleet_ship"] = {
                "data": data,
                "wire": wire,
                "seconds": t_ship,
                "uploaded": len(report.items),
            }
            add(
                f"ship {n_list} sessions ({data / 2**20:.1f} MB)",
                f"{wire / 2**20:.2f} MB on the wire",
                f"{data / 2**20:.2f} MB of data",
                ratio,
                "<= 1.05x",
                ratio <= 1.05,
            )

            # listing: bytes on the wire
            s3.reset_counts()
            t0 = time.perf_counter()
            listed = list_fleet(url, use_index=False)
            t_list = time.perf_counter() - t0
            reqs = s3.counted()
            bodies = sum(r.body_bytes for r in reqs)
            listing = sum(r.body_bytes for r in reqs if "list-type" in r.path)
            budget = n_list * LISTING_BYTES
            raw["fleet_listing"] = {
                "n": len(listed.entries),
                "bytes": bodies,
                "list_bytes": listing,
                "requests": len(reqs),
                "seconds": t_list,
            }
            add(
                f"list {n_list} sealed sessions from objects",
                f"{(bodies - listing) / 2**20:.2f} MB + LIST {listing / 2**10:.0f} KiB",
                f"N x 64 KiB = {budget / 2**20:.1f} MB",
                (bodies - listing) / budget,
                "<= 1.0x + headers",
                bodies - listing <= budget,
            )
            add(f"  ({len(reqs)} requests, {t_list:.2f} s on loopback)", "", "", None, "info", None)

            # the same query, local and remote
            t0 = time.perf_counter()
            with fleet_sql(local) as q:
                here = q.query(_QUERY)
            t_local = time.perf_counter() - t0
            t0 = time.perf_counter()
            with fleet_sql(url) as q:
                there = q.query(_QUERY)
            t_remote = time.perf_counter() - t0
            raw["fleet_sql"] = {"local_s": t_local, "remote_s": t_remote, "agree": here == there}
            add(
                "DuckDB query: local files vs the bucket",
                "agree" if here == there else "DIFFER",
                f"{t_local:.2f} s vs {t_remote:.2f} s",
                None,
                "equal rows",
                here == there,
            )

            # the listing from an index of n_index sessions
            idx_root = work / "index-root"
            idx_root.mkdir()
            idx_url = "file://" + str(idx_root)
            _synthetic_index(idx_url, n_index, work)
            store = open_store(idx_url)
            parts = scan_root(store).index_parts
            times = []
            index = entries = None
            for _ in range(3):
                # The previous listing is freed before the clock starts: one listing is timed.
                del index, entries
                t0 = time.perf_counter()
                index = read_index(store, parts)
                assert index is not None
                entries = index_entries((store.url_of(p), row) for p, row in index.rows.items())
                times.append(time.perf_counter() - t0)
            best = min(times)
            raw["fleet_index_listing"] = {"n": len(entries), "seconds": times}
            add(
                f"list {n_index:,} sessions from the index",
                f"{best:.2f} s",
                "",
                None,
                "<= 1 s" if not quick else "info",
                best <= 1.0 if not quick else None,
            )
            # Beside it, the index's own answer: the listing's columns as rows, from DuckDB.
            con = connect(store)
            t0 = time.perf_counter()
            columns = "session_id, agent_name, started_at, stop_kind, replayable, size, messages"
            rows = con.execute(newest_rows_sql(parts, store, columns)).fetchall()
            t_rows = time.perf_counter() - t0
            con.close()
            raw["fleet_index_rows"] = {"n": len(rows), "seconds": t_rows}
            add(
                f"  query the index's columns for {len(rows):,} sessions",
                f"{t_rows:.2f} s",
                "",
                None,
                "info",
                None,
            )
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            shutil.rmtree(Path(tmp) / "local", ignore_errors=True)
