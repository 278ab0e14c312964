"""Listing the rollouts under a root (the delegation tree they form is in :mod:`replay.tree`).

:func:`list_sessions` reads only the first line (``session_meta``) and the tail (stop facts) of
each file: it never rebuilds messages, so its cost does not grow with the conversations. A file
whose name does not parse, whose head is damaged, or which cannot be read is still listed, with
flags saying what is wrong. A delegated child without its coordinates is flagged, never taken
for a root (SPEC rule 13).
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Final

import attrs

from ledger.codec import RecordDecodeError, decode_record
from ledger.framing import first_line
from ledger.naming import (
    ROLLOUT_SUFFIX,
    RolloutName,
    RolloutNameError,
    build_rollout_name,
    parse_rollout_filename,
    session_token,
)
from ledger.records import ForkOrigin, SessionMeta
from replay._files import NotARegularFileError, open_rollout_fd
from replay._location import Location, is_url
from replay.eligibility import Eligibility, Tier, child_without_coordinates, resume_eligibility
from replay.stop import StopFacts, stop_facts_from_bytes, stop_facts_from_fd
from replay.trash import trash_files

__all__ = [
    "SessionEntry",
    "SessionFlag",
    "WalkError",
    "entry_from_parts",
    "finish_listing",
    "iter_rollout_paths",
    "raise_walk_error",
    "list_sessions",
    "read_session_entry",
    "usual_entry",
]

_HEAD_LIMIT: Final = 4 * 1024 * 1024
_SMALL_FILE: Final = 64 * 1024


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


@attrs.frozen
class SessionEntry:
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


WalkError = Callable[[OSError], None]
"""What to do with a directory the walk cannot read: called with the error (its ``filename``
names the directory); raising from it stops the walk."""


def raise_walk_error(error: OSError) -> None:
    """The default of every walk: a directory that cannot be read is an error, never a silent
    hole in the listing (its sessions would look absent)."""
    raise error


def iter_rollout_paths(
    root: str | os.PathLike[str], *, ordered: bool = False, on_error: WalkError | None = None
) -> Iterator[Path]:
    """Every ``*.jsonl`` file under ``root``, recursively, skipping hidden directories.

    Symlinked directories are not followed, and a symlinked file is yielded only when its
    target lies inside ``root``: a link planted in the root never makes the listing read a
    file elsewhere. With ``ordered``, each directory's files come by name, then its
    subdirectories by name (memory follows the largest directory, not the tree). A missing
    root yields nothing, and so does a directory that vanished during the walk; any other
    directory that cannot be read goes to ``on_error`` (by default: raised), so that its
    sessions never just look absent.
    """
    report = on_error or raise_walk_error
    top = os.fspath(root)
    stack = [top]
    real_root: str | None = None
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except FileNotFoundError:
            continue  # the root does not exist, or a directory went away under the walk
        except OSError as exc:
            if exc.filename is None:
                exc.filename = d
            report(exc)
            continue
        subdirs: list[str] = []
        with it:
            found: Iterable[os.DirEntry[str]] = sorted(it, key=_name) if ordered else it
            for e in found:
                if e.name.startswith("."):
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        subdirs.append(e.path)
                    elif e.name.endswith(ROLLOUT_SUFFIX) and e.is_file():
                        if e.is_symlink():
                            if real_root is None:
                                real_root = os.path.realpath(root)
                            target = os.path.realpath(e.path)
                            if os.path.commonpath((real_root, target)) != real_root:
                                continue
                        yield Path(e.path)
                except OSError:
                    continue
        stack.extend(reversed(subdirs) if ordered else subdirs)


def _name(e: os.DirEntry[str]) -> str:
    return e.name


def list_sessions(
    root: str | os.PathLike[str], *, on_error: WalkError | None = None, trash: bool = False
) -> tuple[SessionEntry, ...]:
    """One entry per rollout under ``root`` (recursively), oldest first.

    A missing root lists nothing; a root that is not a directory raises
    ``NotADirectoryError``. A directory under it that cannot be read is raised as an
    ``OSError`` naming it, unless ``on_error`` takes it (and the listing goes on without it).
    A file that is not a regular file (replaced by a FIFO while listing) is listed, flagged
    :attr:`SessionFlag.UNREADABLE`, never waited on. Two files claiming one session id are
    both flagged :attr:`SessionFlag.DUPLICATE_SESSION_ID`; a fork whose source is not listed
    is flagged :attr:`SessionFlag.FORK_SOURCE_NOT_FOUND`.

    Pruned sessions (in the root's trash, ADR 0133) are not listed; with ``trash=True``, only
    they are (a local root only).

    ``root`` may also be the URL of a prefix on any fsspec file system (``s3://bucket/x``):
    the objects are listed by :func:`replay.fleet.list_fleet`, from the fleet's index when
    there is one and from each object's head and tail otherwise.
    """
    if is_url(root):
        from replay.fleet import list_fleet

        return list_fleet(os.fspath(root)).entries
    _check_root(root)
    if trash:
        root = trash_files(root)
    walked = iter_rollout_paths(root, on_error=on_error)
    return finish_listing([_session_entry(p, strict=False) for p in walked])


def finish_listing(entries: Iterable[SessionEntry]) -> tuple[SessionEntry, ...]:
    """Flag duplicate ids and missing parents across ``entries``, and sort them oldest first."""
    entries = list(entries)
    counts = Counter(e.session_id for e in entries if e.session_id is not None)
    dupes = {sid for sid, n in counts.items() if n > 1}
    if dupes:
        entries = [
            _flag(
                e,
                SessionFlag.DUPLICATE_SESSION_ID,
                f"{counts[e.session_id]} files claim session id {e.session_id}",
            )
            if e.session_id in dupes
            else e
            for e in entries
        ]
    known = set(counts)
    entries = [
        _flag(
            e,
            SessionFlag.PARENT_NOT_FOUND,
            f"parent session {e.parent_session_id} is not among the rollouts listed",
        )
        if e.parent_session_id and e.parent_session_id not in known
        else e
        for e in entries
    ]
    entries = [
        _flag(
            e,
            SessionFlag.FORK_SOURCE_NOT_FOUND,
            f"forked from session {e.fork.session_id}, which is not among the rollouts listed"
            + ("" if e.fork.copied else ": replaying it reports its inherited part missing"),
        )
        if e.fork is not None and e.fork.session_id not in known
        else e
        for e in entries
    ]
    entries.sort(key=_order)
    return tuple(entries)


def _check_root(root: str | os.PathLike[str]) -> None:
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # the walk meets the same error and lists nothing, as it does for any subtree
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(
            errno.ENOTDIR,
            "not a directory: the root of a listing is the directory that holds the rollouts",
            os.fspath(root),
        )


def _order(e: SessionEntry) -> tuple[float, str]:
    # Strings, not Paths: Path comparisons cost a quarter of listing 10,000 sessions.
    return (e.started_at.timestamp() if e.started_at is not None else float("-inf"), str(e.path))


def _flag(e: SessionEntry, flag: SessionFlag, note: str) -> SessionEntry:
    return attrs.evolve(e, flags=(*e.flags, flag), notes=(*e.notes, note))


def read_session_entry(path: str | os.PathLike[str]) -> SessionEntry:
    """The listing entry of one rollout: its first line and its tail, never its messages.

    A file that cannot be read is returned flagged :attr:`SessionFlag.UNREADABLE`; a path that
    is not a regular file raises :class:`~replay.NotARegularFileError` at once. A URL is read
    from its object's head and tail, as :func:`list_sessions` lists it.
    """
    if is_url(path):
        from replay.fleet._objects import object_entry

        return object_entry(os.fspath(path))
    return _session_entry(path if isinstance(path, Path) else Path(path), strict=True)


def _session_entry(p: Path, *, strict: bool) -> SessionEntry:
    try:
        fd = open_rollout_fd(p)
        try:
            size = os.fstat(fd).st_size
            first = os.read(fd, _SMALL_FILE)
            if len(first) >= size:
                # Small file (the usual case): one read serves the head and the tail.
                stop = stop_facts_from_bytes(first)
                head = first
            else:
                head = first
                if b"\n" not in head:
                    head += os.pread(fd, _HEAD_LIMIT - len(head), len(head))
                stop = stop_facts_from_fd(fd, size)
        finally:
            os.close(fd)
    except OSError as exc:
        if strict and isinstance(exc, NotARegularFileError):
            raise
        return entry_from_parts(p, size=0, head=None, stop=None, unreadable=exc)
    return entry_from_parts(p, size=size, head=head, stop=stop)


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
    if not head.endswith(b"\n") and len(head) >= _HEAD_LIMIT:
        return None, f"longer than {_HEAD_LIMIT} bytes"
    try:
        record = decode_record(head)
    except RecordDecodeError as exc:
        return None, str(exc)
    if not isinstance(record, SessionMeta):
        kind = getattr(record, "type", None) or type(record).__name__
        return None, f"a {kind!r} record where session_meta was expected"
    return record, None
