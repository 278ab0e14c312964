"""`rollout ls` and `rollout tree`: the sessions under the root, read from heads and tails only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from ledger.reducer import UsageTotals
from replay._location import Location, ObjectURL
from replay.cli._app import console, state, subcommand
from replay.cli._json import dump, eligibility_json, fork_json, stop_json, time_json, usage_json
from replay.cli._paths import parse_since, path_json
from replay.cli._render import sessions_table, short_id, short_time
from replay.lineage import session_usage, total_usage
from replay.sessions import SessionEntry, list_sessions
from replay.tree import Edge, SessionNode, session_tree

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = ["entry_json", "ls_cmd", "newest_first", "tree_cmd"]


def entry_json(e: SessionEntry) -> dict[str, Any]:
    """One session as `ls --json` gives it."""
    cp = e.stop.checkpoint
    return {
        "path": path_json(e.path),
        "session_id": e.session_id,
        "agent_name": e.agent_name,
        "started_at": time_json(e.started_at),
        "parent_session_id": e.parent_session_id,
        "delegation_id": e.delegation_id,
        "fork": fork_json(e.fork),
        "size": e.size,
        "messages": cp.message_count if cp is not None else None,
        "stop": stop_json(e.stop),
        "eligibility": eligibility_json(e.eligibility),
        "flags": [str(f) for f in e.flags],
        "notes": list(e.notes),
    }


def newest_first(entries: Sequence[SessionEntry]) -> list[SessionEntry]:
    """Sessions newest first; those without a known start go last; ties ordered by path."""
    dated = sorted(
        (e for e in entries if e.started_at is not None),
        key=lambda e: (e.started_at, str(e.path)),
        reverse=True,
    )
    return dated + [e for e in entries if e.started_at is None]


@subcommand("ls", json_output=True)
@click.option("--agent", metavar="NAME", help="Only sessions of this agent.")
@click.option("--resumable", is_flag=True, help="Only sessions replayable as-is.")
@click.option("--since", metavar="WHEN", help="Only sessions started since (2h, 3d, 2026-12-01).")
@click.option("--trash", is_flag=True, help="List the pruned sessions in the trash instead.")
def ls_cmd(agent: str | None, resumable: bool, since: str | None, trash: bool) -> None:
    """List the sessions under the root, newest first.

    Reads only each file's first line and its tail: stop kind, whether it can be resumed
    as-is, and the message count of its last checkpoint. Sessions whose stop is unknown are
    listed as unknown, never hidden. Pruned sessions are not listed, unless --trash (then only
    they are).
    """
    opts = state()
    threshold = parse_since(since) if since is not None else None
    root = opts.existing_root()
    index: dict[str, Any] | None = None
    if isinstance(root, ObjectURL):
        from replay.fleet import list_fleet

        listing = list_fleet(root)
        entries = newest_first(listing.entries)
        index = {
            "written_at": time_json(listing.index_written_at),
            "from_index": listing.from_index,
            "read": listing.read,
        }
    else:
        entries = newest_first(list_sessions(root, on_error=opts.walk_error, trash=trash))
    if agent is not None:
        entries = [e for e in entries if e.agent_name == agent]
    if resumable:
        entries = [e for e in entries if e.eligibility.replayable]
    if threshold is not None:
        entries = [e for e in entries if e.started_at is not None and e.started_at >= threshold]
    if opts.json:
        document: dict[str, Any] = {
            "root": path_json(root),
            "sessions": [entry_json(e) for e in entries],
        }
        if index is not None:
            document["index"] = index
        click.echo(dump(document))
        return
    out = console()
    if not entries:
        out.print(f"no sessions under {root} match", style="dim")
    else:
        out.print(sessions_table(entries))
    if index is not None:
        out.print(_index_note(index), style="dim")


def _index_note(index: dict[str, Any]) -> str:
    """Where a fleet listing came from: the index and its age, and the objects read."""
    if index["written_at"] is None:
        return (
            f"no index: {index['read']} object(s) read from their heads and tails "
            "(`rollout index` writes one)"
        )
    written = datetime.fromisoformat(index["written_at"])
    age = datetime.now(UTC) - written
    minutes = int(age.total_seconds() // 60)
    ago = f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
    return (
        f"index written {short_time(written)} UTC ({ago} ago): {index['from_index']} "
        f"session(s) from it, {index['read']} object(s) new or changed since read directly"
    )


def _node_json(node: SessionNode, usage: Mapping[Location, UsageTotals] | None) -> dict[str, Any]:
    out = {
        **entry_json(node.entry),
        "children": [_node_json(c, usage) for c in node.children],
        "forks": [_node_json(f, usage) for f in node.forks],
    }
    if usage is not None:
        out["usage"] = usage_json(usage[node.entry.path])
    return out


def _node_label(
    e: SessionEntry, focus: Location | None, edge: Edge | None, usage: UsageTotals | None
) -> Text:
    from rich.text import Text

    label = Text(short_id(e.session_id), style="bold cyan")
    if focus is not None and e.path.resolve() == focus:
        label.stylize("reverse")
    label.append(f" {e.agent_name or '-'}")
    if edge is Edge.FORKED and e.fork is not None:
        copied = ", copied" if e.fork.copied else ""
        label.append(f"  fork at seq {e.fork.seq}{copied}", style="magenta")
    elif e.fork is not None:
        label.append(f"  fork of {short_id(e.fork.session_id)} at seq {e.fork.seq}", style="dim")
    if e.delegation_id:
        label.append(f"  via call {e.delegation_id}", style="dim")
    label.append(f"  {e.stop.describe()}")
    label.append(
        "  resumable" if e.eligibility.replayable else f"  not resumable ({e.eligibility.tier})",
        style="green" if e.eligibility.replayable else "yellow",
    )
    if usage is not None:
        label.append(f"  {_usage_text(usage)}", style="dim")
    for f in e.flags:
        label.append(f"  [{f}]", style="bold yellow")
    return label


def _usage_text(u: UsageTotals) -> str:
    return f"{u.input_tokens} in / {u.output_tokens} out tokens, {u.responses} response(s)"


def _nodes(node: SessionNode) -> list[SessionNode]:
    found, stack = [], [node]
    while stack:
        n = stack.pop()
        found.append(n)
        stack.extend(c for _, c in n.edges())
    return found


def _contains(node: SessionNode, path: Location) -> bool:
    return any(n.entry.path.resolve() == path for n in _nodes(node))


@subcommand(
    "tree",
    json_output=True,
    short_help="Show the lineage: delegated children and forks of each session.",
)
@click.argument("session", required=False, metavar="[PATH|SESSION_ID]")
@click.option(
    "--usage", is_flag=True, help="Add each session's token usage (reads every file whole)."
)
def tree_cmd(session: str | None, usage: bool) -> None:
    """Show the lineage: each session with the children it delegated to and the forks made of
    it (two kinds of edge).

    With a session (a path, an id or a prefix), only the tree that holds it. Children whose
    coordinates are missing, or whose parent is not under the root, are listed apart as
    detached and flagged; they are never shown as roots. A fork whose source is not under the
    root is a root of its own, flagged. With --usage, each session's own token usage (a fork's
    inherited part counts in its source only) and the total of each tree.
    """
    opts = state()
    root = opts.existing_root()
    focus = opts.target(session).resolve() if session is not None else None
    tree = session_tree(newest_first(list_sessions(root, on_error=opts.walk_error))[::-1])
    roots, detached = list(tree.roots), list(tree.detached)
    if focus is not None:
        roots = [n for n in roots if _contains(n, focus)]
        detached = [n for n in detached if _contains(n, focus)]
    used: dict[Location, UsageTotals] | None = None
    if usage:
        used = {
            n.entry.path: _usage_of(n.entry) for top in (*roots, *detached) for n in _nodes(top)
        }
    if opts.json:
        doc: dict[str, Any] = {
            "root": path_json(root),
            "roots": [_node_json(n, used) for n in roots],
            "detached": [_node_json(n, used) for n in detached],
        }
        if used is not None:
            doc["usage_total"] = usage_json(total_usage(used.values()))
        click.echo(dump(doc))
        return
    out = console()
    _print_forest(out, roots, focus, "sessions", used)
    if detached:
        _print_forest(
            out,
            detached,
            focus,
            "detached: delegated children without a parent under the root or without coordinates",
            used,
        )
    if used is not None:
        out.print(
            f"usage of {len(used)} session(s): {_usage_text(total_usage(used.values()))} "
            "(each file's own records: a fork's inherited part counts in its source only)",
            style="dim",
        )


def _usage_of(e: SessionEntry) -> UsageTotals:
    try:
        return session_usage(e.path)
    except OSError:
        return UsageTotals()


def _print_forest(
    out: Console,
    nodes: Sequence[SessionNode],
    focus: Location | None,
    title: str,
    usage: Mapping[Location, UsageTotals] | None,
) -> None:
    from rich.tree import Tree

    def label(n: SessionNode, edge: Edge | None) -> Text:
        return _node_label(n.entry, focus, edge, None if usage is None else usage[n.entry.path])

    forest = Tree(title, style="bold", guide_style="dim")
    for top in nodes:
        stack = [(forest.add(label(top, None)), top)]
        while stack:
            branch, node = stack.pop()
            for edge, child in node.edges():
                stack.append((branch.add(label(child, edge)), child))
    out.print(forest)
