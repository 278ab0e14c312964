"""What a killed prune, restore or emptying left half done: finished, or cancelled saying why.

The audit log (:mod:`replay.trash`) is written before each action, so its last line for a file
says what may have been in flight. :func:`recover` runs first in every prune, restore and
emptying, under the trash's lock; :func:`trash_problems` says where the log and the trash
disagree, which after a run (or the run after a killed one) is nowhere (ADR 0133).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from replay.sessions import iter_rollout_paths
from replay.trash import (
    AuditEntry,
    FileHeldError,
    append_audit,
    command_text,
    move_file,
    now,
    partial_of,
    read_audit,
    relative_to_root,
    safe_entry,
    trash_files,
)
from replay.trash_held import fd_hash, file_hash, held_file

__all__ = ["actions", "cancel_action", "recover", "trash_problems"]


def actions(root: Path) -> tuple[dict[str, AuditEntry], dict[str, AuditEntry]]:
    """Per file in the trash: the last line of the log (what a killed run may have left in
    flight), and the last action still in effect (a ``cancel`` undoes the one before it)."""
    last: dict[str, AuditEntry] = {}
    history: dict[str, list[AuditEntry]] = {}
    for e in read_audit(root)[0]:
        if not safe_entry(e):
            continue  # a line naming a path outside the trash or the root: never acted upon
        last[e.trash_path] = e
        done = history.setdefault(e.trash_path, [])
        if e.action == "cancel":
            if done:
                done.pop()
        else:
            done.append(e)
    return last, {k: v[-1] for k, v in history.items() if v}


def _same(path: Path, sha: str | None) -> bool:
    try:
        return file_hash(path)[0] == sha
    except OSError:
        return False


def recover(root: str | os.PathLike[str], command: Sequence[str] = ()) -> list[str]:
    """Finish, or cancel with a line saying why, every action of the audit log that a killed
    run left half done; return what was done, in words. The caller holds the trash's lock.

    A file is only moved or deleted while it is held (no writer has it open) and has the
    bytes its line logged; one that cannot be (a live session, a full disk) is cancelled, so
    that one stuck line never blocks the next prune, restore or emptying.
    """
    base = Path(root)
    done: list[str] = []
    for e in actions(base)[0].values():
        try:
            said = _finish(base, e, command)
        except OSError as exc:
            why = exc.strerror or str(exc)
            cancel_action(base, e, f"{e.action} not carried out: {why}; left as it is", command)
            said = f"cancelled {e.action} of {e.path}: {why}"
        if said:
            done.append(said)
    return done


def _finish(base: Path, e: AuditEntry, command: Sequence[str]) -> str | None:
    outside, inside = base / e.path, base / e.trash_path
    said = None
    with contextlib.suppress(FileNotFoundError):
        partial_of(inside).unlink()
        said = f"removed a partial copy of {e.trash_path}"
    there, here = os.path.lexists(inside), os.path.lexists(outside)
    if e.action == "prune":
        if there and here and _same(inside, e.digest) and _same(outside, e.digest):
            outside.unlink()  # a copy across file systems was complete
        elif not there and here and _same(outside, e.digest):
            _held_move(outside, inside, e.digest)
            return f"finished pruning {e.path}"
        elif not there:
            why = "it changed after the prune was logged" if here else "it is gone"
            cancel_action(base, e, f"prune not carried out: {why}; left as it is", command)
            return f"cancelled pruning {e.path}: {why}"
    elif e.action == "restore":
        if there and here and _same(inside, e.digest) and _same(outside, e.digest):
            inside.unlink()
        elif there and not here and _same(inside, e.digest):
            _held_move(inside, outside, e.digest)
            return f"finished restoring {e.path}"
        elif there:
            cancel_action(
                base, e, "restore not carried out: the file changed; it stays in the trash", command
            )
            return f"cancelled restoring {e.path}"
    elif e.action == "delete" and there:
        if not _same(inside, e.digest):
            cancel_action(
                base,
                e,
                "delete not carried out: the file in the trash is not the one logged; kept",
                command,
            )
            return f"cancelled deleting {e.trash_path}"
        with held_file(inside):
            inside.unlink()
        return f"finished deleting {e.trash_path}"
    return said


def _held_move(src: Path, dst: Path, digest: str | None) -> None:
    """Move ``src`` while holding it (a writer that took it up since keeps it where it is)."""
    with held_file(src) as fd:
        if fd_hash(fd)[0] != digest:
            raise FileHeldError(0, "it changed after the action was logged", os.fspath(src))
        move_file(src, dst, digest or "")


def cancel_action(root: Path, e: AuditEntry, why: str, command: Sequence[str]) -> None:
    """Append a ``cancel`` line: the action ``e`` announced was not carried out, and why."""
    append_audit(
        root,
        AuditEntry(
            action="cancel",
            at=now(),
            path=e.path,
            trash_path=e.trash_path,
            session_id=e.session_id,
            why=why,
            command=command_text(tuple(command)),
        ),
    )


def trash_problems(root: str | os.PathLike[str]) -> list[str]:
    """Where the audit log and the trash disagree (nothing, after any run that was not
    killed, and after the next run of one that was)."""
    base = Path(root)
    problems: list[str] = [
        f"audit line {n}: names {e.trash_path!r} and {e.path!r}, not a file in the trash and "
        "one in the root: ignored"
        for n, e in enumerate(read_audit(base)[0], 1)
        if not safe_entry(e)
    ]
    last = actions(base)[1]
    for inside, e in last.items():
        there = os.path.lexists(base / inside)
        if e.action == "prune" and not there:
            problems.append(f"{inside}: logged as pruned, not in the trash")
        elif e.action == "prune" and not _same(base / inside, e.digest):
            problems.append(f"{inside}: its bytes are not those pruned (the logged sha256)")
        elif e.action != "prune" and there:
            problems.append(f"{inside}: in the trash, but its last logged action is {e.action}")
    for path in iter_rollout_paths(trash_files(base)):
        inside = relative_to_root(path, base)
        if inside not in last:
            problems.append(f"{inside}: in the trash without a line in the audit log")
    return problems
