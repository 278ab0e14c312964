"""Listing the rollouts under a root (the delegation tree they form is in :mod:`replay.tree`).

:func:`list_sessions` reads only the first line (``session_meta``) and the tail (stop facts) of
each file: it never rebuilds messages, so its cost does not grow with the conversations. A file
whose name does not parse, whose head is damaged, or which cannot be read is still listed, with
flags saying what is wrong. A delegated child without its coordinates is flagged, never taken
for a root (SPEC rule 13). The walk of the root is in :mod:`replay.walk`, and the rules that
make an entry from what was read in :mod:`replay.session_entry`; their names are exported here
too.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from replay._files import NotARegularFileError, open_rollout_fd
from replay._location import is_url
from replay.session_entry import (
    HEAD_LIMIT,
    SessionEntry,
    SessionFlag,
    entry_from_parts,
    usual_entry,
)
from replay.stop import stop_facts_from_bytes, stop_facts_from_fd
from replay.trash import trash_files
from replay.walk import WalkError, iter_rollout_paths, raise_walk_error

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

_SMALL_FILE: Final = 64 * 1024


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


_EARLIEST: Final = datetime.min.replace(tzinfo=UTC)


def _order(e: SessionEntry) -> tuple[bool, datetime, str]:
    # Strings, not Paths: Path comparisons cost a quarter of listing 10,000 sessions. Times
    # compared as times: a float timestamp ties two a microsecond apart from about 2242 on.
    started = e.started_at
    return (started is not None, started or _EARLIEST, str(e.path))


def _flag(e: SessionEntry, flag: SessionFlag, note: str) -> SessionEntry:
    return msgspec.structs.replace(e, flags=(*e.flags, flag), notes=(*e.notes, note))


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
                    head += os.pread(fd, HEAD_LIMIT - len(head), len(head))
                stop = stop_facts_from_fd(fd, size)
        finally:
            os.close(fd)
    except OSError as exc:
        if strict and isinstance(exc, NotARegularFileError):
            raise
        return entry_from_parts(p, size=0, head=None, stop=None, unreadable=exc)
    return entry_from_parts(p, size=size, head=head, stop=stop)
