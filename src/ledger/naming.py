"""Rollout file names, `<date>_<time>_<sessionID>[_<agentName>].jsonl`: built, parsed, mirrored.

The date and time are the session's start in UTC (``2026-12-02_16-22-05``). The session id
stands in the name as its *token* (ADR 0016): a plain id (ASCII letters, digits and ``-``, such
as a UUID) stands as itself; any other framework key (``user_123``, ``org/42``, an e-mail
address) stands percent-escaped, so that nothing path-unsafe reaches the file system raw and
the name still splits at the first ``_``. A token that would not fit the file system's name
limit is cut and ends in ``~`` and a digest of the whole id. An agent name may contain ``_``
(``code_reviewer``). Anything that could escape a directory or parse back differently is
refused.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

import msgspec

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_SESSION_ID_CHARS",
    "ROLLOUT_SUFFIX",
    "RolloutNameError",
    "RolloutName",
    "build_rollout_name",
    "parse_rollout_filename",
    "rollout_filename",
    "session_token",
    "validate_agent_name",
    "validate_session_id",
]

ROLLOUT_SUFFIX: Final = ".jsonl"

MAX_NAME_BYTES: Final = 255
"""The longest file name the common file systems take (ext4, XFS, APFS, NTFS: 255)."""

MAX_SESSION_ID_CHARS: Final = 128
"""The longest session id, in characters."""

_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}")
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
# What an escaped token may hold raw; `%` starts an escape, `~` the digest of a cut token.
_TOKEN_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.")
_ESCAPED = re.compile(r"(?:[A-Za-z0-9.-]|%[0-9A-F]{2})+")
_DIGEST_CHARS: Final = 20
_CUT = re.compile(r"(?P<head>(?:[A-Za-z0-9.-]|%[0-9A-F]{2})*)~(?P<digest>[0-9a-f]{20})")
_STAMP_LEN: Final = len("2026-12-02_16-22-05")
_STAMP_FORMAT: Final = "%Y-%m-%d_%H-%M-%S"
# ASCII digits only: ``\d`` also matches other scripts' digits, which parse to the same time
# and so would give a second name for one session.
_NAME = re.compile(
    r"(?P<stamp>[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2})"
    r"_(?P<sid>[^_]+)(?:_(?P<agent>.+))?"
)


class RolloutNameError(ValueError):
    """A session id, agent name or file name that does not follow the naming rule."""


class RolloutName(msgspec.Struct, frozen=True, gc=False):
    """What a rollout file name says: start time (UTC, to the second), session, agent name.

    ``session_token`` is the session id as it stands in the name. ``session_id`` is the id it
    stands for, or ``None`` when the token was cut to fit the name limit (the id is then only in
    the file's ``session_meta``; :func:`session_token` of the id gives the token back).

    A frozen ``msgspec.Struct``: a fleet's index listing decodes one per session (ADR 0159).
    """

    started_at: datetime
    session_id: str | None
    agent_name: str | None = None
    session_token: str = ""

    def __post_init__(self) -> None:
        if not self.session_token:
            if self.session_id is None:
                raise RolloutNameError("a RolloutName needs a session id or a session token")
            msgspec.structs.force_setattr(
                self, "session_token", session_token(self.session_id, self.agent_name)
            )

    @property
    def filename(self) -> str:
        """The file name this parse came from (the mirror, also for a cut token)."""
        return _assemble(_stamp(self.started_at), self.session_token, self.agent_name)


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it can be a session id; raise :class:`RolloutNameError`.

    Any string of 1 to 128 characters without NUL that UTF-8 can carry (no lone surrogate).
    """
    if not isinstance(session_id, str):
        raise RolloutNameError(
            f"invalid session id {session_id!r}: expected a str, got {type(session_id).__name__}"
        )
    if _PLAIN_ID.fullmatch(session_id):
        return session_id
    why = None
    if not session_id:
        why = "it is empty"
    elif len(session_id) > MAX_SESSION_ID_CHARS:
        why = f"it has {len(session_id)} characters, over the limit of {MAX_SESSION_ID_CHARS}"
    elif "\x00" in session_id:
        why = "it contains NUL"
    else:
        try:
            session_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            why = f"character {exc.start} is a lone surrogate, which UTF-8 cannot carry"
    if why is not None:
        raise RolloutNameError(
            f"invalid session id {session_id!r}: {why}; use 1-{MAX_SESSION_ID_CHARS} "
            "characters without NUL (any framework key works: it is escaped in the file name)"
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


@lru_cache(maxsize=256)
def _valid_agent_name(agent_name: str) -> str:
    # A fleet has few agent names, and every name built or parsed checks its own: checked once.
    return validate_agent_name(agent_name)


def _escape(session_id: str) -> str:
    if _PLAIN_ID.fullmatch(session_id):
        return session_id
    out = []
    last = len(session_id) - 1
    for i, c in enumerate(session_id):
        # A dot stays readable (`a.b@example.com`) unless it could make `..` in the name:
        # beside another dot, or last (the suffix or the agent name's `_` follows).
        if c == "." and (
            i == last or session_id[i + 1] == "." or (i > 0 and session_id[i - 1] == ".")
        ):
            out.append("%2E")
        elif c in _TOKEN_SAFE:
            out.append(c)
        else:
            out.extend(f"%{b:02X}" for b in c.encode("utf-8"))
    return "".join(out)


def _room(agent_name: str | None) -> int:
    """How many bytes the session token may take in a name with this agent name."""
    agent = 0 if agent_name is None else 1 + len(agent_name)
    return MAX_NAME_BYTES - _STAMP_LEN - 1 - agent - len(ROLLOUT_SUFFIX)


def session_token(session_id: str, agent_name: str | None = None) -> str:
    """The session id as it stands in a file name beside ``agent_name`` (ADR 0016).

    A plain id (letters, digits, ``-``, starting with a letter or digit) is its own token;
    any other id is percent-escaped (UTF-8 bytes of everything but letters, digits, ``-`` and
    ``.``; a ``.`` beside another or at the end is escaped too, so a name never holds ``..``).
    When the whole name would pass :data:`MAX_NAME_BYTES`, the token is cut and ends in ``~``
    and 20 hex digits of the id's BLAKE2b digest.
    """
    if type(session_id) is str and _PLAIN_ID.fullmatch(session_id):
        token = session_id  # valid, and its own escape (the common case, matched once)
    else:
        token = _escape(validate_session_id(session_id))
    if type(agent_name) is str:
        _valid_agent_name(agent_name)
    elif agent_name is not None:
        validate_agent_name(agent_name)
    room = _room(agent_name)
    if len(token) <= room:
        return token
    cut = room - 1 - _DIGEST_CHARS
    head = token[:cut]
    # Never split an escape: drop a trailing `%` or `%X`.
    pct = head.rfind("%", max(0, len(head) - 2))
    if pct >= 0:
        head = head[:pct]
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=_DIGEST_CHARS // 2).hexdigest()
    return f"{head}~{digest}"


def _utc(started_at: datetime) -> datetime:
    if started_at.tzinfo is None or started_at.utcoffset() is None:
        raise RolloutNameError(
            f"started_at {started_at.isoformat()} has no timezone: pass an aware datetime "
            "(for example datetime.now(UTC))"
        )
    try:
        return started_at.astimezone(UTC)
    except OverflowError:
        raise RolloutNameError(
            f"started_at {started_at.isoformat()} has no UTC equivalent in the calendar"
        ) from None


# Two digits of 0-99 by table: formatting five numbers costs more than building the rest of a
# name, and a listing builds one name per file.
_TWO_DIGITS: Final = tuple(f"{i:02d}" for i in range(100))


def _stamp_utc(t: datetime) -> str:
    # Not strftime: its %Y does not pad years below 1000 to four digits on every platform.
    d = _TWO_DIGITS
    return f"{t.year:04d}-{d[t.month]}-{d[t.day]}_{d[t.hour]}-{d[t.minute]}-{d[t.second]}"


def _stamp(started_at: datetime) -> str:
    return _stamp_utc(_utc(started_at))


def _assemble(stamp: str, token: str, agent_name: str | None) -> str:
    name = f"{stamp}_{token}"
    if agent_name is not None:
        name += f"_{agent_name}"
    return name + ROLLOUT_SUFFIX


def rollout_filename(started_at: datetime, session_id: str, agent_name: str | None = None) -> str:
    """Build the file name of a rollout; ``started_at`` must be timezone-aware."""
    stamp = _stamp(started_at)
    return _assemble(stamp, session_token(session_id, agent_name), agent_name)


def build_rollout_name(
    started_at: datetime, session_id: str, agent_name: str | None = None
) -> tuple[str, RolloutName]:
    """The file name :func:`rollout_filename` builds, and the :class:`RolloutName` of those
    values (start in UTC to the second, the id, the agent name, the token), built together.

    Cheaper than building the name and then parsing it: a listing whose file name is the one
    its ``session_meta`` implies knows the parse without parsing.
    """
    t = started_at if started_at.tzinfo is UTC else _utc(started_at)
    token = session_token(session_id, agent_name)
    name = _assemble(_stamp_utc(t), token, agent_name)
    if t.microsecond:
        t = datetime(t.year, t.month, t.day, t.hour, t.minute, t.second, tzinfo=UTC)
    return name, RolloutName(t, session_id, agent_name, token)


def _unescape(token: str) -> str | None:
    """The id an escaped token stands for, or ``None`` when it is not a canonical token."""
    if not _ESCAPED.fullmatch(token):
        return None
    if "%" not in token:
        return token
    try:
        raw = bytearray()
        i = 0
        while i < len(token):
            if token[i] == "%":
                raw.append(int(token[i + 1 : i + 3], 16))
                i += 3
            else:
                raw += token[i].encode()
                i += 1
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


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
    agent_name = None if agent is None else validate_agent_name(agent)
    token = m["sid"]
    # Every name this library builds is ASCII (tokens escape the rest), so its length in
    # characters is its length in bytes; a name that is not ASCII was not built here.
    if not name.isascii():
        raise RolloutNameError(f"{name!r} is not a rollout file name: it is not ASCII")
    if len(name) > MAX_NAME_BYTES:
        raise RolloutNameError(f"{name!r} is longer than {MAX_NAME_BYTES} bytes")
    session_id: str | None
    if _CUT.fullmatch(token):
        # A cut token is only ever built when the escaped id does not fit; anything shorter
        # would be a second name for one session.
        if not _room(agent_name) - 2 <= len(token) <= _room(agent_name):
            raise RolloutNameError(f"{name!r} holds a cut session token of the wrong length")
        session_id = None
    else:
        session_id = _unescape(token)
        if (
            session_id is None
            or not 1 <= len(session_id) <= MAX_SESSION_ID_CHARS
            or "\x00" in session_id
            or session_token(session_id, agent_name) != token
        ):
            raise RolloutNameError(
                f"{name!r} is not a rollout file name: {token!r} is not a session id token"
            )
    return RolloutName(
        started_at=started_at,
        session_id=session_id,
        agent_name=agent_name,
        session_token=token,
    )
