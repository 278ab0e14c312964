"""The entry an index row keeps (ADR 0159): listed as the rules list the object, exact to the
offset of a time, and never believed when it was written by another coding or is damaged."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleet_data import varied_fleet
from replay._location import ObjectURL
from replay.fleet import build_index, list_fleet
from replay.fleet._index import IndexRow, read_index
from replay.fleet._listed import LISTING_CODING, decode_listing, listing_text
from replay.fleet._store import open_store, scan_root
from replay.session_entry import entry_from_parts
from strategies import index_rows

GOLDEN = Path(__file__).parent / "data" / "index-listing.json"


def _root(tmp_path: Path) -> str:
    varied_fleet(tmp_path / "fleet")
    return "file://" + str(tmp_path / "fleet")


def _rewrite_parts(url: str, select: str) -> None:
    """Every part of the index rewritten in place by ``select`` over its rows (``{part}``)."""
    store = open_store(url)
    for part in scan_root(store).index_parts:
        duckdb.execute(f"COPY ({select.format(part=part)}) TO '{part}.new' (FORMAT parquet)")
        Path(part + ".new").replace(part)


def _index_rows(url: str) -> list[IndexRow]:
    store = open_store(url)
    index = read_index(store, scan_root(store).index_parts)
    assert index is not None
    return list(index.rows.values())


def test_a_fresh_index_lists_every_object_from_its_kept_entry(tmp_path: Path) -> None:
    url = _root(tmp_path)
    build_index(url)
    rows = _index_rows(url)
    assert len(rows) == 7
    assert all(r.listed is not None and r.head is None for r in rows)
    listed = list_fleet(url)
    assert (listed.from_index, listed.read) == (7, 0)
    assert listed.entries == list_fleet(url, use_index=False).entries


@pytest.mark.parametrize(
    ("select", "why"),
    [
        ("SELECT * REPLACE ('entry-0' AS listing_coding) FROM '{part}'", "another coding"),
        ("SELECT * REPLACE (NULL AS listing_coding) FROM '{part}'", "no coding"),
        ("SELECT * REPLACE ('[1, 2' AS listing) FROM '{part}'", "damaged listing"),
        ("SELECT * REPLACE (NULL AS listing) FROM '{part}'", "no listing"),
        ("SELECT * EXCLUDE (listing, listing_coding) FROM '{part}'", "an index before them"),
    ],
)
def test_rows_whose_entry_cannot_be_used_are_listed_from_their_columns(
    tmp_path: Path, select: str, why: str
) -> None:
    """The listing still comes from the index, rebuilt by the rules from each row's head and
    stop records, and the next index run writes those rows again with their entry."""
    url = _root(tmp_path)
    build_index(url)
    _rewrite_parts(url, select)
    assert all(r.listed is None and r.head is not None for r in _index_rows(url)), why
    listed = list_fleet(url)
    assert (listed.from_index, listed.read) == (7, 0), why
    assert listed.entries == list_fleet(url, use_index=False).entries, why
    again = build_index(url)
    assert (again.indexed, again.unchanged) == (7, 0), why
    assert all(r.listed is not None for r in _index_rows(url)), why
    assert build_index(url).indexed == 0


def test_one_damaged_listing_leaves_the_others_right(tmp_path: Path) -> None:
    url = _root(tmp_path)
    build_index(url)
    _rewrite_parts(
        url,
        "SELECT * REPLACE (CASE WHEN path LIKE '%aa-small%' THEN '{{}}' ELSE listing END "
        "AS listing) FROM '{part}'",
    )
    listed = list_fleet(url)
    assert listed.from_index == 7
    assert listed.entries == list_fleet(url, use_index=False).entries


@given(named=index_rows(), offset=st.sampled_from(["Z", "+02:00", "-05:30"]))
def test_a_listing_gives_back_the_entry_exactly(
    named: tuple[str, tuple[Any, ...]], offset: str
) -> None:
    """Decoded, the text is the entry it was written from, down to each time's offset (which
    equality of times does not see: the reprs and texts are compared too)."""
    _, values = named
    # Every time of the head and stop records written with ``offset``.
    texts = (v.replace('Z"', f'{offset}"') if isinstance(v, str) else v for v in values[3:7])
    row = IndexRow(*values[:3], *texts, *values[7:])
    url = ObjectURL(f"s3://{row.path}")
    entry = entry_from_parts(url, size=row.size, head=(row.head or "").encode(), stop=row.stop)
    text = listing_text(row.path, row.size, row.version, entry)
    path, size, version, *fields = decode_listing(text)
    assert (path, size, version) == (row.path, row.size, row.version)
    again = type(entry)(url, fields[0], *fields[1:6], size, *fields[6:])
    assert again == entry
    assert repr(again) == repr(entry)
    assert listing_text(path, size, version, again) == text


def _golden_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]
    return cases


def _listing_of(case: dict[str, Any]) -> str:
    # A case's "stop" gives the stop columns a tail scan would give, where they differ from
    # those of a tail that ends at its terminal (or has no stop point).
    stop = {"found": case["terminal"] is not None, **case.get("stop", {})}
    row = IndexRow(
        case["path"], 1234, "v1", case["head"], case["checkpoint"], case["terminal"],
        stop.get("earlier_terminal"), stop.get("records_after", 0), 0,
        stop.get("bytes_scanned", 4096), stop.get("exhausted", False), stop["found"],
        stop.get("killed", False),
    )  # fmt: skip
    return listing_text(row.path, row.size, row.version, row.entry(ObjectURL(f"s3://{row.path}")))


def test_the_listing_coding_changes_whenever_the_entries_do() -> None:
    """Pinned listings of a few rows; a change to an entry's types or to a listing rule
    changes them, and then old indexes hold entries this version would not list."""
    golden = json.loads(GOLDEN.read_text())
    got = [_listing_of(c) for c in golden["cases"]]
    want = [c["listing"] for c in golden["cases"]]
    if golden["coding"] != LISTING_CODING:
        pytest.fail(
            f"{GOLDEN.name} was written for coding {golden['coding']!r}, not {LISTING_CODING!r}: "
            f"regenerate it with `python tests/{Path(__file__).name} --regenerate`"
        )
    assert got == want, (
        "the entry an index row keeps changed: bump LISTING_CODING in "
        "src/replay/fleet/_listed.py (rows written before are then listed from their "
        f"columns and indexed again), then regenerate {GOLDEN.name} with "
        f"`python tests/{Path(__file__).name} --regenerate`"
    )


if __name__ == "__main__" and "--regenerate" in sys.argv:
    data = json.loads(GOLDEN.read_text())
    data["coding"] = LISTING_CODING
    for case in data["cases"]:
        case["listing"] = _listing_of(case)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
