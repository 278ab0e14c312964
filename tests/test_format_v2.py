"""Format version 2 (ADRs 0120-0126): what describes a session stays out of its
conversation, usage counts once per response, and version-1 readers still read the files."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    AgentCheckpoint,
    Compacted,
    Degradation,
    DegradationKind,
    ErrorDetail,
    Event,
    EventKind,
    Message,
    MessageRecord,
    MetaUpdate,
    OpaquePart,
    Reasoning,
    ReasoningRecord,
    SessionMeta,
    Terminal,
    Turn,
    UnknownRecord,
    Usage,
    checkpoint_digest,
    decode_record,
    encode_line,
    encode_record,
    raw_json,
)
from ledger import reducer_facts as reducer_module
from ledger.codec import RecordDecodeError
from ledger.reader import iter_entries
from replay import fold

TS = datetime(2026, 12, 3, 9, 0, 0, tzinfo=UTC)
V1_TYPES = (SessionMeta, MessageRecord, ReasoningRecord, Compacted, AgentCheckpoint, Terminal)


def _v2_file() -> tuple[list[bytes], list[Message]]:
    """A version-2 file using every addition, and the conversation it holds."""
    said = [
        Message(role="user", content="hi"),
        Message(
            role="assistant",
            content="hello",
            reasoning=(Reasoning(text="think", placeholder="[REDACTED_SIGNATURE]"),),
        ),
    ]
    compacted_to = (
        Message(role="user", content="summary"),
        Message(
            role="assistant",
            content=(OpaquePart(provider="openai.responses", data=raw_json({"type": "x"})),),
        ),
    )
    recs = [
        SessionMeta(seq=1, ts=TS, format_version=2, session_id="v2", started_at=TS),
        MetaUpdate(seq=2, ts=TS, title="a title"),
        Turn(seq=3, ts=TS, boundary="start", turn_id="t1", model="m", settings=raw_json({})),
        MessageRecord(seq=4, ts=TS, message=said[0]),
        ReasoningRecord(seq=5, ts=TS, reasoning=said[1].reasoning[0]),
        MessageRecord(seq=6, ts=TS, message=Message(role="assistant", content="hello")),
        Usage(seq=7, ts=TS, response_id="r1", input_tokens=10, output_tokens=2),
        Event(seq=8, ts=TS, kind="interrupted", reason="Esc"),
        Compacted(seq=9, ts=TS, messages=compacted_to, extra=raw_json({"trigger": "manual"})),
        Turn(seq=10, ts=TS, boundary="end", turn_id="t1"),
    ]
    return [encode_line(r) for r in recs], list(compacted_to)


def test_a_version_2_file_reads_under_version_1_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """A version-1 reader (six record types, version 1) reads a version-2 file whole: newer
    format reported once, each new record type and each new field reported, the conversation
    intact."""
    lines, conversation = _v2_file()
    v1 = msgspec.json.Decoder(
        SessionMeta | MessageRecord | ReasoningRecord | Compacted | AgentCheckpoint | Terminal
    )
    entries = []
    for line in lines:
        obj = msgspec.json.decode(line)
        if obj["type"] not in {t.__struct_config__.tag for t in V1_TYPES}:
            entries.append(UnknownRecord(type=obj["type"], seq=obj["seq"], raw=line.strip()))
            continue
        # A version-1 struct does not declare these: its reader reports each one as an unknown
        # field (ADR 0018) and reads the rest of the record.
        met = obj.get("reasoning", {}).pop("placeholder", None)
        if obj["type"] == "compacted":
            met = obj.pop("extra", None)
        if met is not None:
            entries.append(Degradation(kind=DegradationKind.UNKNOWN_FIELD, detail="", line=None))
        entries.append(v1.decode(msgspec.json.encode(obj)))
    monkeypatch.setattr(reducer_module, "FORMAT_VERSION", 1)
    state = fold(entries)
    kinds = [d.kind for d in state.degraded]
    assert kinds.count(DegradationKind.NEWER_FORMAT) == 1
    assert kinds.count(DegradationKind.UNKNOWN_RECORD) == 5
    assert kinds.count(DegradationKind.UNKNOWN_FIELD) == 2
    assert set(kinds) == {
        DegradationKind.NEWER_FORMAT,
        DegradationKind.UNKNOWN_RECORD,
        DegradationKind.UNKNOWN_FIELD,
    }
    assert state.messages == tuple(conversation)


def test_a_version_2_file_reads_whole_under_version_2() -> None:
    """The current reader reads the same file with no degradation and sums its descriptions."""
    lines, conversation = _v2_file()
    state = fold(e for _, e in iter_entries(io.BytesIO(b"".join(lines))))
    assert state.degraded == ()
    assert state.messages == tuple(conversation)
    assert (state.title, state.turns, state.events, state.usage.responses) == ("a title", 1, 1, 1)
    assert state.turn is not None
    assert state.turn.boundary == "end"


@given(msgs=s.message_lists, notes=st.lists(s.registered_records(), max_size=6))
def test_descriptions_never_enter_the_conversation(
    msgs: list[Message], notes: list[object]
) -> None:
    """Usage, turn, event and meta_update records change neither the messages nor the digest."""
    described = [n for n in notes if isinstance(n, Usage | Turn | Event | MetaUpdate)]
    plain = [MessageRecord(seq=1, ts=TS, message=m) for m in msgs]
    mixed: list[object] = []
    for i, r in enumerate(plain):
        mixed.append(r)
        if i < len(described):
            mixed.append(described[i])
    a, b = fold(plain), fold(mixed)  # type: ignore[arg-type]
    assert a.messages == b.messages
    assert checkpoint_digest(a.messages) == checkpoint_digest(b.messages)
    assert b.after_checkpoint == a.after_checkpoint


def test_usage_counts_each_response_once() -> None:
    """A usage record repeated for the same response id is counted once; one without an id
    always counts; totals survive a cut (a resume) and a compaction."""
    u1 = Usage(seq=1, ts=TS, response_id="r1", input_tokens=100, output_tokens=7)
    again = Usage(seq=2, ts=TS, response_id="r1", input_tokens=100, output_tokens=7)
    anon = Usage(seq=3, ts=TS, input_tokens=1, output_tokens=1, cache_read_tokens=5)
    comp = Compacted(seq=4, ts=TS, messages=())
    u2 = Usage(seq=5, ts=TS, response_id="r2", output_tokens=3, reasoning_tokens=2)
    whole = fold([u1, again, anon, comp, u2])
    assert whole.usage.responses == 3
    assert whole.usage.input_tokens == 101
    assert whole.usage.output_tokens == 11
    assert whole.usage.cache_read_tokens == 5
    assert whole.usage.reasoning_tokens == 2
    assert whole.usage.repeated == 1
    assert (
        fold([comp, u2, again], fold([u1, anon])).usage == fold([u1, anon, comp, u2, again]).usage
    )


def test_event_and_turn_vocabularies_decode_unknown_values() -> None:
    """An event kind or turn boundary this reader does not know still decodes (strings)."""
    e = Event(seq=1, ts=TS, kind="future_kind", error=ErrorDetail(type="x"))
    assert Event(seq=1, ts=TS, kind="api_error").event_kind is EventKind.API_ERROR
    assert e.event_kind is None
    assert msgspec.json.decode(encode_record(e))["kind"] == "future_kind"
    with pytest.raises(RecordDecodeError):
        decode_record(b'{"type":"turn","seq":1,"ts":"2026-01-01T00:00:00Z"}')


def test_a_placeholder_changes_no_other_encoding() -> None:
    """Reasoning without a placeholder encodes as in version 1; with one, the signature field
    stays empty so that nothing sends the placeholder back."""
    plain = Reasoning(text="t", signature="sig")
    assert b"placeholder" not in encode_record(ReasoningRecord(seq=1, ts=TS, reasoning=plain))
    marked = Reasoning(text="t", placeholder="[REDACTED_SIGNATURE]")
    assert marked.signature is None
    assert marked.encrypted is None
