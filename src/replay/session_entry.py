"""The listing entry of one rollout, made from what was read of it: its first line and its stop
facts. These rules stand apart from any reading because three readers share them: the local
listing (:mod:`replay.sessions`), an object on a fleet's store and a row of a fleet's index
each read the bytes their own way, then hand them here, so a file gets the same entry, flags
and notes wherever it lies.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Final

import msgspec

from ledger.codec import RecordDecodeError, decode_record
from ledger.framing import first_line
from ledger.naming import (
    RolloutName,
    RolloutNameError,
    build_rollout_name,
    parse_rollout_filename,
    session_token,
)
from ledger.records import ForkOrigin, SessionMeta
from replay._location import Location
from replay.eligibility import Eligibility, Tier, child_without_coordinates, resume_eligibility
from replay.stop import StopFacts

__all__ = [
    "HEAD_LIMIT",
    "SessionEntry",
    "SessionFlag",
    "entry_from_parts",
    "usual_entry",
]

HEAD_LIMIT: Final = 4 * 1024 * 1024
"""The longest first line the listing reads: a longer one is a damaged head, not a line."""


class SessionFlag(StrEnum):
    """Something wrong with a listed rollout, shown beside it rather than hiding it."""

    NAME_UNPARSEABLE = "name_unparseable"
    NAME_MISMATCH = "name_mismatch"
    HEAD_DAMAGED = "head_damaged"
    UNREADABLE = "unreadable"
    CHILD_WITHOUT_COORDINATES = "child_without_coordinates"
    DUPLICATE_SESSION_ID = "duplicate_session_id"
    PARENT_NOT_FOUND = "parent_not_found"
    FORK_SOURCE_NOT_FOUND = "fork_source_not_found"


class SessionEntry(msgspec.Struct, frozen=True, gc=False):
    """One rollout file as the listing sees it: head, tail, and flags; never its messages.

    Identity fields come from ``session_meta`` and, when the head is damaged, from the file
    name. ``notes`` says in words what each flag means for this file.
    """

    path: Location
    name: RolloutName | None
    session_id: str | None
    agent_name: str | None
    started_at: datetime | None
    parent_session_id: str | None
    delegation_id: str | None
    size: int
    meta: SessionMeta | None
    stop: StopFacts
    eligibility: Eligibility
    flags: tuple[SessionFlag, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def is_child(self) -> bool:
        """Whether the file says it is a delegated child (any coordinate present)."""
        return self.parent_session_id is not None or self.delegation_id is not None

    @property
    def fork(self) -> ForkOrigin | None:
        """Where the session was forked from (ADR 0130), or ``None`` when it is not a fork."""
        return self.meta.fork if self.meta is not None else None


def entry_from_parts(
    path: Location,
    *,
    size: int,
    head: bytes | None,
    stop: StopFacts | None,
    unreadable: BaseException | None = None,
) -> SessionEntry:
    """The listing entry of a rollout from what was read of it: its first bytes and stop facts.

    ``head`` holds at least the first line (or the first 4 MiB); ``unreadable`` is the error
    met instead when the file could not be read (the entry is then flagged
    :attr:`SessionFlag.UNREADABLE`). Local files and objects are listed by the same rules.
    """
    if unreadable is not None or head is None or stop is None:
        return _entry(path, 0, StopFacts(found=False), None, None, unreadable)
    meta, why = _parse_head(head)
    if meta is not None:
        entry = usual_entry(path, path.name, size, meta, stop)
        if entry is not None:
            return entry
    return _entry(path, size, stop, meta, why, None)


def usual_entry(
    path: Location, name: str, size: int, meta: SessionMeta, stop: StopFacts
) -> SessionEntry | None:
    """The entry of the usual file, decided at once; ``None`` when the file is not one.

    The usual file's name (``name``, the last part of ``path``) is the one its first line's
    ``meta`` implies, so of the listing's flags only a child's missing coordinates can apply:
    the full rules (``_entry``) give the same entry, which the tests pin. Every other file
    goes through the full rules.
    """
    rollout_name = _implied_name(name, meta)
    if rollout_name is None:
        return None
    child = child_without_coordinates(meta)
    return SessionEntry(
        path,
        rollout_name,
        meta.session_id,
        meta.agent_name,
        meta.started_at,
        meta.parent_session_id,
        meta.delegation_id,
        size,
        meta,
        stop,
        resume_eligibility(stop, meta=meta),
        (SessionFlag.CHILD_WITHOUT_COORDINATES,) if child else (),
        (_CHILD_NOTE,) if child else (),
    )


_CHILD_NOTE: Final = (
    "a delegated child with a missing or empty parent session id or delegation id: "
    "not a root, and not replayable as-is"
)


def _entry(
    path: Location,
    size: int,
    stop: StopFacts,
    meta: SessionMeta | None,
    why: str | None,
    unreadable: BaseException | None,
) -> SessionEntry:
    """The entry by every rule, from the parsed head (``meta``, or ``why`` it did not parse);
    with ``unreadable`` set or ``meta`` and ``why`` both ``None``, the file could not be read."""
    flags: list[SessionFlag] = []
    notes: list[str] = []
    if meta is None and why is None:
        flags.append(SessionFlag.UNREADABLE)
        detail = (
            (getattr(unreadable, "strerror", None) or str(unreadable) or type(unreadable).__name__)
            if unreadable is not None
            else "nothing could be read"
        )
        notes.append(f"cannot read the file: {detail}")
    name = _parse_name(path.name, meta, flags, notes)
    if why is not None:
        flags.append(SessionFlag.HEAD_DAMAGED)
        notes.append(f"first line: {why}; identity taken from the file name")
    if meta is not None and name is not None and not _names_session(name, meta):
        flags.append(SessionFlag.NAME_MISMATCH)
        notes.append(
            f"the file name says session {name.session_id or name.session_token} but "
            f"session_meta says {meta.session_id}; session_meta wins"
        )
    if child_without_coordinates(meta):
        flags.append(SessionFlag.CHILD_WITHOUT_COORDINATES)
        notes.append(_CHILD_NOTE)
    eligibility = resume_eligibility(stop, meta=meta)
    if SessionFlag.UNREADABLE in flags:
        eligibility = Eligibility(
            replayable=False, tier=Tier.UNKNOWN, reason=f"stop unknown: {notes[0]}"
        )
    return SessionEntry(
        path=path,
        name=name,
        session_id=meta.session_id if meta is not None else (name.session_id if name else None),
        agent_name=meta.agent_name if meta is not None else (name.agent_name if name else None),
        started_at=meta.started_at if meta is not None else (name.started_at if name else None),
        parent_session_id=meta.parent_session_id if meta is not None else None,
        delegation_id=meta.delegation_id if meta is not None else None,
        size=size,
        meta=meta,
        stop=stop,
        eligibility=eligibility,
        flags=tuple(flags),
        notes=tuple(notes),
    )


def _names_session(name: RolloutName, meta: SessionMeta) -> bool:
    if name.session_id is not None:
        return name.session_id == meta.session_id
    # A cut token names its id by digest only: compare the token the id would have.
    try:
        return session_token(meta.session_id, name.agent_name) == name.session_token
    except RolloutNameError:
        return False


def _parse_name(
    name: str, meta: SessionMeta | None, flags: list[SessionFlag], notes: list[str]
) -> RolloutName | None:
    if meta is not None:
        implied = _implied_name(name, meta)
        if implied is not None:
            return implied
    try:
        return parse_rollout_filename(name)
    except RolloutNameError as exc:
        flags.append(SessionFlag.NAME_UNPARSEABLE)
        notes.append(str(exc))
        return None


def _implied_name(name: str, meta: SessionMeta) -> RolloutName | None:
    """What the file name says, when it is the name ``meta`` implies; else ``None``.

    Building the name from the head is much cheaper than parsing it, and when the two agree
    the parse is known (build and parse are mirrors, SPEC rule 13).
    """
    try:
        expected, parsed = build_rollout_name(meta.started_at, meta.session_id, meta.agent_name)
    except RolloutNameError:
        return None
    return parsed if expected == name else None


def _parse_head(data: bytes) -> tuple[SessionMeta | None, str | None]:
    """The ``session_meta`` on the first line of ``data``, or why there is none."""
    head = first_line(data)
    if not head or head.isspace():  # what strip() would empty, without the copy
        return None, "the file is empty or starts with a blank line"
    if not head.endswith(b"\n") and len(head) >= HEAD_LIMIT:
        return None, f"longer than {HEAD_LIMIT} bytes"
    try:
        record = decode_record(head)
    except RecordDecodeError as exc:
        return None, str(exc)
    if not isinstance(record, SessionMeta):
        kind = getattr(record, "type", None) or type(record).__name__
        return None, f"a {kind!r} record where session_meta was expected"
    return record, None
