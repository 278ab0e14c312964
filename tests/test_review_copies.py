"""Copies of the value types and records (ADR 0160), from outside: every type, read with times
another writer gave with an offset, by copy, deepcopy and every pickle protocol, inside the
read side's values, across a process pool; and constructing, or copying with changes, still
checks what the caller gives."""

from __future__ import annotations

import copy
import copyreg
import gc
import io
import multiprocessing
import pickle
import re
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import Message, RolloutWriter, StopKind, ToolCall
from ledger.codec import decode_record, encode_lines
from ledger.records import SessionMeta
from ledger.reducer import fold
from ledger.validation import InvalidFieldError
from replay import list_sessions, read_replay
from strategies import (
    BOUNDARY_TYPES,
    VALID_FIELDS,
    degradations,
    junk,
    read_records,
    unknown_records,
    valid_values,
)

_PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)
_OFFSET = "0001-01-01T00:00:00+02:00"


def _copies(value: object) -> list[object]:
    out = [copy.copy(value), copy.deepcopy(value)]
    out += [pickle.loads(pickle.dumps(value, p)) for p in _PROTOCOLS]  # noqa: S301 - our own bytes
    return out


def _hash(value: object) -> int | None:
    try:
        return hash(value)
    except TypeError:  # a verbatim ``extra`` (msgspec.Raw) is not hashable
        return None


def _shown(value: object) -> str:
    # A verbatim ``extra`` (msgspec.Raw) shows its address, and pickle protocols below 4 drop
    # a datetime's ``fold`` (Python's own rule; it means nothing at a fixed offset): equal
    # values differ only there.
    return re.sub(r"0x[0-9a-f]+|fold=1, ", "", repr(value))


def _same(value: object, other: object) -> None:
    assert type(other) is type(value)
    assert other == value
    assert _shown(other) == _shown(value)
    assert _hash(other) == _hash(value)
    assert gc.is_tracked(other) == gc.is_tracked(value)


@given(record=read_records)
def test_every_record_read_with_any_time_copies_as_read(record: Any) -> None:
    """A record of any type read with times of any offset, at the ends of the calendar too,
    copies (copy, deepcopy, pickle protocols 0 to 5) to an equal, frozen record that encodes
    to the same bytes, its times with the same offsets."""
    line = encode_lines((record,))
    for other in _copies(record):
        _same(record, other)
        assert encode_lines((other,)) == line
        assert other.ts.utcoffset() == record.ts.utcoffset()
        with pytest.raises(AttributeError):
            other.seq = 0


@given(data=st.data())
def test_every_value_type_copies_as_itself(data: st.DataObject) -> None:
    """Every public value type (parts, reasoning, calls, messages, origins, error details,
    fork origins, every record), with UNSET fields and defaults left out, copies to itself."""
    cls = data.draw(st.sampled_from(BOUNDARY_TYPES))
    value = data.draw(valid_values(cls))
    for other in _copies(value):
        _same(value, other)
        assert msgspec.structs.asdict(other) == msgspec.structs.asdict(value)


@given(value=unknown_records | degradations)
def test_unknown_records_and_degradations_copy_as_themselves(value: object) -> None:
    """An ``UnknownRecord`` (raw bytes kept) and a ``Degradation`` copy to themselves."""
    for other in _copies(value):
        _same(value, other)


def test_deepcopy_keeps_shared_values_shared() -> None:
    """deepcopy's memo holds: a call shared by two messages, and a message listed twice, stay
    one object each in the copy."""
    call = ToolCall(id="c", name="f", arguments="{}")
    a = Message(role="assistant", tool_calls=(call,))
    b = Message(role="assistant", content="x", tool_calls=(call,))
    copied = copy.deepcopy([a, b, a])
    assert copied == [a, b, a]
    assert copied[0] is copied[2]
    assert copied[0].tool_calls[0] is copied[1].tool_calls[0]


class LabelledMessage(Message, frozen=True, kw_only=True):
    """A subclass a framework might define, with a field of its own."""

    label: str = ""


class OwnReduce(Message, frozen=True, kw_only=True):
    """A subclass with its own ``__reduce__``, which must be kept."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_own_rebuilt, ())


def _own_rebuilt() -> str:
    return "own"


def test_subclasses_copy_as_themselves_and_keep_their_own_reduce() -> None:
    """A subclass's copies are of the subclass, its own field included; a subclass that
    defines ``__reduce__`` keeps it."""
    value = LabelledMessage(role="user", content="x", label="mine")
    for other in _copies(value):
        assert type(other) is LabelledMessage
        assert other == value
    with pytest.raises(InvalidFieldError, match="label"):
        LabelledMessage(role="user", label=3)
    assert pickle.loads(pickle.dumps(OwnReduce(role="user"))) == "own"  # noqa: S301


def test_a_dispatch_table_still_decides() -> None:
    """copyreg and a pickler's dispatch table still override the types' own reduction, and
    the library registers nothing globally."""
    meta = decode_record(_meta_line(_OFFSET))
    assert type(meta) not in copyreg.dispatch_table
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf)
    pickler.dispatch_table = {SessionMeta: lambda m: (str, (m.session_id,))}
    pickler.dump(meta)
    assert pickle.loads(buf.getvalue()) == "s"  # noqa: S301


def _meta_line(started: str) -> str:
    return (
        f'{{"type":"session_meta","seq":1,"ts":"{started}","format_version":2,'
        f'"session_id":"s","started_at":"{started}"}}'
    )


def _session(tmp_path: Path) -> Path:
    """A paused session whose first line another writer gave with a time of the year 1."""
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        w.append(Message(role="user", content="hi"))
        w.append(Message(role="assistant", content="hello"))
        w.stop(StopKind.PAUSED)
    lines = w.path.read_bytes().splitlines(keepends=True)
    path = tmp_path / "0001-01-01_00-00-00_s.jsonl"
    path.write_bytes(_meta_line(_OFFSET).encode() + b"\n" + b"".join(lines[1:]))
    w.path.unlink()
    return path


def test_the_read_sides_values_copy_with_their_records(tmp_path: Path) -> None:
    """A listing's entries, a replay, its reducer state and its degradations, holding records
    read with an offset time, copy to equal values."""
    path = _session(tmp_path)
    rep = read_replay(path)
    assert rep.verified
    entries = list_sessions(tmp_path)
    state = fold(decode_record(line) for line in path.read_bytes().splitlines())
    for value in (entries, rep, state, rep.degraded, rep.stop):
        for other in _copies(value):
            assert other == value
    assert copy.deepcopy(entries)[0].started_at.isoformat() == _OFFSET


def _round_trip(value: object) -> tuple[object, bytes | None]:
    line = encode_lines((value,)) if isinstance(value, SessionMeta) else None
    return value, line


def test_a_process_pool_ships_records_read_with_offset_times(tmp_path: Path) -> None:
    """A record read with an offset time, and a listing entry holding one, go to a worker
    process and back as they were; the worker encodes the record to the same bytes."""
    meta = decode_record(_meta_line(_OFFSET))
    _session(tmp_path)
    entry = list_sessions(tmp_path)[0]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        back, line = pool.submit(_round_trip, meta).result(timeout=120)
        assert back == meta
        assert line == encode_lines((meta,))
        assert pool.submit(_round_trip, entry).result(timeout=120)[0] == entry


def test_constructing_checks_the_fields_of_a_copy() -> None:
    """Calling the class with a copy's fields checks them: a copy is never a way to build a
    value the class refuses."""
    meta = copy.deepcopy(decode_record(_meta_line(_OFFSET)))
    with pytest.raises(InvalidFieldError, match="UTC"):
        SessionMeta(**msgspec.structs.asdict(meta))


# --- copy.replace (Python 3.13) and __replace__ -------------------------------------------------


@given(data=st.data())
def test_replace_checks_what_it_changes_as_constructing_does(data: st.DataObject) -> None:
    """``copy.replace(value, field=x)`` (``value.__replace__``) refuses what constructing the
    type with that field refuses, and otherwise gives what constructing gives: it is not a way
    around the checks (it used to build any value, ``Message(role=3)`` included)."""
    cls = data.draw(st.sampled_from(BOUNDARY_TYPES))
    value = data.draw(valid_values(cls))
    name = data.draw(st.sampled_from(cls.__struct_fields__))  # type: ignore[attr-defined]
    given_value = data.draw(junk | VALID_FIELDS[cls].get(name, junk))
    fields = {**msgspec.structs.asdict(value), name: given_value}
    try:
        built: object = cls(**fields)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            value.__replace__(**{name: given_value})  # type: ignore[attr-defined]
    else:
        replaced = value.__replace__(**{name: given_value})  # type: ignore[attr-defined]
        _same(built, replaced)


def test_replace_keeps_what_it_does_not_change_as_read() -> None:
    """Replacing one field of a record read with an offset time keeps that time as read, and
    checks the new field; an unknown field is refused by name."""
    meta = decode_record(_meta_line(_OFFSET))
    assert isinstance(meta, SessionMeta)
    renamed = meta.__replace__(agent_name="coder")  # type: ignore[attr-defined]
    assert renamed.agent_name == "coder"
    assert renamed.started_at.isoformat() == _OFFSET
    with pytest.raises(InvalidFieldError, match=r"SessionMeta\.started_at"):
        meta.__replace__(started_at=datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=1))))  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="no field 'colour'"):
        meta.__replace__(colour="red")  # type: ignore[attr-defined]
    if hasattr(copy, "replace"):  # Python 3.13 and later
        with pytest.raises(InvalidFieldError, match=r"Message\.role"):
            copy.replace(Message(role="user"), role=3)  # type: ignore[attr-defined]
