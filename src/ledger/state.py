"""What the reducer keeps: the state of a rollout's prefix as an immutable value, and the usage
totals it sums (ADRs 0063, 0121, 0131). :mod:`ledger.reducer` folds records into it."""

from __future__ import annotations

import attrs

from ledger.damage import Degradation
from ledger.digest import checkpoint_digest, digest_of_groups
from ledger.history import Rewound, SeqRun
from ledger.messages import Message, Reasoning
from ledger.records import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Event,
    Record,
    SessionMeta,
    Terminal,
    Turn,
    UnknownRecord,
    Usage,
)

__all__ = ["Entry", "ReplayState", "UsageTotals"]

Entry = Record | UnknownRecord | Degradation
"""What the reducer consumes: a record, a line of unknown type, or damage the reader found."""


@attrs.frozen
class UsageTotals:
    """Token usage summed over the ``usage`` records of a file, each response counted once.

    ``repeated`` counts usage records skipped because their response id was already counted
    (ADR 0121).
    """

    responses: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    repeated: int = 0

    def add(self, u: Usage) -> UsageTotals:
        """These totals with one more response's usage."""
        return UsageTotals(
            responses=self.responses + 1,
            input_tokens=self.input_tokens + u.input_tokens,
            output_tokens=self.output_tokens + u.output_tokens,
            cache_read_tokens=self.cache_read_tokens + u.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + u.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + u.reasoning_tokens,
            repeated=self.repeated,
        )


@attrs.frozen
class ReplayState:
    """What a prefix of a rollout says, as an immutable value.

    ``messages`` is the conversation rebuilt so far; ``at_checkpoint`` the conversation as it was
    when the last checkpoint was read, which is what that checkpoint's digest covers.
    ``window_start_line`` is set when a reader skipped the lines before the last compaction
    (``ledger.reader.rebuild(from_last_compaction=True)``) and resumed at that line.

    The format-2 records that describe the session without entering its conversation are
    summed up here and never touch ``messages``: ``usage`` (with ``usage_ids``, the response ids
    already counted), the last ``turn`` record and the number of turns started, the number of
    ``events`` and the last one, the ``title`` and the number of ``meta_updates``.

    Rewinds (ADR 0131): ``seq_runs`` gives the seq of each message's record (as runs, see
    :mod:`ledger.history`, so that a message read in sequence costs nothing more);
    ``rewound`` is what the rewinds since the last compaction left.
    """

    meta: SessionMeta | None = None
    messages: tuple[Message, ...] = ()
    pending_reasoning: tuple[Reasoning, ...] = ()
    checkpoint: AgentCheckpoint | None = None
    checkpoint_line: int | None = None
    at_checkpoint: tuple[Message, ...] = ()
    after_checkpoint: int = 0
    terminal: Terminal | None = None
    terminal_line: int | None = None
    compactions: int = 0
    compacted_line: int | None = None
    last_seq: int | None = None
    entries: int = 0
    degraded: tuple[Degradation, ...] = ()
    damaged_run: int = 0
    window_start_line: int | None = None
    usage: UsageTotals = UsageTotals()
    usage_ids: frozenset[str] = frozenset()
    turn: Turn | None = None
    turns: int = 0
    events: int = 0
    last_event: Event | None = None
    title: str | None = None
    meta_updates: int = 0
    seq_runs: tuple[SeqRun, ...] = ()
    run_broken: bool = True
    rewound: Rewound = attrs.field(factory=Rewound)
    digest_rule: int = FORMAT_VERSION
    digest_compaction: bytes | None = None
    digest_base: int = 0
    digest_groups: tuple[bytes, ...] = ()
    # The estimate of each group read, or UNKNOWN (ADR 0068): a cache of what the messages give,
    # known or not by where the reader's blocks fell, so two reads of one file compare equal.
    group_tokens: tuple[int, ...] = attrs.field(default=(), eq=False)
    pending_items: tuple[bytes, ...] = ()
    at_checkpoint_digest: str | None = None

    def digest(self) -> str:
        """The checkpoint digest of the conversation rebuilt so far, by the rule of the file's
        format version (ADR 0063): what a checkpoint written now would hold."""
        if self.digest_rule < 2:
            return checkpoint_digest(self.messages, format_version=self.digest_rule)
        return digest_of_groups(self.digest_groups, self.digest_compaction)
