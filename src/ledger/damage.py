"""Degradations: what a reader could not restore exactly, as data with a line and a sentence."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

import attrs

__all__ = ["NOT_DAMAGE", "Degradation", "DegradationKind", "is_damage"]


class DegradationKind(StrEnum):
    """What kind of inexactness a degradation reports."""

    UNPARSEABLE_LINE = "unparseable_line"
    INVALID_UTF8 = "invalid_utf8"
    TORN_TAIL = "torn_tail"
    LINE_TOO_LONG = "line_too_long"
    UNKNOWN_RECORD = "unknown_record"
    UNKNOWN_FIELD = "unknown_field"
    NEWER_FORMAT = "newer_format"
    SEQUENCE_GAP = "sequence_gap"
    SEQUENCE_DUPLICATE = "sequence_duplicate"
    META_NOT_FIRST = "meta_not_first"
    META_REPEATED = "meta_repeated"
    MISSING_META = "missing_meta"
    ORPHAN_REASONING = "orphan_reasoning"
    REBUILT_FROM_COMPACTED = "rebuilt_from_compacted"
    MESSAGE_CAP = "message_cap"
    NO_CHECKPOINT = "no_checkpoint"
    DIGEST_MISMATCH = "digest_mismatch"
    AFTER_CHECKPOINT = "after_checkpoint"
    REWIND_UNRESOLVED = "rewind_unresolved"
    """A rewind names a record outside the current conversation; it was not applied."""
    FORK_SOURCE_MISSING = "fork_source_missing"
    """A fork's source session was not found: the inherited conversation is missing."""
    FORK_SOURCE_MOVED = "fork_source_moved"
    """A fork's source was found by its id, not where the fork recorded it (not damage)."""
    FORK_SOURCE_CHANGED = "fork_source_changed"
    """A fork's source no longer holds, up to the fork point, what the fork recorded."""
    FORK_LINEAGE_LOOP = "fork_lineage_loop"
    """A chain of fork origins comes back to a file already read."""


# Inexactness that does not mean the file is damaged or was edited: a session still running or
# resumed (no checkpoint yet, records after it), a compaction, a cap, a newer writer's records,
# a fork's source found by its id elsewhere (its digest still verifies it).
# Every other kind, including kinds added later, is damage (default-deny).
NOT_DAMAGE: Final = frozenset(
    {
        DegradationKind.NO_CHECKPOINT,
        DegradationKind.AFTER_CHECKPOINT,
        DegradationKind.REBUILT_FROM_COMPACTED,
        DegradationKind.MESSAGE_CAP,
        DegradationKind.UNKNOWN_RECORD,
        DegradationKind.UNKNOWN_FIELD,
        DegradationKind.NEWER_FORMAT,
        DegradationKind.FORK_SOURCE_MOVED,
    }
)


def is_damage(kind: DegradationKind | Degradation | str) -> bool:
    """Whether a degradation (or its kind, or a kind as written) means the file is damaged or
    was edited.

    The one verdict the writer (no checkpoint over damage), ``rollout verify`` and frameworks
    share. Default-deny: a kind not known to be benign, or not known at all, is damage.
    """
    if isinstance(kind, Degradation):
        kind = kind.kind
    return kind not in NOT_DAMAGE


@attrs.frozen
class Degradation:
    """One thing that could not be restored exactly: its kind, a sentence, and where."""

    kind: DegradationKind
    detail: str
    line: int | None = None
    seq: int | None = None

    @property
    def is_damage(self) -> bool:
        """Whether this degradation means the file is damaged or was edited (:func:`is_damage`)."""
        return is_damage(self.kind)

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.detail} [{self.kind}]"
