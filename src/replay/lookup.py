"""Finding a session's rollout under a root by its id or a prefix of it, from file names only.

:func:`find_session` reads no file: it walks the root (as the listing does) and parses each
name with :func:`ledger.parse_rollout_filename`, the one mirror of how ids become file names,
so any id the naming accepts (a framework's own key included) is found the same way. The
argument is only ever compared with parsed ids; it never becomes part of a path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from ledger.error_copies import CopiedAsRaised
from ledger.naming import RolloutNameError, parse_rollout_filename, session_token
from replay._location import Location, location
from replay.sessions import WalkError, iter_rollout_paths
from replay.trash import trash_files

__all__ = [
    "AmbiguousSessionError",
    "DuplicateSessionError",
    "SessionLookupError",
    "SessionNotFoundError",
    "find_session",
]

_MAX_LISTED: Final = 5


class SessionLookupError(CopiedAsRaised, LookupError):
    """No single rollout answers a session id or prefix; the message says why and what to do."""

    def __init__(self, message: str, *, root: Location, query: str) -> None:
        super().__init__(message)
        self.root = root
        self.query = query


class SessionNotFoundError(SessionLookupError):
    """No rollout under the root has an id equal to, or starting with, the query."""


class AmbiguousSessionError(SessionLookupError):
    """A prefix matches several sessions; ``candidates`` are ``(session_id, path)`` pairs."""

    def __init__(
        self,
        message: str,
        *,
        root: Location,
        query: str,
        candidates: tuple[tuple[str, Location], ...],
    ) -> None:
        super().__init__(message, root=root, query=query)
        self.candidates = candidates


class DuplicateSessionError(SessionLookupError):
    """Several files claim one full session id (SPEC section 6); ``paths`` lists them."""

    def __init__(
        self,
        message: str,
        *,
        root: Location,
        query: str,
        session_id: str,
        paths: tuple[Location, ...],
    ) -> None:
        super().__init__(message, root=root, query=query)
        self.session_id = session_id
        self.paths = paths


def _listed(items: Iterable[str], n: int) -> str:
    shown = list(items)[:_MAX_LISTED]
    more = f" and {n - _MAX_LISTED} more" if n > _MAX_LISTED else ""
    return ", ".join(shown) + more


def _token_of(query: str, agent_name: str | None) -> str | None:
    try:
        return session_token(query, agent_name)
    except RolloutNameError:
        return None


def _candidates(base: Location, on_error: WalkError) -> list[Location]:
    """The rollouts under ``base`` by path: files by the listing's walk, or objects."""
    if isinstance(base, Path):
        return sorted(iter_rollout_paths(base, on_error=on_error))
    from replay.fleet._store import list_objects, open_store

    return [o.url for o in list_objects(open_store(base))]


def _relative(path: Location, base: Location) -> str:
    if isinstance(path, Path):
        return str(path.relative_to(base))
    prefix = str(base).rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def find_session(
    root: str | os.PathLike[str], session_id_or_prefix: str, *, trash: bool = False
) -> Location:
    """The rollout under ``root`` whose session id is, or starts with, ``session_id_or_prefix``.

    Pruned sessions (in the root's trash, ADR 0133) are not found; with ``trash=True``, only
    they are (a local root only).

    An exact id wins over longer ids it prefixes; otherwise exactly one session must match.
    Raises :class:`SessionNotFoundError`, :class:`AmbiguousSessionError` (with the candidates)
    or :class:`DuplicateSessionError` (two files claim one full id), all
    :class:`SessionLookupError`; ``NotADirectoryError``/``FileNotFoundError`` when ``root`` is
    not a directory; ``TypeError``/``ValueError`` for a query that is not a non-empty string
    without NUL. Only file names are read, never the files.

    ``root`` may be a URL (``s3://bucket/prefix``): the object names under it are searched the
    same way, and the result is the object's :class:`~replay.ObjectURL`.
    """
    if not isinstance(session_id_or_prefix, str):
        raise TypeError(
            "session_id_or_prefix must be a str, not "
            f"{type(session_id_or_prefix).__name__} {session_id_or_prefix!r}"
        )
    query = session_id_or_prefix
    if not query:
        raise ValueError("an empty session id names no session: give an id or a prefix of one")
    if "\x00" in query:
        raise ValueError(f"session id {query!r} contains a NUL character")
    base = location(root)
    if trash:
        if not isinstance(base, Path):
            raise ValueError(f"the trash is in a local root; {root} is a URL")
        if base.is_dir() and not trash_files(base).is_dir():
            raise SessionNotFoundError(
                f"the trash of {root} is empty: nothing was pruned (or it was emptied)",
                root=base,
                query=query,
            )
        base = trash_files(base)
    if isinstance(base, Path) and not base.is_dir():
        what = "is not a directory" if base.exists() else "does not exist"
        error = NotADirectoryError if base.exists() else FileNotFoundError
        raise error(f"root {base} {what}: give the directory that holds the rollouts")
    matches: dict[str, list[Location]] = {}
    unreadable: list[OSError] = []
    for path in _candidates(base, unreadable.append):
        try:
            name = parse_rollout_filename(path.name)
        except RolloutNameError:
            continue
        sid = name.session_id
        if sid is None:
            # A token cut to fit the name limit names its id by digest: only the whole id
            # finds it (ADR 0016).
            if _token_of(query, name.agent_name) == name.session_token:
                matches.setdefault(query, []).append(path)
        elif sid.startswith(query):
            matches.setdefault(sid, []).append(path)
    # An exact id wins over longer ids it prefixes.
    chosen = {query: matches[query]} if query in matches else matches
    if not chosen:
        blind = (
            f"; {len(unreadable)} director{'y' if len(unreadable) == 1 else 'ies'} under it "
            f"could not be read ({unreadable[0].filename}: {unreadable[0].strerror}), so it may "
            "be there"
            if unreadable
            else ""
        )
        raise SessionNotFoundError(
            f"no session under {base} has an id starting with {query!r} (`rollout ls` lists "
            f"them){blind}",
            root=base,
            query=query,
        )
    if len(chosen) > 1:
        candidates = tuple((sid, p) for sid, paths in chosen.items() for p in paths)
        raise AmbiguousSessionError(
            f"session id prefix {query!r} is ambiguous under {base}: {len(chosen)} sessions "
            f"match: {_listed((f'{s} ({p.name})' for s, p in candidates), len(candidates))}; "
            "give more characters or the path",
            root=base,
            query=query,
            candidates=candidates,
        )
    ((sid, paths),) = chosen.items()
    if len(paths) > 1:
        raise DuplicateSessionError(
            f"{len(paths)} files under {base} claim session id {sid!r}: "
            f"{_listed((_relative(p, base) for p in paths), len(paths))}; a session id "
            "names one rollout: move or rename all but one (`rollout verify --all` fails them)",
            root=base,
            query=query,
            session_id=sid,
            paths=tuple(paths),
        )
    found = paths[0]
    if isinstance(found, Path) and not found.resolve().is_relative_to(Path(base).resolve()):
        # The walk already skips such links; a resolver must not rely on that alone.
        raise SessionLookupError(
            f"{found} points outside the root {base}; it is not read", root=base, query=query
        )
    return found
