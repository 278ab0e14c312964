"""Retention: prune sessions to the root's trash, restore them, empty the trash (ADR 0133).

Nothing is deleted by default. :func:`prune` moves the sessions that match (last written before
a cutoff, stopped with given kinds, or named) into the trash, one audit line per session first.
A session that a live writer holds is never pruned; one with live forks (forks that read it)
or unfinished delegated children is kept unless it is named, or they go with it.
:func:`restore` brings one back; :func:`empty_trash` is the only deletion. Each holds the
trash's lock, and first finishes (or cancels, saying why) whatever a killed run left half done,
so that the audit log and the trash agree (:func:`trash_problems`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

import attrs

from ledger.locking import writer_active
from replay.emptying import empty_trash
from replay.lookup import find_session
from replay.recovery import actions, cancel_action, recover, trash_problems
from replay.sessions import SessionEntry, list_sessions
from replay.trash import (
    AuditEntry,
    FileHeldError,
    TrashError,
    append_audit,
    command_text,
    move_file,
    now,
    relative_to_root,
    trash_files,
    trash_lock,
)
from replay.trash_held import fd_hash, held_as_pruned, held_file, held_file_saying, same_file

__all__ = [
    "PrunePlan",
    "Selection",
    "empty_trash",
    "plan_prune",
    "prune",
    "recover",
    "restore",
    "stop_label",
    "trash_problems",
]


@attrs.frozen
class Selection:
    """A session a prune looked at: why it matched, and why it is kept (``None``: pruned)."""

    entry: SessionEntry
    why: str
    held: str | None = None


@attrs.frozen
class PrunePlan:
    """What a prune does: the sessions it moves to the trash, and those it keeps, with why;
    ``failed`` are those it meant to move and could not (left in place, the reason in
    ``held``: no space in the trash, no permission)."""

    pruned: tuple[Selection, ...] = ()
    held: tuple[Selection, ...] = ()
    failed: tuple[Selection, ...] = ()


def stop_label(e: SessionEntry) -> str:
    """How a session stopped, as `rollout ls` shows it and ``--stop-kind`` names it: its stop
    kind, ``killed`` (records after its last stop point) or ``unknown`` (no stop point)."""
    if e.stop.found and e.stop.killed:
        return "killed"
    return e.stop.stop_kind or ("killed" if e.stop.killed else "unknown")


def _age(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.0f} day(s)" if days >= 1 else f"{seconds / 3600:.1f} hour(s)"


def plan_prune(
    root: str | os.PathLike[str],
    *,
    older_than: timedelta | None = None,
    stop_kinds: Collection[str] = (),
    named: Sequence[Path] = (),
    at: datetime | None = None,
) -> PrunePlan:
    """Decide what a prune of ``root`` moves to the trash; nothing is touched.

    ``named`` sessions (files under the root) are pruned whatever their forks and children;
    otherwise a session matches when it was last written longer than ``older_than`` ago and
    (when ``stop_kinds`` is given) stopped with one of them (:func:`stop_label`). A match is
    kept when a live writer holds it, or when a fork that reads it or an unfinished delegated
    child is not pruned with it.
    """
    _check_rule(older_than, stop_kinds, named)
    when = (at or now()).timestamp()
    entries = list_sessions(root)
    chosen: dict[Path, Selection] = {}
    wanted = {p.resolve() for p in named}
    for e in entries:
        path = e.path
        if not isinstance(path, Path):
            continue  # an object of a fleet: retention is for local roots
        if named:
            if path.resolve() in wanted:
                chosen[path] = Selection(e, "named on the command line")
            continue
        reasons = []
        if older_than is not None:
            age = when - path.stat().st_mtime
            if age < older_than.total_seconds():
                continue
            reasons.append(f"last written {_age(age)} ago")
        if stop_kinds:
            label = stop_label(e)
            if label not in stop_kinds:
                continue
            reasons.append(f"stopped {label}")
        chosen[path] = Selection(e, ", ".join(reasons))
    missing = wanted - {p.resolve() for p in chosen}
    if missing:
        raise TrashError(
            errno.ENOENT,
            f"{sorted(missing)[0]} is not a session under {root} (`rollout ls` lists them); "
            "nothing was pruned",
            os.fspath(sorted(missing)[0]),
        )
    held: dict[Path, Selection] = {}
    for path, sel in list(chosen.items()):
        if writer_active(path):
            held[path] = attrs.evolve(sel, held="a writer has it open: it is a live session")
            del chosen[path]
    if not named:
        _hold_dependencies(entries, chosen, held)
    return PrunePlan(pruned=tuple(chosen.values()), held=tuple(held.values()))


def _check_rule(
    older_than: timedelta | None, stop_kinds: Collection[str], named: Sequence[Path]
) -> None:
    if not named and older_than is None and not stop_kinds:
        raise ValueError(
            "a prune needs a rule (older_than, stop_kinds) or named sessions: it never "
            "chooses sessions by default"
        )


def _hold_dependencies(
    entries: Sequence[SessionEntry], chosen: dict[Path, Selection], held: dict[Path, Selection]
) -> None:
    """Keep every chosen session that a fork reading it, or an unfinished delegated child,
    still needs (unless those go too); holding one may hold its own source, so repeat."""
    needs: dict[str, list[tuple[SessionEntry, str]]] = {}
    for e in entries:
        if e.fork is not None and not e.fork.copied:
            needs.setdefault(e.fork.session_id, []).append((e, "fork"))
        finished = e.stop.terminal is not None and not e.eligibility.replayable
        if e.parent_session_id and not finished:
            needs.setdefault(e.parent_session_id, []).append(
                (e, f"unfinished child ({e.stop.describe()})")
            )
    changed = True
    while changed:
        changed = False
        for path, sel in list(chosen.items()):
            sid = sel.entry.session_id
            staying = [(d, kind) for d, kind in needs.get(sid or "", ()) if d.path not in chosen]
            if sid is None or not staying:
                continue
            shown = ", ".join(f"{kind} {d.session_id}" for d, kind in staying[:3])
            more = f" and {len(staying) - 3} more" if len(staying) > 3 else ""
            held[path] = attrs.evolve(
                sel, held=f"still needed by {shown}{more}; name it to prune it anyway"
            )
            del chosen[path]
            changed = True


def prune(
    root: str | os.PathLike[str],
    *,
    older_than: timedelta | None = None,
    stop_kinds: Collection[str] = (),
    named: Sequence[Path] = (),
    command: Sequence[str] = (),
    dry_run: bool = False,
) -> PrunePlan:
    """Move the sessions :func:`plan_prune` chooses to the trash, each after its audit line.

    Holds the trash's lock (a second prune fails with :class:`~replay.trash.TrashBusyError`)
    and first finishes what a killed run left (:func:`recover`). With ``dry_run``, only plans.
    """
    base = Path(root)
    _check_rule(older_than, stop_kinds, named)
    if dry_run:
        return plan_prune(base, older_than=older_than, stop_kinds=stop_kinds, named=named)
    with trash_lock(base):
        recover(base, command)
        plan = plan_prune(base, older_than=older_than, stop_kinds=stop_kinds, named=named)
        pruned, held, failed = [], list(plan.held), []
        for sel in plan.pruned:
            try:
                _prune_one(base, sel, command)
            except FileHeldError as exc:
                held.append(attrs.evolve(sel, held=exc.strerror))
            except FileNotFoundError:
                held.append(attrs.evolve(sel, held="it is gone since it was listed"))
            except TrashError as exc:
                failed.append(attrs.evolve(sel, held=exc.strerror))
            else:
                pruned.append(sel)
    return PrunePlan(pruned=tuple(pruned), held=tuple(held), failed=tuple(failed))


def _prune_one(root: Path, sel: Selection, command: Sequence[str]) -> None:
    """Log and move one session, holding its file all along (a session resumed since the plan
    is left alone); raises :class:`FileHeldError` when it is left for now, and
    :class:`TrashError` when the move failed (the original left in place, a cancel logged)."""
    src = sel.entry.path
    assert isinstance(src, Path)  # plan_prune chose local files only
    rel = relative_to_root(src, root)
    dst = trash_files(root) / rel
    if not _utf8(rel):
        raise FileHeldError(
            errno.EILSEQ,
            "its path is not valid UTF-8, which the audit log cannot record: rename it",
            os.fspath(src),
        )
    if os.path.lexists(dst):
        raise FileHeldError(
            errno.EEXIST,
            f"the trash already holds a session pruned from {rel}: restore it, or empty the "
            "trash of it, first",
            os.fspath(src),
        )
    with held_file(src) as fd:
        sha, size = fd_hash(fd)
        line = AuditEntry(
            action="prune",
            at=now(),
            path=rel,
            trash_path=relative_to_root(dst, root),
            session_id=sel.entry.session_id,
            digest=sha,
            size=size,
            why=sel.why,
            command=command_text(tuple(command)),
        )
        append_audit(root, line)
        try:
            if not same_file(src, fd):
                raise OSError(errno.ESTALE, "the path names another file now")
            move_file(src, dst, sha)
        except OSError as exc:
            why = exc.strerror or str(exc)
            cancel_action(root, line, f"prune not carried out: {why}; left in place", command)
            raise TrashError(
                exc.errno or errno.EIO,
                f"could not move it to the trash ({why}); it is left in place",
                os.fspath(src),
            ) from None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def restore(
    root: str | os.PathLike[str], session_id_or_prefix: str, *, command: Sequence[str] = ()
) -> Path:
    """Move the trashed session named by id (or prefix) back where it was; return its path.

    Raises :class:`~replay.SessionLookupError` when the trash has no such session, and
    :class:`~replay.trash.TrashError` when a file now stands where it was.
    """
    base = Path(root)
    with trash_lock(base):
        recover(base, command)
        found = find_session(base, session_id_or_prefix, trash=True)
        assert isinstance(found, Path)  # the trash is local
        inside = relative_to_root(found, base)
        pruned = actions(base)[1].get(inside)
        rel = pruned.path if pruned is not None else relative_to_root(found, trash_files(base))
        target = base / rel
        if os.path.lexists(target):
            raise TrashError(
                errno.EEXIST,
                f"cannot restore {inside}: {rel} exists again; move it away first",
                os.fspath(target),
            )
        with held_file_saying(
            found, f"cannot restore {inside}", "Nothing was restored", _HELD_REMEDY
        ) as fd:
            sha, size = held_as_pruned(
                fd,
                pruned,
                found,
                inside,
                "Nothing was restored: copy it out by hand if it is wanted as it is",
            )
            append_audit(
                base,
                AuditEntry(
                    action="restore",
                    at=now(),
                    path=rel,
                    trash_path=inside,
                    session_id=pruned.session_id if pruned else None,
                    digest=sha,
                    size=size,
                    why="restored on request",
                    command=command_text(tuple(command)),
                ),
            )
            move_file(found, target, sha)
    return target


_HELD_REMEDY: Final = {
    errno.ELOOP: "put the pruned file itself in its place, or copy what the link names out by hand",
    errno.EBUSY: "close the writer that has it open, then restore it again",
}
