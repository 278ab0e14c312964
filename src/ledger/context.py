"""Delegation coordinates carried in context, for the parent and the child writer alike.

A delegating agent runs its child inside ``with_delegation_id(tool_call_id)`` and
``with_rollout_session_id(parent_session_id)``; the child's writer records both in its
``session_meta``. Context variables follow threads started with ``contextvars.copy_context``
and asyncio tasks the way context does. Entering either block declares a delegated child: an
empty or ``None`` value there means "no coordinates", never "this is a root session" (SPEC rule
13), and the writer records it as an empty string so that the read side flags the child.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

__all__ = [
    "current_delegation_id",
    "current_rollout_session_id",
    "delegation_coordinates",
    "with_delegation_id",
    "with_rollout_session_id",
]

_UNSET: Final = object()

_delegation_id: ContextVar[object] = ContextVar("rollout_delegation_id", default=_UNSET)
_rollout_session_id: ContextVar[object] = ContextVar("rollout_parent_session_id", default=_UNSET)


def _checked(value: object, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(
            f"{what} must be a str (or None when it is missing), not "
            f"{type(value).__name__} {value!r}"
        )
    return value


@contextmanager
def with_delegation_id(tool_call_id: str | None) -> Iterator[None]:
    """Run a block with the id of the delegating tool call as the delegation id.

    ``None`` or ``""`` declares a delegated child whose delegation id is missing.
    """
    token = _delegation_id.set(_checked(tool_call_id, "the delegation id (a tool call id)"))
    try:
        yield
    finally:
        _delegation_id.reset(token)


@contextmanager
def with_rollout_session_id(session_id: str | None) -> Iterator[None]:
    """Run a block with ``session_id`` as the session that a child's writer names as parent.

    ``None`` or ``""`` declares a delegated child whose parent session id is missing.
    """
    token = _rollout_session_id.set(_checked(session_id, "the parent session id"))
    try:
        yield
    finally:
        _rollout_session_id.reset(token)


def current_delegation_id() -> str | None:
    """The delegation id in context, or ``None`` when unset or empty."""
    value = _delegation_id.get()
    return value if isinstance(value, str) and value else None


def current_rollout_session_id() -> str | None:
    """The parent session id in context, or ``None`` when unset or empty."""
    value = _rollout_session_id.get()
    return value if isinstance(value, str) and value else None


def delegation_coordinates() -> tuple[str | None, str | None]:
    """``(parent_session_id, delegation_id)`` as a child's writer records them.

    ``None`` for a coordinate no block set; ``""`` for one set empty (a child without it).
    """
    parent, delegation = _rollout_session_id.get(), _delegation_id.get()
    return (
        parent if isinstance(parent, str) else None,
        delegation if isinstance(delegation, str) else None,
    )
