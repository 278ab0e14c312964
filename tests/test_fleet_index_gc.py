"""The index's batches and the cyclic collector: paused while a batch is built, the young
objects moved past the young generations after, the caller's settings (disabled, frozen) left
as they were."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger import rollout_filename
from replay._location import ObjectURL
from replay.fleet._index import IndexRow, index_entries

_STARTED = "2026-12-02T16:22:05Z"


def _rows(n: int) -> list[tuple[ObjectURL, IndexRow]]:
    from datetime import UTC, datetime

    started = datetime(2026, 12, 2, 16, 22, 5, tzinfo=UTC)
    out = []
    for i in range(n):
        sid = f"s{i}"
        name = rollout_filename(started, sid)
        head = (
            f'{{"type":"session_meta","seq":1,"ts":"{_STARTED}","format_version":2,'
            f'"session_id":"{sid}","started_at":"{_STARTED}"}}\n'
        )
        row = IndexRow(f"b/{name}", 10, "v", head, None, None, None, 0, 0, 0, False, False, False)
        out.append((ObjectURL(f"s3://b/{name}"), row))
    return out


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector enabled and nothing frozen, as it was found after the test."""
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
        if not enabled:
            gc.disable()


def _young(objects: list[object]) -> int:
    ids = {id(o) for o in objects}
    return sum(1 for g in (0, 1) for o in gc.get_objects(generation=g) if id(o) in ids)


def _probes(n: int) -> list[object]:
    # Young tracked objects made just before a batch. The entries themselves are not tracked
    # (ADR 0159): these stand for every tracked object the batch and its caller made.
    return [[i] for i in range(n)]


def test_a_batch_leaves_the_young_generations_and_the_collector_enabled(collector: None) -> None:
    """After a batch, its entries are in the oldest generation (never walked by a young
    collection) and the collector is enabled again."""
    rows = _rows(300)
    gc.collect()  # counts at zero: no young collection can move the batch on its own
    probes = _probes(50)
    assert _young(probes) == 50
    entries = index_entries(rows)
    gc.disable()  # look at the generations before anything else can collect
    try:
        assert len(entries) == 300
        assert _young(probes) == 0
    finally:
        gc.enable()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled_and_nothing_is_moved(collector: None) -> None:
    """A caller that disabled the collector finds it disabled, and its young objects where
    they were."""
    rows = _rows(50)
    gc.collect()
    gc.disable()
    probes = _probes(50)
    entries = index_entries(rows)
    assert not gc.isenabled()
    assert len(entries) == 50
    assert _young(probes) == 50


def test_objects_the_caller_froze_stay_frozen() -> None:
    """A caller that froze objects (a server before it forks) keeps them frozen: the batch is
    then left to the collector as usual. Run in a fresh interpreter: threads other tests leave
    in this process (a local cluster's workers) may use the collector meanwhile."""
    code = (
        "import gc, sys\n"
        f"sys.path[:0] = {sys.path!r}\n"
        "from test_fleet_index_gc import _rows\n"
        "from replay.fleet._index import index_entries\n"
        "gc.freeze()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert frozen > 0\n"
        "entries = index_entries(_rows(20))\n"
        "assert gc.get_freeze_count() == frozen, (gc.get_freeze_count(), frozen)\n"
        "assert gc.isenabled()\n"
        "assert len(entries) == 20\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
