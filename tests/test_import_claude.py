"""The Claude Code importer on the layouts the real samples do not show (built here from the
format study), and the round trip of an imported session through the Anthropic adapter."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import msgspec

from ledger import Event, MetaUpdate, Role, SessionMeta, decode_record
from ledger.importers import claude_code
from ledger.importers import claude_code as claude_module
from ledger.providers import anthropic
from replay import read_replay

DATA = Path(__file__).parent / "data" / "import" / "claude-code"
SID = "11111111-2222-3333-4444-555555555555"


def line(t: str, uuid: str, parent: str | None, **more: Any) -> dict[str, Any]:
    """One transcript line with the envelope every version writes."""
    return {
        "type": t,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "timestamp": "2026-01-01T00:00:00Z",
        "version": "1.0.98",
        "cwd": "/w",
        **more,
    }


def user(uuid: str, parent: str | None, content: Any, **more: Any) -> dict[str, Any]:
    return line("user", uuid, parent, message={"role": "user", "content": content}, **more)


def assistant(uuid: str, parent: str | None, mid: str, block: dict[str, Any], **more: Any) -> Any:
    message = {"id": mid, "type": "message", "role": "assistant", "model": "claude-x"}
    return line("assistant", uuid, parent, message={**message, "content": [block]}, **more)


def write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    return path


def records(path: str | Path) -> list[Any]:
    return [decode_record(x) for x in Path(path).read_bytes().splitlines()]


def test_inline_sidechains_become_children_matched_by_prompt(tmp_path: Path) -> None:
    """1.0.x: sidechain lines inside the main file become a child whose delegation id is the
    Task call with the same prompt; their lines are accounted as moved to a child."""
    task = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Task",
        "input": {"prompt": "Find the bug", "subagent_type": "general-purpose"},
    }
    side = {"isSidechain": True}
    src = write(
        tmp_path / "p" / f"{SID}.jsonl",
        [
            user("u1", None, "Fix it"),
            assistant("a1", "u1", "m1", task),
            user("s1", None, "Find the bug", **side),
            assistant("s2", "s1", "m2", {"type": "text", "text": "Found it"}, **side),
            user(
                "u2", "a1", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}]
            ),
        ],
    )
    report = claude_code.import_sessions(src, tmp_path / "root")
    (f,) = report.files
    assert f.unaccounted == 0
    assert f.by_disposition() == {"child": 2, "imported": 3}
    assert (f.sessions, f.children) == (1, 1)
    metas = {m.session_id: m for m in (records(p)[0] for p in report.rollouts)}
    child = next(m for m in metas.values() if m.parent_session_id)
    assert isinstance(child, SessionMeta)
    assert (child.parent_session_id, child.delegation_id) == (SID, "toolu_1")
    assert child.agent_name == "general-purpose"
    assert all(read_replay(p).verified for p in report.rollouts)


def test_newest_lines_titles_attachments_and_unknown_types(tmp_path: Path) -> None:
    """2.1.2xx lines: a title and attachments kept as metadata, last-prompt chooses the leaf
    (an abandoned branch is dropped and said so), state lines dropped, an unknown type counted."""
    src = write(
        tmp_path / f"{SID}.jsonl",
        [
            {"type": "custom-title", "customTitle": "My session", "sessionId": SID},
            line("attachment", "t1", None, attachment={"type": "date", "content": "today"}),
            user("u1", "t1", "first"),
            assistant("a1", "u1", "m1", {"type": "text", "text": "one"}),
            user("u2", "a1", "abandoned question"),
            user("u3", "a1", "the question kept"),
            {"type": "last-prompt", "leafUuid": "u3", "sessionId": SID},
            {"type": "queue-operation", "operation": "enqueue", "content": "x"},
            {"type": "atis-latch", "atis": ""},
            {"type": "from-the-future", "sessionId": SID},
        ],
    )
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    assert f.unaccounted == 0
    assert f.dispositions["branch"] == {"not on the path to the session's last message": 1}
    assert f.by_disposition() == {
        "branch": 1,
        "imported": 3,
        "metadata": 2,
        "state": 3,
        "unknown": 1,
    }
    assert [p.line for p in f.problems] == [10]
    (path,) = f.rollouts
    replay = read_replay(path)
    assert [m.text() for m in replay.messages] == ["first", "one", "the question kept"]
    titles = [r.title for r in records(path) if isinstance(r, MetaUpdate) and r.title]
    assert titles == ["My session"]


def test_one_response_in_many_lines_is_one_message_in_block_order(tmp_path: Path) -> None:
    """Block lines sharing a message id merge into one assistant message even with a tool
    result between them, in the order text, thinking, call (Opus); the Anthropic adapter gives
    the blocks back in that order with the signature as written."""
    think = {"type": "thinking", "thinking": "hmm", "signature": "EtoDsig=="}
    calls = [
        {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"f": i}} for i in (1, 2)
    ]
    src = write(
        tmp_path / f"{SID}.jsonl",
        [
            user("u1", None, "go"),
            assistant("a1", "u1", "m1", {"type": "text", "text": "Let me look."}),
            assistant("a2", "a1", "m1", think),
            assistant("a3", "a2", "m1", calls[0]),
            user("r1", "a3", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]),
            assistant("a4", "a3", "m1", calls[1]),
            user(
                "r2",
                "a4",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "y",
                        "is_error": True,
                    }
                ],
            ),
        ],
    )
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    messages = read_replay(f.rollouts[0]).messages
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL]
    assert [m.is_error for m in messages[2:]] == [False, True]
    assert [m.name for m in messages[2:]] == ["Read", "Read"]
    body = anthropic.from_ledger(messages, model="claude-x")
    sent = body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["text", "thinking", "tool_use", "tool_use"]
    assert sent[1]["signature"] == "EtoDsig=="


def test_placeholder_signatures_and_api_errors_are_never_sent_as_real(tmp_path: Path) -> None:
    """A publisher's [REDACTED_SIGNATURE] is kept as a placeholder, not a signature, so the
    adapter leaves the block out; a client-made API error line is an event, not a message."""
    redacted = {"type": "thinking", "thinking": "t", "signature": "[REDACTED_SIGNATURE]"}
    error = assistant(
        "e1",
        "a1",
        "m2",
        {"type": "text", "text": "API Error: 529"},
        isApiErrorMessage=True,
        error="overloaded",
    )
    error["message"]["model"] = "<synthetic>"
    src = write(
        tmp_path / f"{SID}.jsonl",
        [
            user("u1", None, "go"),
            assistant("a1", "u1", "m1", redacted),
            error,
            user("u2", "e1", "again?"),
        ],
    )
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    (path,) = f.rollouts
    messages = read_replay(path).messages
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    block = messages[1].reasoning[0]
    assert (block.signature, block.placeholder) == (None, "[REDACTED_SIGNATURE]")
    events = [r for r in records(path) if isinstance(r, Event)]
    assert [(e.kind, e.error.type if e.error else None) for e in events] == [
        ("api_error", "overloaded")
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        body = anthropic.from_ledger(messages, model="claude-x")
    assert all(b.get("signature") != "[REDACTED_SIGNATURE]" for b in body["messages"][1]["content"])
    assert caught


def test_an_imported_session_goes_back_to_anthropic_byte_for_byte(tmp_path: Path) -> None:
    """The round trip: a real transcript imported, replayed and sent through the Anthropic
    adapter gives each response's blocks back as the source wrote them, signatures included."""
    src = DATA / "2.1.29-hook-stop" / "d266fdf5-b6a3-46aa-8627-920959a0109a.jsonl"
    responses: dict[str, list[Any]] = {}
    for raw in src.read_bytes().splitlines():
        o = json.loads(raw)
        if o["type"] == "assistant":
            responses.setdefault(o["message"]["id"], []).extend(o["message"]["content"])
    (f,) = claude_code.import_sessions(src, tmp_path).files
    messages = read_replay(f.rollouts[0]).messages
    body = anthropic.from_ledger(messages, model="claude-haiku-4-5-20251001")
    sent = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
    assert len(sent) == len(responses) > 1
    assert msgspec.json.encode(sent) == msgspec.json.encode(list(responses.values()))


def test_inline_sidechain_keys_walk_each_line_about_once() -> None:
    """Finding the sidechain of every line of a long inline chain takes steps in proportion to
    its lines, not to their square (each root found is remembered for the lines walked to it)."""
    n = 400
    chain = [line("user", f"s{i}", f"s{i - 1}" if i else None, isSidechain=True) for i in range(n)]
    chains = claude_module._Sidechains(tuple(chain))
    steps = 0

    class Counting(dict[Any, Any]):
        def __getitem__(self, key: Any) -> Any:
            nonlocal steps
            steps += 1
            return super().__getitem__(key)

    chains.by_uuid = Counting(chains.by_uuid)
    keys = {chains.key(o) for o in reversed(chain)}
    assert keys == {"sidechain-s0"}
    assert steps <= 2 * n
