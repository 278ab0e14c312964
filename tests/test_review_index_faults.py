"""Faults found attacking the index's kept listing entries: each pinned where it was met."""

from __future__ import annotations

from pathlib import Path

from test_review_listing import _replace, _rows, _same, _varied


def test_a_text_nested_too_deeply_to_decode_leaves_the_index_in_use(tmp_path: Path) -> None:
    """A kept text whose verbatim ``extra`` nests deeper than the decoder goes is a text that
    does not decode, like any other: the listing still comes from the index."""
    url = _varied(tmp_path)
    deep = "'\"extra\":' || repeat('[', 100000) || repeat(']', 100000) || ',\"format_version\"'"
    _replace(
        url,
        listing="CASE WHEN path LIKE '%aa-small%' "
        f"THEN replace(listing, '\"format_version\"', {deep}) ELSE listing END",
    )
    listed = _same(url)
    assert (listed.from_index, listed.read) == (7, 0)
    assert all(r.listed is None for r in _rows(url).values())
