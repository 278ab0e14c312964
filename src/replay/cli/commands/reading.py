"""`rollout show` and `rollout replay`: one session's transcript, records or exact replay."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from replay._files import open_rollout
from replay._location import Location, ObjectURL
from replay.cli._app import console, exit_with, state, subcommand
from replay.cli._errors import EXIT_OVER_BUDGET, EXIT_VERIFY_FAILED
from replay.cli._json import (
    degradation_json,
    dump,
    eligibility_json,
    fork_json,
    inherited_json,
    messages_json,
    stop_json,
)
from replay.cli._paths import path_json
from replay.cli._render import (
    json_safe,
    render_degradations,
    render_transcript,
    short_time,
    terminal_safe,
)
from replay.eligibility import Eligibility, resume_eligibility
from replay.handoff import handoff_report
from replay.replay import Replay, ReplayTooLarge, read_replay
from replay.stop import StopFacts
from replay.verdict import Verdict, verify_replay
from replay.view import transcript

if TYPE_CHECKING:
    from rich.console import Console

    from ledger.records import SessionMeta

__all__ = ["checkpoint_line", "replay_cmd", "session_header", "show", "shown_path"]


def shown_path(path: Location, root: Location) -> str:
    """A path for people: relative to the root when it lies inside, else as absolute."""
    if isinstance(path, ObjectURL) or isinstance(root, ObjectURL):
        text, prefix = str(path), str(root).rstrip("/") + "/"
        return text[len(prefix) :] if text.startswith(prefix) else text
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return path_json(path)


@subcommand("show", short_help="Show a transcript (or the raw records).")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option("--raw", is_flag=True, help="Print the records (JSONL) instead of the transcript.")
@click.option("--full", is_flag=True, help="Do not fold reasoning, arguments or tool output.")
def show(session: str, raw: bool, full: bool) -> None:
    """Show a session's transcript: roles, folded reasoning, tool calls with their outputs.

    Degradations (what could not be restored exactly) are highlighted. With --raw, print the
    records one per line as the codec encodes them; damaged lines are reported on stderr.
    """
    opts = state()
    path = opts.target(session)
    if raw:
        _show_raw(path)
        return
    rep = read_replay(path, whole_file=True, root=opts.search_root())
    out = console()
    session_header(
        out, opts.root, path, rep.meta, rep.stop, resume_eligibility(rep.stop, meta=rep.meta)
    )
    checkpoint_line(out, rep)
    out.rule(style="dim")
    shown = transcript(rep)
    render_transcript(
        out,
        [e.message for e in shown],
        full=full,
        abandoned={i: e.abandoned_by for i, e in enumerate(shown) if e.abandoned_by is not None},
    )
    if rep.degraded:
        out.rule("degradations", style="yellow")
        render_degradations(out, rep.degraded)


def _show_raw(path: Location) -> None:
    from ledger.codec import encode_read_record
    from ledger.damage import Degradation
    from ledger.reader import iter_entries
    from ledger.records import UnknownRecord

    stdout = sys.stdout.buffer
    with open_rollout(path) as f:
        for _, entry in iter_entries(f):
            if isinstance(entry, Degradation):
                click.echo(terminal_safe(f"rollout show: {path.name}: {entry}"), err=True)
            else:
                line = entry.raw if isinstance(entry, UnknownRecord) else encode_read_record(entry)
                stdout.write(json_safe(line.decode()).encode() + b"\n")
    stdout.flush()


def session_header(
    out: Console,
    root: Location,
    path: Location,
    meta: SessionMeta | None,
    stop: StopFacts,
    eligibility: Eligibility,
) -> None:
    """The lines above a transcript: session, file, start, model, delegation, stop, resume."""
    from rich.text import Text

    title = Text("session ", style="bold")
    title.append(meta.session_id if meta else "(no session_meta)", style="bold cyan")
    if meta is not None and meta.agent_name:
        title.append(f"  agent {meta.agent_name}")
    out.print(title)
    facts = [("file", shown_path(path, root))]
    if meta is not None:
        facts.append(("started", short_time(meta.started_at)))
        model = " / ".join(x for x in (meta.provider, meta.model) if x)
        if model:
            facts.append(("model", model))
        if meta.parent_session_id or meta.delegation_id:
            facts.append(
                (
                    "delegated by",
                    f"session {meta.parent_session_id or '(missing)'}, "
                    f"call {meta.delegation_id or '(missing)'}",
                )
            )
        if meta.fork is not None:
            copied = ", copied" if meta.fork.copied else ""
            facts.append(
                ("forked from", f"session {meta.fork.session_id} at seq {meta.fork.seq}{copied}")
            )
    facts.append(("stop", stop.describe() + (f": {stop.reason}" if stop.reason else "")))
    verdict = "yes" if eligibility.replayable else "no"
    facts.append(("resumable", f"{verdict} ({eligibility.reason})"))
    for k, v in facts:
        line = Text(f"  {k:<13}", style="dim")
        line.append(v)
        out.print(line)


def checkpoint_line(out: Console, rep: Replay) -> None:
    """Whether the last checkpoint verified, and the size of the conversation."""
    from rich.text import Text

    cp = rep.checkpoint
    if cp is None:
        text = Text("  checkpoint   none: the conversation cannot be verified", style="yellow")
    elif rep.verified:
        text = Text(
            f"  checkpoint   verified, {cp.message_count} messages, {cp.digest}", style="green"
        )
    else:
        text = Text(f"  checkpoint   NOT verified ({cp.digest})", style="bold red")
    out.print(text)
    out.print(
        Text(
            f"  {'messages':<13}{len(rep.messages)} (about {rep.estimated_tokens} tokens"
            + (f", {len(rep.inherited.messages)} inherited" if rep.inherited else "")
            + (f", {rep.compactions} compaction(s) read" if rep.compactions else "")
            + (f", {len(rep.abandoned)} abandoned by rewinds" if rep.abandoned else "")
            + ")",
            style="dim",
        )
    )


@subcommand("replay", json_output=True, short_help="Rebuild a conversation exactly (JSON too).")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option(
    "--budget", type=click.IntRange(min=0), metavar="N", help="Token budget; over it, exit 3."
)
@click.option("--max-messages", type=click.IntRange(min=0), metavar="N", help="Keep the last N.")
def replay_cmd(session: str, budget: int | None, max_messages: int | None) -> None:
    """Rebuild a session's conversation exactly, as a framework would to resume it.

    With --json: one document with the messages in the record format's JSON, the verification
    and degradations, and, when over --budget, the hand-off report (Markdown). Exit status: 0
    ok; 1 the file failed verification; 3 over budget (the hand-off report is printed).
    """
    opts = state()
    path = opts.target(session)
    try:
        rep = read_replay(
            path, token_budget=budget, max_messages=max_messages, root=opts.search_root()
        )
        over = False
    except ReplayTooLarge as exc:
        rep, over = exc.replay, True
    report = handoff_report(rep) if over else None
    status = verify_replay(rep).verdict
    eligibility = resume_eligibility(rep.stop, meta=rep.meta)
    if opts.json:
        click.echo(
            dump(
                {
                    "path": path_json(path),
                    "session_id": rep.session_id,
                    "verified": rep.verified,
                    "status": str(status),
                    "estimated_tokens": rep.estimated_tokens,
                    "budget": budget,
                    "over_budget": over,
                    "total_messages": rep.total_messages,
                    "compactions": rep.compactions,
                    "fork": fork_json(rep.meta.fork if rep.meta is not None else None),
                    "inherited": inherited_json(rep.inherited),
                    "abandoned": len(rep.abandoned),
                    "stop": stop_json(rep.stop),
                    "eligibility": eligibility_json(eligibility),
                    "degraded": [degradation_json(d) for d in rep.degraded],
                    "messages": messages_json(rep.messages),
                    "handoff_report": report,
                }
            )
        )
    else:
        out = console()
        session_header(out, opts.root, path, rep.meta, rep.stop, eligibility)
        checkpoint_line(out, rep)
        render_degradations(out, rep.degraded)
        if report is not None:
            out.print(
                f"over the budget of {budget} tokens: hand-off report follows", style="bold yellow"
            )
            click.echo(terminal_safe(report))
    if status is Verdict.FAILED:
        exit_with(EXIT_VERIFY_FAILED)
    if over:
        exit_with(EXIT_OVER_BUDGET)
