"""`rollout fork` and `rollout rewind`: branch a conversation, or go back in it (ADRs 0130-0131).

Both append, never rewrite: a fork is a new file whose head names its source; a rewind is one
record in the session's own file. Each leaves its session stopped as paused (a stop point with
a checkpoint), ready to resume.
"""

from __future__ import annotations

import click

from ledger.records import StopKind
from ledger.writer import ForkError, RolloutWriter, WriterError
from replay.cli._app import console, state, subcommand
from replay.cli._errors import CliError
from replay.cli._json import dump, fork_json, inherited_json
from replay.cli._paths import path_json
from replay.cli.commands.reading import shown_path
from replay.lineage import root_locator
from replay.replay import read_replay

__all__ = ["fork_cmd", "rewind_cmd"]


@subcommand("fork", json_output=True, short_help="Start a new session from a session's record.")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option("--at", type=click.IntRange(min=1), metavar="SEQ", help="Fork at this record.")
@click.option(
    "--copy", is_flag=True, help="Copy the inherited conversation in: the fork stands alone."
)
@click.option("--session-id", metavar="ID", help="The fork's session id [default: a new UUID].")
@click.option("--dir", "directory", metavar="DIR", help="Write it here [default: beside it].")
def fork_cmd(
    session: str, at: int | None, copy: bool, session_id: str | None, directory: str | None
) -> None:
    """Start a new session that continues SESSION's conversation as it was at record SEQ (its
    last record by default), stopped as paused and ready to resume.

    Nothing is copied: the fork records the source, the record and the digest there, and
    replay reads the source up to it. With --copy the inherited conversation is written into
    the fork, which then never needs its source.
    """
    opts = state()
    source = opts.local_target(session, "fork")
    root = opts.search_root()
    try:
        with RolloutWriter.fork(
            source,
            directory,
            at=at,
            copy=copy,
            session_id=session_id,
            locate=root_locator(root),
        ) as w:
            origin = w.fork_origin
            assert origin is not None
            w.stop(
                StopKind.PAUSED,
                reason=f"forked from session {origin.session_id} at seq {origin.seq}",
            )
    except (ForkError, WriterError, ValueError) as exc:
        raise CliError(str(exc)) from None
    rep = read_replay(w.path, root=root)
    if opts.json:
        click.echo(
            dump(
                {
                    "path": path_json(w.path),
                    "session_id": w.session_id,
                    "fork": fork_json(origin),
                    "inherited": inherited_json(rep.inherited),
                    "messages": rep.total_messages,
                    "verified": rep.verified,
                }
            )
        )
        return
    console().print(
        f"forked session {origin.session_id} at seq {origin.seq}: new session {w.session_id}, "
        f"{rep.total_messages} message(s), {shown_path(w.path, opts.root)}",
        markup=False,
        highlight=False,
    )


@subcommand("rewind", json_output=True, short_help="Continue a session from an earlier record.")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option(
    "--to", "to", type=int, required=True, metavar="SEQ", help="The record to go back to."
)
@click.option("--reason", default="", metavar="TEXT", help="Why, kept in the rewind record.")
def rewind_cmd(session: str, to: int, reason: str) -> None:
    """Append a rewind to SESSION: its conversation continues from its state at record SEQ.

    The later records stay in the file, shown as abandoned by `rollout show`; the session is
    stopped as paused, ready to resume. SEQ must be a record of the current conversation: not
    before the last compaction, nor inside a range an earlier rewind abandoned (fork there
    instead).
    """
    opts = state()
    path = opts.local_target(session, "rewind")
    why = f"rewound to seq {to}" + (f": {reason}" if reason else "")
    try:
        with RolloutWriter.open(path) as w:
            w.rewind(to=to, reason=reason)
            w.stop(StopKind.PAUSED, reason=why)
    except (WriterError, ValueError) as exc:
        raise CliError(str(exc)) from None
    rep = read_replay(path, root=opts.search_root())
    if opts.json:
        click.echo(
            dump(
                {
                    "path": path_json(path),
                    "session_id": rep.session_id,
                    "to": to,
                    "messages": rep.total_messages,
                    "abandoned": len(rep.abandoned),
                    "verified": rep.verified,
                }
            )
        )
        return
    console().print(
        f"rewound session {rep.session_id} to seq {to}: {rep.total_messages} message(s), "
        f"{len(rep.abandoned)} abandoned (still in the file), stopped as paused",
        markup=False,
        highlight=False,
    )
