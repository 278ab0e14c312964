"""The `rollout` command: list, show, verify, replay, tree, schema and demo (ADR 0040).

Exit statuses: 0 ok; 1 an error or a failed verification; 2 a wrong command line; 3 `replay
--budget` over budget (the hand-off report is printed). Every failure is one line on stderr.
rich is imported inside the commands, so importing this module (or ``replay``) stays light.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import attrs
import click

from replay import (
    Eligibility,
    Replay,
    ReplayTooLarge,
    SessionEntry,
    SessionNode,
    StopFacts,
    handoff_report,
    list_sessions,
    read_replay,
    resume_eligibility,
    session_tree,
)
from replay._cli_json import (
    degradation_json,
    dump,
    eligibility_json,
    messages_json,
    stop_json,
    time_json,
)
from replay._cli_paths import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_OVER_BUDGET,
    EXIT_USAGE,
    EXIT_VERIFY_FAILED,
    CliError,
    existing_root,
    parse_since,
    resolve_root,
    resolve_target,
    rollout_files,
)
from replay._cli_render import (
    json_safe,
    render_degradations,
    render_transcript,
    safe_console,
    sessions_table,
    short_id,
    short_time,
    terminal_safe,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ledger.damage import Degradation
    from ledger.records import SessionMeta

__all__ = ["cli", "main"]

_DEBUG_ENV = "ROLLOUT_DEBUG"
_PIPE_WIDTH = 160
_ORDER = ("ls", "show", "verify", "replay", "tree", "schema", "demo")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(prog: str, message: str, code: int) -> int:
    click.echo(terminal_safe(f"{prog}: error: {_one_line(message)}"), err=True)
    return code


class _RolloutGroup(click.Group):
    """A group whose failures are one line on stderr and an exit status, never a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        # The order an operator meets them in, not the alphabet.
        known = [c for c in _ORDER if c in self.commands]
        return known + sorted(set(self.commands) - set(known))

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        prog = prog_name or "rollout"
        code = self._run(args, prog, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(
        self, args: Sequence[str] | None, prog: str, complete_var: str | None, **extra: Any
    ) -> int:
        try:
            rv = super().main(args, prog, complete_var, standalone_mode=False, **extra)
        except CliError as exc:
            return _fail(prog, exc.message, exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else prog
            hint = f" (see '{where} --help')" if exc.ctx is not None else ""
            return _fail(where, exc.format_message() + hint, EXIT_USAGE)
        except click.ClickException as exc:
            return _fail(prog, exc.format_message(), exc.exit_code)
        except click.Abort:
            click.echo(f"{prog}: interrupted", err=True)
            return 130
        except BrokenPipeError:
            # `rollout ls | head`: the reader went away; say nothing more.
            _silence_stdout()
            return EXIT_ERROR
        except OSError as exc:
            return _fail(prog, _describe_os_error(exc), EXIT_ERROR)
        except Exception as exc:
            if os.environ.get(_DEBUG_ENV):
                raise
            return _fail(
                prog,
                f"internal error: {type(exc).__name__}: {exc} "
                f"(set {_DEBUG_ENV}=1 to see the traceback, and please report it)",
                EXIT_ERROR,
            )
        return rv if isinstance(rv, int) else EXIT_OK


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _describe_os_error(exc: OSError) -> str:
    what = exc.strerror or type(exc).__name__
    return f"{exc.filename}: {what}" if exc.filename else what


class _Ctx:
    """What the group hands to its commands."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def existing_root(self) -> Path:
        return existing_root(self.root)

    def target(self, arg: str) -> Path:
        return resolve_target(self.root, arg)


pass_ctx = click.make_pass_decorator(_Ctx)


@click.group(
    cls=_RolloutGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--root",
    metavar="DIR",
    help="Directory of rollouts [default: $ROLLOUT_HOME, else ~/.rollout].",
)
@click.version_option(package_name="rollout-ledger", prog_name="rollout")
@click.pass_context
def cli(ctx: click.Context, root: str | None) -> None:
    """Inspect, verify and replay the rollouts (append-only JSONL session ledgers) of LLM agents.

    Exit status: 0 ok; 1 error or failed verification; 2 bad usage; 3 replay over budget.
    """
    ctx.obj = _Ctx(resolve_root(root))


def _exit(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


@cli.command()
def schema() -> None:
    """Print the JSON Schema of one rollout line."""
    from ledger.schema import schema_bytes

    click.echo(schema_bytes().decode(), nl=False)


def _console(stderr: bool = False) -> Console:
    # Colour and width follow the terminal; piped output is plain text, wide enough that
    # table rows are not cut (an inherited COLUMNS describes some other terminal).
    console = safe_console(stderr=stderr, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = _PIPE_WIDTH
    return console


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


# --- ls ------------------------------------------------------------------------------------------


def _entry_json(e: SessionEntry) -> dict[str, Any]:
    cp = e.stop.checkpoint
    return {
        "path": str(e.path),
        "session_id": e.session_id,
        "agent_name": e.agent_name,
        "started_at": time_json(e.started_at),
        "parent_session_id": e.parent_session_id,
        "delegation_id": e.delegation_id,
        "size": e.size,
        "messages": cp.message_count if cp is not None else None,
        "stop": stop_json(e.stop),
        "eligibility": eligibility_json(e.eligibility),
        "flags": [str(f) for f in e.flags],
        "notes": list(e.notes),
    }


def _newest_first(entries: Sequence[SessionEntry]) -> list[SessionEntry]:
    # Sessions without a known start go last; ties keep a stable order by path.
    dated = sorted(
        (e for e in entries if e.started_at is not None),
        key=lambda e: (e.started_at, str(e.path)),
        reverse=True,
    )
    return dated + [e for e in entries if e.started_at is None]


@cli.command("ls")
@click.option("--agent", metavar="NAME", help="Only sessions of this agent.")
@click.option("--resumable", is_flag=True, help="Only sessions replayable as-is.")
@click.option("--since", metavar="WHEN", help="Only sessions started since (2h, 3d, 2026-12-01).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a table.")
@pass_ctx
def ls_cmd(obj: _Ctx, agent: str | None, resumable: bool, since: str | None, as_json: bool) -> None:
    """List the sessions under the root, newest first.

    Reads only each file's first line and its tail: stop kind, whether it can be resumed
    as-is, and the message count of its last checkpoint. Sessions whose stop is unknown are
    listed as unknown, never hidden.
    """

    threshold = parse_since(since) if since is not None else None
    entries = _newest_first(list_sessions(obj.existing_root()))
    if agent is not None:
        entries = [e for e in entries if e.agent_name == agent]
    if resumable:
        entries = [e for e in entries if e.eligibility.replayable]
    if threshold is not None:
        entries = [e for e in entries if e.started_at is not None and e.started_at >= threshold]
    if as_json:
        click.echo(dump({"root": str(obj.root), "sessions": [_entry_json(e) for e in entries]}))
        return
    console = _console()
    if not entries:
        console.print(f"no sessions under {obj.root} match", style="dim")
        return
    console.print(sessions_table(entries))


# --- tree ----------------------------------------------------------------------------------------


def _node_json(node: SessionNode) -> dict[str, Any]:
    return {**_entry_json(node.entry), "children": [_node_json(c) for c in node.children]}


def _node_label(e: SessionEntry, focus: Path | None) -> Text:
    from rich.text import Text

    label = Text(short_id(e.session_id), style="bold cyan")
    if focus is not None and e.path == focus:
        label.stylize("reverse")
    label.append(f" {e.agent_name or '-'}")
    if e.delegation_id:
        label.append(f"  via call {e.delegation_id}", style="dim")
    label.append(f"  {e.stop.describe()}")
    label.append(
        "  resumable" if e.eligibility.replayable else f"  not resumable ({e.eligibility.tier})",
        style="green" if e.eligibility.replayable else "yellow",
    )
    for f in e.flags:
        label.append(f"  [{f}]", style="bold yellow")
    return label


def _contains(node: SessionNode, path: Path) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.entry.path == path:
            return True
        stack.extend(n.children)
    return False


@cli.command("tree", short_help="Show the delegation tree of parents and children.")
@click.argument("session", required=False, metavar="[SESSION_ID]")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a tree.")
@pass_ctx
def tree_cmd(obj: _Ctx, session: str | None, as_json: bool) -> None:
    """Show the delegation tree: each session with the children it delegated to.

    With SESSION_ID (or a prefix), only the tree that holds that session. Children whose
    coordinates are missing, or whose parent is not under the root, are listed apart as
    detached and flagged; they are never shown as roots.
    """

    root = obj.existing_root()
    focus = obj.target(session).resolve() if session is not None else None
    entries = [attrs.evolve(e, path=e.path.resolve()) for e in list_sessions(root)]
    tree = session_tree(_newest_first(entries)[::-1])
    roots, detached = list(tree.roots), list(tree.detached)
    if focus is not None:
        roots = [n for n in roots if _contains(n, focus)]
        detached = [n for n in detached if _contains(n, focus)]
    if as_json:
        click.echo(
            dump(
                {
                    "root": str(obj.root),
                    "roots": [_node_json(n) for n in roots],
                    "detached": [_node_json(n) for n in detached],
                }
            )
        )
        return
    console = _console()
    _print_forest(console, roots, focus, "sessions")
    if detached:
        _print_forest(
            console,
            detached,
            focus,
            "detached: delegated children without a parent under the root or without coordinates",
        )


def _print_forest(
    console: Console, nodes: Sequence[SessionNode], focus: Path | None, title: str
) -> None:
    from rich.tree import Tree

    forest = Tree(title, style="bold", guide_style="dim")
    for top in nodes:
        stack = [(forest.add(_node_label(top.entry, focus)), top)]
        while stack:
            branch, node = stack.pop()
            for child in node.children:
                stack.append((branch.add(_node_label(child.entry, focus)), child))
    console.print(forest)


# --- show ----------------------------------------------------------------------------------------


@cli.command(short_help="Show a transcript (or the raw records).")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option("--raw", is_flag=True, help="Print the records (JSONL) instead of the transcript.")
@click.option("--full", is_flag=True, help="Do not fold reasoning, arguments or tool output.")
@pass_ctx
def show(obj: _Ctx, session: str, raw: bool, full: bool) -> None:
    """Show a session's transcript: roles, folded reasoning, tool calls with their outputs.

    Degradations (what could not be restored exactly) are highlighted. With --raw, print the
    records one per line as the codec encodes them; damaged lines are reported on stderr.
    """
    path = obj.target(session)
    if raw:
        _show_raw(path)
        return

    rep = read_replay(path, whole_file=True)
    console = _console()
    _session_header(
        console, obj.root, path, rep.meta, rep.stop, resume_eligibility(rep.stop, meta=rep.meta)
    )
    _checkpoint_line(console, rep)
    console.rule(style="dim")
    render_transcript(console, rep.messages, full=full)
    if rep.degraded:
        console.rule("degradations", style="yellow")
        render_degradations(console, rep.degraded)


def _show_raw(path: Path) -> None:
    from ledger.codec import encode_record
    from ledger.damage import Degradation
    from ledger.reader import iter_file_entries
    from ledger.records import UnknownRecord

    out = sys.stdout.buffer
    for _, entry in iter_file_entries(path):
        if isinstance(entry, Degradation):
            click.echo(terminal_safe(f"rollout show: {path.name}: {entry}"), err=True)
        else:
            line = entry.raw if isinstance(entry, UnknownRecord) else encode_record(entry)
            out.write(json_safe(line.decode()).encode() + b"\n")
    out.flush()


def _session_header(
    console: Console,
    root: Path,
    path: Path,
    meta: SessionMeta | None,
    stop: StopFacts,
    eligibility: Eligibility,
) -> None:
    from rich.text import Text

    title = Text("session ", style="bold")
    title.append(meta.session_id if meta else "(no session_meta)", style="bold cyan")
    if meta is not None and meta.agent_name:
        title.append(f"  agent {meta.agent_name}")
    console.print(title)
    facts = [("file", _rel(path, root))]
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
    facts.append(("stop", stop.describe() + (f": {stop.reason}" if stop.reason else "")))
    verdict = "yes" if eligibility.replayable else "no"
    facts.append(("resumable", f"{verdict} ({eligibility.reason})"))
    for k, v in facts:
        line = Text(f"  {k:<13}", style="dim")
        line.append(v)
        console.print(line)


def _checkpoint_line(console: Console, rep: Replay) -> None:
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
    console.print(text)
    console.print(
        Text(
            f"  {'messages':<13}{len(rep.messages)} (about {rep.estimated_tokens} tokens"
            + (f", {rep.compactions} compaction(s)" if rep.compactions else "")
            + ")",
            style="dim",
        )
    )


# --- verify --------------------------------------------------------------------------------------

# Inexactness that does not mean the file is damaged or was edited: a session still running or
# resumed (no checkpoint, records after it), a compaction, a cap, a newer writer's extensions.
# Everything else, including kinds added later, fails verification (default-deny).
_NOT_DAMAGE = frozenset(
    {
        "no_checkpoint",
        "after_checkpoint",
        "rebuilt_from_compacted",
        "message_cap",
        "unknown_record",
        "newer_format",
    }
)
_PROGRESS_FROM = 8


def _verdict(rep: Replay) -> tuple[str, tuple[Degradation, ...]]:
    failures = tuple(d for d in rep.degraded if str(d.kind) not in _NOT_DAMAGE)
    if failures:
        return "failed", failures
    if rep.verified:
        return "ok", ()
    return "unverified", tuple(rep.degraded)


@cli.command(short_help="Check digests and damage; exit 1 if any session fails.")
@click.argument("paths", nargs=-1, metavar="[PATH|SESSION_ID]...")
@click.option("--all", "all_", is_flag=True, help="Verify every rollout under the root.")
@click.option("--strict", is_flag=True, help="Fail sessions that have no checkpoint to verify.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of lines.")
@pass_ctx
def verify(obj: _Ctx, paths: tuple[str, ...], all_: bool, strict: bool, as_json: bool) -> None:
    """Check each session's digest against its file and look for damage.

    One line per session: ok (digest verified, no damage), unverified (nothing to verify
    against, e.g. no checkpoint yet) or FAILED (digest mismatch or damaged lines). Exit status
    1 when any session failed (with --strict, also when any is unverified).
    """

    if all_ and paths:
        raise click.UsageError("give PATH/SESSION_ID arguments or --all, not both")
    if not all_ and not paths:
        raise click.UsageError("give at least one PATH or SESSION_ID, or --all")
    files = list(rollout_files(obj.existing_root())) if all_ else [obj.target(p) for p in paths]
    console = _console()
    results: list[dict[str, Any]] = []
    failed = 0

    def check(path: Path, emit: Callable[[Text], None]) -> None:
        nonlocal failed
        rep = read_replay(path, whole_file=True)
        status, why = _verdict(rep)
        if status == "failed" or (strict and status == "unverified"):
            failed += 1
        results.append(
            {
                "path": str(path),
                "session_id": rep.session_id,
                "status": status,
                "verified": rep.verified,
                "digest": rep.checkpoint.digest if rep.checkpoint else None,
                "messages": rep.total_messages,
                "degraded": [degradation_json(d) for d in rep.degraded],
            }
        )
        if not as_json:
            emit(_verify_line(path, obj.root, rep, status, why))

    show_progress = not as_json and len(files) >= _PROGRESS_FROM and console.is_terminal
    if show_progress:
        from rich.progress import Progress

        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("verifying", total=len(files))
            for path in files:
                check(path, progress.console.print)
                progress.advance(task)
    else:
        for path in files:
            check(path, console.print)
    if as_json:
        click.echo(dump({"ok": failed == 0, "failed": failed, "sessions": results}))
    elif len(files) != 1:
        console.print(f"{len(files)} session(s) checked, {failed} failed")
    if failed:
        _exit(EXIT_VERIFY_FAILED)


def _verify_line(
    path: Path, root: Path, rep: Replay, status: str, why: tuple[Degradation, ...]
) -> Text:
    from rich.text import Text

    style = {"ok": "green", "unverified": "yellow", "failed": "bold red"}[status]
    line = Text(f"{status.upper():<10} ", style=style)
    line.append(f"{short_id(rep.session_id):<9}")
    line.append(_rel(path, root), style="dim")
    if status == "ok" and rep.checkpoint is not None:
        line.append(f"  {rep.checkpoint.message_count} messages, {rep.checkpoint.digest[:19]}")
    elif why:
        more = f" (+{len(why) - 1} more)" if len(why) > 1 else ""
        line.append(f"  {why[0]}{more}")
    return line


# --- replay --------------------------------------------------------------------------------------


@cli.command("replay", short_help="Rebuild a conversation exactly (JSON with --json).")
@click.argument("session", metavar="PATH|SESSION_ID")
@click.option(
    "--budget", type=click.IntRange(min=0), metavar="N", help="Token budget; over it, exit 3."
)
@click.option("--max-messages", type=click.IntRange(min=0), metavar="N", help="Keep the last N.")
@click.option("--json", "as_json", is_flag=True, help="The replay as one JSON document.")
@pass_ctx
def replay_cmd(
    obj: _Ctx, session: str, budget: int | None, max_messages: int | None, as_json: bool
) -> None:
    """Rebuild a session's conversation exactly, as a framework would to resume it.

    With --json: one document with the messages in the record format's JSON, the verification
    and degradations, and, when over --budget, the hand-off report (Markdown). Exit status: 0
    ok; 1 the file failed verification; 3 over budget (the hand-off report is printed).
    """

    path = obj.target(session)
    try:
        rep = read_replay(path, token_budget=budget, max_messages=max_messages)
        over = False
    except ReplayTooLarge as exc:
        rep, over = exc.replay, True
    report = _handoff(rep) if over else None
    status, _ = _verdict(rep)
    eligibility = resume_eligibility(rep.stop, meta=rep.meta)
    if as_json:
        click.echo(
            dump(
                {
                    "path": str(path),
                    "session_id": rep.session_id,
                    "verified": rep.verified,
                    "status": status,
                    "estimated_tokens": rep.estimated_tokens,
                    "budget": budget,
                    "over_budget": over,
                    "total_messages": rep.total_messages,
                    "compactions": rep.compactions,
                    "stop": stop_json(rep.stop),
                    "eligibility": eligibility_json(eligibility),
                    "degraded": [degradation_json(d) for d in rep.degraded],
                    "messages": messages_json(rep.messages),
                    "handoff_report": report,
                }
            )
        )
    else:
        console = _console()
        _session_header(console, obj.root, path, rep.meta, rep.stop, eligibility)
        _checkpoint_line(console, rep)
        render_degradations(console, rep.degraded)
        if report is not None:
            console.print(
                f"over the budget of {budget} tokens: hand-off report follows", style="bold yellow"
            )
            click.echo(terminal_safe(report))
    if status == "failed":
        _exit(EXIT_VERIFY_FAILED)
    if over:
        _exit(EXIT_OVER_BUDGET)


def _handoff(rep: Replay) -> str:

    return handoff_report(rep)


# --- demo --------------------------------------------------------------------------------------


@cli.command(short_help="Write a sample session, then list, verify, replay and resume it.")
@pass_ctx
def demo(obj: _Ctx) -> None:
    """Write a realistic session under the root, then list, verify, replay and resume it.

    A coding agent with a system prompt, user turns, signed reasoning, tool calls, a delegated
    child session in its own file, a compaction and a pause. Creates the root if needed.
    """
    from replay._cli_demo import run_demo

    obj.root.mkdir(parents=True, exist_ok=True)
    run_demo(_console(), obj.root, _how_invoked())


def _how_invoked() -> str:
    """The command as the user can type it again: `rollout` when on PATH, else its path."""
    import shutil

    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "__main__.py":
        return "python -m replay"
    if argv0 is None or argv0.name != "rollout":
        return "rollout"
    found = shutil.which("rollout")
    if found is not None and Path(found).resolve() == argv0.resolve():
        return "rollout"
    try:
        return str(argv0.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(argv0)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: run the command and exit with its status."""
    cli.main(args=argv, prog_name="rollout")
