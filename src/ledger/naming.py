"""Rollout file names, `<date>_<time>_<sessionID>[_<agentName>].jsonl`: built, parsed, mirrored.

The date and time are the session's start in UTC (``2026-12-02_16-22-05``). A session id may
not contain ``_`` so that the name splits back unambiguously; an agent name may (``code_reviewer``).
Anything that could escape a directory or parse back differently is refused.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

import attrs

__all__ = [
    "ROLLOUT_SUFFIX",
    "RolloutNameError",
    "RolloutName",
    "parse_rollout_filename",
    "rollout_filename",
    "validate_agent_name",
    "validate_session_id",
]

ROLLOUT_SUFFIX: Final = ".jsonl"

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}")
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_STAMP_FORMAT: Final = "%Y-%m-%d_%H-%M-%S"
# ASCII digits only: ``\d`` also matches other scripts' digits, which parse to the same time
# and so would give a second name for one session.
_NAME = re.compile(
    r"(?P<stamp>[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2})"
    r"_(?P<sid>[^_]+)(?:_(?P<agent>.+))?"
)


class RolloutNameError(ValueError):
    """A session id, agent name or file name that does not follow the naming rule."""


@attrs.frozen
class RolloutName:
    """What a rollout file name says: start time (UTC, to the second), session id, agent name."""

    started_at: datetime
    session_id: str
    agent_name: str | None = None


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is safe in a file name; raise :class:`RolloutNameError`."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise RolloutNameError(
            f"invalid session id {session_id!r}: use 1-128 letters, digits and '-', "
            "starting with a letter or digit (a UUID works)"
        )
    return session_id


def validate_agent_name(agent_name: str) -> str:
    """Return ``agent_name`` if it is safe in a file name; raise :class:`RolloutNameError`."""
    if (
        not isinstance(agent_name, str)
        or not _AGENT_NAME.fullmatch(agent_name)
        or ".." in agent_name
        or agent_name.endswith(".")
    ):
        raise RolloutNameError(
            f"invalid agent name {agent_name!r}: use 1-128 letters, digits, '_', '-' and '.', "
            "starting with a letter or digit, without '..'"
        )
    return agent_name


def rollout_filename(started_at: datetime, session_id: str, agent_name: str | None = None) -> str:
    """Build the file name of a rollout; ``started_at`` must be timezone-aware."""
    if started_at.tzinfo is None or started_at.utcoffset() is None:
        raise RolloutNameError(
            f"started_at {started_at.isoformat()} has no timezone: pass an aware datetime "
            "(for example datetime.now(UTC))"
        )
    try:
        t = started_at.astimezone(UTC)
    except OverflowError:
        raise RolloutNameError(
            f"started_at {started_at.isoformat()} has no UTC equivalent in the calendar"
        ) from None
    # Not strftime: its %Y does not pad years below 1000 to four digits on every platform.
    stamp = f"{t.year:04d}-{t.month:02d}-{t.day:02d}_{t.hour:02d}-{t.minute:02d}-{t.second:02d}"
    name = f"{stamp}_{validate_session_id(session_id)}"
    if agent_name is not None:
        name += f"_{validate_agent_name(agent_name)}"
    return name + ROLLOUT_SUFFIX


def parse_rollout_filename(name: str) -> RolloutName:
    """Parse a file name built by :func:`rollout_filename` (a bare name, not a path)."""
    if not name.endswith(ROLLOUT_SUFFIX):
        raise RolloutNameError(f"{name!r} is not a rollout file name: it must end in .jsonl")
    m = _NAME.fullmatch(name[: -len(ROLLOUT_SUFFIX)])
    if m is None:
        raise RolloutNameError(
            f"{name!r} is not a rollout file name: expected "
            "<YYYY-MM-DD>_<HH-MM-SS>_<sessionID>[_<agentName>].jsonl"
        )
    try:
        started_at = datetime.strptime(m["stamp"], _STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise RolloutNameError(f"{name!r} has an impossible date or time") from None
    agent = m["agent"]
    return RolloutName(
        started_at=started_at,
        session_id=validate_session_id(m["sid"]),
        agent_name=None if agent is None else validate_agent_name(agent),
    )
