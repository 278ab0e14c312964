"""The reducer's steps for what describes a session without entering its conversation
(usage, turns, events, metadata updates, the session's own meta), how it follows sequence
numbers, and how it notes a degradation: a part of the reducer's builder
(:mod:`ledger.reducer`), kept apart so that the conversation's hot path reads on its own.
"""

from __future__ import annotations

import attrs

from ledger.damage import Degradation, DegradationKind
from ledger.records import FORMAT_VERSION, Description, Event, SessionMeta, Turn, Usage
from ledger.state import UsageTotals

__all__ = ["SessionFacts"]


class SessionFacts:
    """The builder's steps for what describes the session; the builder holds the fields."""

    __slots__ = (
        "damaged_run",
        "degraded",
        "digest_rule",
        "events",
        "last_event",
        "last_seq",
        "meta",
        "meta_updates",
        "title",
        "turn",
        "turns",
        "usage",
        "usage_ids",
    )
    damaged_run: int
    last_seq: int | None
    degraded: list[Degradation]
    meta: SessionMeta | None
    digest_rule: int
    usage: UsageTotals
    usage_ids: set[str]
    turn: Turn | None
    turns: int
    events: int
    last_event: Event | None
    title: str | None
    meta_updates: int

    def degrade(
        self, kind: DegradationKind, detail: str, line: int | None, seq: int | None = None
    ) -> None:
        self.degraded.append(Degradation(kind=kind, detail=detail, line=line, seq=seq))

    def check_seq(self, seq: int, line: int | None) -> None:
        last = self.last_seq
        expected = 1 if last is None else last + 1
        if last is not None and seq <= last:
            self.degrade(
                DegradationKind.SEQUENCE_DUPLICATE,
                f"sequence number {seq} repeats or goes back (the previous record had {last}); "
                "the record is applied as it stands",
                line,
                seq,
            )
            return
        missing = seq - expected
        # Damaged lines already reported account for the numbers they carried.
        if missing > self.damaged_run:
            self.degrade(
                DegradationKind.SEQUENCE_GAP,
                f"sequence jumps from {expected - 1} to {seq}: "
                f"{missing} record(s) missing before this line",
                line,
                seq,
            )
        self.last_seq = seq

    def on_description(self, entry: Description) -> None:
        # What describes the session stays out of the conversation, and so out of the digest
        # and of what a checkpoint covers (ADRs 0121-0124).
        if isinstance(entry, Usage):
            rid = entry.response_id
            if rid is not None and rid in self.usage_ids:
                self.usage = attrs.evolve(self.usage, repeated=self.usage.repeated + 1)
                return
            if rid is not None:
                self.usage_ids.add(rid)
            self.usage = self.usage.add(entry)
        elif isinstance(entry, Turn):
            self.turn = entry
            if entry.boundary == "start":
                self.turns += 1
        elif isinstance(entry, Event):
            self.events += 1
            self.last_event = entry
        else:
            self.meta_updates += 1
            if entry.title is not None:
                self.title = entry.title

    def on_meta(self, meta: SessionMeta, line: int | None, first: bool) -> None:
        if self.meta is not None:
            self.degrade(
                DegradationKind.META_REPEATED,
                f"a second session_meta (session {meta.session_id}) after the one for "
                f"{self.meta.session_id}; the first is kept",
                line,
                meta.seq,
            )
            return
        if not first:
            self.degrade(
                DegradationKind.META_NOT_FIRST,
                "session_meta is not the first record of the file",
                line,
                meta.seq,
            )
        if meta.format_version > FORMAT_VERSION:
            self.degrade(
                DegradationKind.NEWER_FORMAT,
                f"written in format version {meta.format_version}, newer than this reader's "
                f"{FORMAT_VERSION}: fields it does not know were ignored; upgrade rollout-ledger",
                line,
                meta.seq,
            )
        self.meta = meta
        if meta.format_version < 2:
            self.digest_rule = meta.format_version  # digested from its messages (ADR 0007)
