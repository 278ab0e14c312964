"""A writer's read-back of its own lines without decoding them (ADR 0164).

A checkpoint needs two things of the conversation: its digest, which (format 2, ADR 0063) is
taken over each message's and reasoning block's member *as written*, grouped as the reducer
groups them, and its message count. When the bytes a writer reads back are, by their CRC-32,
the lines it wrote itself, and those lines hold only messages, reasoning blocks and records that
stay out of the conversation, both come from the lines' envelopes: each line's type and seq, the
member's bytes, and whether a message is the assistant's. Nothing needs to be decoded into a
``Message``; the digest's items are still cut from the file's bytes (SPEC rule 1).

The few lines the writer names are decoded: a message whose digest item is not its member as
written, and a compaction. Anything else (a rewind, a line in another form, a gap in the
sequence) makes :func:`fold_own_lines` give up, and the caller reads the same bytes back the
typed way, which says what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from typing import Final

import attrs
import msgspec

from ledger.digest import digest_of_groups, group_hash, record_item
from ledger.framing import CHUNK_BYTES, LineBlock, scan_forward
from ledger.messages import Role
from ledger.records import (
    DESCRIPTION_TYPES,
    AgentCheckpoint,
    Compacted,
    MessageRecord,
    ReasoningRecord,
    Record,
    Terminal,
)
from ledger.state import ReplayState

__all__ = ["Tally", "fold_own_lines", "tally_of"]

# The envelope of a line this library wrote, and the key of its conversation member, if any.
_ENVELOPE: Final = re.compile(
    rb'\{"type":"([a-z_]{1,32})","seq":([1-9][0-9]{0,18}),"ts":"[^"\\\n]*"'
    rb'(?:,("message"|"reasoning"):)?'
)
_MESSAGE: Final = b'"message"'
_REASONING: Final = b'"reasoning"'
_ASSISTANT: Final = b'{"role":"assistant"'


def _tag(cls: type) -> bytes:
    return str(cls.__struct_config__.tag).encode()  # type: ignore[attr-defined]


# Records that never enter the conversation, nor its digest, nor what a checkpoint covers.
_OUTSIDE: Final = frozenset(map(_tag, (*DESCRIPTION_TYPES, AgentCheckpoint, Terminal)))
_strict: Final = msgspec.json.Decoder(Record)  # unknown fields refused, as the reader's
_MESSAGE_TAG: Final = b"message"
_REASONING_TAG: Final = b"reasoning"


@attrs.frozen
class Tally:
    """What a checkpoint needs of the conversation read so far (format 2): the hash of the
    last compaction's messages, if any, the hash of each message's group since, the number of
    messages and the last seq."""

    compaction: bytes | None
    groups: tuple[bytes, ...]
    messages: int
    last_seq: int

    def digest(self) -> str:
        """The checkpoint digest of the conversation tallied (the rule of
        :meth:`ReplayState.digest` for format 2)."""
        return digest_of_groups(self.groups, self.compaction)


def tally_of(state: ReplayState) -> Tally | None:
    """The tally of a state a typed read folded; ``None`` when lines cannot continue it
    undecoded (the digest of format 1, reasoning waiting for its message, no record yet) or
    when it holds damage, which refuses every checkpoint after it (ADR 0052)."""
    if (
        state.digest_rule < 2
        or state.pending_reasoning
        or state.last_seq is None
        or any(d.is_damage for d in state.degraded)
    ):
        return None
    return Tally(state.digest_compaction, state.digest_groups, len(state.messages), state.last_seq)


def fold_own_lines(
    read: Callable[[int], bytes],
    offset: int,
    tally: Tally,
    *,
    decode: Container[int] = (),
    max_line_bytes: int,
) -> tuple[Tally, int] | None:
    """Continue ``tally`` with the lines ``read`` gives up to its end (``offset`` is where they
    start in the file); return the new tally and the number of lines, or ``None`` as soon as a
    line is not one this fold takes (see the module's docstring), or the read does not end at
    a line end.

    The lines whose seq is in ``decode`` are decoded: those of a message whose digest item is
    not its member as written (``is_anchored``, ``truncation_marker``: ADR 0063) and of a
    compaction, whose messages replace the conversation."""
    compaction = tally.compaction
    before = tally.groups  # the groups of the tally still in the conversation
    groups: list[bytes] = []
    pending: list[bytes] = []  # the members of reasoning blocks waiting for their message
    messages = tally.messages
    last = tally.last_seq
    lines = 0
    match = _ENVELOPE.match
    for piece in scan_forward(
        read, offset=offset, chunk_bytes=CHUNK_BYTES, max_line_bytes=max_line_bytes
    ):
        if type(piece) is not LineBlock:
            return None  # an over-long line, or bytes after the last line end
        data = piece.data
        view = memoryview(data)
        find = data.find
        startswith = data.startswith
        pos = piece.start
        end = piece.end
        while pos < end:
            stop = find(b"\n", pos, end)
            m = match(data, pos, stop)
            if m is None or data[stop - 1] != 0x7D:  # "}": a CR or anything else is not ours
                return None
            seq = int(m[2])
            if seq != last + 1:
                return None
            last = seq
            lines += 1
            kind = m[1]
            member = m[3]
            if seq in decode:
                step = _decoded(data[pos:stop], pending)
                if step is None:
                    return None
                if step[0] is not None:  # a compaction: the conversation starts again
                    compaction, before, messages = step[0], (), step[2]
                    groups.clear()
                elif step[1] is not None:
                    groups.append(step[1])
                    messages += step[2]
            elif kind == _MESSAGE_TAG and member == _MESSAGE:
                item = view[m.start(3) : stop - 1]
                messages += 1
                if not pending:
                    groups.append(group_hash((item,)))
                elif startswith(_ASSISTANT, m.end()):
                    pending.append(bytes(item))
                    groups.append(group_hash(pending))
                    pending.clear()
                else:
                    return None  # reasoning before a message not the assistant's: damage
            elif kind == _REASONING_TAG and member == _REASONING:
                pending.append(bytes(view[m.start(3) : stop - 1]))
            elif kind in _OUTSIDE and member is None and not pending:
                pass
            else:
                return None
            pos = stop + 1
    if pending:
        return None
    return Tally(compaction, before + tuple(groups), messages, last), lines


def _decoded(line: bytes, pending: list[bytes]) -> tuple[bytes | None, bytes | None, int] | None:
    """One line decoded: ``(compaction's hash, None, its message count)`` for a compaction,
    ``(None, group's hash or None, messages added)`` for a message or a reasoning block (which
    joins ``pending``), ``None`` for anything else or a line that does not decode."""
    try:
        record = _strict.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    item = record_item(record, line)
    if item is None:
        return None
    if type(record) is ReasoningRecord:
        pending.append(item)
        return None, None, 0
    if type(record) is MessageRecord:
        if pending:
            if record.message.role != Role.ASSISTANT:
                return None
            pending.append(item)
            group = group_hash(pending)
            pending.clear()
            return None, group, 1
        return None, group_hash((item,)), 1
    if type(record) is Compacted and not pending:
        return group_hash((item,)), None, len(record.messages)
    return None
