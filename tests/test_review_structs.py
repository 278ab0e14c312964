"""SessionEntry, StopFacts, Eligibility and RolloutName as frozen msgspec Structs (ADR 0159):
the surface the attrs classes had, their checks wherever an instance is made, and values
the cyclic collector may safely skip."""

from __future__ import annotations

import copy
import enum
import gc
import pickle
from datetime import UTC, datetime, timezone
from pathlib import Path, PurePath
from typing import Any

import msgspec
import pytest

from fleet_data import varied_fleet
from ledger.naming import RolloutName, RolloutNameError
from replay import list_sessions
from replay.eligibility import Eligibility, Tier
from replay.fleet import build_index, list_fleet
from replay.session_entry import SessionEntry
from replay.stop import StopFacts
from review_fleet import odd_fleet

_T = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)

# The fields, in order, and the defaults the attrs classes had at d57da87.
_SURFACE: dict[type, tuple[tuple[str, ...], dict[str, Any]]] = {
    SessionEntry: (
        (
            "path",
            "name",
            "session_id",
            "agent_name",
            "started_at",
            "parent_session_id",
            "delegation_id",
            "size",
            "meta",
            "stop",
            "eligibility",
            "flags",
            "notes",
        ),
        {"flags": (), "notes": ()},
    ),
    StopFacts: (
        (
            "found",
            "kind",
            "stop_kind",
            "reason",
            "checkpoint",
            "terminal",
            "killed",
            "earlier_terminal",
            "records_after",
            "damaged_lines",
            "bytes_scanned",
            "exhausted",
        ),
        {
            "kind": None,
            "stop_kind": None,
            "reason": "",
            "checkpoint": None,
            "terminal": None,
            "killed": False,
            "earlier_terminal": None,
            "records_after": 0,
            "damaged_lines": 0,
            "bytes_scanned": 0,
            "exhausted": False,
        },
    ),
    Eligibility: (("replayable", "tier", "reason"), {}),
    RolloutName: (
        ("started_at", "session_id", "agent_name", "session_token"),
        {"agent_name": None, "session_token": ""},
    ),
}


@pytest.mark.parametrize("cls", list(_SURFACE))
def test_fields_order_and_defaults_are_those_of_the_attrs_classes(cls: type) -> None:
    """Each type's fields, their order and defaults are unchanged, and it is frozen."""
    names, defaults = _SURFACE[cls]
    fields = msgspec.structs.fields(cls)
    assert tuple(f.name for f in fields) == names
    assert {f.name: f.default for f in fields if f.default is not msgspec.NODEFAULT} == defaults
    assert cls.__struct_config__.frozen  # type: ignore[attr-defined]
    assert cls.__match_args__ == names  # type: ignore[attr-defined]


def _entries(tmp_path: Path) -> list[SessionEntry]:
    varied_fleet(tmp_path / "fleet")
    return list(list_sessions(tmp_path / "fleet"))


def test_positional_keyword_equality_hash_and_repr_agree(tmp_path: Path) -> None:
    """Built positionally or by keyword from the fields of a listed entry, each value is equal,
    hashes alike and has the attrs-style repr ``Type(field=value, ...)``."""
    for e in _entries(tmp_path):
        for value in (e, e.stop, e.eligibility, e.name):
            assert value is not None
            cls = type(value)
            args = msgspec.structs.astuple(value)
            kwargs = msgspec.structs.asdict(value)
            assert cls(*args) == cls(**kwargs) == value
            assert hash(cls(*args)) == hash(value)
            shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            assert repr(value) == f"{cls.__name__}({shown})"


def test_values_are_immutable_unordered_and_match_patterns(tmp_path: Path) -> None:
    """Setting or deleting a field raises AttributeError (attrs raised its subclass), ``<`` is
    refused as before, and positional class patterns still match."""
    e = _entries(tmp_path)[0]
    for value, field in ((e, "size"), (e.stop, "found"), (e.eligibility, "reason")):
        with pytest.raises(AttributeError):
            setattr(value, field, 1)
        with pytest.raises(AttributeError):
            delattr(value, field)
    with pytest.raises(TypeError):
        _ = e < e  # type: ignore[operator]
    match e:
        case SessionEntry(path, name, sid):
            assert (path, name, sid) == (e.path, e.name, e.session_id)
        case _:
            pytest.fail("a SessionEntry pattern did not match")


def test_copies_and_pickles_are_equal(tmp_path: Path) -> None:
    """copy, deepcopy and a pickle round trip give equal values (the records inside too)."""
    for e in _entries(tmp_path):
        assert copy.copy(e) == e
        assert copy.deepcopy(e) == e
        assert pickle.loads(pickle.dumps(e)) == e  # noqa: S301 - our own bytes


def test_checks_run_on_construction_decoding_and_replace() -> None:
    """An eligibility without a reason, or a name with neither id nor token, is refused when
    built, when decoded (as a ValidationError naming the rule) and when replaced into."""
    with pytest.raises(ValueError, match="needs a reason"):
        Eligibility(True, Tier.REPLAYABLE, "")
    with pytest.raises(msgspec.ValidationError, match="needs a reason"):
        msgspec.json.decode(
            b'{"replayable":true,"tier":"replayable","reason":""}', type=Eligibility
        )
    with pytest.raises(ValueError, match="needs a reason"):
        msgspec.structs.replace(Eligibility(True, Tier.REPLAYABLE, "r"), reason="")
    with pytest.raises(RolloutNameError, match="needs a session id or a session token"):
        RolloutName(_T, None)
    with pytest.raises(msgspec.ValidationError, match="needs a session id or a session token"):
        msgspec.json.decode(
            b'{"started_at":"2026-12-02T09:30:00Z","session_id":null}', type=RolloutName
        )
    name = RolloutName(_T, "s\u00e9", "ag")
    decoded = msgspec.json.decode(
        b'{"started_at":"2026-12-02T09:30:00Z","session_id":"s\xc3\xa9","agent_name":"ag"}',
        type=RolloutName,
    )
    assert decoded == name
    assert decoded.filename == name.filename == "2026-12-02_09-30-00_s%C3%A9_ag.jsonl"


_IMMUTABLE = (
    str,
    int,
    float,
    bool,
    type(None),
    datetime,
    timezone,
    enum.Enum,
    PurePath,
    msgspec.Raw,
    msgspec.UnsetType,
)


def _no_cycle_through(value: object, path: str) -> None:
    """Every value reachable from ``value`` is immutable: no reference can lead back to it."""
    if isinstance(value, msgspec.Struct):
        assert value.__struct_config__.frozen, path
        for name, field in msgspec.structs.asdict(value).items():
            _no_cycle_through(field, f"{path}.{name}")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            _no_cycle_through(item, f"{path}[{i}]")
    else:
        assert isinstance(value, _IMMUTABLE), f"{path}: {type(value).__name__}"


def test_listing_values_are_untracked_and_hold_nothing_that_can_point_back(
    tmp_path: Path,
) -> None:
    """gc=False is safe: in every entry listed (locally, from objects, from the index), the
    four types are untracked and everything they reach is immutable, so no cycle passes
    through one."""
    odd_fleet(tmp_path / "fleet")
    url = "file://" + str(tmp_path / "fleet")
    build_index(url)
    listed = list_fleet(url)
    assert listed.read == 0
    entries = [
        *list_sessions(tmp_path / "fleet"),
        *list_fleet(url, use_index=False).entries,
        *listed.entries,
    ]
    assert len(entries) == 3 * 34
    for e in entries:
        for value in (e, e.stop, e.eligibility, e.name):
            assert value is None or not gc.is_tracked(value)
        _no_cycle_through(e, str(e.path))
