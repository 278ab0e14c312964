"""The delegation tree of listed sessions: each child under the session that delegated to it.

A delegated child without its coordinates, or whose parent is not listed, is detached and
flagged, never taken for a root (SPEC rule 13).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

from replay.sessions import SessionEntry

__all__ = ["SessionNode", "SessionTree", "session_tree"]


@attrs.frozen
class SessionNode:
    """A session in the delegation tree, with the children it delegated to."""

    entry: SessionEntry
    children: tuple[SessionNode, ...] = ()


@attrs.frozen
class SessionTree:
    """The delegation tree of listed sessions.

    ``roots`` are sessions without coordinates (each with its descendants); ``detached`` are
    delegated children that cannot be attached: coordinates missing, a parent that is not
    listed, or a cycle. They are listed, never taken for roots.
    """

    roots: tuple[SessionNode, ...]
    detached: tuple[SessionNode, ...]

    def walk(self) -> Iterator[tuple[int, SessionNode]]:
        """``(depth, node)`` for every node, roots first then detached, depth-first."""
        for top in (*self.roots, *self.detached):
            stack = [(0, top)]
            while stack:
                depth, node = stack.pop()
                yield depth, node
                stack.extend((depth + 1, c) for c in reversed(node.children))


def session_tree(entries: Iterable[SessionEntry]) -> SessionTree:
    """Build the delegation tree: each child under the session named by its parent session id.

    When two files claim one session id, children attach to the first listed.
    """
    items = list(entries)
    by_id: dict[str, int] = {}
    for i, e in enumerate(items):
        if e.session_id is not None:
            by_id.setdefault(e.session_id, i)
    children: dict[int, list[int]] = {}
    tops: list[int] = []
    detached: list[int] = []
    for i, e in enumerate(items):
        if not e.is_child:
            tops.append(i)
            continue
        parent = by_id.get(e.parent_session_id) if e.parent_session_id else None
        if parent is None or parent == i:
            detached.append(i)
        else:
            children.setdefault(parent, []).append(i)
    placed: set[int] = set()

    def build(i: int) -> SessionNode:
        # Iterative post-order: delegation chains can be deep, and a cycle must not recurse.
        order: list[int] = []
        stack = [i]
        while stack:
            j = stack.pop()
            if j in placed:
                continue
            placed.add(j)
            order.append(j)
            stack.extend(children.get(j, ()))
        nodes: dict[int, SessionNode] = {}
        for j in reversed(order):
            kids = tuple(nodes[k] for k in children.get(j, ()) if k in nodes)
            nodes[j] = SessionNode(entry=items[j], children=kids)
        return nodes[i]

    roots = [build(i) for i in tops]
    loose = [build(i) for i in detached if i not in placed]
    # Whatever is still unplaced sits on a cycle of parent ids: show it, detached.
    loose += [build(i) for i in range(len(items)) if i not in placed]
    return SessionTree(roots=tuple(roots), detached=tuple(loose))
