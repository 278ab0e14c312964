"""What each provider enforces on a request, as checks: the oracle of the cross-provider tests.

Each ``check_*`` raises ``AssertionError`` naming the rule a request breaks. The rules are the
ones documented by the providers (tool calls answered where the provider wants the answers,
system placement, required fields and their types, signatures present where required), as
collected in the project's provider research; they are written independently of the adapters.
"""

from __future__ import annotations

from typing import Any


def _merged(messages: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    # Anthropic merges consecutive messages of one role into one turn.
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for m in messages:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if turns and turns[-1][0] == m["role"]:
            turns[-1][1].extend(blocks)
        else:
            turns.append((m["role"], list(blocks)))
    return turns


def check_anthropic(request: dict[str, Any]) -> None:
    """Messages API: system on top, user/assistant turns, tool results right after their calls."""
    assert set(request) <= {"system", "messages"}, request.keys()
    system = request.get("system", "")
    assert isinstance(system, str) or all(b["type"] == "text" for b in system)
    for m in request["messages"]:
        assert m["role"] in ("user", "assistant"), m["role"]
        assert isinstance(m["content"], str | list)
    turns = _merged(request["messages"])
    for k, (role, blocks) in enumerate(turns):
        last = k == len(turns) - 1
        assert blocks or (last and role == "assistant"), "a turn with no content"
        for b in blocks:
            if b["type"] == "text":
                assert isinstance(b["text"], str)
                assert b["text"], "an empty text block"
            elif b["type"] == "thinking":
                assert isinstance(b["thinking"], str)
                assert isinstance(b["signature"], str)
            elif b["type"] == "redacted_thinking":
                assert isinstance(b["data"], str)
            elif b["type"] == "tool_use":
                assert role == "assistant"
                assert isinstance(b["input"], dict)
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if results:
            assert role == "user"
            before = turns[k - 1][1] if k else []
            assert set(results) <= {b["id"] for b in before if b["type"] == "tool_use"}, results
            kinds = [b["type"] == "tool_result" for b in blocks]
            assert kinds == sorted(kinds, reverse=True), "tool results must come first"
        if uses:
            assert not last, "tool use without results"
            nxt = turns[k + 1][1]
            answered = {b["tool_use_id"] for b in nxt if b["type"] == "tool_result"}
            assert set(uses) <= answered, f"tool use {uses} not answered in the next turn"


def check_chat(request: dict[str, Any]) -> None:
    """Chat Completions: each call answered by one ``tool`` message before anything else."""
    assert set(request) == {"messages"}
    pending: set[str] = set()
    for m in request["messages"]:
        role = m["role"]
        assert role in ("system", "developer", "user", "assistant", "tool"), role
        if role != "tool":
            assert not pending, f"calls {pending} not answered"
        if role == "assistant":
            assert m.get("content") is not None or m.get("tool_calls"), "an empty assistant"
            content = m.get("content")
            if isinstance(content, list):
                assert all(p["type"] in ("text", "refusal") for p in content)
            pending = {c["id"] for c in m.get("tool_calls", [])}
            for c in m.get("tool_calls", []):
                assert c["type"] in ("function", "custom")
                assert isinstance(c[c["type"]]["name"], str)
        elif role == "tool":
            assert m["tool_call_id"] in pending, "a tool message for no pending call"
            pending.discard(m["tool_call_id"])
            assert isinstance(m["content"], str) or all(p["type"] == "text" for p in m["content"])
        else:
            assert isinstance(m["content"], str | list), "content is required"
    assert not pending, f"calls {pending} not answered"


def check_responses(request: dict[str, Any]) -> None:
    """Responses: every call has one output after it; reasoning items precede an item."""
    assert set(request) <= {"instructions", "input"}
    items = request["input"]
    if isinstance(items, str):
        return
    calls: set[str] = set()
    answered: set[str] = set()
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            assert item["role"] in ("user", "assistant", "system", "developer")
            assert isinstance(item["content"], str | list)
        elif kind == "reasoning":
            assert isinstance(item["id"], str)
            assert isinstance(item["summary"], list)
            assert k + 1 < len(items), "a reasoning item without its following item"
        elif kind == "function_call":
            assert isinstance(item["arguments"], str)
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in calls, "an output without its call"
            answered.add(item["call_id"])
    assert calls == answered, f"calls {calls - answered} without output"


def check_gemini(request: dict[str, Any]) -> None:
    """generateContent: as many responses as calls; the first call of a step is signed."""
    assert set(request) <= {"systemInstruction", "contents"}
    contents = request["contents"]
    for k, content in enumerate(contents):
        assert content.get("role", "user") in ("user", "model")
        assert content["parts"], "a content with no parts"
        calls = [p for p in content["parts"] if "functionCall" in p]
        if content.get("role") == "model":
            assert not any("functionResponse" in p for p in content["parts"])
            if calls:
                assert "thoughtSignature" in calls[0], "the first call has no thought signature"
                for p in calls:
                    assert isinstance(p["functionCall"].get("args", {}), dict)
                nxt = contents[k + 1] if k + 1 < len(contents) else {"parts": []}
                answers = [p for p in nxt["parts"] if "functionResponse" in p]
                assert len(answers) == len(calls), "responses must match the calls in number"
        else:
            assert not calls
            for p in content["parts"]:
                if "functionResponse" in p:
                    body = p["functionResponse"]
                    assert body["name"]
                    assert isinstance(body["response"], dict)


CHECKS = {
    "openai_chat": check_chat,
    "openai_responses": check_responses,
    "anthropic": check_anthropic,
    "gemini": check_gemini,
}
