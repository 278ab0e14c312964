"""Forks on the read side: finding a fork's source, its inherited conversation, usage totals.

A fork's file holds only its own records; replay adds the conversation it inherits, read by
:func:`ledger.lineage.read_inherited` (each source once, up to its fork point, checked against
the recorded digest). This module supplies the locator: the path the fork recorded (inside the
root, when a root is given), else the source found by its id under the root with
:func:`replay.find_session`, from file names only (ADR 0130).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from ledger.lineage import Inherited, Located, Locator, names_session, read_inherited
from ledger.reader import rebuild
from ledger.records import ForkOrigin
from ledger.reducer import ReplayState, UsageTotals
from replay._files import open_rollout
from replay._location import Location, ObjectURL
from replay.lookup import SessionLookupError, find_session

__all__ = ["inherited_for", "root_locator", "session_usage", "store_locator", "total_usage"]

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def root_locator(root: str | os.PathLike[str] | None = None) -> Locator:
    """A locator that follows the recorded path, then searches ``root`` by id.

    Without a root, each fork's own directory (and below) is searched. With one, a recorded
    path that leads outside it is not followed.
    """
    base = None if root is None else Path(root)

    def locate(origin: ForkOrigin, fork_path: Path | str) -> Located | None:
        if not isinstance(fork_path, Path):
            return None
        where = base if base is not None else fork_path.parent
        if origin.path:
            candidate = Path(os.path.normpath(fork_path.parent / origin.path))
            if (
                names_session(candidate.name, origin.session_id)
                and candidate.is_file()
                and (base is None or _inside(candidate, base))
            ):
                return Located(candidate)
        try:
            found = find_session(where, origin.session_id)
        except (SessionLookupError, OSError):
            return None
        # find_session also answers a prefix: only the exact id is the source.
        if not isinstance(found, Path) or not names_session(found.name, origin.session_id):
            return None
        return Located(found, moved=True)

    return locate


def store_locator(root: str | None = None) -> Locator:
    """A locator for forks stored as objects: the source is searched by id, by object names
    only, under ``root`` (a URL), or under the store's root the fork's URL implies (the folder
    above its day folder, where ``rollout ship`` puts objects, else its own folder).

    The day layout of a store is not the layout the fork recorded its source's path in, so an
    object found by id under its own file name is where it should be (not moved).
    """

    def locate(origin: ForkOrigin, fork_path: Path | str) -> Located | None:
        where = root if root is not None else _store_root(str(fork_path))
        try:
            found = find_session(where, origin.session_id)
        except (SessionLookupError, OSError):
            return None
        if not isinstance(found, str) or not names_session(
            ObjectURL(found).name, origin.session_id
        ):
            return None
        recorded = Path(origin.path).name if origin.path else None
        url = ObjectURL(found)
        return Located(url, moved=recorded != url.name, opener=lambda: open_rollout(url))

    return locate


def _store_root(url: str) -> str:
    folder = url.rstrip("/").rsplit("/", 1)[0]
    parent, _, last = folder.rpartition("/")
    return parent if _DAY.fullmatch(last) and "://" in parent else folder


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def inherited_for(
    state: ReplayState, path: Location, root: str | os.PathLike[str] | None = None
) -> Inherited | None:
    """What the rollout at ``path`` (folded into ``state``) inherits, or ``None`` when it is not
    a fork or compacted since it forked (the compaction holds the whole conversation).

    Sources are read from local files: a fork read from an object store (a URL) reports its
    inherited part missing, saying so.
    """
    meta = state.meta
    if meta is None or meta.fork is None or state.compactions:
        return None
    if not isinstance(path, Path):
        url_root = None if root is None else os.fspath(root)
        if url_root is not None and "://" not in url_root:
            url_root = None  # a local root says nothing of where objects are
        return read_inherited(meta, path, store_locator(url_root))
    return read_inherited(meta, path, root_locator(root))


def session_usage(path: str | os.PathLike[str]) -> UsageTotals:
    """The token usage the rollout at ``path`` records (every line read): its own, never what
    a fork inherits from its source, which the source's file records (ADR 0132)."""
    with open_rollout(path) as f:
        return rebuild(f).usage


def total_usage(usages: Iterable[UsageTotals]) -> UsageTotals:
    """The sum of several sessions' usage; give each file once, and nothing is counted twice."""
    total = UsageTotals()
    for u in usages:
        total = UsageTotals(
            responses=total.responses + u.responses,
            input_tokens=total.input_tokens + u.input_tokens,
            output_tokens=total.output_tokens + u.output_tokens,
            cache_read_tokens=total.cache_read_tokens + u.cache_read_tokens,
            cache_write_tokens=total.cache_write_tokens + u.cache_write_tokens,
            reasoning_tokens=total.reasoning_tokens + u.reasoning_tokens,
            repeated=total.repeated + u.repeated,
        )
    return total
