"""The checkpoint digest: the one implementation, used by the writer and by replay alike.

From format version 2 on (ADR 0063), the digest certifies the conversation's bytes *as written*.
Each conversation record gives one *item*: a ``message`` or ``reasoning`` record its member as
its line holds it (``"message":{...}``, the bytes between the envelope
``{"type":...,"seq":...,"ts":"...",`` and the record's closing brace), a ``compacted`` record
its ``messages`` member as written (never its summary or extra). Items are grouped as the
conversation is rebuilt: one group per message (the reasoning records joined to it, then the
message's own record) and one for a compaction's messages. The digest is sha256 over the sha256
of each group, in order. A group's hash is kept beside its message, so a rewind that truncates
the conversation truncates the digest's input with it, and nothing is re-encoded to hash it.

A message that carries the framework's bookkeeping (``is_anchored``, ``truncation_marker``)
gives the canonical encoding of its member with both reset, so that they never reach the hash
(SPEC rule 1); so does a line whose envelope is in another form than the writer's (its member is
then the canonical key and the value exactly as written).

Format version 1 (ADR 0007) digests the canonical JSON array of the rebuilt messages; files of
that version keep verifying by that rule (``format_version=1``).

sha256 has exactly one other use, named here beside it: :func:`file_sha256`, the hash of a
file's bytes, which the retention audit log and an import's provenance record (ADR 0134). It is
never a checkpoint digest.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import BinaryIO, Final

import msgspec

from ledger.messages import Message, Reasoning
from ledger.records import FORMAT_VERSION, Compacted, MessageRecord, ReasoningRecord

__all__ = [
    "DIGEST_PREFIX",
    "Item",
    "block_items",
    "checkpoint_digest",
    "digest_of_groups",
    "file_sha256",
    "group_hash",
    "message_items",
    "record_item",
]

DIGEST_PREFIX: Final = "sha256:"

Item = bytes | memoryview
"""A conversation record's digest item: its member as written (often a slice of its line)."""

MESSAGE_KEY: Final = b'"message":'
REASONING_KEY: Final = b'"reasoning":'
MESSAGES_KEY: Final = b'"messages":'

# The envelope of a line this library wrote, up to and including the conversation member's key.
_MESSAGE_ENVELOPE: Final = re.compile(
    rb'\{"type":"message","seq":[0-9]+,"ts":"[^"\\\n]*","message":'
)
_REASONING_ENVELOPE: Final = re.compile(
    rb'\{"type":"reasoning","seq":[0-9]+,"ts":"[^"\\\n]*","reasoning":'
)

_encoder = msgspec.json.Encoder(order="deterministic")
_replace = msgspec.structs.replace
_BATCH = 1024
_FILE_CHUNK = 1 << 20
_GROUPS_PER_UPDATE: Final = 1 << 15  # group hashes of 32 bytes: 1 MiB per update


def group_hash(items: Sequence[Item]) -> bytes:
    """The hash of one group of items: a message's (its reasoning, then itself) or a
    compaction's."""
    if len(items) == 1:
        return hashlib.sha256(items[0]).digest()
    h = hashlib.sha256()
    for item in items:
        h.update(item)
    return h.digest()


def digest_of_groups(groups: Iterable[bytes], compaction: bytes | None = None) -> str:
    """``"sha256:<hex>"`` over the hashes of the conversation's groups, in order, after the
    hash of the last compaction's messages when there is one."""
    # Hashed joined, about a MiB at a time: one update per group made every digest a Python
    # call per message of the conversation, which a writer stopping at every turn paid again
    # at each stop.
    h = hashlib.sha256()
    it = iter(groups) if compaction is None else chain((compaction,), groups)
    while chunk := list(islice(it, _GROUPS_PER_UPDATE)):
        h.update(b"".join(chunk))
    return DIGEST_PREFIX + h.hexdigest()


def _bare(message: Message) -> Message:
    if message.is_anchored or message.truncation_marker is not None:
        return _replace(message, is_anchored=False, truncation_marker=None)
    return message


def _message_item(message: Message) -> bytes:
    return MESSAGE_KEY + _encoder.encode(_bare(message))


def _reasoning_item(block: Reasoning) -> bytes:
    return REASONING_KEY + _encoder.encode(block)


def _compaction_item(messages: Sequence[Message]) -> bytes:
    return MESSAGES_KEY + _encoder.encode(tuple(_bare(m) for m in messages))


class _MessageValue(msgspec.Struct):
    message: msgspec.Raw


class _ReasoningValue(msgspec.Struct):
    reasoning: msgspec.Raw


class _MessagesValue(msgspec.Struct):
    messages: msgspec.Raw


_message_value = msgspec.json.Decoder(_MessageValue)
_reasoning_value = msgspec.json.Decoder(_ReasoningValue)
_messages_value = msgspec.json.Decoder(_MessagesValue)


def record_item(record: object, line: bytes | None = None) -> bytes | None:
    """The digest item of ``record``: ``None`` for a record outside the conversation.

    ``line`` is the line the record was read from (its line end may be left on); without it,
    or when the line cannot give it, the item is the canonical one, which is what this
    library's writer writes.
    """
    kind = type(record)
    if kind is MessageRecord:
        message = record.message  # type: ignore[attr-defined]
        if line is None or message.is_anchored or message.truncation_marker is not None:
            return _message_item(message)
        return _as_written(line, _MESSAGE_ENVELOPE, MESSAGE_KEY) or _message_item(message)
    if kind is ReasoningRecord:
        block = record.reasoning  # type: ignore[attr-defined]
        if line is None:
            return _reasoning_item(block)
        return _as_written(line, _REASONING_ENVELOPE, REASONING_KEY) or _reasoning_item(block)
    if kind is Compacted:
        kept = record.messages  # type: ignore[attr-defined]
        if line is None or any(m.is_anchored or m.truncation_marker is not None for m in kept):
            return _compaction_item(kept)
        try:
            raw = _messages_value.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return _compaction_item(kept)
        return MESSAGES_KEY + bytes(raw.messages)
    return None


def block_items(
    block: bytes, records: Sequence[object], start: int = 0, end: int | None = None
) -> list[Item | None] | None:
    """The item of each record decoded from the lines ``block[start:end]`` (which end in
    ``\\n``), one record per line: a slice of the line itself when it is in the writer's form,
    as it almost always is; ``None`` for a record outside the conversation.

    Returns ``None`` unless every line starts with ``{`` and ends with ``}`` (a ``\\r`` before
    its ``\\n`` aside): the caller then decodes the lines one by one. With as many records as
    lines, that proves one record per line: JSON never puts ``{`` right after ``}`` inside one
    value, so no record spans two such lines, and a line holding two records would leave
    another line with none, which cannot start with ``{``. Without the proof a record could be
    paired with its neighbour's line, and a checkpoint would certify bytes it does not hold.
    """
    if end is None:
        end = len(block)
    view = memoryview(block)
    find = block.find
    match_message = _MESSAGE_ENVELOPE.match
    match_reasoning = _REASONING_ENVELOPE.match
    message_key = len(MESSAGE_KEY)
    reasoning_key = len(REASONING_KEY)
    out: list[Item | None] = []
    append = out.append
    pos = start
    for record in records:
        stop = find(b"\n", pos, end)
        if stop < 0 or block[pos] != 0x7B:  # "{"
            return None
        body = stop - 1 if block[stop - 1] == 0x0D else stop  # a CRLF end is not content
        if body <= pos or block[body - 1] != 0x7D:  # "}"
            return None
        kind = type(record)
        if kind is MessageRecord:
            m = match_message(block, pos, body)
            message = record.message  # type: ignore[attr-defined]
            if m is None or message.is_anchored or message.truncation_marker is not None:
                append(record_item(record, block[pos:stop]))
            else:
                append(view[m.end() - message_key : body - 1])
        elif kind is ReasoningRecord:
            m = match_reasoning(block, pos, body)
            if m is None:
                append(record_item(record, block[pos:stop]))
            else:
                append(view[m.end() - reasoning_key : body - 1])
        elif kind is Compacted:
            append(record_item(record, block[pos:stop]))
        else:
            append(None)
        pos = stop + 1
    return out if pos == end else None


def _as_written(line: bytes, envelope: re.Pattern[bytes], key: bytes) -> bytes | None:
    end = len(line)
    while end and line[end - 1] in b"\r\n":
        end -= 1
    m = envelope.match(line, 0, end)
    if m is not None and line[end - 1 : end] == b"}":
        return line[m.end() - len(key) : end - 1]
    try:
        if key is MESSAGE_KEY:
            return key + bytes(_message_value.decode(line).message)
        return key + bytes(_reasoning_value.decode(line).reasoning)
    except (msgspec.DecodeError, RecursionError):
        return None


def message_items(message: Message) -> list[bytes]:
    """The items a writer's records of ``message`` give: its reasoning blocks, then itself."""
    items = [_reasoning_item(block) for block in message.reasoning]
    bare = _bare(message)
    if bare.reasoning:
        bare = _replace(bare, reasoning=())
    items.append(MESSAGE_KEY + _encoder.encode(bare))
    return items


def checkpoint_digest(
    messages: Iterable[Message],
    *,
    compacted: Sequence[Message] | None = None,
    format_version: int = FORMAT_VERSION,
) -> str:
    """The digest a writer's file holds for ``messages`` appended in order (after a compaction
    to ``compacted`` when given): what ``stop()`` writes for such a file.

    With ``format_version=1``, the version-1 rule (ADR 0007): sha256 over the canonical JSON
    array of the rebuilt messages (``compacted``, then ``messages``), bookkeeping reset.
    """
    if format_version < 2:
        return _digest_v1(messages if compacted is None else (*compacted, *messages))
    groups = [] if compacted is None else [group_hash((_compaction_item(compacted),))]
    groups.extend(group_hash(message_items(m)) for m in messages)
    return digest_of_groups(groups)


def _digest_v1(messages: Iterable[Message]) -> str:
    h = hashlib.sha256(b"[")
    batch: list[Message] = []
    first = True
    for m in messages:
        batch.append(_bare(m))
        if len(batch) == _BATCH:
            _feed(h, batch, first)
            first = False
            batch.clear()
    if batch:
        _feed(h, batch, first)
    h.update(b"]")
    return DIGEST_PREFIX + h.hexdigest()


def _feed(h: hashlib._Hash, batch: list[Message], first: bool) -> None:
    # One encoder call per batch of messages costs about half as much as one call per
    # message; the batch's array is spliced into the whole array without its brackets.
    body = memoryview(_encoder.encode(batch))[1:-1]
    if not first:
        h.update(b",")
    h.update(body)


def file_sha256(
    f: BinaryIO | bytes | bytearray | memoryview, *, sink: BinaryIO | None = None
) -> tuple[str, int]:
    """``("sha256:<hex>", size)`` of a file's bytes: given whole, or read from ``f`` to its end,
    1 MiB at a time.

    With ``sink``, every chunk read is also written there, so that a copy and its hash come from
    one read (a move across file systems checks the copy with it). Not a checkpoint digest:
    this hashes bytes, not a conversation.
    """
    if isinstance(f, bytes | bytearray | memoryview):
        return DIGEST_PREFIX + hashlib.sha256(f).hexdigest(), len(f)
    h = hashlib.sha256()
    size = 0
    while chunk := f.read(_FILE_CHUNK):
        h.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink.write(chunk)
    return DIGEST_PREFIX + h.hexdigest(), size
