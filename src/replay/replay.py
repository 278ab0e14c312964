"""Replay: the conversation rebuilt exactly from a rollout, verified against its last checkpoint.

:func:`read_replay` streams the file through the one reader and the one reducer of ``ledger``
(there is no second implementation here), verifies the last checkpoint's digest over the
messages rebuilt up to it, and lists every inexact restoration in ``degraded`` (SPEC rule 11).
It returns the conversation exactly as written: system messages, full reasoning, untruncated tool
output, duplicate tool outputs as they were. It never goes through the lossy view (SPEC rule 4).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import attrs

from ledger.damage import Degradation, DegradationKind
from ledger.digest import checkpoint_digest, message_items
from ledger.error_copies import CopiedAsRaised
from ledger.history import Abandoned
from ledger.lineage import Inherited
from ledger.messages import Message
from ledger.reader import rebuild
from ledger.records import AgentCheckpoint, SessionMeta, Terminal
from ledger.reducer import ReplayState, UsageTotals
from ledger.tokens import BYTES_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, UNKNOWN, tokens_of_items
from replay._checks import check_budget, check_callable, check_count
from replay._files import open_rollout
from replay._location import Location, location
from replay.lineage import inherited_for
from replay.stop import StopFacts, stop_facts_from_file
from replay.verdict import damage

__all__ = [
    "BYTES_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "Replay",
    "ReplayTooLarge",
    "TokenCounter",
    "estimate_tokens",
    "read_replay",
    "replay_from_state",
]

TokenCounter = Callable[[Message], int]
"""Counts the tokens of one message; plug in a real tokenizer where the estimate is not enough."""


def estimate_tokens(message: Message) -> int:
    """The default token estimate of one message: cheap, tokenizer-free, CJK-aware.

    Over the message's records as the writer encodes them (its reasoning blocks and itself,
    tool calls and provider fields included; :mod:`ledger.tokens`): ASCII counts one token per
    :data:`BYTES_PER_TOKEN` bytes, and every non-ASCII character (CJK, emoji, accented letters)
    counts one token, since BPE tokenizers rarely merge them. Plus
    :data:`MESSAGE_OVERHEAD_TOKENS`. It is an estimate for budgets, not a bill. A replay of a
    file of format 2 takes it from the lengths of the ASCII lines it read, without encoding the
    messages again.
    """
    return tokens_of_items(message_items(message))


@attrs.frozen
class Replay:
    """A rollout's conversation rebuilt exactly, with what could not be restored exactly.

    ``messages`` is the conversation as written (the most recent ``max_messages`` when capped).
    ``verified`` is true when the last checkpoint's digest and message count match the messages
    rebuilt up to it and nothing was rebuilt after it: the whole conversation is covered.
    ``degraded`` lists every inexact restoration, one entry each. ``total_messages`` is the
    length of the rebuilt conversation before any cap; ``stop`` are the stop facts read from
    the file's tail. ``estimated_tokens`` is counted by ``token_counter`` when first read.

    A fork's ``messages`` begin with the conversation it inherits (``inherited``: the sources
    read, nearest first, and whether each matched its recorded digest); ``verified`` then also
    needs every source to match (ADR 0130). ``abandoned`` are the messages rewinds took out
    (ADR 0131), ``usage`` the token usage this file records, never a source's (ADR 0132).
    """

    path: Location
    meta: SessionMeta | None
    messages: tuple[Message, ...]
    checkpoint: AgentCheckpoint | None
    terminal: Terminal | None
    verified: bool
    degraded: tuple[Degradation, ...]
    total_messages: int
    compactions: int
    stop: StopFacts
    inherited: Inherited | None = None
    abandoned: tuple[Abandoned, ...] = ()
    usage: UsageTotals = attrs.field(factory=UsageTotals)
    token_counter: TokenCounter = attrs.field(default=estimate_tokens, eq=False, repr=False)
    # Counting encodes every message again (a fifth of a replay's cost), so it is done on first
    # use and kept; it derives from the messages and the counter, so equality ignores it.
    _tokens: int | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @property
    def estimated_tokens(self) -> int:
        """The token estimate of ``messages`` by ``token_counter`` (counted on first use)."""
        tokens = self._tokens
        if tokens is None:
            count = self.token_counter
            tokens = 0
            for i, m in enumerate(self.messages):
                n = count(m)
                if type(n) is not int or n < 0:
                    # A NaN, a negative or a non-number would silently switch a budget off.
                    raise (TypeError if not isinstance(n, int | float) else ValueError)(
                        f"token_counter returned {n!r} for message {i}: it must return an int "
                        "of 0 or more"
                    )
                tokens += n
            object.__setattr__(self, "_tokens", tokens)
        return tokens

    @property
    def exact(self) -> bool:
        """Verified and nothing degraded: the conversation is restored exactly."""
        return self.verified and not self.degraded

    @property
    def damage(self) -> tuple[Degradation, ...]:
        """The degradations that mean damage (:func:`ledger.is_damage`), as `verify` judges."""
        return damage(self.degraded)

    @property
    def session_id(self) -> str | None:
        """The session id from ``session_meta``, when the file has one."""
        return self.meta.session_id if self.meta is not None else None


class ReplayTooLarge(CopiedAsRaised, Exception):  # noqa: N818 - the public name is fixed by the specification
    """The replayed conversation is over the token budget; ``.replay`` is the complete replay.

    Write a hand-off report from it (:func:`replay.handoff_report`) rather than reading the
    file again.
    """

    def __init__(self, replay: Replay, budget: float) -> None:
        self.replay = replay
        self.budget = budget
        super().__init__(
            f"{replay.path}: the replay is estimated at {replay.estimated_tokens} tokens, over "
            f"the budget of {budget}; write a hand-off report from this error's .replay, or "
            "raise the budget"
        )


def read_replay(
    path: str | os.PathLike[str],
    *,
    token_budget: float | None = None,
    max_messages: int | None = None,
    token_counter: TokenCounter | None = None,
    whole_file: bool = False,
    root: str | os.PathLike[str] | None = None,
) -> Replay:
    """Rebuild, verify and measure the conversation in the rollout at ``path``.

    ``max_messages`` keeps the most recent messages only (reported in ``degraded``);
    ``token_counter`` replaces :func:`estimate_tokens`. Over ``token_budget``, raises
    :class:`ReplayTooLarge` carrying the complete replay. Raises ``OSError`` when the file cannot
    be read; damage inside the file is never raised, it is listed in ``degraded``.

    By default only the window after the last compaction is read, so time and memory follow
    the replayed window, not the file; damage in the lines before it (which the compaction
    replaced) is then not looked at. ``whole_file=True`` reads every line, as an audit does.

    A fork's inherited conversation is read from its sources, found where the fork recorded
    them or by id under ``root`` (the fork's directory when ``None``).

    A path that is not a regular file (a FIFO, a device, a directory) raises
    :class:`~replay.NotARegularFileError` at once. ``path`` may be the URL of an object on any
    fsspec file system (``s3://bucket/x.jsonl``, with the ``fleet`` extra): it is read in
    ranged blocks, and an object replaced while it is read raises an ``OSError``. A parameter
    of the wrong type raises ``TypeError``, a negative or non-finite one ``ValueError``, each
    naming the parameter.
    """
    check_budget("token_budget", token_budget)
    check_count("max_messages", max_messages)
    check_callable("token_counter", token_counter)
    try:
        with open_rollout(path) as f:
            # Seeking to the end gives the size of a local file and of an object alike.
            stop = stop_facts_from_file(f, f.seek(0, os.SEEK_END))
            # Only the window after the last compaction is read (memory follows the window,
            # not the file), unless the checkpoint to verify lies before that compaction or the
            # tail scan could not tell where the last checkpoint is.
            state = rebuild(
                f,
                from_last_compaction=not (whole_file or stop.exhausted),
                checkpoint_seq=stop.checkpoint.seq if stop.checkpoint is not None else None,
            )
    except OSError as exc:
        if exc.filename is None:  # a read or seek error names no file by itself
            exc.filename = os.fspath(path)
        raise
    where = location(path)
    return replay_from_state(
        state,
        where,
        stop=stop,
        inherited=inherited_for(state, where, root),
        token_budget=token_budget,
        max_messages=max_messages,
        token_counter=token_counter,
    )


def replay_from_state(
    state: ReplayState,
    path: Location,
    *,
    stop: StopFacts,
    inherited: Inherited | None = None,
    token_budget: float | None = None,
    max_messages: int | None = None,
    token_counter: TokenCounter | None = None,
) -> Replay:
    """Verify, cap and measure a folded state (the second half of :func:`read_replay`), with
    the conversation it ``inherited`` when it is a fork."""
    check_budget("token_budget", token_budget)
    check_count("max_messages", max_messages)
    check_callable("token_counter", token_counter)
    degraded = list(state.degraded)
    verified = _verify(state, degraded)
    if inherited is not None:
        degraded.extend(inherited.degraded)
        verified = verified and inherited.verified
    if state.pending_reasoning:
        degraded.append(
            Degradation(
                kind=DegradationKind.ORPHAN_REASONING,
                detail=f"{len(state.pending_reasoning)} reasoning block(s) at the end of the "
                "file are not followed by their assistant message (the writer stopped between "
                "them); not restored",
            )
        )
    if state.meta is None:
        degraded.append(
            Degradation(
                kind=DegradationKind.MISSING_META,
                detail="the file has no session_meta record: session id, start time and "
                "delegation coordinates are unknown",
            )
        )
    if state.compactions:
        skipped = (
            f"; lines 2 to {state.window_start_line - 1} before it were not read"
            if state.window_start_line is not None and state.window_start_line > 2
            else f" ({state.compactions} compaction(s))"
        )
        degraded.append(
            Degradation(
                kind=DegradationKind.REBUILT_FROM_COMPACTED,
                detail="rebuilt from a compacted record: messages before the last compaction "
                f"are replaced by its summary sequence{skipped}",
                line=state.compacted_line,
            )
        )
    messages = state.messages if inherited is None else inherited.messages + state.messages
    total = len(messages)
    if max_messages is not None and total > max_messages:
        messages = messages[total - max_messages :] if max_messages else ()
        degraded.append(
            Degradation(
                kind=DegradationKind.MESSAGE_CAP,
                detail=f"message cap reached: kept the most recent {max_messages} of {total} "
                f"messages, dropped the first {total - max_messages}",
            )
        )
    read_tokens = _read_tokens(state, len(messages)) if token_counter is None else None
    if inherited is not None:
        read_tokens = None
    result = Replay(
        path=path,
        meta=state.meta,
        messages=messages,
        checkpoint=state.checkpoint,
        terminal=state.terminal,
        verified=verified,
        degraded=tuple(degraded),
        token_counter=token_counter or estimate_tokens,
        total_messages=total,
        compactions=state.compactions,
        stop=stop,
        inherited=inherited,
        abandoned=state.rewound.abandoned,
        usage=state.usage,
    )
    if read_tokens is not None:
        object.__setattr__(result, "_tokens", read_tokens)
    if token_budget is not None and result.estimated_tokens > token_budget:
        raise ReplayTooLarge(result, token_budget)
    return result


def _read_tokens(state: ReplayState, kept: int) -> int | None:
    """The default estimate of the last ``kept`` messages from the lines read (what
    :func:`estimate_tokens` gives for them); ``None`` when the lines did not give it for each
    of those messages (a compaction's messages, a file of format 1, text that is not ASCII)."""
    tokens = state.group_tokens
    if state.digest_rule < 2 or len(tokens) != len(state.messages) - state.digest_base:
        return None
    if kept > len(tokens):
        return None
    kept_tokens = tokens[len(tokens) - kept :]
    # A group the reader left unknown (not all ASCII): counted from the messages when asked.
    return None if UNKNOWN in kept_tokens else sum(kept_tokens)


def _verify(state: ReplayState, degraded: list[Degradation]) -> bool:
    checkpoint = state.checkpoint
    if checkpoint is None:
        degraded.append(
            Degradation(
                kind=DegradationKind.NO_CHECKPOINT,
                detail="the file has no agent_checkpoint: the conversation cannot be verified",
            )
        )
        return False
    ok = True
    # A value moved to extra or dropped inside the checkpointed range was not restored as it
    # was written: not verified, whatever the digest says (ADR 0018).
    cut = state.checkpoint_line
    if any(
        d.kind == DegradationKind.UNKNOWN_FIELD and (d.line is None or cut is None or d.line < cut)
        for d in state.degraded
    ):
        ok = False
    covered = state.at_checkpoint
    if len(covered) != checkpoint.message_count:
        degraded.append(
            Degradation(
                kind=DegradationKind.DIGEST_MISMATCH,
                detail=f"the last checkpoint covers {checkpoint.message_count} message(s) but "
                f"{len(covered)} were rebuilt before it: records are missing or were added",
                line=state.checkpoint_line,
                seq=checkpoint.seq,
            )
        )
        ok = False
    actual = (
        state.at_checkpoint_digest
        if state.at_checkpoint_digest is not None
        else checkpoint_digest(covered, format_version=1)
    )
    if actual != checkpoint.digest:
        degraded.append(
            Degradation(
                kind=DegradationKind.DIGEST_MISMATCH,
                detail=f"the last checkpoint's digest {checkpoint.digest} does not match the "
                f"messages rebuilt before it ({actual}): the file was edited or damaged",
                line=state.checkpoint_line,
                seq=checkpoint.seq,
            )
        )
        ok = False
    if state.after_checkpoint:
        degraded.append(
            Degradation(
                kind=DegradationKind.AFTER_CHECKPOINT,
                detail=f"{state.after_checkpoint} record(s) after the last checkpoint are not "
                "covered by its digest (the session was resumed and then killed?); they are "
                "replayed unverified",
                line=state.checkpoint_line,
                seq=checkpoint.seq,
            )
        )
        ok = False
    return ok
