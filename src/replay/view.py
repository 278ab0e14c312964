"""The lossy memory view, and the tool-pairing normalisation it shares with frameworks.

:func:`repair_tool_pairs` makes a message sequence acceptable to a provider: every tool output
answers a tool call of its turn, every call has exactly one output (SPEC rule 12: when one call
has several outputs the last wins, at the position of the first). It is exported for
frameworks to run before calling a provider, and :func:`read_memory` runs the very same
function, so the two cannot disagree.

:func:`read_memory` is the lossy view, for display and task context: it drops system and
developer messages, shortens reasoning and truncates tool output, and shows the turns a rewind
abandoned, marked (ADR 0131; :func:`transcript` puts them back in file order). It is never used
to resume; replay does not use it (SPEC rule 4).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Final

import attrs
import msgspec

from ledger.damage import Degradation
from ledger.messages import (
    ContentPart,
    MediaPart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    raw_json,
)
from replay._checks import check_count
from replay.pairing import pair_tool_calls
from replay.replay import Replay, read_replay

__all__ = [
    "ABANDONED_MARKER",
    "DEFAULT_REASONING_LIMIT",
    "DEFAULT_TOOL_OUTPUT_LIMIT",
    "INTERRUPTED_OUTPUT",
    "LOSSY_MARKER",
    "MemoryView",
    "SYNTHESIZED_MARKER",
    "ToolPairing",
    "TranscriptEntry",
    "read_memory",
    "repair_tool_pairs",
    "transcript",
]

INTERRUPTED_OUTPUT: Final = (
    "[interrupted: no output was recorded for this tool call; the session stopped before it "
    "returned]"
)
"""The content of an output synthesised for a tool call that has none."""

SYNTHESIZED_MARKER: Final = "rollout-ledger:synthesized-interrupted"
"""The ``truncation_marker`` of a synthesised output, and the key of its ``extra`` mark."""

LOSSY_MARKER: Final = "rollout-ledger:lossy-view"
"""The ``truncation_marker`` of a message the lossy view shortened."""

ABANDONED_MARKER: Final = "rollout-ledger:abandoned"
"""The ``truncation_marker`` of a message a rewind abandoned, shown by the lossy view."""

DEFAULT_TOOL_OUTPUT_LIMIT: Final = 2000
"""Characters of a tool output the lossy view keeps by default."""

DEFAULT_REASONING_LIMIT: Final = 500
"""Characters of a reasoning block's text the lossy view keeps by default."""

_SYNTHESIZED_EXTRA: Final = raw_json({SYNTHESIZED_MARKER: True})


@attrs.frozen
class ToolPairing:
    """A message sequence with its tool calls and outputs paired, and what pairing changed.

    ``superseded`` counts outputs replaced by a later output for the same call;
    ``orphan_outputs`` counts outputs dropped because no earlier call has their id;
    ``synthesized`` counts outputs made up for calls that had none (``INTERRUPTED_OUTPUT``).
    """

    messages: tuple[Message, ...]
    superseded: int = 0
    orphan_outputs: int = 0
    synthesized: int = 0

    @property
    def changed(self) -> bool:
        """Whether pairing changed anything."""
        return bool(self.superseded or self.orphan_outputs or self.synthesized)


def repair_tool_pairs(messages: Iterable[Message]) -> ToolPairing:
    """Pair every tool call with exactly one output, as providers require, turn by turn.

    Calls and outputs pair within their turn (:mod:`replay.pairing`, ADR 0041): an id reused
    in a later turn names a new call.

    - Several outputs for one call: the last one wins, at the position of the first; the
      others are dropped and counted as ``superseded``.
    - An output that answers no call of its turn (or has no id): dropped, counted as orphan.
    - A call without output: an output is synthesised, marked ``is_error`` and
      :data:`SYNTHESIZED_MARKER`, with :data:`INTERRUPTED_OUTPUT` as content, placed after the
      outputs that follow its message.

    Messages other than tool outputs are kept as they are, in order.
    """
    seq: Sequence[Message] = messages if isinstance(messages, Sequence) else tuple(messages)
    pairing = pair_tool_calls(seq)
    open_by_turn: dict[int, list[ToolCall]] = {}
    for (turn, _), call in pairing.open_calls():
        open_by_turn.setdefault(turn, []).append(call)
    out: list[Message] = []
    superseded = 0
    # Synthesised outputs wait until the run of outputs after their message ends.
    waiting: list[Message] = []
    for i, m in enumerate(seq):
        if m.role == Role.TOOL:
            key = pairing.answers.get(i)
            if key is None:
                continue  # an orphan, counted below
            answers = pairing.outputs[key]
            if answers[0] == i:
                out.append(seq[answers[-1]])
            else:
                superseded += 1
            continue
        out.extend(waiting)
        waiting.clear()
        out.append(m)
        waiting.extend(_interrupted_output(c.id, c.name) for c in open_by_turn.get(i, ()))
    out.extend(waiting)
    return ToolPairing(
        messages=tuple(out),
        superseded=superseded,
        orphan_outputs=len(pairing.orphans),
        synthesized=sum(len(v) for v in open_by_turn.values()),
    )


def _interrupted_output(call_id: str, name: str) -> Message:
    return Message(
        role=Role.TOOL,
        content=INTERRUPTED_OUTPUT,
        tool_call_id=call_id,
        is_error=True,
        name=name,
        extra=_SYNTHESIZED_EXTRA,
        truncation_marker=SYNTHESIZED_MARKER,
    )


@attrs.frozen
class TranscriptEntry:
    """One message of a transcript; ``abandoned_by`` is the seq of the rewind that abandoned
    it, ``None`` for a message of the conversation."""

    message: Message
    abandoned_by: int | None = None


def transcript(rep: Replay) -> tuple[TranscriptEntry, ...]:
    """The replay's messages with the ones rewinds abandoned put back where the file has them.

    For display only: the conversation to resume is ``rep.messages`` (SPEC rule 4).
    """
    # Positions count the file's own messages; a fork's inherited ones and a cap shift them.
    shift = (len(rep.inherited.messages) if rep.inherited else 0) - (
        rep.total_messages - len(rep.messages)
    )
    at: dict[int, list[TranscriptEntry]] = {}
    for a in rep.abandoned:
        index = a.position + shift
        if index >= 0:
            at.setdefault(index, []).append(TranscriptEntry(a.message, a.rewind_seq))
    out: list[TranscriptEntry] = []
    for i, m in enumerate(rep.messages):
        out.extend(at.pop(i, ()))
        out.append(TranscriptEntry(m))
    for index in sorted(at):
        out.extend(at[index])
    return tuple(out)


@attrs.frozen
class MemoryView:
    """The lossy view of a rollout: for display and task context, never for resuming.

    ``pairing`` tells what the tool-pairing normalisation changed; ``dropped`` counts the
    system and developer messages left out; ``shortened`` the messages whose reasoning or tool
    output was cut; ``abandoned`` the messages shown although a rewind abandoned them (marked
    :data:`ABANDONED_MARKER`); ``degraded`` is what the replay underneath reported.
    """

    messages: tuple[Message, ...]
    pairing: ToolPairing
    dropped: int
    shortened: int
    degraded: tuple[Degradation, ...]
    verified: bool
    abandoned: int = 0

    @property
    def superseded(self) -> int:
        """Tool outputs replaced by a later output for the same call."""
        return self.pairing.superseded


def read_memory(
    path: str | os.PathLike[str],
    *,
    tool_output_limit: int | None = DEFAULT_TOOL_OUTPUT_LIMIT,
    reasoning_limit: int | None = DEFAULT_REASONING_LIMIT,
    keep_system: bool = False,
    root: str | os.PathLike[str] | None = None,
) -> MemoryView:
    """Read the rollout at ``path`` as the lossy view.

    Pairs tool calls with :func:`repair_tool_pairs`, then drops system and developer messages
    (unless ``keep_system``), cuts each reasoning block's text to ``reasoning_limit`` characters
    (dropping encrypted payloads) and each tool output to ``tool_output_limit`` characters
    (``None`` keeps them whole). Shortened messages carry :data:`LOSSY_MARKER`; messages a
    rewind abandoned are shown where the file has them, marked :data:`ABANDONED_MARKER`. A
    fork's inherited part is read as :func:`~replay.read_replay` reads it, under ``root``.
    """
    check_count("tool_output_limit", tool_output_limit)
    check_count("reasoning_limit", reasoning_limit)
    rep = read_replay(path, root=root)
    shown = [
        e.message
        if e.abandoned_by is None
        else msgspec.structs.replace(e.message, truncation_marker=ABANDONED_MARKER)
        for e in transcript(rep)
    ]
    pairing = repair_tool_pairs(shown)
    out: list[Message] = []
    dropped = 0
    shortened = 0
    for m in pairing.messages:
        if not keep_system and m.role in (Role.SYSTEM, Role.DEVELOPER):
            dropped += 1
            continue
        short = _shorten(m, tool_output_limit, reasoning_limit)
        if short is not m:
            shortened += 1
        out.append(short)
    return MemoryView(
        messages=tuple(out),
        pairing=pairing,
        dropped=dropped,
        shortened=shortened,
        degraded=rep.degraded,
        verified=rep.verified,
        abandoned=sum(1 for m in out if m.truncation_marker == ABANDONED_MARKER),
    )


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


def _shorten(m: Message, tool_limit: int | None, reasoning_limit: int | None) -> Message:
    changes: dict[str, object] = {}
    if reasoning_limit is not None and m.reasoning:
        blocks = tuple(_shorten_reasoning(r, reasoning_limit) for r in m.reasoning)
        if any(b is not r for b, r in zip(blocks, m.reasoning, strict=True)):
            changes["reasoning"] = blocks
    if tool_limit is not None and m.role == Role.TOOL and m.content is not None:
        content = _shorten_content(m.content, tool_limit)
        if content is not m.content:
            changes["content"] = content
    if not changes:
        return m
    if m.truncation_marker is None:
        changes["truncation_marker"] = LOSSY_MARKER
    return msgspec.structs.replace(m, **changes)


def _shorten_reasoning(r: Reasoning, limit: int) -> Reasoning:
    text = r.text
    if text is not None and len(text) > limit:
        return msgspec.structs.replace(r, text=_cut(text, limit), encrypted=None)
    if r.encrypted is not None:
        return msgspec.structs.replace(r, encrypted=None)
    return r


def _shorten_content(
    content: str | tuple[ContentPart, ...], limit: int
) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content if len(content) <= limit else _cut(content, limit)
    left = limit
    parts: list[ContentPart] = []
    changed = False
    for p in content:
        if isinstance(p, TextPart):
            if len(p.text) > left:
                p = msgspec.structs.replace(p, text=_cut(p.text, max(left, 0)))
                changed = True
            left -= len(p.text)
        elif isinstance(p, MediaPart) and p.data is not None:
            p = TextPart(text=f"[{p.media_type} data omitted]")
            changed = True
        parts.append(p)
    return tuple(parts) if changed else content
