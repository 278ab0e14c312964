"""Encoding and decoding of records, and the message <-> records duals.

One module-level encoder and decoder are reused: building them is the expensive part. Encoding
is deterministic: the same record always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import msgspec

from ledger.lenient import UnknownFields, strip_unknown_fields
from ledger.messages import Message, Reasoning, Role
from ledger.records import (
    RECORD_TAGS,
    MessageRecord,
    ReasoningRecord,
    Record,
    SessionMeta,
    UnknownRecord,
)

__all__ = [
    "RecordDecodeError",
    "decode_record",
    "decode_record_reporting",
    "encode_line",
    "encode_lines",
    "encode_read_record",
    "encode_record",
    "join_message",
    "message_records",
    "split_message",
]

_encoder = msgspec.json.Encoder(order="deterministic")
_ZERO = timedelta(0)
_decoder: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)


class _Envelope(msgspec.Struct):
    type: str | None = None
    seq: int | None = None


_envelope_decoder = msgspec.json.Decoder(_Envelope)


class RecordDecodeError(ValueError):
    """A line is not a record: not JSON, not UTF-8, or a known type with the wrong shape."""


def encode_record(record: Record) -> bytes:
    """Encode one record as canonical JSON bytes, without the line end."""
    _check_utc(record)
    return _encoder.encode(record)


def encode_line(record: Record) -> bytes:
    """Encode one record as a rollout line: canonical JSON and ``\\n``."""
    _check_utc(record)
    buf = bytearray()
    _encoder.encode_into(record, buf)
    buf += b"\n"
    return bytes(buf)


def encode_lines(records: Sequence[Record]) -> bytes:
    """Encode records read from a file as rollout lines in one call: what :func:`encode_line`
    gives for each, joined. Their times are not checked: a record read keeps a time another
    writer gave with an offset, which the reader accepts and a writer may not write."""
    return _encoder.encode_lines(records)


def encode_read_record(record: Record) -> bytes:
    """Encode one record read from a file as canonical JSON bytes, without the line end: what
    :func:`encode_record` gives, times kept as read (see :func:`encode_lines`)."""
    return _encoder.encode(record)


def _check_utc(record: Record) -> None:
    # A naive time would encode fine and then fail to decode (the schema requires a zone):
    # refuse it where it is made, and keep the format's promise that times are UTC. The
    # common case (the UTC singleton, no start time) is one identity test on the append path.
    if record.ts.tzinfo is UTC and type(record) is not SessionMeta:
        return
    for when in (record.ts, getattr(record, "started_at", None)):
        if when is not None and when.utcoffset() != _ZERO:
            raise ValueError(
                f"{type(record).__name__} (seq {record.seq}) has a time that is not UTC "
                f"({when.isoformat()}): rollout times are UTC, e.g. datetime.now(UTC)"
            )


def decode_record(data: bytes | str) -> Record | UnknownRecord:
    """Decode one line (surrounding whitespace allowed) into a record.

    A well-formed object whose ``type`` this reader does not know becomes an
    :class:`UnknownRecord`; a known record with fields this reader does not know is restored
    without them (kept in ``extra`` where the type has one: :func:`decode_record_reporting`
    says which); anything else that is not a valid record raises :class:`RecordDecodeError`
    with what was wrong.
    """
    try:
        return _decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeEncodeError):
        # Whatever the first try met, the reporting path meets it again and handles it.
        return decode_record_reporting(data)[0]


def decode_record_reporting(
    data: bytes | str,
) -> tuple[Record | UnknownRecord, UnknownFields | None]:
    """:func:`decode_record`, and the fields of the line this reader did not know (ADR 0018)."""
    try:
        return _decoder.decode(data), None
    except msgspec.ValidationError as exc:
        stripped = strip_unknown_fields(data) if "unknown field" in str(exc) else None
        if stripped is not None:
            cleaned, unknown = stripped
            try:
                return _decoder.decode(cleaned), unknown
            except msgspec.ValidationError as again:
                exc = again
        return _unknown_or_raise(data, exc), None
    except msgspec.DecodeError as exc:
        raise RecordDecodeError(_describe(data, exc)) from None
    except RecursionError:
        raise RecordDecodeError(_TOO_DEEP) from None
    except UnicodeEncodeError as exc:
        # Only a ``str`` gets here: one holding a lone surrogate, which UTF-8 cannot carry.
        raise RecordDecodeError(
            f"invalid UTF-8 at character {exc.start} (a lone surrogate)"
        ) from None


_TOO_DEEP = "JSON nested too deeply to decode"


def _unknown_or_raise(data: bytes | str, exc: msgspec.ValidationError) -> UnknownRecord:
    try:
        env = _envelope_decoder.decode(data)
    except msgspec.ValidationError:
        raise RecordDecodeError(f"not a record: {exc}") from None
    except msgspec.DecodeError as dexc:
        # The typed decoder stopped at a bad value before reaching the damage further on.
        raise RecordDecodeError(_describe(data, dexc)) from None
    except RecursionError:
        raise RecordDecodeError(_TOO_DEEP) from None
    known = env.type in _KNOWN_TAGS
    if known or env.type is None:
        what = f"a {env.type!r} record" if known else "an object without a type"
        raise RecordDecodeError(f"{what} with the wrong shape: {exc}") from None
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return UnknownRecord(type=env.type, seq=env.seq, raw=raw.strip())


def _describe(data: bytes | str, exc: msgspec.DecodeError) -> str:
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as ude:
            return f"invalid UTF-8 at byte {ude.start}"
    return f"not valid JSON: {exc}"


_KNOWN_TAGS = frozenset(RECORD_TAGS)


# --- the duals: one message <-> its records ------------------------------------------------


def split_message(message: Message) -> tuple[tuple[Reasoning, ...], Message]:
    """Split a message into its reasoning blocks and the message without them.

    The dual of :func:`join_message`: ``join_message(*split_message(m)) == m``.
    """
    if not message.reasoning:
        return (), message
    return message.reasoning, msgspec.structs.replace(message, reasoning=())


def join_message(reasoning: tuple[Reasoning, ...], message: Message) -> Message:
    """Attach reasoning blocks (in order) to the message that follows them.

    Blocks the message already carries inline stay after the attached ones.
    """
    if not reasoning:
        return message
    return msgspec.structs.replace(message, reasoning=reasoning + message.reasoning)


def message_records(
    message: Message, *, first_seq: int, ts: datetime
) -> Iterator[ReasoningRecord | MessageRecord]:
    """The records that carry ``message``: one ``reasoning`` record per block, then the message.

    Only assistant messages carry reasoning; a reasoning block on another role would attach to
    a later assistant message on replay, so it is refused here.
    """
    blocks, bare = split_message(message)
    if blocks and message.role != Role.ASSISTANT:
        raise ValueError(
            f"only assistant messages carry reasoning; this {message.role} message has "
            f"{len(blocks)} block(s)"
        )
    seq = first_seq
    for block in blocks:
        yield ReasoningRecord(seq=seq, ts=ts, reasoning=block)
        seq += 1
    yield MessageRecord(seq=seq, ts=ts, message=bare)
