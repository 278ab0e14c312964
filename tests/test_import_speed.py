"""The importers' fast paths give exactly what the careful paths give (the import benchmark's
rows depend on them; nothing here is timed)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest
from hypothesis import given

from ledger.importers._report import Disposition, Tally
from ledger.importers._source import read_source
from strategies import source_lines

_BOM = b"\xef\xbb\xbf"


def _careful(data: bytes) -> tuple[list[Any], dict[int, str]]:
    """Every line stripped, its BOM skipped, then decoded: the reader before its fast path."""
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    values: list[Any] = []
    problems: dict[int, str] = {}
    for n, raw in enumerate(pieces, 1):
        s = raw.strip()
        if s.startswith(_BOM):
            s = s[len(_BOM) :].strip()
        if not s:
            values.append(None)
            problems[n] = "blank"
            continue
        try:
            values.append(msgspec.json.decode(s))
        except (msgspec.DecodeError, RecursionError):
            values.append(None)
            problems[n] = "damaged"
    return values, problems


@given(lines=source_lines)
def test_lines_decode_as_the_careful_reader_decodes_them(
    lines: list[bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A line decoded without stripping it first gives the value, or the blank or damaged
    verdict, that stripping it and skipping its BOM gives."""
    data = b"\n".join(lines)
    path = tmp_path_factory.getbasetemp() / "import-speed-source.jsonl"
    path.write_bytes(data)
    src = read_source(path)
    values, problems = _careful(data)
    assert msgspec.json.encode(list(src.values)) == msgspec.json.encode(values)
    assert [type(v) for v in src.values] == [type(v) for v in values]
    assert {n: r == "blank" for n, r in src.problems.items()} == {
        n: r == "blank" for n, r in problems.items()
    }


@given(lines=source_lines)
def test_counts_are_the_lines_by_disposition_and_detail(lines: list[bytes]) -> None:
    """The tally's counts are one per line marked, by disposition then detail, whatever the
    order and repetition of the marks."""
    tally = Tally(len(lines))
    expected: dict[int, tuple[Disposition, str]] = {}
    kinds = list(Disposition)
    for n, line in enumerate(lines, 1):
        if len(line) % 3:
            fate = (kinds[len(line) % len(kinds)], line[:2].hex())
            tally.mark(n, *fate)
            expected[n] = fate
    want: dict[str, Counter[str]] = {}
    for d, detail in expected.values():
        want.setdefault(d.value, Counter())[detail] += 1
    assert tally.counts() == {k: dict(sorted(v.items())) for k, v in sorted(want.items())}
    assert list(tally.counts()) == sorted(want)
