"""Resume eligibility: default-deny tiers, each with a human reason (SPEC rule 10)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import AgentCheckpoint, SessionMeta, StopKind, Terminal
from replay import Eligibility, StopFacts, Tier, read_stop_facts, resume_eligibility
from rollout_files import RolloutBuilder, conversation
from strategies import checkpoints, session_metas, terminals

T0 = datetime(2026, 12, 2, tzinfo=UTC)
CKPT = AgentCheckpoint(seq=5, ts=T0, digest="sha256:00", message_count=3)

# The tier every StopKind member must get. A member added to StopKind without a line here, or
# without its own case in the classifier, turns test_every_kind_is_claimed red.
EXPECTED: dict[StopKind, tuple[Tier, bool]] = {
    StopKind.PAUSED: (Tier.REPLAYABLE, True),
    StopKind.CANCELLED: (Tier.REPLAYABLE, True),
    StopKind.COMPLETED: (Tier.NOTHING_TO_RESUME, False),
    StopKind.FAILED: (Tier.HAND_OFF, False),
    StopKind.ERROR: (Tier.HAND_OFF, False),
    StopKind.INTERRUPTED: (Tier.INTERRUPTED, False),
    StopKind.CLOSED: (Tier.CLOSED, False),
    StopKind.MAX_TURNS: (Tier.LIMIT_REACHED, False),
    StopKind.BUDGET_EXHAUSTED: (Tier.LIMIT_REACHED, False),
}


def facts_for(stop_kind: str | None, *, checkpoint: AgentCheckpoint | None = CKPT) -> StopFacts:
    term = Terminal(seq=6, ts=T0, stop_kind=stop_kind, reason="why")
    return StopFacts(
        found=True,
        kind=term.kind,
        stop_kind=stop_kind,
        reason="why",
        checkpoint=checkpoint,
        terminal=term,
    )


@pytest.mark.parametrize("kind", list(StopKind))
def test_every_kind_is_claimed(kind: StopKind) -> None:
    """Every StopKind member is classified explicitly, never by the default-deny branch."""
    assert kind in EXPECTED, f"StopKind.{kind.name} has no expected tier: claim it"
    decision = resume_eligibility(facts_for(kind.value))
    tier, replayable = EXPECTED[kind]
    assert decision.tier is tier
    assert decision.replayable is replayable
    assert "unknown" not in decision.reason
    assert decision.reason


def test_expected_table_covers_exactly_the_enum() -> None:
    """The table of expected tiers names exactly the members of StopKind."""
    assert set(EXPECTED) == set(StopKind)


def test_only_paused_and_cancelled_are_replayable() -> None:
    """Of all kinds, only paused and cancelled are replayable as-is."""
    replayable = {k for k in StopKind if resume_eligibility(facts_for(k.value)).replayable}
    assert replayable == {StopKind.PAUSED, StopKind.CANCELLED}


@given(st.text(min_size=1, max_size=20).filter(lambda s: s not in {k.value for k in StopKind}))
def test_unknown_kind_is_not_replayable(kind: str) -> None:
    """A stop kind this library does not know is denied, with a reason naming it."""
    decision = resume_eligibility(facts_for(kind))
    assert not decision.replayable
    assert decision.tier is Tier.UNKNOWN
    assert repr(kind) in decision.reason


def test_legacy_terminal_without_kind_is_replayable() -> None:
    """A legacy terminal record without a stop kind counts as cancelled: replayable."""
    decision = resume_eligibility(facts_for(None))
    assert decision.replayable
    assert decision.tier is Tier.REPLAYABLE
    assert "cancelled" in decision.reason


def test_legacy_file_is_replayable_end_to_end(tmp_path: Path) -> None:
    """A file whose terminal record has no stop kind is replayable when read from disk."""
    path = RolloutBuilder(tmp_path).extend(conversation()).stop(None).write()
    assert resume_eligibility(read_stop_facts(path)).replayable


def test_not_found_is_unknown_with_a_reason() -> None:
    """No stop facts: tier unknown, not replayable, and the reason says why."""
    decision = resume_eligibility(StopFacts(found=False))
    assert not decision.replayable
    assert decision.tier is Tier.UNKNOWN
    assert "no checkpoint or terminal" in decision.reason
    exhausted = resume_eligibility(StopFacts(found=False, exhausted=True, bytes_scanned=1024))
    assert "1024 bytes" in exhausted.reason


def test_killed_with_checkpoint_is_not_replayable_as_is() -> None:
    """A checkpoint without a terminal record after it is its own tier, denied, with a reason."""
    facts = StopFacts(found=True, checkpoint=CKPT, killed=True, records_after=4)
    decision = resume_eligibility(facts)
    assert not decision.replayable
    assert decision.tier is Tier.KILLED
    assert "4 record(s)" in decision.reason


def meta(parent: str | None, delegation: str | None) -> SessionMeta:
    return SessionMeta(
        seq=1,
        ts=T0,
        format_version=1,
        session_id="child",
        started_at=T0,
        parent_session_id=parent,
        delegation_id=delegation,
    )


@pytest.mark.parametrize(
    ("parent", "delegation", "replayable"),
    [
        (None, None, True),
        ("p-1", "call_1", True),
        ("p-1", None, False),
        (None, "call_1", False),
        ("", "call_1", False),
        ("p-1", "", False),
        ("", "", False),
    ],
)
def test_child_without_coordinates_is_not_replayable(
    parent: str | None, delegation: str | None, replayable: bool
) -> None:
    """A delegated child missing a coordinate (absent or empty) is denied, not taken for a root."""
    decision = resume_eligibility(facts_for("paused"), meta=meta(parent, delegation))
    assert decision.replayable is replayable
    if not replayable:
        assert decision.tier is Tier.NO_COORDINATES
        assert "coordinates" in decision.reason


def test_a_decision_needs_a_reason() -> None:
    """An eligibility decision cannot be made with an empty reason."""
    with pytest.raises(ValueError, match="reason"):
        Eligibility(replayable=True, tier=Tier.REPLAYABLE, reason="")


@given(
    found=st.booleans(),
    terminal=st.none() | terminals,
    checkpoint=st.none() | checkpoints,
    killed=st.booleans(),
    exhausted=st.booleans(),
    m=st.none() | session_metas,
)
def test_every_decision_has_a_reason_and_denies_by_default(
    found: bool,
    terminal: Terminal | None,
    checkpoint: AgentCheckpoint | None,
    killed: bool,
    exhausted: bool,
    m: SessionMeta | None,
) -> None:
    """Any facts give a decision with a reason; replayable only for paused, cancelled or legacy."""
    facts = StopFacts(
        found=found,
        kind=terminal.kind if terminal else None,
        stop_kind=terminal.stop_kind if terminal else None,
        checkpoint=checkpoint,
        terminal=terminal,
        killed=killed,
        exhausted=exhausted,
    )
    decision = resume_eligibility(facts, meta=m)
    assert decision.reason.strip()
    if decision.replayable:
        assert found
        assert terminal is not None
        assert terminal.stop_kind in (None, StopKind.PAUSED.value, StopKind.CANCELLED.value)


@given(stop_kind=st.none() | st.text(max_size=20) | st.sampled_from(list(StopKind)))
def test_a_terminal_names_its_kind_only_when_it_is_a_stop_kind(stop_kind: str | None) -> None:
    """Terminal.kind is the StopKind whose value the record holds, else None (unknown, absent)."""
    kind = Terminal(seq=6, ts=T0, stop_kind=stop_kind).kind
    assert kind == (StopKind(stop_kind) if stop_kind in set(StopKind) else None)
    assert kind is None or isinstance(kind, StopKind)
