"""The lineage of listed sessions: delegations and forks, two kinds of edge (ADR 0132).

A delegated child sits under the session that delegated to it; a fork sits under the session it
was forked from, on the other kind of edge. A delegated child without its coordinates, or whose
parent is not listed, is detached and flagged, never taken for a root (SPEC rule 13). A fork
whose source is not listed is a root of its own (flagged by the listing): a fork is a session
that may stand alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum

import attrs

from replay.sessions import SessionEntry

__all__ = ["Edge", "SessionNode", "SessionTree", "session_tree"]


class Edge(StrEnum):
    """How a session hangs under another."""

    DELEGATED = "delegated"
    """A child session the parent delegated work to (its coordinates name the parent)."""
    FORKED = "forked"
    """A fork: it continues the source's conversation from a record (``session_meta.fork``)."""


@attrs.frozen
class SessionNode:
    """A session in the lineage, with the children it delegated to and the forks made of it."""

    entry: SessionEntry
    children: tuple[SessionNode, ...] = ()
    forks: tuple[SessionNode, ...] = ()

    def edges(self) -> Iterator[tuple[Edge, SessionNode]]:
        """Each node under this one with the kind of its edge: delegations, then forks."""
        for c in self.children:
            yield Edge.DELEGATED, c
        for f in self.forks:
            yield Edge.FORKED, f


@attrs.frozen
class SessionTree:
    """The lineage of listed sessions.

    ``roots`` are sessions that are neither delegated children nor forks of a listed session
    (each with its descendants); ``detached`` are delegated children that cannot be attached:
    coordinates missing, a parent that is not listed, or a cycle. They are listed, never taken
    for roots.
    """

    roots: tuple[SessionNode, ...]
    detached: tuple[SessionNode, ...]

    def walk(self) -> Iterator[tuple[int, SessionNode]]:
        """``(depth, node)`` for every node, roots first then detached, depth-first (a node's
        delegated children before its forks)."""
        for top in (*self.roots, *self.detached):
            stack = [(0, top)]
            while stack:
                depth, node = stack.pop()
                yield depth, node
                below = [n for _, n in node.edges()]
                stack.extend((depth + 1, c) for c in reversed(below))


def session_tree(entries: Iterable[SessionEntry]) -> SessionTree:
    """Build the lineage: each delegated child under the session named by its parent session
    id, each fork under the session named by its origin.

    When two files claim one session id, children and forks attach to the first listed.
    """
    items = list(entries)
    by_id: dict[str, int] = {}
    for i, e in enumerate(items):
        if e.session_id is not None:
            by_id.setdefault(e.session_id, i)
    children: dict[int, list[int]] = {}
    forks: dict[int, list[int]] = {}
    tops: list[int] = []
    detached: list[int] = []
    for i, e in enumerate(items):
        if e.is_child:
            parent = by_id.get(e.parent_session_id) if e.parent_session_id else None
            if parent is None or parent == i:
                detached.append(i)
            else:
                children.setdefault(parent, []).append(i)
            continue
        origin = e.meta.fork if e.meta is not None else None
        source = by_id.get(origin.session_id) if origin is not None else None
        if source is None or source == i:
            tops.append(i)
        else:
            forks.setdefault(source, []).append(i)
    placed: set[int] = set()

    def below(j: int) -> list[int]:
        return [*children.get(j, ()), *forks.get(j, ())]

    def build(i: int) -> SessionNode:
        # Iterative post-order: lineages can be deep, and a cycle must not recurse.
        order: list[int] = []
        stack = [i]
        while stack:
            j = stack.pop()
            if j in placed:
                continue
            placed.add(j)
            order.append(j)
            stack.extend(below(j))
        nodes: dict[int, SessionNode] = {}
        for j in reversed(order):
            nodes[j] = SessionNode(
                entry=items[j],
                children=tuple(nodes[k] for k in children.get(j, ()) if k in nodes),
                forks=tuple(nodes[k] for k in forks.get(j, ()) if k in nodes),
            )
        return nodes[i]

    roots = [build(i) for i in tops]
    loose = [build(i) for i in detached if i not in placed]
    # Whatever is still unplaced sits on a cycle of parent ids or origins: show it, detached.
    loose += [build(i) for i in range(len(items)) if i not in placed]
    return SessionTree(roots=tuple(roots), detached=tuple(loose))
