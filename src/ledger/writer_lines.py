"""The encoded records ``append`` enqueues for one message, made from templates: byte for byte
what :func:`~ledger.codec.message_records` and :func:`~ledger.codec.encode_record` give, without
re-checking what is known good, because ``append`` has a p99 goal (SPEC). Apart from
:mod:`ledger.writer` because it is a pure function of the message, tested on its own against
the checked constructors; it is the one place the append path encodes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import msgspec

from ledger.codec import encode_record, message_records, split_message
from ledger.messages import Message, Reasoning, Role
from ledger.records import MessageRecord, ReasoningRecord

__all__ = ["lines_of"]

_MESSAGE_RECORD: Final = MessageRecord(
    seq=1, ts=datetime(2000, 1, 1, tzinfo=UTC), message=Message(role=Role.USER)
)
_REASONING_RECORD: Final = ReasoningRecord(
    seq=1, ts=datetime(2000, 1, 1, tzinfo=UTC), reasoning=Reasoning()
)
_replace = msgspec.structs.replace


def lines_of(message: Message, seq: int, ts: datetime) -> list[bytes]:
    """The encoded records of ``message`` from ``seq`` on: its reasoning blocks, then itself
    (:func:`~ledger.codec.message_records`'s rule). Records are made from templates: the checked
    constructors would only check what is known good (the message and its blocks were checked
    when they were built; seq and ts are the writer's own), at 4 us a record."""
    if not message.reasoning:
        return [encode_record(_replace(_MESSAGE_RECORD, seq=seq, ts=ts, message=message))]
    if message.role != Role.ASSISTANT:
        # The rule and its error are message_records'.
        return [encode_record(r) for r in message_records(message, first_seq=seq, ts=ts)]
    blocks, bare = split_message(message)
    lines = [
        encode_record(_replace(_REASONING_RECORD, seq=seq + k, ts=ts, reasoning=block))
        for k, block in enumerate(blocks)
    ]
    lines.append(
        encode_record(_replace(_MESSAGE_RECORD, seq=seq + len(blocks), ts=ts, message=bare))
    )
    return lines
