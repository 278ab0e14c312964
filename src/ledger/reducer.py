"""The pure reducer: records in, the rebuilt conversation and what the file says about it out.

``apply(state, entry)`` is one step; ``fold(entries)`` folds many. Both run the same step over a
private mutable builder, so the fold law holds by construction:
``fold(a + b) == fold(b, fold(a))``. There is no I/O here; the writer's terminal path and replay
both rebuild through this module (SPEC rule 1), which lives in ``ledger`` so that ``ledger``
never needs ``replay`` (SPEC rule 5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs

from ledger.codec import join_message
from ledger.damage import Degradation, DegradationKind
from ledger.digest import Item, digest_of_groups, group_hash, record_item
from ledger.history import Rewound, SeqRun
from ledger.messages import Message, Reasoning, Role
from ledger.records import (
    DESCRIPTION_TYPES,
    AgentCheckpoint,
    Compacted,
    MessageRecord,
    ReasoningRecord,
    Rewind,
    SessionMeta,
    Terminal,
)
from ledger.reducer_facts import SessionFacts
from ledger.state import Entry, ReplayState, UsageTotals
from ledger.tokens import MESSAGE_OVERHEAD_TOKENS, UNKNOWN, AsciiBlocks, read_tokens

__all__ = [
    "Batch",
    "Entry",
    "ReplayState",
    "UsageTotals",
    "apply",
    "fold",
    "fold_batches",
    "fold_lines",
]

_ASSISTANT = Role.ASSISTANT
_OVERHEAD: Final = MESSAGE_OVERHEAD_TOKENS


_FIELDS: Final = tuple(f.name for f in attrs.fields(ReplayState))
# The fields the builder changes in place: a mutable copy in, an immutable one out.
_THAW: Final[dict[str, Callable[[Any], Any]]] = {
    "messages": list,
    "pending_reasoning": list,
    "degraded": list,
    "usage_ids": set,
    "seq_runs": list,
    "digest_groups": list,
    "group_tokens": list,
    "pending_items": list,
}
_FREEZE: Final[dict[str, Callable[[Any], Any]]] = {
    name: frozenset if thaw is set else tuple for name, thaw in _THAW.items()
}


class _Builder(SessionFacts):
    """The mutable twin of :class:`ReplayState`, private to this module."""

    __slots__ = tuple(n for n in (*_FIELDS, "ascii") if n not in SessionFacts.__slots__)
    # The working forms of the state's fields; every field is named here or in SessionFacts
    # once, and a field of ReplayState without its line fails the type check where it is used.
    messages: list[Message]
    pending_reasoning: list[Reasoning]
    checkpoint: AgentCheckpoint | None
    checkpoint_line: int | None
    at_checkpoint: tuple[Message, ...]
    after_checkpoint: int
    terminal: Terminal | None
    terminal_line: int | None
    compactions: int
    compacted_line: int | None
    entries: int
    window_start_line: int | None
    seq_runs: list[SeqRun]
    run_broken: bool
    rewound: Rewound
    digest_compaction: bytes | None
    digest_base: int
    digest_groups: list[bytes]
    group_tokens: list[int]
    pending_items: list[bytes]
    at_checkpoint_digest: str | None

    def __init__(self, s: ReplayState) -> None:
        self.ascii = AsciiBlocks()
        for name in _FIELDS:
            value = getattr(s, name)
            thaw = _THAW.get(name)
            setattr(self, name, value if thaw is None else thaw(value))

    def freeze(self) -> ReplayState:
        values = {name: getattr(self, name) for name in _FIELDS}
        for name, frozen in _FREEZE.items():
            values[name] = frozen(values[name])
        return ReplayState(**values)

    def drop_pending(self, line: int | None, before: str) -> None:
        n = len(self.pending_reasoning)
        self.degrade(
            DegradationKind.ORPHAN_REASONING,
            f"{n} reasoning block(s) not followed by an assistant message ({before}); dropped",
            line,
        )
        self.pending_reasoning.clear()
        self.pending_items.clear()

    def step(self, entry: Entry, line: int | None, item: Item | None = None) -> None:
        """One entry; ``item`` is its digest item as read (cut from its line), or ``None`` to
        take the canonical one."""
        # The hot path of every replay: a message record in sequence is handled first and
        # inline; everything else goes the general way.
        self.entries += 1
        if type(entry) is MessageRecord:
            seq = entry.seq
            last = self.last_seq
            if last is not None and seq == last + 1 and not self.damaged_run:
                self.last_seq = seq
                if self.run_broken:  # the record before was not a message: a new run
                    self.seq_runs.append((len(self.messages), seq, 1))
                    self.run_broken = False
                self.on_message(entry, line, item)
                return
        self.step_general(entry, line, item)

    def run(self, entries: Sequence[Entry], items: Sequence[Item | None], line: int) -> None:
        """A batch as the reader gives it: what :meth:`step` does for each entry, with the
        message and reasoning records that follow the previous record in sequence (no damage
        before them) handled inline, the common case of every replay."""
        messages = self.messages
        groups = self.digest_groups
        tokens = self.group_tokens
        ascii = self.ascii
        pending = self.pending_reasoning
        pending_items = self.pending_items
        hashing = self.digest_rule >= 2
        for entry, item in zip(entries, items, strict=True):
            kind = type(entry)
            if kind is MessageRecord or kind is ReasoningRecord:
                seq = entry.seq
                last = self.last_seq
                if last is not None and seq == last + 1 and not self.damaged_run:
                    if kind is ReasoningRecord:
                        self.entries += 1
                        self.last_seq = seq
                        self.run_broken = True
                        pending.append(entry.reasoning)  # type: ignore[union-attr]
                        if hashing:
                            pending_items.append(bytes(item or record_item(entry) or b""))
                        if self.checkpoint is not None:
                            self.after_checkpoint += 1
                        line += 1
                        continue
                    message = entry.message  # type: ignore[union-attr]
                    if not pending or message.role is _ASSISTANT:
                        self.entries += 1
                        self.last_seq = seq
                        if self.run_broken:
                            self.seq_runs.append((len(messages), seq, 1))
                            self.run_broken = False
                        if item is None and hashing:
                            item = record_item(entry)
                        if pending:
                            message = join_message(tuple(pending), message)
                            pending.clear()
                            if hashing:
                                pending_items.append(item)  # type: ignore[arg-type]
                                groups.append(group_hash(pending_items))
                                tokens.append(read_tokens(pending_items, ascii))
                            pending_items.clear()
                        elif hashing:
                            groups.append(group_hash((item,)))  # type: ignore[arg-type]
                            if ascii.block_of(item):  # type: ignore[arg-type]
                                tokens.append(_OVERHEAD + ((len(item) + 3) >> 2))  # type: ignore[arg-type]
                            else:
                                tokens.append(UNKNOWN)
                        messages.append(message)
                        if self.checkpoint is not None:
                            self.after_checkpoint += 1
                        line += 1
                        continue
            self.step(entry, line, item)
            # A compaction or a rewind may have replaced the lists; a session_meta the rule.
            messages = self.messages
            groups = self.digest_groups
            tokens = self.group_tokens
            pending = self.pending_reasoning
            pending_items = self.pending_items
            hashing = self.digest_rule >= 2
            line += 1

    def on_message(self, record: MessageRecord, line: int | None, item: Item | None) -> None:
        message = record.message
        hashing = self.digest_rule >= 2
        if hashing and item is None:
            item = record_item(record)
        if self.pending_reasoning:
            if message.role == Role.ASSISTANT:
                message = join_message(tuple(self.pending_reasoning), message)
                self.pending_reasoning.clear()
                if hashing:
                    self.pending_items.append(item)  # type: ignore[arg-type]
                    self.digest_groups.append(group_hash(self.pending_items))
                    self.group_tokens.append(read_tokens(self.pending_items, self.ascii))
                    hashing = False
                self.pending_items.clear()
            else:
                self.drop_pending(line, f"a {message.role} message came first")
        if hashing:
            self.digest_groups.append(group_hash((item,)))  # type: ignore[arg-type]
            self.group_tokens.append(read_tokens((item,), self.ascii))  # type: ignore[arg-type]
        self.messages.append(message)
        if self.checkpoint is not None:
            self.after_checkpoint += 1

    def step_general(self, entry: Entry, line: int | None, item: Item | None = None) -> None:
        first = self.entries == 1
        self.run_broken = True
        if isinstance(entry, Degradation):
            self.degraded.append(entry)
            self.damaged_run += 1
            return
        seq = entry.seq
        if seq is not None:
            last = self.last_seq
            if last is not None and seq == last + 1:
                self.last_seq = seq
            else:
                self.check_seq(seq, line)
        self.damaged_run = 0
        if isinstance(entry, MessageRecord):
            self.seq_runs.append((len(self.messages), entry.seq, 1))
            self.run_broken = False
            self.on_message(entry, line, item)
        elif isinstance(entry, ReasoningRecord):
            self.pending_reasoning.append(entry.reasoning)
            if self.digest_rule >= 2:
                # Kept as bytes: the line's block is not held for a message still to come.
                self.pending_items.append(bytes(item or record_item(entry) or b""))
            if self.checkpoint is not None:
                self.after_checkpoint += 1
        elif isinstance(entry, AgentCheckpoint):
            self.checkpoint = entry
            self.checkpoint_line = line
            self.at_checkpoint = tuple(self.messages)
            self.at_checkpoint_digest = (
                digest_of_groups(self.digest_groups, self.digest_compaction)
                if self.digest_rule >= 2
                else None
            )
            self.after_checkpoint = 0
        elif isinstance(entry, Terminal):
            self.terminal = entry
            self.terminal_line = line
        elif isinstance(entry, Compacted):
            if self.pending_reasoning:
                self.drop_pending(line, "a compaction came first")
            self.messages = list(entry.messages)
            self.seq_runs = [(0, entry.seq, 0)] if entry.messages else []
            if self.digest_rule >= 2:
                self.digest_compaction = group_hash((item or record_item(entry) or b"",))
                self.digest_base = len(entry.messages)
                self.digest_groups.clear()
                self.group_tokens.clear()
            self.compactions += 1
            self.compacted_line = line
            self.rewound = Rewound(base=entry.seq)
            if self.checkpoint is not None:
                self.after_checkpoint += 1
        elif isinstance(entry, SessionMeta):
            self.on_meta(entry, line, first)
        elif isinstance(entry, DESCRIPTION_TYPES):
            self.on_description(entry)
        elif isinstance(entry, Rewind):
            self.on_rewind(entry, line)
            if self.checkpoint is not None:
                self.after_checkpoint += 1
        else:
            self.degrade(
                DegradationKind.UNKNOWN_RECORD,
                f"record type {entry.type!r} is unknown to this reader "
                "(written by a newer version?); skipped",
                line,
                entry.seq,
            )

    def on_rewind(self, entry: Rewind, line: int | None) -> None:
        if self.pending_reasoning:
            self.drop_pending(line, "a rewind came first")
        problem = self.rewound.problem(entry)
        if problem is not None:
            self.degrade(
                DegradationKind.REWIND_UNRESOLVED,
                f"the rewind at seq {entry.seq} cannot be applied: {problem}; it was ignored",
                line,
                entry.seq,
            )
            return
        self.rewound = self.rewound.apply(entry, self.messages, self.seq_runs)
        if self.digest_rule >= 2:
            # A rewind never cuts into a compaction's messages (they are pinned, ADR 0131).
            kept = max(0, len(self.messages) - self.digest_base)
            del self.digest_groups[kept:]
            del self.group_tokens[kept:]


def apply(state: ReplayState, entry: Entry, *, line: int | None = None) -> ReplayState:
    """One step of the reducer: the state after ``entry`` (read at ``line``, when known)."""
    b = _Builder(state)
    b.step(entry, line)
    return b.freeze()


def fold(entries: Iterable[Entry], initial: ReplayState | None = None) -> ReplayState:
    """Fold entries into a state, starting from ``initial`` (an empty state by default)."""
    b = _Builder(initial or ReplayState())
    step = b.step
    for entry in entries:
        step(entry, None)
    return b.freeze()


def fold_lines(
    numbered: Iterable[tuple[int, Entry]], initial: ReplayState | None = None
) -> ReplayState:
    """Fold ``(line, entry)`` pairs as the reader yields them, so degradations carry lines."""
    b = _Builder(initial or ReplayState())
    step = b.step
    for line, entry in numbered:
        step(entry, line)
    return b.freeze()


Batch = tuple[int, Sequence[Entry]] | tuple[int, Sequence[Entry], Sequence[Item | None] | None]
"""Entries of consecutive lines with the number of the first line, and, as the reader gives
them, each entry's digest item cut from its line (``None`` where it has none)."""


def fold_batches(batches: Iterable[Batch], initial: ReplayState | None = None) -> ReplayState:
    """Fold batches of entries read from consecutive lines, each given with its first line
    (and the items the reader cut; without them, the canonical items are taken).

    The reader's fast path: one call per batch of lines instead of one per line.
    """
    b = _Builder(initial or ReplayState())
    step = b.step
    for batch in batches:
        line = batch[0]
        items = batch[2] if len(batch) > 2 else None
        if items is None:
            for entry in batch[1]:
                step(entry, line)
                line += 1
        else:
            b.run(batch[1], items, line)
    return b.freeze()
