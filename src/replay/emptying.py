"""Emptying the trash of a root: the only deletion retention does (ADR 0133).

Each deletion is logged before it is done, holds the file while it is hashed and removed (a
writer that took the session up keeps it), and removes only the bytes its prune logged.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from replay.recovery import actions, recover
from replay.sessions import iter_rollout_paths
from replay.trash import (
    AuditEntry,
    FileHeldError,
    append_audit,
    command_text,
    now,
    relative_to_root,
    trash_files,
    trash_lock,
)
from replay.trash_held import held_as_pruned, held_file_saying, same_file

__all__ = ["empty_trash"]


def _age(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.0f} day(s)" if days >= 1 else f"{seconds / 3600:.1f} hour(s)"


def empty_trash(
    root: str | os.PathLike[str],
    *,
    older_than: timedelta,
    command: Sequence[str] = (),
    dry_run: bool = False,
    at: datetime | None = None,
    on_kept: Callable[[Path, str], None] | None = None,
) -> list[tuple[Path, str]]:
    """Delete from the trash the sessions pruned longer than ``older_than`` ago, each after its
    audit line; return ``(file, why)`` for each. The only deletion retention does.

    A file without a prune on record counts as in the trash since its last status change
    (a move sets it: never older than it is). A file a writer has open, or whose bytes are not
    those its prune logged, is kept; ``on_kept`` hears of each, with why.
    """
    base = Path(root)
    lock = contextlib.nullcontext() if dry_run else trash_lock(base)
    out: list[tuple[Path, str]] = []
    with lock:
        if not dry_run:
            recover(base, command)
        last = actions(base)[1]
        when = at or now()
        for path in sorted(iter_rollout_paths(trash_files(base))):
            inside = relative_to_root(path, base)
            entry = last.get(inside)
            pruned = entry if entry is not None and entry.action == "prune" else None
            try:
                since = pruned.at if pruned else _status_changed(path)
            except OSError:
                continue  # gone meanwhile
            age = when - since
            if age < older_than:
                continue
            why = f"in the trash for {_age(age.total_seconds())}" + (
                "" if pruned else " (no prune on record: counted from its last status change)"
            )
            try:
                gone = _delete_one(base, path, inside, pruned, why, command, dry_run)
            except FileHeldError as exc:
                if on_kept is not None:
                    on_kept(path, exc.strerror or str(exc))
                continue
            except FileNotFoundError:
                continue
            if gone:
                out.append((path, why))
    return out


def _status_changed(path: Path) -> datetime:
    return datetime.fromtimestamp(os.stat(path, follow_symlinks=False).st_ctime, UTC)


def _delete_one(
    root: Path,
    path: Path,
    inside: str,
    pruned: AuditEntry | None,
    why: str,
    command: Sequence[str],
    dry_run: bool,
) -> bool:
    with held_file_saying(path, inside, "Kept", _HELD_REMEDY) as fd:
        # Not "restore it": restore refuses these very bytes.
        sha, size = held_as_pruned(
            fd,
            pruned,
            path,
            inside,
            "Kept: copy it out by hand if it is wanted as it is, or remove it by hand",
            FileHeldError,
        )
        if dry_run:
            return True
        append_audit(
            root,
            AuditEntry(
                action="delete",
                at=now(),
                path=pruned.path
                if pruned is not None
                else relative_to_root(path, trash_files(root)),
                trash_path=inside,
                session_id=pruned.session_id if pruned is not None else None,
                digest=sha,
                size=size,
                why=why,
                command=command_text(tuple(command)),
            ),
        )
        if not same_file(path, fd):
            raise FileNotFoundError(errno.ENOENT, "replaced meanwhile", os.fspath(path))
        path.unlink()
    return True


_HELD_REMEDY: Final = {
    errno.ELOOP: "remove the link by hand (emptying never deletes through a link)",
    errno.EBUSY: "close the writer that has it open, then empty the trash again",
}
