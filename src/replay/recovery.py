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
    append_audit,
    file_hash,
    move_file,
    now,
    partial_of,
    read_audit,
    relative_to_root,
    trash_files,
)

__all__ = ["actions", "recover", "trash_problems"]


def actions(root: Path) -> tuple[dict[str, AuditEntry], dict[str, AuditEntry]]:
    """Per file in the trash: the last line of the log (what a killed run may have left in
    flight), and the last action still in effect (a ``cancel`` undoes the one before it)."""
    last: dict[str, AuditEntry] = {}
    history: dict[str, list[AuditEntry]] = {}
    for e in read_audit(root)[0]:
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
    run left half done; return what was done, in words. The caller holds the trash's lock."""
    base = Path(root)
    done: list[str] = []
    for e in actions(base)[0].values():
        outside, inside = base / e.path, base / e.trash_path
        with contextlib.suppress(FileNotFoundError):
            partial_of(inside).unlink()
            done.append(f"removed a partial copy of {e.trash_path}")
        there, here = os.path.lexists(inside), os.path.lexists(outside)
        if e.action == "prune":
            if there and here and _same(inside, e.digest) and _same(outside, e.digest):
                outside.unlink()  # a copy across file systems was complete
            elif not there and here and _same(outside, e.digest):
                move_file(outside, inside, e.digest or "")
                done.append(f"finished pruning {e.path}")
            elif not there:
                why = "it changed after the prune was logged" if here else "it is gone"
                _cancel(base, e, f"prune not carried out: {why}; left as it is", command)
                done.append(f"cancelled pruning {e.path}: {why}")
        elif e.action == "restore":
            if there and here and _same(inside, e.digest) and _same(outside, e.digest):
                inside.unlink()
            elif there and not here and _same(inside, e.digest):
                move_file(inside, outside, e.digest or "")
                done.append(f"finished restoring {e.path}")
            elif there:
                _cancel(
                    base,
                    e,
                    "restore not carried out: the file changed; it stays in the trash",
                    command,
                )
                done.append(f"cancelled restoring {e.path}")
        elif e.action == "delete" and there:
            inside.unlink()
            done.append(f"finished deleting {e.trash_path}")
    return done


def _cancel(root: Path, e: AuditEntry, why: str, command: Sequence[str]) -> None:
    append_audit(
        root,
        AuditEntry(
            action="cancel",
            at=now(),
            path=e.path,
            trash_path=e.trash_path,
            session_id=e.session_id,
            why=why,
            command=tuple(command),
        ),
    )


def trash_problems(root: str | os.PathLike[str]) -> list[str]:
    """Where the audit log and the trash disagree (nothing, after any run that was not
    killed, and after the next run of one that was)."""
    base = Path(root)
    problems: list[str] = []
    last = actions(base)[1]
    for inside, e in last.items():
        there = os.path.lexists(base / inside)
        if e.action == "prune" and not there:
            problems.append(f"{inside}: logged as pruned, not in the trash")
        elif e.action != "prune" and there:
            problems.append(f"{inside}: in the trash, but its last logged action is {e.action}")
    for path in iter_rollout_paths(trash_files(base)):
        inside = relative_to_root(path, base)
        if inside not in last:
            problems.append(f"{inside}: in the trash without a line in the audit log")
    return problems
