"""The record types of a rollout, their registry and union, the stop-kind vocabulary, the format
version.

Every line of a rollout is one record: a JSON object whose ``"type"`` names its kind, with a
per-file sequence number ``seq`` (1 on the first line, then +1 per record) and a UTC timestamp
``ts``. The tags are stable strings of the format, never Python names.

:data:`RECORD_TYPES` is the one registry of record types (ADR 0019): the codec's tags, the JSON
Schema, the package's exports, the test strategies and the format page all derive from it, and
``tests/test_registry.py`` names what to update when one of them is left out. The six core types
are the conversation and its stop point; format version 2 adds the records that describe a
session without entering its conversation (ADRs 0120-0124).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Final

import msgspec

from ledger.messages import Message, Reasoning, Value
from ledger.validation import Checked

__all__ = [
    "FORMAT_VERSION",
    "AgentCheckpoint",
    "Compacted",
    "DESCRIPTION_TYPES",
    "Description",
    "ErrorDetail",
    "Event",
    "EventKind",
    "ForkOrigin",
    "MessageRecord",
    "MetaUpdate",
    "Record",
    "RECORD_TAGS",
    "RECORD_TYPES",
    "ReasoningRecord",
    "Rewind",
    "SessionMeta",
    "StopKind",
    "Terminal",
    "Turn",
    "TurnBoundary",
    "UnknownRecord",
    "Usage",
    "record_tag",
]

FORMAT_VERSION: Final = 2
"""The rollout format version this library writes (see ADR 0005 for the evolution rules)."""

UtcDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class StopKind(StrEnum):
    """Why a session stopped. The one vocabulary of stop kinds; never spell them as bare strings."""

    PAUSED = "paused"
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    MAX_TURNS = "max_turns"
    BUDGET_EXHAUSTED = "budget_exhausted"
    ERROR = "error"
    CLOSED = "closed"
    """The writer was closed (or its process exited) without saying how the session stopped."""


_STOP_KINDS: Final[Mapping[str | None, StopKind]] = {k.value: k for k in StopKind}


class _Record(
    msgspec.Struct,
    metaclass=Checked,
    forbid_unknown_fields=True,
    frozen=True,
    gc=False,
    omit_defaults=True,
    tag_field="type",
):
    seq: int
    ts: UtcDatetime


class ForkOrigin(Value, frozen=True, kw_only=True):
    """Where a fork came from (ADR 0130): the source session, the record it forked at, and the
    digest and message count a checkpoint of the source at that record would carry.

    ``path`` is where the source was, relative to the fork's directory: a hint, followed only
    when its name still names the source session. ``copied`` says the fork holds a copy of the
    inherited conversation (its first record after ``session_meta`` is a ``compacted``), so it
    never needs the source to replay.
    """

    session_id: str
    seq: int
    digest: str
    message_count: int
    path: str | None = None
    copied: bool = False


class SessionMeta(_Record, frozen=True, kw_only=True, tag="session_meta"):
    """First line of a rollout: who, when, the delegation coordinates when it is a child, and
    the origin when it is a fork (``fork``, ADR 0130)."""

    format_version: int
    session_id: str
    started_at: UtcDatetime
    agent_name: str | None = None
    parent_session_id: str | None = None
    delegation_id: str | None = None
    model: str | None = None
    provider: str | None = None
    cwd: str | None = None
    project: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    fork: ForkOrigin | None = None


class MessageRecord(_Record, frozen=True, kw_only=True, tag="message"):
    """One conversation message; its reasoning blocks are the ``reasoning`` records before it."""

    message: Message


class ReasoningRecord(_Record, frozen=True, kw_only=True, tag="reasoning"):
    """One reasoning block of the next assistant message."""

    reasoning: Reasoning


class Compacted(_Record, frozen=True, kw_only=True, tag="compacted"):
    """The conversation was compacted: replay restarts from ``messages``.

    ``extra`` (format 2) keeps what the compaction said about itself with no home here (a
    trigger, the size before, a pointer to the old history), verbatim; it is not part of the
    conversation. A provider's role-less compaction item is an assistant message whose content
    is one ``OpaquePart`` (ADR 0125).
    """

    messages: tuple[Message, ...]
    summary: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class AgentCheckpoint(_Record, frozen=True, kw_only=True, tag="agent_checkpoint"):
    """A stop point: the digest of the message sequence rebuilt from the file before this line."""

    digest: str
    message_count: int


class ErrorDetail(Value, frozen=True, kw_only=True):
    """What went wrong, when a session stopped on an error."""

    type: str
    message: str = ""
    traceback: str | None = None


class Terminal(_Record, frozen=True, kw_only=True, tag="terminal"):
    """How the session stopped.

    ``stop_kind`` is kept as the string on the wire so that a kind this reader does not know
    still decodes; :attr:`kind` gives the :class:`StopKind` when it is one. A legacy record
    without a stop kind has ``stop_kind=None``.
    """

    event: str = "stop"
    stop_kind: str | None = None
    reason: str = ""
    error: ErrorDetail | None = None

    @property
    def kind(self) -> StopKind | None:
        """The stop kind as a :class:`StopKind`, or ``None`` when absent or unknown."""
        try:
            return _STOP_KINDS.get(self.stop_kind)  # a dict, not StopKind(): listings ask often
        except TypeError:  # not a str at all (a value built by hand): no kind
            return None


# --- format version 2: what describes a session without entering its conversation ----------


class Usage(_Record, frozen=True, kw_only=True, tag="usage"):
    """The token usage of one model response: never a running total (ADR 0121).

    ``response_id`` names the response when the provider gave it an id; a reader counts each
    response id once, so a usage written again (a resumed import, a repeated provider event)
    never counts twice. Counts a provider did not report stay 0.
    """

    response_id: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class TurnBoundary(StrEnum):
    """Which side of a turn a :class:`Turn` record marks."""

    START = "start"
    END = "end"


class Turn(_Record, frozen=True, kw_only=True, tag="turn"):
    """A turn starts or ends; a start carries the turn's settings (ADR 0122).

    ``boundary`` is kept as the string on the wire (see :class:`TurnBoundary`), so that a
    boundary a newer writer adds still decodes. ``settings`` holds the turn's settings as the
    agent gave them (model, effort, sandbox, approval policy...), verbatim.
    """

    boundary: str
    turn_id: str | None = None
    model: str | None = None
    settings: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class EventKind(StrEnum):
    """What happened, for an :class:`Event` (a vocabulary that may grow)."""

    INTERRUPTED = "interrupted"
    """The user interrupted the agent; the session went on."""
    TURN_ABORTED = "turn_aborted"
    """A turn was abandoned before its end; the session went on."""
    API_ERROR = "api_error"
    """The provider's API failed; the text the client showed was never the model's."""


class Event(_Record, frozen=True, kw_only=True, tag="event"):
    """Something happened that is not a stop point: the session went on (ADR 0123).

    ``kind`` is kept as the string on the wire (see :class:`EventKind`); :attr:`event_kind`
    gives the member when it is one.
    """

    kind: str
    reason: str = ""
    turn_id: str | None = None
    error: ErrorDetail | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    @property
    def event_kind(self) -> EventKind | None:
        """The kind as an :class:`EventKind`, or ``None`` when this reader does not know it."""
        try:
            return EventKind(self.kind)
        except ValueError:
            return None


class MetaUpdate(_Record, frozen=True, kw_only=True, tag="meta_update"):
    """Metadata that arrived after the first line: a title, a settings change (ADR 0124).

    A field left unset says nothing; the latest value of each field wins. ``extra`` holds the
    rest verbatim (a permission mode, a branch, a tool version).
    """

    title: str | None = None
    model: str | None = None
    cwd: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


# --- history operations (ADRs 0130-0131) ----------------------------------------------------


class Rewind(_Record, frozen=True, kw_only=True, tag="rewind"):
    """The conversation continues from its state at record ``to`` (ADR 0131).

    The records between ``to`` and this one stay in the file: replay leaves their messages out
    of the conversation (and so out of the digest) and keeps them as abandoned, for display.
    ``to`` must name a record of the current conversation: at or after the last compaction, not
    itself abandoned by an earlier rewind, and before this record.
    """

    to: int
    reason: str = ""
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


# --- the registry ---------------------------------------------------------------------------

RECORD_TYPES: Final = (
    SessionMeta,
    MessageRecord,
    ReasoningRecord,
    Compacted,
    AgentCheckpoint,
    Terminal,
    Usage,
    Turn,
    Event,
    MetaUpdate,
    Rewind,
)
"""The registry of record types, in the order the format page lists them (ADR 0019)."""

Record = (
    SessionMeta
    | MessageRecord
    | ReasoningRecord
    | Compacted
    | AgentCheckpoint
    | Terminal
    | Usage
    | Turn
    | Event
    | MetaUpdate
    | Rewind
)
"""Any record this library knows: the union of :data:`RECORD_TYPES` (checked at import)."""


def record_tag(cls: type) -> str:
    """The ``"type"`` tag of a record class, as written on the wire."""
    tag = cls.__struct_config__.tag  # type: ignore[attr-defined]
    if not isinstance(tag, str):
        raise TypeError(f"{cls.__name__} is not a tagged record type")
    return tag


DESCRIPTION_TYPES: Final = (Usage, Turn, Event, MetaUpdate)
"""The registered types that describe a session without entering its conversation (format 2)."""

Description = Usage | Turn | Event | MetaUpdate
"""A record of :data:`DESCRIPTION_TYPES`."""

RECORD_TAGS: Final = tuple(record_tag(t) for t in RECORD_TYPES)
"""The tags of :data:`RECORD_TYPES`, in the same order."""


def _check_registry() -> None:
    # The static union is what mypy and the decoder see; it must be the registry exactly.
    in_union = typing.get_args(Record)
    if in_union != RECORD_TYPES:
        missing = [t.__name__ for t in RECORD_TYPES if t not in in_union]
        extra = [t.__name__ for t in in_union if t not in RECORD_TYPES]
        raise RuntimeError(
            "ledger.records: the Record union and RECORD_TYPES differ "
            f"(missing from the union: {missing}, not registered: {extra}); list every record "
            "type in both, in the same order"
        )


_check_registry()


class UnknownRecord(
    msgspec.Struct,
    metaclass=Checked,
    forbid_unknown_fields=True,
    frozen=True,
    gc=False,
    kw_only=True,
):
    """A well-formed line whose type this reader does not know (a newer writer, or damage).

    It is reported, never fatal; ``raw`` is the line as read.
    """

    type: str | None
    seq: int | None
    raw: bytes
