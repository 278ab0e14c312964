"""`rollout export SESSION --format md|html [-o FILE]`: a transcript for people (ADR 0111)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from replay.cli._app import state, subcommand
from replay.cli._errors import CliError
from replay.export import ExportFormat, export, export_filename
from replay.replay import read_replay
from replay.sessions import SessionEntry, list_sessions

__all__ = ["export_cmd"]


@subcommand("export", short_help="Export a transcript as Markdown or one safe HTML page.")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in ExportFormat]),
    default=ExportFormat.HTML.value,
    show_default=True,
    help="md: a Markdown transcript; html: one self-contained page (no script, nothing fetched).",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write here ('-' for standard output). Default: <session id>.<md|html> in the "
    "current directory, the name its parent's and children's pages link to.",
)
def export_cmd(session: str, fmt: str, output: str | None) -> None:
    """Export a session as a readable transcript: roles, reasoning folded, tool calls with their
    arguments and outputs, compactions, delegated children linked, degradations shown.

    The HTML page is one file that runs no script and loads nothing, however hostile the
    rollout; its children are found under the root.
    """
    opts = state()
    path = opts.target(session)
    rep = read_replay(path, whole_file=True)
    children: tuple[SessionEntry, ...] = ()
    root = opts.root
    if rep.session_id is not None and (not isinstance(root, Path) or root.is_dir()):
        sid = rep.session_id
        children = tuple(e for e in list_sessions(root) if e.parent_session_id == sid)
    text = export(rep, fmt, sessions=children)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(output) if output else Path(export_filename(rep.session_id or path.stem, fmt))
    try:
        # Never clobber silently what the user did not name.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (0 if output else os.O_EXCL)
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise CliError(f"{target} already exists: pass -o FILE to choose where to write") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    click.echo(f"wrote {target}")
