"""The boundary (ADR 0017): every public value type refuses a wrong value at construction, or
the value it accepted comes back equal from the file. Never accepted, then lost."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as s
from ledger import (
    FORMAT_VERSION,
    ErrorDetail,
    ForkOrigin,
    InvalidFieldError,
    MediaPart,
    Message,
    MessageRecord,
    OpaquePart,
    Origin,
    Reasoning,
    Role,
    RolloutWriter,
    SessionMeta,
    StopKind,
    Terminal,
    TextPart,
    ToolCall,
    decode_record,
    encode_record,
)
from replay import read_replay


def _carrier(value: Any) -> Message:
    """A message that carries ``value`` where the format keeps it."""
    if isinstance(value, Message):
        return value
    if isinstance(value, ToolCall):
        return Message(role=Role.ASSISTANT, tool_calls=(value,))
    if isinstance(value, Reasoning):
        return Message(role=Role.ASSISTANT, reasoning=(value,))
    if isinstance(value, TextPart | MediaPart | OpaquePart):
        return Message(role=Role.USER, content=(value,))
    assert isinstance(value, Origin)
    return Message(role=Role.USER, origin=value)


def _build(cls: type, kwargs: dict[str, object]) -> Any:
    """Construct ``cls``; ``None`` when it refused the values with the documented error."""
    refused: Exception | None = None
    try:
        return cls(**kwargs)
    except (InvalidFieldError, ValueError) as exc:
        refused = exc
    where = getattr(refused, "where", "")
    # Every refusal names its field, but one: a media part needs exactly one source, which
    # is a rule across two fields.
    assert where.startswith(f"{cls.__name__}.") or cls is MediaPart, refused
    return None


def _check_round_trip(value: Any, ts: datetime) -> None:
    if isinstance(value, ForkOrigin):
        record = SessionMeta(
            seq=1, ts=ts, format_version=FORMAT_VERSION, session_id="s", started_at=ts, fork=value
        )
    elif hasattr(value, "seq"):
        record = value
    elif isinstance(value, ErrorDetail):
        record = Terminal(seq=2, ts=ts, error=value)
    else:
        record = MessageRecord(seq=2, ts=ts, message=_carrier(value))
    assert decode_record(encode_record(record)) == record


FIELDS = [(cls, name) for cls in s.BOUNDARY_TYPES for name in cls.__struct_fields__]


@pytest.mark.parametrize(("cls", "name"), FIELDS, ids=[f"{c.__name__}.{n}" for c, n in FIELDS])
@settings(max_examples=60)  # cheap (no files); every field meets every kind of junk
@given(data=st.data())
def test_any_value_in_any_field_is_refused_or_round_trips(
    cls: type, name: str, data: st.DataObject
) -> None:
    """Any value in one field, the others valid: refused at once with InvalidFieldError naming
    the field, or encoded and decoded back equal. Never accepted, then lost."""
    valid = s.VALID_FIELDS[cls]
    kwargs = {n: data.draw(valid[n], label=n) for n in valid if n != name}
    kwargs[name] = data.draw(s.junk | valid[name] if name in valid else s.junk, label=name)
    value = _build(cls, kwargs)
    if value is not None:
        _check_round_trip(value, data.draw(s.utc_datetimes))


@settings(max_examples=200)
@given(data=st.data(), cls=st.sampled_from(s.BOUNDARY_TYPES))
def test_construction_refuses_or_the_value_round_trips(data: st.DataObject, cls: type) -> None:
    """Any values in any fields at once (valid, junk or left out): refused, or round-tripped."""
    value = _build(cls, data.draw(s.field_values(cls)))
    if value is not None:
        _check_round_trip(value, data.draw(s.utc_datetimes))


@settings(max_examples=25)
@given(data=st.data(), cls=st.sampled_from((Message, ToolCall, Reasoning, TextPart, Origin)))
def test_accepted_values_come_back_from_a_rollout(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, cls: type
) -> None:
    """What the constructor accepts, the writer writes and replay gives back equal, verified."""
    value = _build(cls, data.draw(s.field_values(cls)))
    if value is None:
        return
    message = _carrier(value)
    if message.reasoning and message.role != Role.ASSISTANT:
        return  # refused by append, with its own error (only assistants carry reasoning)
    root: Path = tmp_path_factory.mktemp("boundary")
    with RolloutWriter.create(root) as w:
        w.append(message)
        w.stop(StopKind.PAUSED)
    rep = read_replay(w.path)
    assert rep.verified
    assert rep.messages == (message,)


@pytest.mark.parametrize(
    ("build", "where"),
    [
        (
            lambda: Message(
                role="assistant",
                content="x",
                tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f"}}],
            ),
            "Message.tool_calls[0]",
        ),
        (lambda: Message(role="user", content=[{"type": "text", "text": "hi"}]), "Message.content"),
        (lambda: Message(role="user", content=["bare string"]), "Message.content"),
        (
            lambda: Message(role="assistant", reasoning=[{"thinking": "t", "signature": "s"}]),
            "Message.reasoning[0]",
        ),
        (lambda: ErrorDetail(type="X", message=None), "ErrorDetail.message"),
        (lambda: Message(role="user", content="a\udc80"), "Message.content"),
        (lambda: Message(role="user", extra={"a": 1}), "Message.extra"),
        (lambda: Message(role="user", extra=msgspec.Raw(b"[" * 400 + b"]" * 400)), "Message.extra"),
        (
            lambda: OpaquePart(data=msgspec.Raw(b"{" * 0 + b"[" * 999 + b"]" * 999)),
            "OpaquePart.data",
        ),
        (lambda: ToolCall(id=7, name="f"), "ToolCall.id"),
        (lambda: Message(role="user", is_error=1), "Message.is_error"),
    ],
)
def test_the_probes_values_are_refused_naming_the_field(build: Any, where: str) -> None:
    """The values the probe and the first framework author got accepted are refused, and the
    error names the field, what was given and what is expected (D2, D8)."""
    with pytest.raises(InvalidFieldError) as info:
        build()
    assert str(info.value).startswith(where)
    assert "expected" in str(info.value)
    assert "got" in str(info.value)


def test_a_provider_dict_points_at_the_adapters() -> None:
    """A provider's dict where a ToolCall belongs says which adapters convert provider shapes."""
    with pytest.raises(InvalidFieldError, match=r"ledger\.providers"):
        Message(role=Role.ASSISTANT, tool_calls=({"id": "c1"},))  # type: ignore[arg-type]


def test_lists_become_tuples_and_enum_values_become_members() -> None:
    """The forms that mean the same value are normalised: lists to tuples, strings to members."""
    m = Message(role="assistant", reasoning=[Reasoning(text="t", kind="summary")])  # type: ignore[arg-type]
    assert type(m.reasoning) is tuple
    assert m.role is Role.ASSISTANT
    assert m.reasoning[0].kind == "summary"
    hash(m)
