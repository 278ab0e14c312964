"""`rollout prune` and `rollout restore`: retention that never loses a session by surprise.

Pruning moves sessions into the root's trash (``.trash``), with one audit line each; restoring
moves one back; `prune --empty-trash` is the only deletion (ADR 0133).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.records import StopKind
from replay.cli._app import console, exit_with, state, subcommand
from replay.cli._errors import EXIT_ERROR, EXIT_USAGE, CliError
from replay.cli._json import dump
from replay.cli._paths import existing_root, parse_age, path_json
from replay.cli.commands.reading import shown_path
from replay.lookup import SessionLookupError
from replay.retention import Selection, empty_trash, prune, restore
from replay.trash import TrashError

__all__ = ["prune_cmd", "restore_cmd"]

_LABELS = sorted({k.value for k in StopKind} | {"killed", "unknown"})


def _selection_json(sel: Selection) -> dict[str, Any]:
    return {
        "path": path_json(sel.entry.path),
        "session_id": sel.entry.session_id,
        "why": sel.why,
        "held": sel.held,
    }


@subcommand("prune", json_output=True, short_help="Move old sessions to the trash (logged).")
@click.argument("sessions", nargs=-1, metavar="[PATH|SESSION_ID]...")
@click.option("--older-than", metavar="AGE", help="Last written more than AGE ago (30d, 12h).")
@click.option(
    "--stop-kind",
    "stop_kinds",
    multiple=True,
    type=click.Choice(_LABELS),
    help="Stopped with this kind (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be done; touch nothing.")
@click.option(
    "--empty-trash", "empty", is_flag=True, help="Delete what was pruned over --older-than ago."
)
def prune_cmd(
    sessions: tuple[str, ...],
    older_than: str | None,
    stop_kinds: tuple[str, ...],
    dry_run: bool,
    empty: bool,
) -> None:
    """Move sessions into the trash inside the root, each with a line in its audit log (what,
    when, why, sha256, this command line). Nothing is deleted.

    Sessions match --older-than (last written) and --stop-kind, or are named. A session a
    writer holds is never pruned; one with forks that read it or unfinished delegated children
    is kept unless named. `rollout restore` brings one back. With --empty-trash, delete for
    good what was pruned more than --older-than ago: the only deletion, also logged.
    """
    _prune(sessions, older_than, stop_kinds, dry_run, empty)


def _prune(
    sessions: tuple[str, ...],
    older_than: str | None,
    stop_kinds: tuple[str, ...],
    dry_run: bool,
    empty: bool,
) -> None:
    opts = state()
    root = existing_root(opts.local_root("prune"))
    command = opts.argv
    if empty:
        if sessions or stop_kinds:
            raise CliError("--empty-trash takes only --older-than (and --dry-run)", EXIT_USAGE)
        if older_than is None:
            raise CliError("--empty-trash needs --older-than AGE (0d for all)", EXIT_USAGE)
        kept: list[tuple[Path, str]] = []
        try:
            gone = empty_trash(
                root,
                older_than=parse_age(older_than),
                command=command,
                dry_run=dry_run,
                on_kept=lambda p, why: kept.append((p, why)),
            )
        except TrashError as exc:
            raise CliError(str(exc.strerror or exc)) from None
        if opts.json:
            click.echo(
                dump(
                    {
                        "root": path_json(root),
                        "dry_run": dry_run,
                        "deleted": [{"path": path_json(p), "why": w} for p, w in gone],
                        "kept": [{"path": path_json(p), "why": w} for p, w in kept],
                    }
                )
            )
            return
        out = console()
        verb = "would delete" if dry_run else "deleted"
        for path, why in gone:
            out.print(f"{verb} {shown_path(path, root)} ({why})", markup=False, highlight=False)
        for path, why in kept:
            out.print(f"kept {shown_path(path, root)}: {why}", style="yellow", markup=False)
        out.print(f"{len(gone)} session(s) {verb} from the trash", style="dim")
        return
    if not sessions and older_than is None and not stop_kinds:
        raise CliError(
            "prune chooses nothing by default: give --older-than AGE, --stop-kind KIND or "
            "sessions to prune",
            EXIT_USAGE,
        )
    if sessions and (older_than is not None or stop_kinds):
        raise CliError("give sessions to prune, or rules to choose them, not both", EXIT_USAGE)
    named = [opts.local_target(s, "prune") for s in sessions]
    try:
        plan = prune(
            root,
            older_than=parse_age(older_than) if older_than is not None else None,
            stop_kinds=frozenset(stop_kinds),
            named=named,
            command=command,
            dry_run=dry_run,
        )
    except TrashError as exc:
        raise CliError(str(exc.strerror or exc)) from None
    if opts.json:
        click.echo(
            dump(
                {
                    "root": path_json(root),
                    "dry_run": dry_run,
                    "pruned": [_selection_json(s) for s in plan.pruned],
                    "held": [_selection_json(s) for s in plan.held],
                    "failed": [_selection_json(s) for s in plan.failed],
                }
            )
        )
        if plan.failed:
            exit_with(EXIT_ERROR)
        return
    out = console()
    verb = "would prune" if dry_run else "pruned"
    for sel in plan.pruned:
        out.print(
            f"{verb} {sel.entry.session_id} {shown_path(sel.entry.path, root)} ({sel.why})",
            markup=False,
            highlight=False,
        )
    for sel in plan.held:
        out.print(
            f"kept {sel.entry.session_id} {shown_path(sel.entry.path, root)}: {sel.held}",
            style="yellow",
            markup=False,
            highlight=False,
        )
    for sel in plan.failed:
        out.print(
            f"not pruned {sel.entry.session_id} {shown_path(sel.entry.path, root)}: {sel.held}",
            style="red",
            markup=False,
            highlight=False,
        )
    out.print(
        f"{len(plan.pruned)} session(s) {verb}, {len(plan.held)} kept"
        + (f", {len(plan.failed)} failed" if plan.failed else "")
        + ("" if dry_run else "; `rollout restore SESSION_ID` brings one back"),
        style="dim",
    )
    if plan.failed:
        exit_with(EXIT_ERROR)


@subcommand("restore", json_output=True, short_help="Bring a pruned session back.")
@click.argument("session", metavar="SESSION_ID")
def restore_cmd(session: str) -> None:
    """Move a pruned session (found by id or prefix in the trash) back where it was, with a
    line in the audit log. `rollout ls --trash` lists what the trash holds."""
    opts = state()
    root = existing_root(opts.local_root("restore"))
    try:
        path = restore(root, session, command=opts.argv)
    except (SessionLookupError, ValueError) as exc:
        raise CliError(f"the trash: {exc}") from None
    except TrashError as exc:
        raise CliError(str(exc.strerror or exc)) from None
    if opts.json:
        click.echo(dump({"root": path_json(root), "path": path_json(path)}))
        return
    console().print(f"restored {shown_path(path, root)}", markup=False, highlight=False)
