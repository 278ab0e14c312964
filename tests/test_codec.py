"""The codec: round trips, canonical bytes, line framing, and a decoder that never crashes."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    AgentCheckpoint,
    Compacted,
    DegradationKind,
    Message,
    MessageRecord,
    Record,
    RecordDecodeError,
    Role,
    SessionMeta,
    Terminal,
    UnknownRecord,
    decode_record,
    decode_record_reporting,
    encode_line,
    encode_record,
)
from ledger.records import FORMAT_VERSION, RECORD_TAGS, RECORD_TYPES

TS = datetime(2026, 12, 2, 16, 22, 5, tzinfo=UTC)


@given(r=s.records)
def test_round_trip(r: Record) -> None:
    """Decoding an encoded record gives back an equal record of the same type."""
    back = decode_record(encode_record(r))
    assert back == r
    assert type(back) is type(r)


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param(s.session_metas, id="session_meta"),
        pytest.param(s.message_records, id="message"),
        pytest.param(s.reasoning_records, id="reasoning"),
        pytest.param(s.compacted_records, id="compacted"),
        pytest.param(s.checkpoints, id="agent_checkpoint"),
        pytest.param(s.terminals, id="terminal"),
    ],
)
def test_round_trip_each_type(strategy: st.SearchStrategy[Record]) -> None:
    """Every one of the six record types round-trips on its own (none is starved by the union)."""

    @given(r=strategy)
    def check(r: Record) -> None:
        assert decode_record(encode_record(r)) == r

    check()


@given(r=s.records)
def test_round_trip_from_str(r: Record) -> None:
    """A line handed over as `str` decodes to the same record as its bytes."""
    assert decode_record(encode_record(r).decode("utf-8")) == r


@given(r=s.records)
def test_canonical_form(r: Record) -> None:
    """Re-encoding a decoded record gives the very same bytes: the encoding is canonical."""
    data = encode_record(r)
    assert encode_record(decode_record(data)) == data  # type: ignore[arg-type]


@given(r=s.records)
def test_encoding_is_deterministic(r: Record) -> None:
    """The same record encodes to the same bytes twice, and as a rebuilt equal value."""
    twin = msgspec.structs.replace(r)
    assert encode_record(r) == encode_record(r) == encode_record(twin)
    assert encode_line(r) == encode_record(r) + b"\n"


@given(r=s.records)
def test_encoding_is_deterministic_across_encoders(r: Record) -> None:
    """A freshly built deterministic encoder writes the same bytes as the codec's own."""
    fresh = msgspec.json.Encoder(order="deterministic")
    assert fresh.encode(r) == encode_record(r)


def test_encoding_is_deterministic_across_processes() -> None:
    """A fresh interpreter (fresh encoder, other hash seed) encodes a record to the same bytes."""
    record = MessageRecord(
        seq=2,
        ts=TS,
        message=Message(role=Role.USER, content="héllo ✓", name="n"),
    )
    code = (
        "import sys; from datetime import UTC, datetime; from ledger import *; "
        "r = MessageRecord(seq=2, ts=datetime(2026, 12, 2, 16, 22, 5, tzinfo=UTC), "
        "message=Message(role=Role.USER, content='h\\u00e9llo \\u2713', name='n')); "
        "sys.stdout.buffer.write(encode_line(r))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert outs == {encode_line(record)}


@given(r=s.records)
def test_line_framing(r: Record) -> None:
    """A line is UTF-8 without BOM, holds no line break inside, and ends with exactly one `\\n`."""
    line = encode_line(r)
    assert not line.startswith(b"\xef\xbb\xbf")
    line.decode("utf-8")  # strict: raises on anything that is not UTF-8
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert b"\r" not in line


@given(r=s.records)
def test_type_tag_is_first_and_stable(r: Record) -> None:
    """Every line starts with its stable `type` tag and carries its `seq`."""
    obj = msgspec.json.decode(encode_record(r))
    assert next(iter(obj)) == "type"
    assert obj["type"] in RECORD_TAGS
    assert obj["seq"] == r.seq


def test_tags_are_the_format_strings() -> None:
    """The record classes carry the tags of the format, never Python names."""
    tags = {t.__struct_config__.tag for t in RECORD_TYPES}
    core = {"session_meta", "message", "reasoning", "compacted", "agent_checkpoint", "terminal"}
    assert core <= tags
    assert not tags & {t.__name__ for t in RECORD_TYPES}


def _assert_decodes_or_refuses(data: bytes | str) -> None:
    try:
        result = decode_record(data)
    except RecordDecodeError:
        return
    assert isinstance(result, (*RECORD_TYPES, UnknownRecord))


@given(data=st.binary(max_size=200))
@example(b"")
@example(b"\xef\xbb\xbf{}")
@example(b"\x00" * 10)
@example(b'{"type":"\xff"}')
@example(b'{"a":' * 5000)
@example(b"[" * 5000)
@example(b'{"type":"x","y":' + b"[" * 5000)
@example(
    b'{"type":"message","seq":1,"ts":"2026-01-01T00:00:00Z","message":{"role":"user",'
    b'"extra":' + b"[" * 3000 + b"]" * 3000 + b"}}"
)
def test_decoder_fuzz_arbitrary_bytes(data: bytes) -> None:
    """Arbitrary bytes decode to a record or raise `RecordDecodeError`, never anything else."""
    _assert_decodes_or_refuses(data)


@given(data=st.text(max_size=200))
@example("\ud800")
@example(
    '{"type":"message","seq":1,"ts":"2026-01-01T00:00:00Z",'
    '"message":{"role":"user","content":"\udcff"}}'
)
def test_decoder_fuzz_arbitrary_text(data: str) -> None:
    """Arbitrary `str` input, lone surrogates included, raises nothing but the decode error."""
    _assert_decodes_or_refuses(data)


@given(data=s.mutated_lines())
def test_decoder_fuzz_mutated_lines(data: bytes) -> None:
    """Valid lines with bit flips, truncations, inserted or deleted bytes never crash it."""
    _assert_decodes_or_refuses(data)


@given(r=s.records, cut=st.integers(min_value=1))
def test_truncated_line_is_refused(r: Record, cut: int) -> None:
    """Any strict prefix of an encoded record (a torn write) is refused, never half-decoded."""
    data = encode_record(r)
    prefix = data[: cut % len(data)]
    with pytest.raises(RecordDecodeError):
        decode_record(prefix)


def test_unknown_type_becomes_unknown_record() -> None:
    """A well-formed object with an unknown `type` decodes to `UnknownRecord` with type and seq."""
    line = b'{"type":"tool_usage","seq":7,"ts":"2026-01-01T00:00:00Z","tokens":[1,2]}\n'
    rec = decode_record(line)
    assert rec == UnknownRecord(type="tool_usage", seq=7, raw=line.strip())


@given(
    tag=s.short_text.filter(
        lambda t: (
            t
            not in {
                "session_meta",
                "message",
                "reasoning",
                "compacted",
                "agent_checkpoint",
                "terminal",
            }
        )
    ),
    seq=st.none() | s.seqs,
    body=s.json_objects,
)
def test_unknown_type_property(tag: str, seq: int | None, body: dict[str, object]) -> None:
    """Any object with an unknown string `type` becomes an `UnknownRecord` keeping the raw line."""
    obj = {**body, "type": tag, "seq": seq}
    line = msgspec.json.encode(obj)
    rec = decode_record(line)
    assert isinstance(rec, UnknownRecord)
    assert (rec.type, rec.seq, rec.raw) == (tag, seq, line)


@given(r=s.records, extra=s.json_objects)
def test_unknown_fields_are_tolerated(r: Record, extra: dict[str, object]) -> None:
    """Fields a newer writer added to a known record type are not fatal: kept in ``extra`` where
    the record has one, dropped otherwise, and reported either way (ADR 0018)."""
    obj = msgspec.json.decode(encode_record(r))
    added = {f"zz_new_{k}": v for k, v in extra.items()}
    line = msgspec.json.encode({**obj, **added})
    back, unknown = decode_record_reporting(line)
    if not added:
        assert back == r
        assert unknown is None
        return
    assert unknown is not None
    assert set(unknown.kept + unknown.dropped) == {f"$.{k}" for k in added}
    if "extra" in type(r).__struct_fields__:
        assert unknown.kept  # the record has a verbatim slot: nothing is dropped
        kept = msgspec.json.decode(back.extra)  # type: ignore[union-attr]
        assert {k: kept[k] for k in added} == added
        assert msgspec.structs.replace(back, extra=r.extra) == r  # type: ignore[union-attr]
    else:
        assert back == r
        assert not unknown.kept


def test_unknown_nested_fields_are_kept_in_the_nearest_extra() -> None:
    """Unknown fields inside a nested message or tool call land in that struct's extra."""
    line = (
        b'{"type":"message","seq":2,"ts":"2026-12-02T16:22:05Z","future":1,'
        b'"message":{"role":"assistant","content":"hi","new_flag":true,'
        b'"tool_calls":[{"id":"c","name":"f","arguments":"{","later":[1]}]}}'
    )
    rec, unknown = decode_record_reporting(line)
    assert isinstance(rec, MessageRecord)
    assert rec.message.tool_calls[0].arguments == "{"
    assert bytes(rec.message.extra) == b'{"new_flag":true}'
    assert bytes(rec.message.tool_calls[0].extra) == b'{"later":[1]}'
    assert unknown is not None
    assert unknown.dropped == ("$.future",)
    assert set(unknown.kept) == {"$.message.new_flag", "$.message.tool_calls[0].later"}


def test_an_unknown_field_is_reported_by_replay_and_blocks_verified(tmp_path: Path) -> None:
    """A replay that met an unknown field says so and is not verified: it lost or moved a value
    inside the checkpointed range (ADR 0018)."""
    from ledger import RolloutWriter, StopKind
    from replay import Verdict, read_replay, verify_replay

    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="hi"))
        w.stop(StopKind.PAUSED)
    lines = w.path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"message":{', b'"message":{"from_the_future":1,', 1)
    w.path.write_bytes(b"".join(lines))
    rep = read_replay(w.path)
    kinds = [d.kind for d in rep.degraded]
    assert DegradationKind.UNKNOWN_FIELD in kinds
    assert not rep.verified
    assert verify_replay(rep).verdict is not Verdict.OK
    assert bytes(rep.messages[0].extra) == b'{"from_the_future":1}'


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"type":"message","seq":1}', "wrong shape"),
        (b'{"seq":1}', "without a type"),
        (b'{"type":null}', "without a type"),
        (b'{"type":5}', "not a record"),
        (b'{"type":"terminal","seq":1,"ts":"2026-01-01T00:00:00"}', "timezone"),
        (b"[1,2]", "not a record"),
        (b"{", "not valid JSON"),
        (b'{"type":"x","seq":1}\xff', "UTF-8"),
    ],
)
def test_decode_error_says_what_was_wrong(line: bytes, why: str) -> None:
    """A line that is not a record raises `RecordDecodeError` with a sentence naming the fault."""
    with pytest.raises(RecordDecodeError, match=why):
        decode_record(line)


def test_decode_error_is_a_value_error() -> None:
    """`RecordDecodeError` is a `ValueError`, so generic callers can catch it."""
    assert issubclass(RecordDecodeError, ValueError)


def test_surrounding_whitespace_is_allowed() -> None:
    """Spaces, tabs and CRLF around a line do not stop it from decoding."""
    rec = Terminal(seq=3, ts=TS, stop_kind="paused")
    assert decode_record(b" \t" + encode_record(rec) + b"\r\n") == rec


def test_legacy_terminal_without_stop_kind() -> None:
    """A terminal record without a stop kind decodes with `stop_kind=None` and `kind=None`."""
    rec = decode_record(b'{"type":"terminal","seq":9,"ts":"2026-01-01T00:00:00Z"}')
    assert isinstance(rec, Terminal)
    assert (rec.stop_kind, rec.kind, rec.event) == (None, None, "stop")


def test_unknown_stop_kind_decodes() -> None:
    """A stop kind this reader does not know still decodes; `kind` is then None."""
    rec = decode_record(
        b'{"type":"terminal","seq":9,"ts":"2026-01-01T00:00:00Z","stop_kind":"hibernated"}'
    )
    assert isinstance(rec, Terminal)
    assert (rec.stop_kind, rec.kind) == ("hibernated", None)


def test_newer_format_version_decodes() -> None:
    """A session_meta of a newer format version still decodes (the reducer reports it)."""
    rec = decode_record(
        msgspec.json.encode(
            {
                "type": "session_meta",
                "seq": 1,
                "ts": "2026-01-01T00:00:00Z",
                "format_version": FORMAT_VERSION + 1,
                "session_id": "s",
                "started_at": "2026-01-01T00:00:00Z",
                "new": {"x": 1},
            }
        )
    )
    assert isinstance(rec, SessionMeta)
    assert rec.format_version == FORMAT_VERSION + 1


def test_checkpoint_line_is_compact() -> None:
    """Records encode without whitespace and with defaults omitted."""
    line = encode_line(AgentCheckpoint(seq=4, ts=TS, digest="sha256:ab", message_count=2))
    assert line == (
        b'{"type":"agent_checkpoint","seq":4,"ts":"2026-12-02T16:22:05Z",'
        b'"digest":"sha256:ab","message_count":2}\n'
    )


def test_compacted_list_becomes_tuple() -> None:
    """A list of messages handed to `Compacted` is stored as a tuple and round-trips equal."""
    ms = [Message(role=Role.USER, content="a"), Message(role=Role.ASSISTANT, content="b")]
    rec = Compacted(seq=5, ts=TS, messages=ms)  # type: ignore[arg-type]
    assert type(rec.messages) is tuple
    assert rec == Compacted(seq=5, ts=TS, messages=tuple(ms))
    assert decode_record(encode_record(rec)) == rec
    hash(rec)


@pytest.mark.parametrize(
    "when",
    [
        datetime(2026, 1, 2, 3, 4, 5),
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
    ],
    ids=["naive", "plus-two-hours"],
)
def test_times_that_are_not_utc_are_refused_when_encoding(when: datetime) -> None:
    """A record whose time is naive or not UTC cannot be made, so no unreadable line is made."""
    utc = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="UTC"):
        Terminal(seq=1, ts=when)
    with pytest.raises(ValueError, match="UTC"):
        SessionMeta(seq=1, ts=utc, format_version=1, session_id="s", started_at=when)
    # Built around the constructor's check, the encoder still refuses it.
    record = msgspec.structs.replace(Terminal(seq=1, ts=utc), ts=when)
    with pytest.raises(ValueError, match="UTC"):
        encode_line(record)
    with pytest.raises(ValueError, match="UTC"):
        encode_record(record)
