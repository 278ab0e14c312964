"""Delegation coordinates carried in context, for the parent and the child writer alike.

A delegating agent runs its child inside ``with_delegation_id(tool_call_id)`` and
``with_rollout_session_id(parent_session_id)``; the child's writer records both in its
``session_meta``. Context variables follow threads started with ``contextvars.copy_context``
and asyncio tasks the way context does. An empty value means "no coordinates", never
"this is a root session".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "current_delegation_id",
    "current_rollout_session_id",
    "with_delegation_id",
    "with_rollout_session_id",
]

_delegation_id: ContextVar[str | None] = ContextVar("rollout_delegation_id", default=None)
_rollout_session_id: ContextVar[str | None] = ContextVar("rollout_parent_session_id", default=None)


@contextmanager
def with_delegation_id(tool_call_id: str | None) -> Iterator[None]:
    """Run a block with the id of the delegating tool call as the delegation id."""
    token = _delegation_id.set(tool_call_id)
    try:
        yield
    finally:
        _delegation_id.reset(token)


@contextmanager
def with_rollout_session_id(session_id: str | None) -> Iterator[None]:
    """Run a block with ``session_id`` as the session that a child's writer names as parent."""
    token = _rollout_session_id.set(session_id)
    try:
        yield
    finally:
        _rollout_session_id.reset(token)


def current_delegation_id() -> str | None:
    """The delegation id in context, or ``None`` when unset or empty."""
    return _delegation_id.get() or None


def current_rollout_session_id() -> str | None:
    """The parent session id in context, or ``None`` when unset or empty."""
    return _rollout_session_id.get() or None
