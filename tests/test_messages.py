"""Messages keep what providers send: empty versus missing, invalid JSON, content form, order."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger import (
    MediaPart,
    Message,
    MessageRecord,
    OpaquePart,
    Reasoning,
    ReasoningKind,
    Role,
    TextPart,
    ToolCall,
    decode_record,
    encode_record,
    message_records,
    raw_json,
)

TS = datetime(2026, 12, 2, 16, 22, 5, tzinfo=UTC)


def _through_file(message: Message) -> Message:
    record = MessageRecord(seq=1, ts=TS, message=message)
    back = decode_record(encode_record(record))
    assert isinstance(back, MessageRecord)
    return back.message


def test_empty_reasoning_text_is_not_none() -> None:
    """`Reasoning(text="")` and `Reasoning(text=None)` differ and both survive the codec."""
    empty, missing = Reasoning(text=""), Reasoning(text=None)
    assert empty != missing
    assert encode_record(_rec(empty)) != encode_record(_rec(missing))
    for block in (empty, missing):
        back = _through_file(Message(role=Role.ASSISTANT, reasoning=(block,)))
        assert back.reasoning[0].text == block.text
        assert type(back.reasoning[0].text) is type(block.text)


def _rec(block: Reasoning) -> MessageRecord:
    return MessageRecord(seq=1, ts=TS, message=Message(role=Role.ASSISTANT, reasoning=(block,)))


def test_empty_content_is_not_none() -> None:
    """Content `""` and content `None` are distinct values and stay distinct through the codec."""
    empty, missing = Message(role=Role.USER, content=""), Message(role=Role.USER, content=None)
    assert empty != missing
    assert _through_file(empty).content == ""
    assert _through_file(missing).content is None


def test_content_form_is_kept() -> None:
    """A string, a tuple of parts, an empty tuple and None come back in the form they were given."""
    forms: list[str | tuple[TextPart | MediaPart | OpaquePart, ...] | None] = [
        "hello",
        (TextPart(text="hello"),),
        (
            TextPart(text="a", signature="sig"),
            MediaPart(media_type="image/png", url="https://example.invalid/a.png"),
            MediaPart(media_type="image/png", data="iVBORw0KGgo="),
            OpaquePart(data=raw_json({"type": "citation", "n": 1}), provider="anthropic"),
        ),
        (),
        None,
    ]
    for content in forms:
        back = _through_file(Message(role=Role.USER, content=content))
        assert back.content == content
        assert type(back.content) is type(content)


@given(args=s.text)
def test_tool_call_arguments_are_byte_exact(args: str) -> None:
    """Tool-call arguments come back as the exact text received, valid JSON or not."""
    call = ToolCall(id="call_1", name="shell", arguments=args)
    back = _through_file(Message(role=Role.ASSISTANT, tool_calls=(call,)))
    assert back.tool_calls[0].arguments == args


@pytest.mark.parametrize(
    "args", ['{"cmd": "ls"', '{"a":1,}', "not json at all", "", '{"a": 1}  ', "\x00\n\r\t"]
)
def test_invalid_json_arguments_are_kept(args: str) -> None:
    """Truncated, trailing-comma, empty and control-character arguments are kept as given."""
    call = ToolCall(id="c", name="n", arguments=args)
    assert _through_file(Message(role=Role.ASSISTANT, tool_calls=(call,))).tool_calls == (call,)


def test_lists_become_tuples() -> None:
    """Lists handed to constructors are stored as tuples, so the values stay immutable."""
    parts: list[TextPart | MediaPart | OpaquePart] = [TextPart(text="x")]
    m = Message(
        role=Role.ASSISTANT,
        content=parts,  # type: ignore[arg-type]
        reasoning=[Reasoning(text="r")],  # type: ignore[arg-type]
        tool_calls=[ToolCall(id="1", name="f")],  # type: ignore[arg-type]
    )
    assert type(m.content) is tuple
    assert type(m.reasoning) is tuple
    assert type(m.tool_calls) is tuple
    r = Reasoning(summary=["a", "b"])  # type: ignore[arg-type]
    assert r.summary == ("a", "b")
    assert type(r.summary) is tuple
    assert m == Message(
        role=Role.ASSISTANT,
        content=(TextPart(text="x"),),
        reasoning=(Reasoning(text="r"),),
        tool_calls=(ToolCall(id="1", name="f"),),
    )


def test_string_enums_are_converted() -> None:
    """Role and reasoning kind given as strings become the enums and compare equal to them."""
    m = Message(role="assistant")  # type: ignore[arg-type]
    assert type(m.role) is Role
    assert m == Message(role=Role.ASSISTANT)
    r = Reasoning(kind="redacted")  # type: ignore[arg-type]
    assert type(r.kind) is ReasoningKind
    with pytest.raises(ValueError, match="bogus"):
        Message(role="bogus")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "raw",
    [b"{", b"", b"{'a': 1}", b"nope", b'{"a":1}}', b"\xff"],
    ids=["open", "empty", "single-quotes", "word", "trailing", "not-utf8"],
)
def test_invalid_raw_extra_is_refused(raw: bytes) -> None:
    """Raw `extra`/`data` that is not valid JSON text is refused, naming the fix."""
    bad = msgspec.Raw(raw)
    for make in (
        lambda: Message(role=Role.USER, extra=bad),
        lambda: Reasoning(extra=bad),
        lambda: ToolCall(id="1", name="f", extra=bad),
        lambda: OpaquePart(data=bad),
    ):
        with pytest.raises(ValueError, match="raw_json"):
            make()


@pytest.mark.parametrize(
    "raw",
    [b'{\n"a": 1}', b'{"a":\r1}', b' {"a": 1}', b'{"a": 1}\n'],
    ids=["lf", "cr", "lead", "tail"],
)
def test_raw_that_would_break_the_line_is_refused(raw: bytes) -> None:
    """Raw JSON with a line break or surrounding whitespace is refused (framing, round trip)."""
    with pytest.raises(ValueError, match="raw_json"):
        Message(role=Role.USER, extra=msgspec.Raw(raw))


@given(value=s.json_objects)
def test_raw_json_round_trips(value: dict[str, object]) -> None:
    """`raw_json` output is accepted in `extra` and comes back byte-exact through the codec."""
    raw = raw_json(value)
    back = _through_file(Message(role=Role.USER, extra=raw))
    assert bytes(back.extra) == bytes(raw)  # type: ignore[arg-type]
    assert msgspec.json.decode(bytes(back.extra)) == value  # type: ignore[arg-type]


def test_media_part_needs_exactly_one_source() -> None:
    """A media part with both or neither of url and data is refused."""
    with pytest.raises(ValueError, match="exactly one"):
        MediaPart(media_type="image/png")
    with pytest.raises(ValueError, match="exactly one"):
        MediaPart(media_type="image/png", url="u", data="d")


@pytest.mark.parametrize("role", [r for r in Role if r != Role.ASSISTANT])
def test_message_records_refuses_reasoning_on_other_roles(role: Role) -> None:
    """Reasoning on a non-assistant message is refused, since replay would move it elsewhere."""
    m = Message(role=role, content="x", reasoning=(Reasoning(text="t"),))
    with pytest.raises(ValueError, match="only assistant messages carry reasoning"):
        list(message_records(m, first_seq=2, ts=TS))


@given(m=s.messages(), first=st.integers(min_value=1, max_value=2**40))
def test_message_records_shape(m: Message, first: int) -> None:
    """One reasoning record per block in order, then the bare message, on consecutive seqs."""
    recs = list(message_records(m, first_seq=first, ts=TS))
    assert [r.seq for r in recs] == list(range(first, first + len(recs)))
    assert len(recs) == len(m.reasoning) + 1
    *blocks, last = recs
    assert tuple(b.reasoning for b in blocks) == m.reasoning  # type: ignore[union-attr]
    assert isinstance(last, MessageRecord)
    assert last.message.reasoning == ()
    assert msgspec.structs.replace(last.message, reasoning=m.reasoning) == m


@given(m=s.messages())
def test_messages_are_frozen_values(m: Message) -> None:
    """Equal messages built twice are equal and, being frozen, cannot be assigned to."""
    twin = msgspec.json.decode(msgspec.json.encode(m), type=Message)
    assert twin == m
    with pytest.raises(AttributeError):
        m.content = "changed"  # type: ignore[misc]
