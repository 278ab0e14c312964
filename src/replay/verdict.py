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

from ledger.damage import Degradation, is_damage

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


def verify_replay(replay: Replay) -> Verification:
    """The verdict on a replay read with ``whole_file=True`` (as `rollout verify` reads it).

    A default replay reads only the window after the last compaction, so damage before it is
    not seen; an audit reads the whole file.
    """
    failures = damage(replay.degraded)
    if failures:
        return Verification(verdict=Verdict.FAILED, reasons=failures)
    if replay.verified:
        return Verification(verdict=Verdict.OK, reasons=())
    return Verification(verdict=Verdict.UNVERIFIED, reasons=replay.degraded)
