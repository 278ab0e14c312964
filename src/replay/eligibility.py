"""Resume eligibility: the default-deny decision the stop facts imply (SPEC rule 10).

Only a session paused or cancelled (or a legacy terminal record without a stop kind, taken as
cancelled) is replayable as-is; every other kind, and any kind this library does not know, is
not, each with a tier and a reason a person can read.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache

import msgspec

from ledger.records import SessionMeta, StopKind
from replay.stop import StopFacts

__all__ = ["Eligibility", "Tier", "child_without_coordinates", "resume_eligibility"]


class Tier(StrEnum):
    """The resume tiers, from replayable as-is to unknown."""

    REPLAYABLE = "replayable"
    NOTHING_TO_RESUME = "nothing_to_resume"
    HAND_OFF = "hand_off"
    INTERRUPTED = "interrupted"
    LIMIT_REACHED = "limit_reached"
    KILLED = "killed"
    CLOSED = "closed"
    NO_COORDINATES = "no_coordinates"
    UNKNOWN = "unknown"


class Eligibility(msgspec.Struct, frozen=True, gc=False):
    """Whether a session can be replayed as-is, its tier, and a reason a person can read.

    A frozen ``msgspec.Struct``, not an attrs class, like the listing's other values: an
    index listing decodes them by the hundred thousand (ADR 0159)."""

    replayable: bool
    tier: Tier
    reason: str

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError("an eligibility decision needs a reason")


def child_without_coordinates(meta: SessionMeta | None) -> bool:
    """A delegated child that lacks one of its coordinates (parent session id, delegation id).

    An empty value is as missing as an absent one (SPEC rule 13); a file with neither is a root.
    """
    if meta is None:
        return False
    parent, delegation = meta.parent_session_id, meta.delegation_id
    if parent is None and delegation is None:
        return False
    return not parent or not delegation


def resume_eligibility(facts: StopFacts, *, meta: SessionMeta | None = None) -> Eligibility:
    """Decide whether the session whose stop facts are ``facts`` can be replayed as-is.

    Default-deny: only a session paused or cancelled (or a legacy terminal record without a
    stop kind, taken as cancelled) is replayable. With ``meta``, a delegated child whose
    coordinates are missing is not replayable either.
    """
    if not isinstance(facts, StopFacts):
        raise TypeError(
            f"resume_eligibility() takes the StopFacts of read_stop_facts(), not "
            f"{type(facts).__name__}"
        )
    decision = _classify(facts)
    if decision.replayable and child_without_coordinates(meta):
        return _NO_COORDINATES
    return decision


# Decisions are frozen values, and a listing asks for the same few again and again: each is
# built once per set of facts that decides it (the caches are bounded: an unknown stop kind
# or a count comes from the file).
_NO_COORDINATES = Eligibility(
    replayable=False,
    tier=Tier.NO_COORDINATES,
    reason="a delegated child without its coordinates (parent session id and delegation "
    "id): it cannot be attached back to its parent, so it is not replayable as-is",
)
_LEGACY = Eligibility(
    replayable=True,
    tier=Tier.REPLAYABLE,
    reason="legacy terminal record without a stop kind, taken as cancelled: replayable as-is",
)


def _classify(facts: StopFacts) -> Eligibility:
    if not facts.found:
        return _unknown(facts.bytes_scanned if facts.exhausted else None)
    if facts.terminal is None:
        return _killed(facts.records_after)
    if facts.terminal.stop_kind is None:
        return _LEGACY
    return _classify_kind(facts.terminal.stop_kind)


@lru_cache(maxsize=64)
def _unknown(scanned: int | None) -> Eligibility:
    why = (
        f"no checkpoint or terminal record in the last {scanned} bytes scanned"
        if scanned is not None
        else "the file has no checkpoint or terminal record (killed before its first stop?)"
    )
    return Eligibility(replayable=False, tier=Tier.UNKNOWN, reason=f"stop unknown: {why}")


@lru_cache(maxsize=64)
def _killed(records_after: int) -> Eligibility:
    after = f"; {records_after} record(s) written after it are not covered" if records_after else ""
    return Eligibility(
        replayable=False,
        tier=Tier.KILLED,
        reason="killed: the last checkpoint has no terminal record after it, so how the "
        f"session stopped is unknown{after}; replay it to verify, or hand off",
    )


@lru_cache(maxsize=64)
def _classify_kind(kind: str) -> Eligibility:
    # Matched on the string as written, so that a kind this library does not know and a
    # member nobody claimed meet the same default branch, which denies. Every member is named
    # on purpose: the test that walks StopKind turns red on a member added but not claimed.
    match kind:
        case StopKind.PAUSED:
            return Eligibility(
                replayable=True, tier=Tier.REPLAYABLE, reason="paused: replayable as-is"
            )
        case StopKind.CANCELLED:
            return Eligibility(
                replayable=True, tier=Tier.REPLAYABLE, reason="cancelled: replayable as-is"
            )
        case StopKind.COMPLETED:
            return Eligibility(
                replayable=False,
                tier=Tier.NOTHING_TO_RESUME,
                reason="completed: nothing to resume",
            )
        case StopKind.FAILED:
            return Eligibility(
                replayable=False,
                tier=Tier.HAND_OFF,
                reason="failed: hand off to a fresh session instead of replaying the failure",
            )
        case StopKind.ERROR:
            return Eligibility(
                replayable=False,
                tier=Tier.HAND_OFF,
                reason="stopped on an error: hand off to a fresh session instead",
            )
        case StopKind.INTERRUPTED:
            return Eligibility(
                replayable=False,
                tier=Tier.INTERRUPTED,
                reason="interrupted mid-turn: the last turn may be incomplete; hand off, or "
                "replay with care after checking its open tool calls",
            )
        case StopKind.MAX_TURNS:
            return Eligibility(
                replayable=False,
                tier=Tier.LIMIT_REACHED,
                reason="stopped at its turn limit: replaying would hit it again; hand off",
            )
        case StopKind.BUDGET_EXHAUSTED:
            return Eligibility(
                replayable=False,
                tier=Tier.LIMIT_REACHED,
                reason="stopped with its budget exhausted: replaying would exhaust it again; "
                "hand off",
            )
        case StopKind.CLOSED:
            return Eligibility(
                replayable=False,
                tier=Tier.CLOSED,
                reason="closed without a stop kind: the writer was closed (or its process "
                "exited) without saying how the session stopped, so the last turn may be "
                "incomplete; replay it to check, then resume with care or hand off",
            )
        case _:
            return Eligibility(
                replayable=False,
                tier=Tier.UNKNOWN,
                reason=f"unknown stop kind {kind!r} (written by a newer version?): not "
                "replayable until this library knows it (default deny)",
            )
