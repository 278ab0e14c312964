"""`rollout export SESSION --format md|html [-o FILE]`: a transcript for people (ADR 0111)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ledger.codec import RecordDecodeError, decode_record
from ledger.locking import writer_active
from ledger.records import SessionMeta
from ledger.tail import HEAD_LIMIT
from replay._files import open_rollout
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
    rep = read_replay(path, whole_file=True, root=opts.search_root())
    children: tuple[SessionEntry, ...] = ()
    root = opts.root
    if rep.session_id is not None and (not isinstance(root, Path) or root.is_dir()):
        sid = rep.session_id
        listed = list_sessions(root, on_error=opts.walk_error)
        children = tuple(e for e in listed if e.parent_session_id == sid)
    text = export(rep, fmt, sessions=children)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(output) if output else Path(export_filename(rep.session_id or path.stem, fmt))
    if _is_a_rollout(target, path):
        raise CliError(
            f"{target} is a rollout (a session's only source of truth): an export is never "
            "written over one; pass -o with another file"
        )
    try:
        # Never clobber silently what the user did not name.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (0 if output else os.O_EXCL)
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise CliError(f"{target} already exists: pass -o FILE to choose where to write") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    click.echo(f"wrote {target}")


def _is_a_rollout(target: Path, source: object) -> bool:
    """Whether ``target`` is the session's own file, a file a writer holds, or any file whose
    first line is a ``session_meta``."""
    if not os.path.lexists(target):
        return False
    try:
        same = isinstance(source, Path) and os.path.samefile(target, source)
        if same or writer_active(target):
            return True
        with open_rollout(target) as f:
            head = f.readline(HEAD_LIMIT + 1)
        return isinstance(decode_record(head), SessionMeta)
    except (OSError, RecordDecodeError):
        return False
