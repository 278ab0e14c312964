"""The walk of a root: the path of every rollout file under it, found by name, none of them
opened. It stands apart from the listing because the listing is only one of its users: finding
a session by id, recovery, emptying the trash, ``rollout grep`` and shipping to a fleet need the
paths and not the listing's entries, and each meets the same rules for hidden directories,
symlinks and directories that cannot be read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ledger.naming import ROLLOUT_SUFFIX

__all__ = ["WalkError", "iter_rollout_paths", "raise_walk_error"]

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
