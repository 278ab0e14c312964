"""The entries index rows keep (ADR 0159), attacked from outside: every kind of rollout lists
from the index as from its object, and odd or hostile index parts are never believed wrongly."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pytest
from click.testing import CliRunner

from fleet_data import varied_fleet
from ledger import StopKind
from replay.cli import cli
from replay.fleet import _fleetwide, _index, _listed, build_index, list_fleet
from replay.fleet import _rows as rows_module
from replay.fleet._index import IndexRow, read_index
from replay.fleet._store import open_store, scan_root
from review_fleet import exact, odd_fleet
from rollout_files import START, RolloutBuilder, conversation


def _same(url: str) -> Any:
    """The listing of ``url`` from its index, checked against the objects' (repr and bytes too)."""
    listed = list_fleet(url)
    direct = list_fleet(url, use_index=False)
    assert listed.entries == direct.entries
    assert exact(listed.entries) == exact(direct.entries)
    return listed


def _rows(url: str) -> dict[str, IndexRow]:
    store = open_store(url)
    index = read_index(store, scan_root(store).index_parts)
    assert index is not None
    return dict(index.rows)


def _parts(url: str) -> list[str]:
    return list(scan_root(open_store(url)).index_parts)


def _copy(part: str, select: str) -> None:
    """The part rewritten in place by ``select`` over its rows (``{part}``)."""
    duckdb.execute(f"COPY ({select.format(part=part)}) TO '{part}.new' (FORMAT parquet)")
    Path(part + ".new").replace(part)


def _replace(url: str, /, **columns: str) -> None:
    """Every part rewritten with each of ``columns`` replaced by its SQL expression."""
    exprs = ", ".join(f"{e} AS {c}" for c, e in columns.items())
    for part in _parts(url):
        _copy(part, "SELECT * REPLACE (" + exprs + ") FROM '{part}'")  # noqa: S608 - the test's own parts


def _varied(tmp_path: Path) -> str:
    varied_fleet(tmp_path / "fleet")
    url = "file://" + str(tmp_path / "fleet")
    build_index(url)
    return url


def test_every_kind_of_rollout_lists_from_the_index_as_from_its_object(tmp_path: Path) -> None:
    """Forks, children with and without coordinates, damaged and foreign heads, names that are
    not a rollout's, cut tokens, non-ASCII ids, offsets, heads near 4 MiB, resumed sessions:
    each listed from its kept entry, exactly (repr, offsets, bytes of extra), and indexed once."""
    odd_fleet(tmp_path / "fleet", big=True)
    url = "file://" + str(tmp_path / "fleet")
    report = build_index(url)
    assert report.errors == ()
    assert report.indexed == report.objects == 36
    assert all(r.listed is not None for r in _rows(url).values())
    listed = _same(url)
    assert (listed.from_index, listed.read) == (36, 0)
    assert build_index(url).indexed == 0


def test_every_kind_of_rollout_lists_from_the_index_on_object_storage(
    tmp_path: Path, bucket: str
) -> None:
    """The same on S3, where the store names an object by bucket and key and versions it by
    ETag: the kept entries are named by the URLs of the objects they describe."""
    local = tmp_path / "local"
    paths = odd_fleet(local)
    url = f"{bucket}/odd"
    fs = fsspec.filesystem("s3")
    for p in paths:
        fs.put_file(str(p), f"{url}/{p.relative_to(local).as_posix()}")
    report = build_index(url)
    assert (report.indexed, report.errors) == (34, ())
    listed = _same(url)
    assert (listed.from_index, listed.read) == (34, 0)
    assert all(str(e.path).startswith(url + "/") for e in listed.entries)


@pytest.mark.parametrize(
    "listing",
    [
        "'{{}}'",
        "''",
        "'[]'",
        "'null'",
        "'[1, 2'",
        "listing || 'x'",
        "replace(listing, '[\"', '[1, \"')",
        "replace(listing, '\",' || size || ',', '\",' || size || ',1,')",
        'replace(listing, \'"found":\', \'"found":1,"x":\')',
        'replace(listing, \'"tier":"\', \'"tier":"z\')',
        'replace(listing, \'"reason":"\', \'"reason":"","r":"\')',
        "'[\"' || path || '\",' || size || ',\"' || version || '\"]'",
        "42",
    ],
)
def test_texts_of_the_wrong_shape_or_type_are_listed_from_the_columns(
    tmp_path: Path, listing: str
) -> None:
    """A text that is not a listing (or a column of another type) is never believed: the
    listing comes from the rows' other columns, and the next index run writes them again."""
    url = _varied(tmp_path)
    _replace(url, listing=listing)
    listed = _same(url)
    assert listed.from_index == 7
    assert all(r.listed is None for r in _rows(url).values())
    assert build_index(url).indexed == 7
    assert all(r.listed is not None for r in _rows(url).values())


@pytest.mark.parametrize(
    "coding", ["'''entry-1'''", "'\"entry-1\"'", "' entry-1'", "'ENTRY-1'", "'entry-1 '"]
)
def test_a_coding_spelled_otherwise_is_another_coding(tmp_path: Path, coding: str) -> None:
    """Quotes, spaces or case around the coding make it another: those rows are listed from
    their columns and written again once."""
    url = _varied(tmp_path)
    _replace(url, listing_coding=coding)
    assert _same(url).from_index == 7
    assert build_index(url).indexed == 7
    assert build_index(url).indexed == 0


def test_a_text_is_believed_by_its_own_path_size_and_version_never_the_columns(
    tmp_path: Path,
) -> None:
    """The columns path, size and version changed: the kept entries still list every object
    (they carry their own); a text whose own size is not the object's is not believed."""
    url = _varied(tmp_path)
    _replace(url, path="path || '.moved'", size="size + 1", version="'v0'")
    assert _same(url).from_index == 7
    url = _varied(tmp_path / "again")
    rows = _rows(url)
    small = next(p for p in rows if "aa-small" in p)
    size = rows[small].size
    _replace(url, listing=f"replace(listing, ',{size},', ',{size + 1},')")
    listed = _same(url)
    assert (listed.from_index, listed.read) == (6, 1)


def test_duplicate_rows_across_parts_and_an_enormous_text(tmp_path: Path) -> None:
    """Every row twice in two parts, one text padded to 20 MB: listed from the index as it is."""
    url = _varied(tmp_path)
    [part] = _parts(url)
    shutil.copy(part, part.replace(".parquet", "-copy.parquet"))
    _replace(
        url,
        listing="CASE WHEN path LIKE '%bb-large%' THEN listing || repeat(' ', 20000000) "
        "ELSE listing END",
    )
    listed = _same(url)
    assert (listed.from_index, listed.read) == (7, 0)
    assert build_index(url).indexed == 0


def test_a_tombstone_hides_a_kept_entry_until_the_object_is_indexed_again(tmp_path: Path) -> None:
    """A deleted object's row is a tombstone; the same bytes put back are read, not taken from
    the entry kept before, until the next index run."""
    url = _varied(tmp_path)
    path = next(p for p in (tmp_path / "fleet").iterdir() if "cc-killed" in p.name)
    data = path.read_bytes()
    path.unlink()
    assert build_index(url).removed == 1
    path.write_bytes(data)
    listed = _same(url)
    assert (listed.from_index, listed.read) == (6, 1)
    assert build_index(url).indexed == 1
    assert _same(url).from_index == 7


def test_parts_of_an_older_version_mixed_with_new_ones(tmp_path: Path) -> None:
    """A part without the listing columns beside one with them: each row listed by its own
    part's means, and only the older part's objects indexed again."""
    url = _varied(tmp_path)
    newer = RolloutBuilder(tmp_path / "fleet", session_id="hh-new", started_at=START)
    newer.extend(conversation(1)).stop(StopKind.PAUSED).write()
    assert build_index(url).indexed == 1
    old = max(_parts(url), key=lambda p: len(duckdb.read_parquet(p).fetchall()))
    _copy(old, "SELECT * EXCLUDE (listing, listing_coding) FROM '{part}'")
    rows = _rows(url)
    assert sum(r.listed is not None for r in rows.values()) == 1
    assert _same(url).from_index == 8
    assert build_index(url).indexed == 7
    assert build_index(url).indexed == 0


def _bump(monkeypatch: pytest.MonkeyPatch, coding: str) -> None:
    """Every name the coding is read by, as if the constant had been edited and imported."""
    monkeypatch.setattr(_listed, "LISTING_CODING", coding)
    monkeypatch.setattr(rows_module, "LISTING_CODING", coding)
    monkeypatch.setattr(_index, "LISTING_CODING", coding)
    monkeypatch.setattr(_index, "_CODED", f"listing_coding = '{coding}'")


def test_a_coding_bump_indexes_every_object_once_then_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a bump the old rows are listed from their columns, the next run writes every one
    again in the new coding, and the run after writes nothing."""
    url = _varied(tmp_path)
    _bump(monkeypatch, "entry-review")
    assert all(r.listed is None for r in _rows(url).values())
    assert _same(url).from_index == 7
    assert build_index(url).indexed == 7
    assert all(r.listed is not None for r in _rows(url).values())
    assert build_index(url).indexed == 0
    assert _same(url).from_index == 7
    newest = max(_parts(url))  # part names start with their run's time
    codings = duckdb.read_parquet(newest).project("listing_coding").fetchall()
    assert set(codings) == {("entry-review",)}


@pytest.mark.parametrize("listing", ["'['", "[listing]"])
def test_rebuild_writes_every_entry_again_and_drops_the_older_parts(
    tmp_path: Path, listing: str
) -> None:
    """`rollout index --rebuild` after a damaged text, or a part whose listing column has a
    type every later part is then read as (a list): listed exactly meanwhile; one part again,
    every row with its entry."""
    url = _varied(tmp_path)
    _replace(url, listing=listing)
    assert _same(url).from_index == 7
    before = _parts(url)
    result = CliRunner().invoke(cli, ["index", "--rebuild", url], prog_name="rollout")
    assert result.exit_code == 0, result.output
    after = _parts(url)
    assert len(after) == 1
    assert not set(before) & set(after)
    assert all(r.listed is not None for r in _rows(url).values())
    assert _same(url).from_index == 7


def _interrupted(real: Callable[..., list[str]]) -> Callable[..., list[str]]:
    def write_parts(store: Any, rows: list[dict[str, Any]], run: str) -> list[str]:
        day = min(str(r["day"]) for r in rows)
        real(store, [r for r in rows if str(r["day"]) == day], run)
        raise KeyboardInterrupt

    return write_parts


def test_an_interrupted_index_run_leaves_a_listing_that_is_still_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped after writing one day's part of two (during a coding bump, too): every
    object is listed exactly, and the next run writes only the other day's objects."""
    url = _varied(tmp_path)
    for i in range(3):
        later = RolloutBuilder(
            tmp_path / "fleet", session_id=f"next-{i}", started_at=START.replace(day=3)
        )
        later.extend(conversation(1)).stop(StopKind.COMPLETED).write()
    _bump(monkeypatch, "entry-review")
    monkeypatch.setattr(_fleetwide, "write_parts", _interrupted(_index.write_parts))
    with pytest.raises(KeyboardInterrupt):
        build_index(url)
    monkeypatch.undo()
    _bump(monkeypatch, "entry-review")
    rows = _rows(url)
    assert sum(r.listed is not None for r in rows.values()) == 7
    listed = _same(url)
    assert (listed.from_index, listed.read) == (7, 3)
    assert build_index(url).indexed == 3
    assert build_index(url).indexed == 0
    assert _same(url).from_index == 10
