"""Rewinds: which records a rewind may name, and what it leaves behind (ADR 0131).

A ``rewind`` record says "the conversation continues from its state at record ``to``". The
state at a record of the current conversation is a prefix of it: the messages whose records
come at or before ``to``. So a rewind truncates the conversation, and replay equals a plain
model that truncates a list. That holds only when ``to`` names a record of the current
conversation; :func:`rewind_problem` is the one statement of that rule, asked by the writer
before it writes a rewind and by the reducer when it folds one.

The reducer knows the seq of each message's record as runs (:data:`SeqRun`): ``(first message,
its seq, step)``, message ``i`` of the run having seq ``seq + step * (i - first)``. A run starts
wherever a message does not directly follow another message's record (step 1), and a
compaction's messages are one run of step 0 (they all carry its seq). A message read in
sequence right after another costs the reducer nothing; a rewind reads the runs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

import attrs

from ledger.messages import Message
from ledger.records import Rewind

__all__ = ["Abandoned", "RewindTargets", "Rewound", "SeqRun", "message_seq", "rewind_problem"]

SeqRun = tuple[int, int, int]
"""``(first message, its seq, step)``: the seqs of the records of a run of messages."""


def message_seq(runs: Sequence[SeqRun], index: int) -> int:
    """The seq of the record of message ``index``, from the runs that cover it (0 for a message
    no run covers: one a state was built with rather than folded from records)."""
    at = bisect_right(runs, (index, float("inf"))) - 1
    if at < 0:
        return 0
    first, seq, step = runs[at]
    return seq + step * (index - first)


def _kept(runs: Sequence[SeqRun], count: int, to: int) -> int:
    """How many of the first ``count`` messages have records at or before seq ``to`` (their
    seqs never go down, so a binary search over the messages)."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        if message_seq(runs, mid) <= to:
            lo = mid + 1
        else:
            hi = mid
    return lo


@attrs.frozen
class Abandoned:
    """A message a rewind took out of the conversation; it stays in the file, and on display.

    ``seq`` is its record's sequence number, ``rewind_seq`` that of the rewind that left it,
    and ``position`` how many messages of the current conversation come before it in the file
    (where a transcript shows it).
    """

    message: Message
    seq: int
    rewind_seq: int
    position: int


def rewind_problem(
    to: int, at: int, base: int, abandoned: Iterable[tuple[int, int]] = ()
) -> str | None:
    """What is wrong with a rewind to record ``to`` written at seq ``at``, or ``None``.

    ``base`` is the first record of the current conversation (1, or the seq of the last
    compaction); ``abandoned`` the ``(to, at)`` pairs of the rewinds applied since then.
    """
    if to < 1:
        return f"seq {to} is before the start of the session (its first record is seq 1)"
    if to >= at:
        return f"seq {to} is not before the rewind (seq {at}): a rewind goes back"
    if to < base:
        return (
            f"seq {to} lies before the last compaction (seq {base}), which replaced that "
            f"conversation: rewind to seq {base} or later, or fork the session at seq {to}"
        )
    for first, rewind in abandoned:
        if first < to < rewind:
            return (
                f"seq {to} was abandoned by the rewind at seq {rewind}: rewind to seq {first} "
                f"or to a later record, or fork the session at seq {to} to continue from it"
            )
    return None


@attrs.frozen
class Rewound:
    """What the rewinds since the last compaction left, as the reducer keeps it.

    ``base`` is the first record of the current conversation (1, or the last compaction's
    seq); ``ranges`` the ``(to, at)`` of each rewind applied since; ``abandoned`` the messages
    they took out, in file order; ``rewinds`` how many were applied.
    """

    base: int = 1
    ranges: tuple[tuple[int, int], ...] = ()
    abandoned: tuple[Abandoned, ...] = ()
    rewinds: int = 0

    def problem(self, rewind: Rewind) -> str | None:
        """:func:`rewind_problem` for ``rewind`` against this state."""
        return rewind_problem(rewind.to, rewind.seq, self.base, self.ranges)

    def apply(self, rewind: Rewind, messages: list[Message], runs: list[SeqRun]) -> Rewound:
        """Truncate ``messages`` (and the ``runs`` of their seqs) in place to their state at
        ``rewind.to``, which :meth:`problem` accepted; return the state after it."""
        keep = _kept(runs, len(messages), rewind.to)
        left = tuple(
            Abandoned(
                message=messages[i],
                seq=message_seq(runs, i),
                rewind_seq=rewind.seq,
                position=keep,
            )
            for i in range(keep, len(messages))
        )
        # Messages abandoned earlier sat after messages this rewind drops: they now follow
        # the last message kept.
        earlier = tuple(
            a if a.position <= keep else attrs.evolve(a, position=keep) for a in self.abandoned
        )
        del messages[keep:]
        del runs[bisect_right(runs, (keep, -1)) :]
        return Rewound(
            base=self.base,
            ranges=(*self.ranges, (rewind.to, rewind.seq)),
            abandoned=tuple(sorted(earlier + left, key=_file_order)),
            rewinds=self.rewinds + 1,
        )


def _file_order(a: Abandoned) -> int:
    return a.seq


class RewindTargets:
    """The writer's view of which records a rewind may name (mutable; under its op lock)."""

    __slots__ = ("abandoned", "base")

    def __init__(self, base: int = 1, abandoned: Iterable[tuple[int, int]] = ()) -> None:
        self.base = base
        self.abandoned = list(abandoned)

    def problem(self, to: int, at: int) -> str | None:
        """:func:`rewind_problem` for a rewind to ``to`` written at seq ``at``."""
        return rewind_problem(to, at, self.base, self.abandoned)

    def rewound(self, to: int, at: int) -> None:
        """A rewind to ``to`` was written at seq ``at``."""
        self.abandoned.append((to, at))

    def compacted(self, seq: int) -> None:
        """A compaction was written at ``seq``: the conversation starts again there."""
        self.base = seq
        self.abandoned.clear()
