"""Is this degradation damage? The verdict `rollout verify` gives, as a library function.

A degradation says something could not be restored exactly. Some kinds say nothing is wrong
with the file: a session still running or resumed (no checkpoint yet, records after it), a
compaction, a cap the caller asked for, a newer writer's record types. Every other kind,
including any kind added later, is damage: the file was cut, edited or corrupted, or breaks the
format's rules (default-deny, as SPEC rule 10 does for stop kinds). A framework asks
:func:`ledger.is_damage` or :func:`verify_replay` and gets the answer `rollout verify` prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING

import attrs

from ledger.damage import Degradation, DegradationKind, is_damage

if TYPE_CHECKING:
    from replay.replay import Replay

__all__ = ["Verdict", "Verification", "damage", "verify_replay"]


def damage(degraded: Iterable[Degradation]) -> tuple[Degradation, ...]:
    """The degradations among ``degraded`` that are damage, in order."""
    return tuple(d for d in degraded if is_damage(d.kind))


class Verdict(StrEnum):
    """What `rollout verify` says of one rollout."""

    OK = "ok"
    """The last checkpoint's digest verified and nothing is damaged."""
    UNVERIFIED = "unverified"
    """Nothing damaged, but nothing to verify against (no checkpoint yet, records after it)."""
    FAILED = "failed"
    """Damage: a digest mismatch, damaged lines, broken sequence, a missing head..."""


@attrs.frozen
class Verification:
    """A verdict and the degradations behind it (the damage when failed, else all of them)."""

    verdict: Verdict
    reasons: tuple[Degradation, ...]


def verify_replay(replay: Replay, *, live: bool = False) -> Verification:
    """The verdict on a replay read with ``whole_file=True`` (as `rollout verify` reads it).

    A default replay reads only the window after the last compaction, so damage before it is
    not seen; an audit reads the whole file. ``live`` says a writer holds the file
    (:func:`ledger.locking.writer_active`): its last line may be a write in progress, so an
    incomplete last line is not damage, and the verdict is at best unverified (ADR 0054).
    """
    degraded = replay.degraded
    if live:
        degraded = tuple(d for d in degraded if d.kind != DegradationKind.TORN_TAIL)
    failures = damage(degraded)
    if failures:
        return Verification(verdict=Verdict.FAILED, reasons=failures)
    if replay.verified and not live:
        return Verification(verdict=Verdict.OK, reasons=())
    if live:
        degraded = (
            *degraded,
            Degradation(
                kind=DegradationKind.AFTER_CHECKPOINT,
                detail="a writer holds the file open (a live session): what it is writing "
                "now is not covered by a checkpoint yet",
            ),
        )
    return Verification(verdict=Verdict.UNVERIFIED, reasons=degraded)
