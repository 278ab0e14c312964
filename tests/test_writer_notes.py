"""The writer's way to the format-2 records: `note()` for descriptions, `compacted(extra=)`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger import (
    Event,
    Message,
    MetaUpdate,
    RolloutWriter,
    StopKind,
    Terminal,
    Usage,
    decode_record,
    raw_json,
)
from replay import read_replay

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_notes_take_the_writers_seq_and_stay_out_of_the_conversation(tmp_path: Path) -> None:
    """A noted record gets the writer's next seq and time; the checkpoint covers the messages
    only, and replay verifies and sums the descriptions."""
    with RolloutWriter.create(tmp_path) as w:
        w.append(Message(role="user", content="hi"))
        w.note(Usage(seq=0, ts=EPOCH, response_id="r1", input_tokens=3, output_tokens=1))
        w.append(Message(role="assistant", content="hello"))
        w.note(MetaUpdate(seq=0, ts=EPOCH, title="greeting"))
        w.compacted([Message(role="user", content="s")], "s", extra=raw_json({"trigger": "x"}))
        w.stop(StopKind.PAUSED)
    records = [decode_record(line) for line in w.path.read_bytes().splitlines()]
    assert [getattr(r, "seq", None) for r in records] == list(range(1, len(records) + 1))
    usage = records[2]
    assert isinstance(usage, Usage)
    assert usage.ts > EPOCH
    replay = read_replay(w.path)
    assert replay.verified
    assert [m.content for m in replay.messages] == ["s"]


def test_note_refuses_what_is_not_a_description(tmp_path: Path) -> None:
    """A message or a stop record handed to note() is refused with nothing written."""
    with RolloutWriter.create(tmp_path) as w:
        before = w.next_seq
        with pytest.raises(TypeError, match="append"):
            w.note(Terminal(seq=0, ts=EPOCH))  # type: ignore[arg-type]
        w.note(Event(seq=0, ts=EPOCH, kind="interrupted"))
        assert w.next_seq == before + 1
