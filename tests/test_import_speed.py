"""The fast paths of an import give exactly what the careful paths give: the importers' reader
and tally, the value checks and the adapters' pieces they lean on (the import benchmark's rows
depend on them; nothing here is timed, ADRs 0135 and 0136)."""

from __future__ import annotations

import json
from collections import Counter
from functools import partial
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import messages, records, validation
from ledger.importers._report import Disposition, Tally
from ledger.importers._source import read_source
from ledger.messages import Message, Origin, Role, ToolCall
from ledger.providers._conversion import Target
from ledger.providers.residue import apply, diff, dumps
from strategies import check_values, dumps_values, residue_pairs, source_lines

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


# --- the value checks and the adapters' pieces -------------------------------------------------

VALUE_TYPES = sorted(
    {
        t
        for module in (messages, records)
        for t in vars(module).values()
        if isinstance(t, validation.Checked) and msgspec.structs.fields(t)
    },
    key=lambda t: t.__name__,
)


def _outcome(run: Any) -> tuple[Any, ...]:
    """What a call gave: its value (by type and JSON text where it has one) or its refusal."""
    try:
        value = run()
    except Exception as exc:
        return ("refused", type(exc), str(exc))
    try:
        shown = msgspec.json.encode(value)
    except Exception:
        shown = repr(value)
    return ("took", type(value), shown)


def _union_checks() -> list[tuple[str, Any, Any]]:
    found = []
    for t in VALUE_TYPES:
        checks, _ = validation._spec(t)
        for check, where in checks.values():
            if check in validation.CAREFUL:
                found.append((where, check, validation.CAREFUL[check]))
    return found


UNION_CHECKS = _union_checks()


def test_every_union_field_has_a_careful_check_to_compare() -> None:
    """The union fields of the value types (Message.content, Reasoning.extra, ...) are all
    reached by the comparison below."""
    named = {where for where, _, _ in UNION_CHECKS}
    assert {"Message.content", "Message.origin", "Reasoning.extra", "ToolCall.item_id"} <= named


@given(value=check_values)
def test_union_checks_take_and_refuse_what_their_careful_path_does(value: Any) -> None:
    """A union field's shortcut (exact struct type, UNSET, ASCII text taken as they are) takes,
    normalises and refuses every value exactly as the careful check behind it does."""
    for where, check, careful in UNION_CHECKS:
        fast = _outcome(partial(check, value, where))
        slow = _outcome(partial(careful, value, where))
        assert fast == slow, where


@given(items=st.lists(st.one_of(check_values, st.just("ok")), max_size=4))
def test_a_refused_item_is_named_by_its_index(items: list[Any]) -> None:
    """A tuple field refuses its first bad item at that item's path, as when every item was
    checked with its own path; good items come back as the tuple."""
    calls = [ToolCall(id=f"c{i}", name="n") if v == "ok" else v for i, v in enumerate(items)]
    bad = [i for i, v in enumerate(calls) if type(v) is not ToolCall]
    outcome = _outcome(lambda: Message(role=Role.ASSISTANT, tool_calls=calls))
    if bad:
        assert outcome[0] == "refused"
        assert outcome[2].startswith(f"Message.tool_calls[{bad[0]}]: expected ")
    else:
        assert outcome[0] == "took"


@given(value=dumps_values)
def test_residue_text_is_what_json_dumps_writes(value: Any) -> None:
    """Residues are encoded once-built, byte for byte as json.dumps with the same settings
    writes them, refusals (NaN, infinities) included."""
    want = _outcome(
        lambda: json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    )
    assert _outcome(lambda: dumps(value)) == want


@given(fields=st.tuples(*[st.one_of(st.none(), st.text(max_size=4), check_values)] * 4))
def test_an_origin_shared_is_the_origin_made(fields: tuple[Any, Any, Any, Any]) -> None:
    """A target's origin, made once and shared, equals (or is refused as) the origin made
    fresh from the same four fields, every time it is asked."""
    provider, api, model, endpoint = fields
    target = Target(provider, api, model, endpoint)
    fresh = _outcome(lambda: Origin(provider=provider, api=api, model=model, endpoint=endpoint))
    assert _outcome(target.origin) == fresh
    assert _outcome(target.origin) == fresh


@given(pair=residue_pairs)
def test_a_residue_turns_the_rebuild_into_the_original_text(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Values equal to Python but not as JSON text (1, 1.0 and True; 0.0 and -0.0) are never
    taken as the same: applying the residue gives the original's exact text back, whether the
    rebuild holds the original's own objects or others."""
    original, rebuilt = pair
    shared = {k: original.get(k, v) for k, v in rebuilt.items()}
    for built in (rebuilt, shared):
        assert dumps(apply(built, diff(original, built))) == dumps(original)
