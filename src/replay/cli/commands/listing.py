"""`rollout ls` and `rollout tree`: the sessions under the root, read from heads and tails only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from replay._location import Location, ObjectURL
from replay.cli._app import console, state, subcommand
from replay.cli._json import dump, eligibility_json, stop_json, time_json
from replay.cli._paths import parse_since, path_json
from replay.cli._render import sessions_table, short_id, short_time
from replay.sessions import SessionEntry, list_sessions
from replay.tree import SessionNode, session_tree

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
def ls_cmd(agent: str | None, resumable: bool, since: str | None) -> None:
    """List the sessions under the root, newest first.

    Reads only each file's first line and its tail: stop kind, whether it can be resumed
    as-is, and the message count of its last checkpoint. Sessions whose stop is unknown are
    listed as unknown, never hidden.
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
        entries = newest_first(list_sessions(root, on_error=opts.walk_error))
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


def _node_json(node: SessionNode) -> dict[str, Any]:
    return {**entry_json(node.entry), "children": [_node_json(c) for c in node.children]}


def _node_label(e: SessionEntry, focus: Location | None) -> Text:
    from rich.text import Text

    label = Text(short_id(e.session_id), style="bold cyan")
    if focus is not None and e.path.resolve() == focus:
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


def _contains(node: SessionNode, path: Location) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.entry.path.resolve() == path:
            return True
        stack.extend(n.children)
    return False


@subcommand(
    "tree", json_output=True, short_help="Show the delegation tree of parents and children."
)
@click.argument("session", required=False, metavar="[PATH|SESSION_ID]")
def tree_cmd(session: str | None) -> None:
    """Show the delegation tree: each session with the children it delegated to.

    With a session (a path, an id or a prefix), only the tree that holds it. Children whose
    coordinates are missing, or whose parent is not under the root, are listed apart as
    detached and flagged; they are never shown as roots.
    """
    opts = state()
    root = opts.existing_root()
    focus = opts.target(session).resolve() if session is not None else None
    tree = session_tree(newest_first(list_sessions(root, on_error=opts.walk_error))[::-1])
    roots, detached = list(tree.roots), list(tree.detached)
    if focus is not None:
        roots = [n for n in roots if _contains(n, focus)]
        detached = [n for n in detached if _contains(n, focus)]
    if opts.json:
        click.echo(
            dump(
                {
                    "root": path_json(root),
                    "roots": [_node_json(n) for n in roots],
                    "detached": [_node_json(n) for n in detached],
                }
            )
        )
        return
    out = console()
    _print_forest(out, roots, focus, "sessions")
    if detached:
        _print_forest(
            out,
            detached,
            focus,
            "detached: delegated children without a parent under the root or without coordinates",
        )


def _print_forest(
    out: Console, nodes: Sequence[SessionNode], focus: Location | None, title: str
) -> None:
    from rich.tree import Tree

    forest = Tree(title, style="bold", guide_style="dim")
    for top in nodes:
        stack = [(forest.add(_node_label(top.entry, focus)), top)]
        while stack:
            branch, node = stack.pop()
            for child in node.children:
                stack.append((branch.add(_node_label(child.entry, focus)), child))
    out.print(forest)
