"""Tool pairing (last output wins, in place) and the lossy memory view built on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import Message, Reasoning, Role, StopKind, TextPart, ToolCall
from ledger.messages import MediaPart
from replay import INTERRUPTED_OUTPUT, read_memory, read_replay, repair_tool_pairs
from replay.pairing import pair_tool_calls
from replay.view import LOSSY_MARKER, SYNTHESIZED_MARKER
from rollout_files import RolloutBuilder, conversation
from strategies import numbered_tool_conversations, tool_conversations


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def call(*ids: str) -> Message:
    return Message(role=Role.ASSISTANT, tool_calls=tuple(ToolCall(id=i, name="shell") for i in ids))


def out(cid: str | None, text: str) -> Message:
    return Message(role=Role.TOOL, tool_call_id=cid, content=text)


# Each case: input, expected output (as written), superseded, orphans, synthesised. "INT(x)"
# stands for the synthesised interrupted output of call x.
CASES = {
    "no_tools": ([user("a"), user("b")], [user("a"), user("b")], 0, 0, 0),
    "paired": ([call("c1"), out("c1", "r")], [call("c1"), out("c1", "r")], 0, 0, 0),
    "duplicate_output_keep_last": (
        [user("go"), call("c1"), out("c1", "cancelled"), user("resume"), out("c1", "real")],
        [user("go"), call("c1"), out("c1", "real"), user("resume")],
        1,
        0,
        0,
    ),
    "three_outputs_last_wins": (
        [call("c1"), out("c1", "1"), out("c1", "2"), out("c1", "3")],
        [call("c1"), out("c1", "3")],
        2,
        0,
        0,
    ),
    "orphan_output_dropped": (
        [user("a"), out("zz", "lost"), user("b")],
        [user("a"), user("b")],
        0,
        1,
        0,
    ),
    "output_without_id_dropped": ([call("c1"), out("c1", "r"), out(None, "?")], None, 0, 1, 0),
    "output_before_its_call_is_an_orphan": (
        [out("c1", "early"), call("c1"), out("c1", "r")],
        [call("c1"), out("c1", "r")],
        0,
        1,
        0,
    ),
    "call_without_output_synthesised": (
        [call("c1", "c2"), out("c1", "r"), user("next")],
        [call("c1", "c2"), out("c1", "r"), "INT(c2)", user("next")],
        0,
        0,
        1,
    ),
    "trailing_call_synthesised": (
        [user("a"), call("c9")],
        [user("a"), call("c9"), "INT(c9)"],
        0,
        0,
        1,
    ),
    # D11: servers that number calls afresh every turn reuse ids; each turn pairs on its own.
    "id_reused_in_the_next_turn": (
        [call("call_0"), out("call_0", "Paris"), call("call_0"), out("call_0", "Rome")],
        [call("call_0"), out("call_0", "Paris"), call("call_0"), out("call_0", "Rome")],
        0,
        0,
        0,
    ),
    "reused_id_without_output_in_its_turn": (
        [call("call_0"), out("call_0", "Paris"), call("call_0"), user("stop")],
        [call("call_0"), out("call_0", "Paris"), call("call_0"), "INT(call_0)", user("stop")],
        0,
        0,
        1,
    ),
    "output_after_the_next_assistant_message_is_an_orphan": (
        [call("c1"), user("wait"), Message(role=Role.ASSISTANT, content="ok"), out("c1", "late")],
        [call("c1"), "INT(c1)", user("wait"), Message(role=Role.ASSISTANT, content="ok")],
        0,
        1,
        1,
    ),
    "same_id_twice_in_one_message_is_one_call": (
        [call("c1", "c1"), out("c1", "r")],
        [call("c1", "c1"), out("c1", "r")],
        0,
        0,
        0,
    ),
}


def expand(expected: list[Message | str]) -> list[Message]:
    res = []
    for m in expected:
        if isinstance(m, str):
            cid = m[4:-1]
            res.append(
                Message(
                    role=Role.TOOL,
                    tool_call_id=cid,
                    content=INTERRUPTED_OUTPUT,
                    is_error=True,
                    name="shell",
                    extra=repair_tool_pairs([call(cid)]).messages[1].extra,
                    truncation_marker=SYNTHESIZED_MARKER,
                )
            )
        else:
            res.append(m)
    return res


@pytest.mark.parametrize("case", list(CASES))
def test_repair_table(case: str) -> None:
    """Each table case pairs calls and outputs as the provider expects, counting what changed."""
    given_, expected, superseded, orphans, synthesized = CASES[case]
    result = repair_tool_pairs(given_)
    if expected is None:
        expected = [m for m in given_ if m.tool_call_id is not None or m.role != Role.TOOL]
    assert list(result.messages) == expand(expected)  # type: ignore[arg-type]
    assert result.superseded == superseded
    assert result.orphan_outputs == orphans
    assert result.synthesized == synthesized
    assert result.changed == bool(superseded or orphans or synthesized)


def test_duplicate_output_keeps_the_last_at_the_first_position() -> None:
    """The error written at cancel is replaced by the real result, where the error stood."""
    err = Message(role=Role.TOOL, tool_call_id="c1", content="cancelled", is_error=True)
    real = out("c1", "42 lines")
    seq = [user("count"), call("c1"), err, user("resume please"), real, user("thanks")]
    result = repair_tool_pairs(seq)
    assert result.messages == (
        user("count"),
        call("c1"),
        real,
        user("resume please"),
        user("thanks"),
    )
    assert result.superseded == 1


def test_synthesised_output_is_clearly_marked() -> None:
    """An output made up for a call without one says so in content, error flag and marker."""
    (_, synth) = repair_tool_pairs([call("c1")]).messages
    assert synth.role == Role.TOOL
    assert synth.tool_call_id == "c1"
    assert synth.is_error
    assert "interrupted" in str(synth.content)
    assert synth.truncation_marker == SYNTHESIZED_MARKER


def turns(ms: list[Message] | tuple[Message, ...]) -> list[list[Message]]:
    """The sequence cut before every message that starts a turn (the first piece may be none)."""
    pieces: list[list[Message]] = [[]]
    for m in ms:
        if m.role == Role.ASSISTANT or (m.role != Role.TOOL and m.tool_calls):
            pieces.append([])
        pieces[-1].append(m)
    return pieces


@given(ms=st.one_of(tool_conversations, numbered_tool_conversations()))
def test_repaired_sequences_are_well_paired(ms: list[Message]) -> None:
    """After repair, in every turn, each output answers a call of that turn, once per call."""
    result = repair_tool_pairs(ms)
    n_answered = 0
    for piece in turns(result.messages):
        called = {c.id for c in piece[0].tool_calls} if piece and piece[0].role != "tool" else set()
        answered = [m.tool_call_id for m in piece if m.role == Role.TOOL]
        assert set(answered) <= called
        assert sorted(answered) == sorted(set(answered))
        assert set(answered) == called
        n_answered += len(answered)
    others = [m for m in ms if m.role != Role.TOOL]
    assert [m for m in result.messages if m.role != Role.TOOL] == others
    n_in = sum(m.role == Role.TOOL for m in ms)
    assert n_in - result.superseded - result.orphan_outputs + result.synthesized == n_answered


def _repair_one_turn(seq: list[Message]) -> tuple[list[Message], int, int, int]:
    """An independent reference for one turn, where an id names one call: pairing by id.

    The turn's first message holds its calls (a first piece without calls holds orphans only).
    """
    called = {c.id for c in seq[0].tool_calls} if seq and seq[0].role != Role.TOOL else set()
    last: dict[str, Message] = {}
    placed: set[str] = set()
    superseded = orphans = 0
    for m in seq:
        if m.role == Role.TOOL:
            if m.tool_call_id in called:
                superseded += m.tool_call_id in last
                last[m.tool_call_id] = m
            else:
                orphans += 1
    out: list[Message] = []
    for m in seq:
        if m.role != Role.TOOL:
            out.append(m)
        elif m.tool_call_id in called and m.tool_call_id not in placed:
            placed.add(m.tool_call_id)
            out.append(last[m.tool_call_id])
    missing = (
        list(dict.fromkeys(c.id for c in seq[0].tool_calls if c.id not in last)) if seq else []
    )
    if missing:
        # After the run of outputs that follows the turn's first message.
        at = 1
        while at < len(out) and out[at].role == Role.TOOL:
            at += 1
        names = {c.id: c.name for c in reversed(seq[0].tool_calls)}
        out[at:at] = expand([f"INT({cid})" for cid in missing])
        for m in out[at : at + len(missing)]:
            assert m.tool_call_id is not None
            assert names[m.tool_call_id] == "shell"
    return out, superseded, orphans, len(missing)


@given(ms=st.one_of(tool_conversations, numbered_tool_conversations()))
def test_repair_agrees_with_a_turn_by_turn_reference(ms: list[Message]) -> None:
    """Repair equals pairing by id inside each turn, turn after turn, ids reused across turns."""
    expected: list[Message] = []
    counts = [0, 0, 0]
    for piece in turns(ms):
        got, *n = _repair_one_turn(piece)
        expected += got
        counts = [a + b for a, b in zip(counts, n, strict=True)]
    result = repair_tool_pairs(ms)
    assert list(result.messages) == expected
    assert [result.superseded, result.orphan_outputs, result.synthesized] == counts


@given(ms=st.one_of(tool_conversations, numbered_tool_conversations()))
def test_every_pairing_of_the_read_side_agrees(ms: list[Message]) -> None:
    """The transcript and the hand-off see the calls and winning outputs that repair keeps."""
    pairing = pair_tool_calls(ms)
    repaired = repair_tool_pairs(ms).messages
    winners = [ms[pairing.outputs[key][-1]] for key, _ in pairing.calls if key in pairing.outputs]
    kept = [
        m for m in repaired if m.role == Role.TOOL and m.truncation_marker != SYNTHESIZED_MARKER
    ]
    assert sorted(map(repr, winners)) == sorted(map(repr, kept))
    synthesised = [m.tool_call_id for m in repaired if m.truncation_marker == SYNTHESIZED_MARKER]
    assert synthesised == [key[1] for key, _ in pairing.open_calls()]


@given(ms=st.one_of(tool_conversations, numbered_tool_conversations()))
def test_repair_is_idempotent(ms: list[Message]) -> None:
    """Repairing a repaired sequence changes nothing."""
    once = repair_tool_pairs(ms)
    twice = repair_tool_pairs(once.messages)
    assert twice.messages == once.messages
    assert not twice.changed


@given(ms=st.one_of(tool_conversations, numbered_tool_conversations()))
def test_reader_and_repair_agree(
    tmp_path_factory: pytest.TempPathFactory, ms: list[Message]
) -> None:
    """The lossy reader's pairing equals repair_tool_pairs on any sequence written to a file."""
    path = RolloutBuilder(tmp_path_factory.mktemp("agree")).extend(ms).stop(StopKind.PAUSED).write()
    expected = repair_tool_pairs(ms)
    whole = read_memory(path, tool_output_limit=None, reasoning_limit=None, keep_system=True)
    assert whole.messages == expected.messages
    assert whole.pairing == expected
    lossy = read_memory(path)
    assert lossy.pairing == expected
    kept = [m for m in expected.messages if m.role not in (Role.SYSTEM, Role.DEVELOPER)]
    assert [(m.role, m.tool_call_id) for m in lossy.messages] == [
        (m.role, m.tool_call_id) for m in kept
    ]


def test_lossy_view_drops_system_shortens_reasoning_truncates_output(tmp_path: Path) -> None:
    """The view leaves out system and developer messages and cuts long reasoning and output."""
    ms = [
        Message(role=Role.SYSTEM, content="sys"),
        Message(role=Role.DEVELOPER, content="dev"),
        user("go"),
        Message(
            role=Role.ASSISTANT,
            reasoning=(Reasoning(text="t" * 1000, encrypted="E" * 100),),
            tool_calls=(ToolCall(id="c1", name="shell"),),
        ),
        out("c1", "o" * 5000),
        Message(
            role=Role.TOOL,
            tool_call_id="c1",
            content=(TextPart(text="p" * 50), MediaPart(media_type="image/png", data="AAAA")),
        ),
    ]
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.PAUSED).write()
    view = read_memory(path, tool_output_limit=100, reasoning_limit=10)
    assert [m.role for m in view.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert view.dropped == 2
    assert view.superseded == 1
    thought = view.messages[1].reasoning[0]
    assert thought.text is not None
    assert thought.text.startswith("t" * 10)
    assert len(thought.text) < 100
    assert thought.encrypted is None
    parts = view.messages[2].content
    assert isinstance(parts, tuple)
    assert parts[1] == TextPart(text="[image/png data omitted]")
    assert all(m.truncation_marker == LOSSY_MARKER for m in view.messages[1:])
    assert view.shortened == 2
    assert view.verified
    # The file is untouched by the view: replay still gives everything back exactly.
    assert read_replay(path).messages == tuple(ms)


def test_string_tool_output_is_cut_with_a_note(tmp_path: Path) -> None:
    """A long string tool output is cut to the limit and says how much was cut."""
    ms = [call("c1"), out("c1", "x" * 300)]
    path = RolloutBuilder(tmp_path).extend(ms).write()
    view = read_memory(path, tool_output_limit=100)
    content = view.messages[1].content
    assert isinstance(content, str)
    assert content.startswith("x" * 100)
    assert "200 more characters cut" in content
    assert not view.verified


def test_short_messages_are_kept_as_they_are(tmp_path: Path) -> None:
    """Messages under the limits come back unchanged and unmarked."""
    ms = conversation(2)
    path = RolloutBuilder(tmp_path).extend(ms).stop(StopKind.PAUSED).write()
    view = read_memory(path)
    assert view.messages == tuple(m for m in ms if m.role != Role.SYSTEM)
    assert view.shortened == 0
