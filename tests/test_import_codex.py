"""The Codex importer on the layouts the real samples do not show (built here from the format
study), and the round trip of an imported session through the Responses adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from ledger import Compacted, Event, MetaUpdate, Role, SessionMeta, Turn, Usage, decode_record
from ledger.importers import codex
from ledger.providers import openai_responses
from replay import read_replay

DATA = Path(__file__).parent / "data" / "import" / "codex"
TS = "2026-06-01T10:00:00.000Z"


def env(t: str, payload: Any, ordinal: int | None = None) -> dict[str, Any]:
    """One rollout line in the envelope of 0.3x to 0.15x (``ordinal`` from 0.154)."""
    o: dict[str, Any] = {"timestamp": TS, "type": t, "payload": payload}
    if ordinal is not None:
        o["ordinal"] = ordinal
    return o


def write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    return path


def records(path: str | Path) -> list[Any]:
    return [decode_record(x) for x in Path(path).read_bytes().splitlines()]


META = {
    "id": "sess-0154",
    "timestamp": TS,
    "cwd": "/w",
    "originator": "codex_cli_rs",
    "cli_version": "0.154.0",
    "model_provider": "openai",
    "base_instructions": {"text": "You are Codex."},
}
ITEMS: list[dict[str, Any]] = [
    {
        "type": "message",
        "id": "msg_u1",
        "role": "user",
        "content": [{"type": "input_text", "text": "fix the test"}],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look."}],
        "content": None,
        "encrypted_content": "gAAAAB-enc-1",
    },
    {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_1",
        "name": "apply_patch",
        "input": "*** Begin Patch",
        "status": "completed",
    },
    {
        "type": "custom_tool_call_output",
        "id": "ctco_1",
        "call_id": "call_1",
        "output": [{"type": "input_text", "text": "Exit code: 1\nfailed"}],
    },
    {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAB-enc-2"},
    {
        "type": "message",
        "id": "msg_a1",
        "role": "assistant",
        "phase": "final_answer",
        "content": [{"type": "output_text", "text": "Done."}],
    },
]


def _v0154(path: Path) -> Path:
    lines = [
        env("session_meta", META, 1),
        env("event_msg", {"type": "task_started", "turn_id": "t1"}, 2),
        env("turn_context", {"turn_id": "t1", "model": "gpt-5.5", "effort": "high"}, 3),
        env("world_state", {"kind": "full"}, 4),
    ]
    for item in ITEMS:
        lines.append(env("response_item", item, len(lines) + 1))
        lines.append(env("event_msg", {"type": "item_completed", "item": {}}, len(lines) + 1))
    lines += [
        env(
            "token_usage_record",
            {
                "response_id": "resp_1",
                "usage": {"input_tokens": 100, "output_tokens": 20, "cached_input_tokens": 50},
            },
            20,
        ),
        env("event_msg", {"type": "token_count", "info": {"last_token_usage": {}}}, 21),
        env("event_msg", {"type": "thread_settings_applied", "effort": "low"}, 22),
        env("event_msg", {"type": "task_complete", "turn_id": "t1"}, 23),
        env("event_msg", {"type": "some_new_event"}, 24),
    ]
    return write(path, lines)


def test_codex_0154_lines_each_get_their_record(tmp_path: Path) -> None:
    """0.154: ordinal envelopes, item ids, token_usage_record (usage with a response id, the
    token_count then a duplicate), world_state and item_completed dropped, settings kept, one
    turn start with its settings, an unknown event counted; the output's exit code sets
    is_error."""
    (f,) = codex.import_sessions(_v0154(tmp_path / "r.jsonl"), tmp_path / "root").files
    assert f.unaccounted == 0
    assert f.by_disposition() == {
        "duplicate": 7,
        "imported": 10,
        "metadata": 2,
        "state": 1,
        "unknown": 1,
    }
    (path,) = f.rollouts
    recs = records(path)
    head = recs[0]
    assert isinstance(head, SessionMeta)
    assert (head.session_id, head.model) == ("sess-0154", "gpt-5.5")
    turns = [r for r in recs if isinstance(r, Turn)]
    assert [(t.boundary, t.turn_id, t.model) for t in turns] == [
        ("start", "t1", "gpt-5.5"),
        ("end", "t1", None),
    ]
    (usage,) = [r for r in recs if isinstance(r, Usage)]
    assert (usage.response_id, usage.input_tokens, usage.cache_read_tokens) == ("resp_1", 100, 50)
    assert any(isinstance(r, MetaUpdate) for r in recs)
    messages = read_replay(path).messages
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert messages[3].is_error


def test_codex_round_trip_through_the_responses_adapter(tmp_path: Path) -> None:
    """An imported session's items go back through the Responses adapter as the source wrote
    them: item ids, encrypted reasoning, custom tools, phase, output parts. Only the error flag
    the import derived from the exit code stays behind (Responses outputs have none)."""
    (f,) = codex.import_sessions(_v0154(tmp_path / "r.jsonl"), tmp_path / "root").files
    messages = read_replay(f.rollouts[0]).messages
    sent = openai_responses.export(messages, model="gpt-5.5", endpoint="openai")
    assert [x.what for x in sent.left_out] == ["error flag"]
    body = sent.request
    assert body["instructions"] == "You are Codex."
    assert msgspec.json.encode(body["input"]) == msgspec.json.encode(ITEMS)


def test_compacted_with_a_role_less_item_and_turn_aborted(tmp_path: Path) -> None:
    """A compacted line's replacement history (a role-less compaction item included, kept
    whole and marked) becomes the compacted record; turn_aborted is an event, not a stop."""
    compaction = {"type": "compaction", "encrypted_content": "gAAAAB-compact"}
    history = [ITEMS[0], compaction]
    src = write(
        tmp_path / "r.jsonl",
        [
            env("session_meta", {**META, "cli_version": "0.104.0"}),
            env("response_item", ITEMS[0]),
            env("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
            env("compacted", {"message": "", "replacement_history": history}),
            env("event_msg", {"type": "context_compacted"}),
            env(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "go on"}],
                },
            ),
        ],
    )
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    assert f.unaccounted == 0
    recs = records(f.rollouts[0])
    (event,) = [r for r in recs if isinstance(r, Event)]
    assert event.kind == "turn_aborted"
    (comp,) = [r for r in recs if isinstance(r, Compacted)]
    item = comp.messages[-1]
    assert msgspec.json.decode(bytes(item.extra))["ledger"] == {"role": None}
    assert msgspec.json.decode(bytes(item.content[0].data)) == compaction  # type: ignore[index,union-attr]
    replay = read_replay(f.rollouts[0])
    assert replay.verified
    assert [m.text() for m in replay.messages][-1] == "go on"
    assert sum(1 for r in recs if type(r).__name__ == "Terminal") == 1


def test_legacy_rollouts_and_subagent_sources(tmp_path: Path) -> None:
    """A pre-envelope rollout (bare header, bare items, record_type state) imports; a rollout
    spawned as a subagent is a child of its parent thread, without a delegation id."""
    legacy = write(
        tmp_path / "a" / "rollout-legacy.jsonl",
        [
            {"id": "legacy-1", "timestamp": TS, "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"record_type": "state"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hello"}],
            },
        ],
    )
    spawned = {
        **META,
        "id": "child-1",
        "source": {"subagent": {"thread_spawn": {"parent_thread_id": "sess-0154"}}},
    }
    child = write(tmp_path / "a" / "rollout-child.jsonl", [env("session_meta", spawned)])
    report = codex.import_sessions(tmp_path / "a", tmp_path / "root")
    by_name = {Path(f.source).name: f for f in report.files}
    assert by_name[legacy.name].by_disposition() == {"imported": 2, "metadata": 1, "state": 1}
    assert (by_name[child.name].sessions, by_name[child.name].children) == (0, 1)
    heads = {r.session_id: r for r in (records(p)[0] for p in report.rollouts)}
    assert heads["child-1"].parent_session_id == "sess-0154"
    assert heads["child-1"].delegation_id is None
    assert [m.text() for m in read_replay(by_name[legacy.name].rollouts[0]).messages] == [
        "hi",
        "hello",
    ]


def test_a_real_rollout_keeps_its_aborts_and_exit_codes(tmp_path: Path) -> None:
    """The 0.40 sample: its four aborts are events, the session is paused with the reason, and
    rejected patches and failing commands are tool results with is_error."""
    src = next((DATA / "0.40.0-vscode-turn-aborted").rglob("*.jsonl"))
    (f,) = codex.import_sessions(src, tmp_path).files
    recs = records(f.rollouts[0])
    assert [r.kind for r in recs if isinstance(r, Event)] == ["turn_aborted"] * 4
    replay = read_replay(f.rollouts[0])
    assert replay.terminal is not None
    assert replay.terminal.stop_kind == "paused"
    assert "Codex 0.40.0" in replay.terminal.reason
    assert any(m.is_error for m in replay.messages if m.role == Role.TOOL)


def test_is_error_prefers_the_commands_exit_code(tmp_path: Path) -> None:
    """A call's exec_command_end exit code decides is_error before anything in the output's
    text, and the source of the decision is kept; reasoning without an id stays without one."""
    call = {"type": "function_call", "call_id": "c9", "name": "shell", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c9", "output": "Exit code: 0\nok?"}
    src = write(
        tmp_path / "r.jsonl",
        [
            env("session_meta", {**META, "cli_version": "0.77.0"}),
            env("response_item", ITEMS[0]),
            env(
                "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB"}
            ),
            env("response_item", call),
            env("response_item", out),
            env("event_msg", {"type": "exec_command_end", "call_id": "c9", "exit_code": 2}),
        ],
    )
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    messages = read_replay(f.rollouts[0]).messages
    tool = messages[-1]
    assert tool.is_error
    assert msgspec.json.decode(bytes(tool.extra))["codex"] == {
        "is_error_from": "exec_command_end.exit_code"
    }
    (block,) = messages[-2].reasoning
    assert (block.item_id, block.encrypted) == (None, "gAAAAB")


def test_a_line_without_payload_never_enters_the_conversation(tmp_path: Path) -> None:
    """In a file of envelopes, a line without its payload is damaged (a known type) or unknown,
    never taken as a legacy response item that the conversation would send to the model."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    lines = [
        {"timestamp": TS, "type": "session_meta", "payload": {"id": "s-1", "cli_version": "0.77"}},
        {"timestamp": TS, "type": "response_item", "payload": item},
        {"timestamp": TS, "type": "event_msg"},
        {"type": "future_line_type", "data": {"secret": "not for the model"}},
    ]
    src = tmp_path / "rollout-x.jsonl"
    src.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    assert {p.line: p.reason.split(":")[0] for p in f.problems} == {3: "damaged", 4: "unknown"}
    assert [m.text() for m in read_replay(f.rollouts[0]).messages] == ["hi"]


def test_reasoning_events_no_item_holds_are_kept_out_of_the_conversation(tmp_path: Path) -> None:
    """agent_reasoning of an interrupted turn, with no reasoning item in the file, is kept as
    metadata (its text in the rollout), not dropped as the mirror of an item that is not there."""
    src = next((DATA / "0.40.0-vscode-turn-aborted").rglob("*.jsonl"))
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    orphan = "**Diagnosing stale data blocking refetch in team queries**"
    held = list(map(decode_record, Path(f.rollouts[0]).read_bytes().splitlines()))
    kept = [r for r in held if isinstance(r, MetaUpdate) and orphan in bytes(r.extra).decode()]
    assert len(kept) == 1
    assert (
        f.dispositions["metadata"][
            "event_msg/agent_reasoning: reasoning no item holds (never sent to the model)"
        ]
        == 4
    )


def test_a_codex_file_that_grew_between_responses_is_appended(tmp_path: Path) -> None:
    """A live rollout imported between two responses, then again once it grew, continues the
    same rollout: each usage stays where it was in the file, after the items before it."""
    sample = next((DATA / "0.125.0-tui").glob("*.jsonl"))
    lines = sample.read_bytes().splitlines(keepends=True)
    src = tmp_path / sample.name
    statuses = []
    for k in (60, 120):
        src.write_bytes(b"".join(lines[:k]))
        statuses.append(codex.import_sessions(src, tmp_path / "root").files[0].status)
    assert statuses == ["imported", "appended"]
