"""Hypothesis strategies for every type of the format, in one place.

Extend this module whenever a type is added or changed; tests import from here only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import msgspec
from hypothesis import strategies as st

from ledger import (
    AgentCheckpoint,
    Compacted,
    Degradation,
    DegradationKind,
    ErrorDetail,
    MediaPart,
    Message,
    MessageRecord,
    OpaquePart,
    Origin,
    Reasoning,
    ReasoningKind,
    ReasoningRecord,
    Record,
    Role,
    SessionMeta,
    StopKind,
    Terminal,
    TextPart,
    ToolCall,
    UnknownRecord,
    encode_line,
    raw_json,
)
from ledger.records import FORMAT_VERSION
from ledger.reducer import Entry

# Text that JSON can carry: no lone surrogates (msgspec refuses them, as UTF-8 does), but
# everything else, CJK, emoji, controls and NUL included.
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
short_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
maybe_text = st.none() | text
ident = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,20}", fullmatch=True)

utc_datetimes = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(UTC),
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=10,
)
json_objects = st.dictionaries(text, json_values, max_size=4)
raw_objects = json_objects.map(raw_json)
maybe_raw_object = st.just(msgspec.UNSET) | raw_objects

origins = st.builds(
    Origin, provider=maybe_text, api=maybe_text, model=maybe_text, endpoint=maybe_text
)

text_parts = st.builds(TextPart, text=text, signature=maybe_text, extra=maybe_raw_object)
media_parts = st.one_of(
    st.builds(MediaPart, media_type=short_text, url=text, name=maybe_text, extra=maybe_raw_object),
    st.builds(MediaPart, media_type=short_text, data=text, name=maybe_text, extra=maybe_raw_object),
)
opaque_parts = st.builds(OpaquePart, data=json_values.map(raw_json), provider=maybe_text)
content_parts = st.one_of(text_parts, media_parts, opaque_parts)
contents = st.none() | text | st.lists(content_parts, max_size=4).map(tuple)

reasonings = st.builds(
    Reasoning,
    text=maybe_text,
    kind=st.sampled_from(ReasoningKind),
    summary=st.lists(text, max_size=3).map(tuple),
    signature=maybe_text,
    encrypted=maybe_text,
    item_id=maybe_text,
    origin=st.none() | origins,
    extra=maybe_raw_object,
)

tool_calls = st.builds(
    ToolCall,
    id=short_text,
    name=short_text,
    arguments=text,  # any text: arguments need not be valid JSON
    item_id=maybe_text,
    signature=maybe_text,
    extra=maybe_raw_object,
)


@st.composite
def messages(draw: st.DrawFn, roles: st.SearchStrategy[Role] | None = None) -> Message:
    """Any message; only assistant messages carry reasoning blocks and tool calls."""
    role = draw(roles if roles is not None else st.sampled_from(Role))
    assistant = role == Role.ASSISTANT
    return Message(
        role=role,
        content=draw(contents),
        reasoning=tuple(draw(st.lists(reasonings, max_size=3))) if assistant else (),
        tool_calls=tuple(draw(st.lists(tool_calls, max_size=3))) if assistant else (),
        tool_call_id=draw(st.none() | short_text) if role == Role.TOOL else None,
        is_error=draw(st.booleans()) if role == Role.TOOL else False,
        name=draw(maybe_text),
        item_id=draw(maybe_text),
        origin=draw(st.none() | origins),
        extra=draw(maybe_raw_object),
        is_anchored=draw(st.booleans()),
        truncation_marker=draw(maybe_text),
    )


message_lists = st.lists(messages(), max_size=12)

seqs = st.integers(min_value=1, max_value=2**40)

session_metas = st.builds(
    SessionMeta,
    seq=seqs,
    ts=utc_datetimes,
    format_version=st.just(FORMAT_VERSION),
    session_id=ident,
    started_at=utc_datetimes,
    agent_name=st.none() | st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True),
    parent_session_id=st.none() | ident,
    delegation_id=maybe_text,
    model=maybe_text,
    provider=maybe_text,
    cwd=maybe_text,
    project=maybe_text,
    extra=maybe_raw_object,
)
message_records = st.builds(MessageRecord, seq=seqs, ts=utc_datetimes, message=messages())
reasoning_records = st.builds(ReasoningRecord, seq=seqs, ts=utc_datetimes, reasoning=reasonings)
compacted_records = st.builds(
    Compacted,
    seq=seqs,
    ts=utc_datetimes,
    messages=st.lists(messages(), max_size=4).map(tuple),
    summary=maybe_text,
)
checkpoints = st.builds(
    AgentCheckpoint,
    seq=seqs,
    ts=utc_datetimes,
    digest=text,
    message_count=st.integers(min_value=0, max_value=10**6),
)
error_details = st.builds(ErrorDetail, type=short_text, message=text, traceback=maybe_text)
stop_kind_strings = st.sampled_from([k.value for k in StopKind]) | short_text
terminals = st.builds(
    Terminal,
    seq=seqs,
    ts=utc_datetimes,
    event=short_text,
    stop_kind=st.none() | stop_kind_strings,
    reason=text,
    error=st.none() | error_details,
)

records: st.SearchStrategy[Record] = st.one_of(
    session_metas,
    message_records,
    reasoning_records,
    compacted_records,
    checkpoints,
    terminals,
)


def with_seqs(recs: list[Record], start: int = 1) -> list[Record]:
    """Renumber records ``start, start+1, ...`` as a single writer would."""
    return [msgspec.structs.replace(r, seq=start + i) for i, r in enumerate(recs)]


def timestamps(
    start: datetime, step: timedelta = timedelta(milliseconds=1)
) -> st.SearchStrategy[datetime]:
    """Timestamps at or after ``start`` (helper for record sequences)."""
    return st.integers(min_value=0, max_value=10**6).map(lambda n: start + n * step)


# --- core ---
# Strategies for the core tests: reducer entries, damaged lines, names and aware datetimes.

_KNOWN_TAGS = frozenset(
    ("session_meta", "message", "reasoning", "compacted", "agent_checkpoint", "terminal")
)

unknown_records = st.builds(
    UnknownRecord,
    type=short_text.filter(lambda t: t not in _KNOWN_TAGS),
    seq=st.none() | seqs,
    raw=st.binary(max_size=24),
)
degradations = st.builds(
    Degradation,
    kind=st.sampled_from(DegradationKind),
    detail=text,
    line=st.none() | st.integers(min_value=1, max_value=10**6),
    seq=st.none() | seqs,
)
# Small sequence numbers, so that in-order runs, gaps and duplicates all happen often.
small_seqs = st.integers(min_value=1, max_value=8)


@st.composite
def entry_lists(draw: st.DrawFn) -> list[Entry]:
    """Reducer input: records (often numbered as one writer would), unknown lines and damage."""
    entries: list[Entry] = draw(
        st.lists(st.one_of(records, records, records, unknown_records, degradations), max_size=16)
    )
    if draw(st.booleans()):
        n = 0
        renumbered: list[Entry] = []
        for e in entries:
            n += draw(st.sampled_from((1, 1, 1, 0, 2)))
            if isinstance(e, Degradation):
                # A damaged line carried a number of its own, which the next record skips.
                renumbered.append(e)
                continue
            renumbered.append(msgspec.structs.replace(e, seq=max(n, 1)))
        entries = renumbered
    return entries


@st.composite
def mutated_lines(draw: st.DrawFn) -> bytes:
    """A valid rollout line damaged by bit flips, truncations, inserted or deleted bytes."""
    buf = bytearray(encode_line(draw(records)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        op = draw(st.sampled_from(("flip", "truncate", "insert", "delete")))
        if not buf:
            break
        at = draw(st.integers(min_value=0, max_value=len(buf) - 1))
        if op == "flip":
            buf[at] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        elif op == "truncate":
            del buf[at:]
        elif op == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=4))
        else:
            del buf[at]
    return bytes(buf)


session_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}", fullmatch=True)
agent_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", fullmatch=True).filter(
    lambda a: ".." not in a and not a.endswith(".")
)
fixed_offsets = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
# Aware datetimes over the whole calendar (years below 1000 included) whose UTC value exists.
aware_datetimes = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.just(UTC) | fixed_offsets,
)


# --- faults ---
# Helpers for the fault campaigns (tests/test_faults_*.py): a small, fully featured rollout built
# by hand from the codec, so that damage tests need nothing but the committed core.

FAULT_START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def fault_conversation() -> list[Message]:
    """A short conversation that uses every feature a rollout line can carry."""
    return [
        Message(role=Role.SYSTEM, content="You are careful."),
        Message(role=Role.USER, content="Count the lines of README.md, s'il vous plaît ✓"),
        Message(
            role=Role.ASSISTANT,
            reasoning=(
                Reasoning(text="I should count.", signature="sig-1"),
                Reasoning(kind=ReasoningKind.ENCRYPTED, encrypted="ZW5jcnlwdGVk"),
            ),
            tool_calls=(ToolCall(id="call_1", name="shell", arguments='{"cmd": "wc -l"'),),
        ),
        Message(role=Role.TOOL, tool_call_id="call_1", content="42 README.md", is_anchored=True),
        Message(role=Role.ASSISTANT, content=(TextPart(text="It has 42 lines."),)),
    ]


def fault_rollout_lines(
    conversation: list[Message],
    *,
    session_id: str = "fault-session",
    stop: StopKind | None = StopKind.PAUSED,
    checkpoint: bool = True,
) -> list[bytes]:
    """The lines (each ending in ``\\n``) of a rollout of ``conversation``, as a writer makes them.

    With ``checkpoint`` the terminal path is appended: a checkpoint over the conversation and,
    when ``stop`` is not None, a terminal record of that kind.
    """
    from ledger import checkpoint_digest, encode_line
    from ledger import message_records as records_of

    ts = FAULT_START
    lines = [
        encode_line(
            SessionMeta(
                seq=1,
                ts=ts,
                format_version=FORMAT_VERSION,
                session_id=session_id,
                started_at=ts,
                agent_name="faulty",
            )
        )
    ]
    seq = 1
    for m in conversation:
        for r in records_of(m, first_seq=seq + 1, ts=ts):
            lines.append(encode_line(r))
            seq = r.seq
    if checkpoint:
        seq += 1
        digest = checkpoint_digest(conversation)
        lines.append(
            encode_line(
                AgentCheckpoint(seq=seq, ts=ts, digest=digest, message_count=len(conversation))
            )
        )
        if stop is not None:
            seq += 1
            lines.append(encode_line(Terminal(seq=seq, ts=ts, stop_kind=stop, reason="test")))
    return lines


def unanchored(messages: tuple[Message, ...] | list[Message]) -> list[Message]:
    """Messages without the bookkeeping fields the digest leaves out."""
    return [msgspec.structs.replace(m, is_anchored=False, truncation_marker=None) for m in messages]


# --- read side ---------------------------------------------------------------------------------

_call_ids = st.sampled_from(["c1", "c2", "c3", "c4"])


@st.composite
def tool_conversation_messages(draw: st.DrawFn) -> Message:
    """A message of a tool-heavy conversation: ids from a small pool, so duplicates, orphans
    and calls without output all happen."""
    kind = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool", "tool"]))
    if kind == "assistant":
        ids = draw(st.lists(_call_ids, max_size=3, unique=True))
        return Message(
            role=Role.ASSISTANT,
            content=draw(st.none() | text),
            reasoning=tuple(draw(st.lists(reasonings, max_size=2))),
            tool_calls=tuple(ToolCall(id=i, name="shell", arguments=draw(text)) for i in ids),
        )
    if kind == "tool":
        return Message(
            role=Role.TOOL,
            tool_call_id=draw(st.none() | _call_ids),
            content=draw(contents),
            is_error=draw(st.booleans()),
        )
    return Message(role=Role(kind), content=draw(contents))


tool_conversations = st.lists(tool_conversation_messages(), max_size=16)
"""Message sequences with tool calls and outputs in every order, duplicates included."""


# --- export ------------------------------------------------------------------------------------
# Hostile text for the exported pages (tests/test_export_hostile.py): pieces of markup, URL
# schemes, Markdown structure, terminal escapes, bidi overrides and lone surrogates, mixed with
# any text. A rollout read from a file cannot hold a lone surrogate, but a replay built in memory
# can, and a page must still encode.

HOSTILE_PIECES = (
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "</textarea>",
    "</style><style>body{display:none}</style>",
    "</pre></details></article>",
    "javascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    '" onmouseover="alert(1)',
    "' autofocus onfocus='alert(1)",
    "&amp;&#60;&lt;",
    "<!-- -->",
    "<![CDATA[ ]]>",
    "```",
    "\n```\n",
    "\n````````text\n",
    "\n~~~\n",
    "\n# Forged heading\n",
    "\n---\n",
    "\n- item\n",
    "\n    indented\n",
    "[link](javascript:alert(1))",
    "![img](https://example.invalid/x.png)",
    "<https://example.invalid>",
    "$x$",
    "| a | b |\n|---|---|",
    "*_~\\",
    "\x1b[31m",
    "\x1b]52;c;aGVsbG8=\x07",
    "\x9b2J",
    "\x00",
    "\r\n",
    "\x0b\x0c",
    "\u202e",
    "\u2066",
    "\ud800",
    "\udfff",
    "\u2028",
)

hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=6)), max_size=5
).map("".join)
"""Text mixing hostile pieces and any characters, the empty string included."""


def field_texts(keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, str]]:
    """Hostile text for any subset of the named fields, up to all of them (the others keep a
    placeholder); a failing case shrinks fast to the one field and the one piece that matter."""
    return st.dictionaries(st.sampled_from(keys), hostile_text, max_size=len(keys))
